"""EXP009 feature-record-incomplete."""

from __future__ import annotations

from ..model import records as features
from ..model.records import README_PARTS, missing_readme_parts
from ..model.markers import RECORD
from ..analysis.needs import EXAMPLE, EXPERIMENTAL_TEST, FEATURE_README, FEATURE_TOML
from .base import Example, Rule

__all__ = ["FeatureRecordIncomplete", "README_PARTS", "missing_readme_parts"]


_GOOD_TOML = (
    'kind = "backend"\nowner = "octocat"\ntracking_issue = 12\nadmitted = 2026-11-02\n'
    'target_release = "0.8.0"\ntarget_date = 2026-11-30\napis = []\n'
    'backends = ["mm_bf16:splitk"]\nauto_routing = true\n'
)
_GOOD_README = (
    "# splitk\n\n## What is experimental\nx\n## Supported cases and limits\nx\n"
    "## Gates\nx\n## Automatic routing\nx\n"
)


class FeatureRecordIncomplete(Rule):
    """An experimental feature directory lacks its record, or part of it.

    Every feature under ``flashinfer/experimental/<feature>/`` is admitted for a bounded
    time with a named owner. The bot and the reviewers read that from its record. The
    record has four parts.

    The first is ``FEATURE.toml`` with every field of the record.
    ``policy_checks.model.records`` reads and validates it, the same code the bot reads
    it with. It checks types and GitHub's name rules. It checks that ``target_date`` lies
    inside the admission window of ``policy_checks.model.window``. The second is a
    ``README.md`` whose headings cover the four user-contract items. Those are: what is
    experimental; supported cases and limits; the gates; automatic routing. The third is
    tests under ``tests/experimental/<feature>/``. The fourth is a runnable example under
    ``examples/``: a Python file that parses and mentions the feature. The tests and
    example are checked only in a source checkout, one that has the stable test
    directory. An unpacked wheel ships neither.

    Each missing item is a finding of its own. The items are the record, each of its
    fields, the README, each of the README's four parts, the tests and the example. A
    missing record also lacks every field, and a missing README every part. So adding a
    record with some fields, or a README with some sections, only removes findings.

    Each finding's fingerprint subject is ``<feature>: <item>``, such as ``b12x: owner``
    or ``b12x: README.md: gates``. A missing item is reported at one file of the feature
    that stays put while items are added. That is its ``__init__.py``, line 1. Without
    one, it is its first Python file, else its ``FEATURE.toml``. So paying off any part
    of a baselined feature's debt only ever removes baseline entries.

    A value the record holds but gets wrong is reported at its line of ``FEATURE.toml``.
    Examples are a malformed value, a late ``target_date``, or ``apis = []`` for kind
    ``api``. A ``FEATURE.toml`` that is not TOML is reported there too.
    ``policy-check features`` lists the same items.
    ``policy_checks.model.records.survey`` computes them for both.

    The README is read as Markdown. It has ATX headings (``#`` to ``######`` and a space).
    It has setext headings: a line underlined with ``===`` or ``---``. Both count outside
    fenced code blocks, and so do ``**bold**`` lead-ins. A heading covers an item when it
    names it by a whole word, in any case. The words are these. *what*, *experimental* or
    *scope*. *support(ed)*, *unsupported*, *limit(s)* or *limitation(s)*. *gate(s)*,
    *gating* or *opt-in*. *auto*, *automatic* or *autotuning*. A ``# comment`` in a code
    block is no heading. A title's "gated attention" names no gate.

    A feature is a direct subdirectory of the experimental package. It holds Python files
    at any depth, or a ``FEATURE.toml``. ``<feature>/impl/kernel.py`` alone makes one.
    ``policy_checks.model.records.feature_directories`` is the one definition; EXP009,
    the board and ``features init`` share it. A directory whose name starts with ``_`` or
    ``.`` is shared code, not a feature.

    Neither is the shim package a graduated feature leaves for one release. Its
    ``__init__`` binds ``__graduated_to__`` to the new home. The directory is a pure
    re-export shim (``policy_checks.model.markers.is_pure_shim``). Its Python modules
    hold only what ``policy-check graduate`` writes: re-exports of the new home, a
    ``DeprecationWarning``, ``__all__`` and a ``__getattr__`` forwarder. It has no other
    file. A directory may bind ``__graduated_to__`` but hold anything else: a record, a
    new module, other code. It is still a feature and is checked as one. It is reported
    at its ``__init__.py``, line 1, as a shim that holds other code.
    """

    id = "EXP009"
    name = "feature-record-incomplete"
    summary = "an experimental feature lacks FEATURE.toml, README.md, tests or an example"
    # the messages: a shim holding other code, a lack outside the record (a lack in it says itself)
    SHIM = ("{rel} binds {marker} but the shim holds other code ({problem}): it is still an experimental feature; "
            "leave only the re-exports `policy-check graduate` writes")
    LACK = "experimental feature {feature}: {lack}"
    reads = (FEATURE_TOML, FEATURE_README, EXPERIMENTAL_TEST, EXAMPLE)
    triggers = ()  # it reads directories and texts, no Python file's facts
    fingerprint_by_path = True  # a feature's record, even when reported at its __init__.py

    _TREE = {
        "flashinfer/__init__.py": "",
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/experimental/splitk/__init__.py": "",
    }
    _COMPLETE = {
        **_TREE,
        "flashinfer/experimental/splitk/FEATURE.toml": _GOOD_TOML,
        "flashinfer/experimental/splitk/README.md": _GOOD_README,
    }
    VALID = [
        Example(
            {
                **_COMPLETE,
                "tests/experimental/splitk/test_splitk.py": "def test():\n    pass\n",
                "examples/splitk_gemm.py": "import flashinfer  # splitk\nif __name__ == '__main__':\n    pass\n",
            }
        ),
        Example(_COMPLETE, note="no tests/ directory: an unpacked wheel"),
        Example(
            {**_COMPLETE, "flashinfer/experimental/splitk/README.md": (
                "Split-K GEMM\n============\n\nWhat is experimental\n--------------------\nx\n\n"
                "### Supported cases and limits ###\n\n**Opt-in.** Set the gate.\n\n"
                "```python\n# nothing in here is a heading\n```\n\n## Automatic routing\n")},
            note="setext headings, a closing `#` sequence and a bold lead-in cover the four parts",
        ),
    ]
    _SHIM = (
        '"""Moved to `flashinfer.splitk` when splitk graduated."""\n\n'
        "import importlib as _importlib\nimport warnings as _warnings\n\n"
        "from flashinfer.splitk import *  # noqa: F401,F403\n\n"
        '__graduated_to__ = "flashinfer.splitk"\n\n'
        '_warnings.warn("flashinfer.experimental.splitk moved to flashinfer.splitk", DeprecationWarning, stacklevel=2)\n'
        "\n\ndef __getattr__(name):\n"
        '    return getattr(_importlib.import_module("flashinfer.splitk"), name)\n'
    )
    VALID += [
        Example({**_TREE, "flashinfer/experimental/splitk/__init__.py": _SHIM},
                note="the pure re-export shim a graduated feature leaves"),
    ]
    _INIT = "flashinfer/experimental/splitk/__init__.py"
    INVALID = [
        Example(
            {**_TREE, "tests/test_x.py": ""},
            expect=((_INIT, 1),) * 17,
            note="nothing at all, in a checkout: the record and its 9 fields, the README and its 4 parts, the "
                 "tests and the example, each at the feature's __init__.py",
        ),
        Example(
            {
                **_TREE,
                "flashinfer/experimental/splitk/FEATURE.toml": _GOOD_TOML.replace("2026-11-30", "2027-01-30").replace(
                    'owner = "octocat"\n', ""
                ),
                "flashinfer/experimental/splitk/README.md": "# splitk\n## Gates\n",
            },
            expect=((_INIT, 1),) * 4 + (("flashinfer/experimental/splitk/FEATURE.toml", 5),),
            note="missing owner and 3 README parts (at __init__.py), a late target_date (at its line)",
        ),
        Example(
            {**_COMPLETE, "flashinfer/experimental/splitk/README.md": (
                "# Split-K gated attention (experimental)\n\n## Supported cases and limits\n\n"
                "```bash\n# gates: FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1\n```\n\n"
                "## Automatic routing\n")},
            expect=((_INIT, 1),),
            note="a title's 'gated' and a comment in a code block name no gate",
        ),
        Example(
            {"flashinfer/__init__.py": "", "flashinfer/experimental/__init__.py": "",
             "flashinfer/experimental/splitk/kernels.py": "",
             "flashinfer/experimental/splitk/FEATURE.toml": _GOOD_TOML},
            expect=(("flashinfer/experimental/splitk/kernels.py", 1),) * 5,
            note="no __init__.py: what is missing (the README and its parts) is reported at the first Python file",
        ),
        Example(
            {"flashinfer/__init__.py": "", "flashinfer/experimental/__init__.py": "",
             "flashinfer/experimental/splitk/impl/kernel.py": "def run():\n    pass\n"},
            expect=(("flashinfer/experimental/splitk/impl/kernel.py", 1),) * 15,
            note="code only one folder down is still a feature: the record, its 9 fields, the README and its 4 parts",
        ),
        Example(
            {**_TREE, "flashinfer/experimental/splitk/__init__.py": _SHIM,
             "flashinfer/experimental/splitk/fast.py": "def run():\n    pass\n"},
            expect=((_INIT, 1),) * 16,
            note="a shim that holds other code is still a feature: that, and the 15 items it lacks",
        ),
    ]

    def check(self, project):
        settings = project.settings
        for feature in features.survey(project.root, settings, project.excluded,
                                       lambda: project.example_texts().values()):
            if feature.shim_problem is not None:
                yield self.finding(
                    f"{feature.rel}/__init__.py", 1, 1,
                    self.SHIM.format(rel=feature.rel, marker=features.SHIM_MARKER, problem=feature.shim_problem),
                    subject=f"{feature.name}: a shim holding other code")
            for lack in feature.lacks:
                subject = f"{feature.name}: {lack.item}"
                if lack.in_record:
                    yield self.finding(f"{feature.rel}/{RECORD}", lack.line, 1, lack.message, subject=subject)
                else:
                    yield self.finding(feature.anchor, 1, 1, self.LACK.format(feature=feature.name, lack=lack.message),
                                       subject=subject)
