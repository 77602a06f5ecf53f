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

    Every feature under ``flashinfer/experimental/<feature>/`` is admitted for a
    bounded time with a named owner; the bot and the reviewers read that from its
    record: ``FEATURE.toml`` with every field of the record (read and validated by
    ``policy_checks.model.records``, the same code the bot reads it with: types and GitHub's
    name rules checked, and ``target_date`` inside the admission window of
    ``policy_checks.model.window``), a ``README.md`` whose headings cover the four
    user-contract items (what is experimental; supported cases and limits; the gates;
    automatic routing), tests under ``tests/experimental/<feature>/`` and a runnable
    example under ``examples/`` (a Python file that parses and mentions the feature).
    The tests and example are checked only in a source checkout (one that has the
    stable test directory): an unpacked wheel ships neither.

    Each missing item is a finding of its own: the record, each of its fields, the
    README, each of the README's four parts, the tests, the example. A missing record
    also lacks every field, a missing README every part, so that adding a record with
    some fields, or a README with some sections, only removes findings. Each finding's
    fingerprint subject is ``<feature>: <item>`` (``b12x: owner``, ``b12x: README.md:
    gates``), and a missing item is reported at one file of the feature that stays put
    while items are added: its ``__init__.py`` (else its first Python file, else its
    ``FEATURE.toml``), line 1. So paying off any part of a baselined feature's debt only
    ever removes baseline entries. A value the record holds but gets wrong (malformed,
    a late ``target_date``, ``apis = []`` for kind ``api``) is reported at its line of
    ``FEATURE.toml``; so is a ``FEATURE.toml`` that is not TOML. ``policy-check
    features`` lists the same items (``policy_checks.model.records.survey`` computes them
    for both).

    The README is read as Markdown: ATX headings (``#`` to ``######`` and a space) and
    setext headings (a line underlined with ``===`` or ``---``) outside fenced code
    blocks, and ``**bold**`` lead-ins. A heading covers an item when it names it by a
    whole word, in any case: *what*, *experimental* or *scope*; *support(ed)*,
    *unsupported*, *limit(s)* or *limitation(s)*; *gate(s)*, *gating* or *opt-in*; *auto*,
    *automatic* or *autotuning*. A ``# comment`` in a code block is no heading, and a
    title's "gated attention" names no gate.

    A feature is a direct subdirectory of the experimental package holding Python
    files at any depth (``<feature>/impl/kernel.py`` alone makes one) or a
    ``FEATURE.toml`` (``policy_checks.model.records.feature_directories``, the one
    definition EXP009, the board and ``features init`` share); one whose name starts with ``_`` or ``.`` is shared
    code, not a feature, and so is the shim package a graduated feature leaves for one
    release: its ``__init__`` binds ``__graduated_to__`` to the new home and the
    directory is a pure re-export shim (``policy_checks.model.markers.is_pure_shim``: Python
    modules holding only what ``policy-check graduate`` writes, re-exports of the new
    home, a ``DeprecationWarning``, ``__all__`` and a ``__getattr__`` forwarder; no
    other file). A directory that binds ``__graduated_to__`` but holds anything else (a
    record, a new module, other code) is still a feature: it is checked as one, and
    reported at its ``__init__.py``, line 1, as a shim that holds other code.
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
