"""EXP009 feature-record-incomplete."""

from __future__ import annotations

import re

from .. import features
from ..markers import README, RECORD
from ..needs import EXAMPLE, EXPERIMENTAL_TEST, FEATURE_README, FEATURE_TOML
from .base import Example, Rule

# The four items of the user contract every feature's README.md states
# (docs/experimental.rst, "What each experimental feature documents") -> a pattern that
# one of its headings (or a bold lead-in) must match.
README_ITEMS = {
    "what is experimental": re.compile(r"what|experimental|scope", re.I),
    "supported cases and limits": re.compile(r"support|limit", re.I),
    "the gates": re.compile(r"gate|gating|opt[- ]?in", re.I),
    "automatic-routing participation": re.compile(r"auto", re.I),
}
_HEADING = re.compile(r"^\s{0,3}(?:#{1,6}\s+(?P<h>.+)|\*\*(?P<b>[^*]+)\*\*)")


def missing_readme_items(text: str) -> list:
    headings = []
    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            headings.append(match.group("h") or match.group("b"))
    return [item for item, pattern in README_ITEMS.items() if not any(pattern.search(h) for h in headings)]


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
    """An experimental feature directory lacks its record.

    Every feature under ``flashinfer/experimental/<feature>/`` is admitted for a
    bounded time with a named owner; the bot and the reviewers read that from its
    record: ``FEATURE.toml`` with every field of the record (read and validated by
    ``policy_checks.features``, the same code the bot reads it with: types and GitHub's
    name rules checked, and ``target_date`` inside the admission window of
    ``policy_checks.graduation``), a ``README.md`` whose
    headings (``#`` lines or ``**bold**`` lead-ins) cover the four user-contract
    items (what is experimental; supported cases and limits; the gates; automatic
    routing), tests under ``tests/experimental/<feature>/`` and a runnable example
    under ``examples/`` (a Python file that parses and mentions the feature). The
    tests and example are checked only in a source checkout (one that has the
    stable test directory): an unpacked wheel ships neither.

    A feature is a direct subdirectory of the experimental package holding Python
    files or a ``FEATURE.toml``; one whose name starts with ``_`` or ``.`` is shared
    code, not a feature, and so is the shim package a graduated feature leaves for one
    release: its ``__init__`` binds ``__graduated_to__`` to the new home and the
    directory is a pure re-export shim (``policy_checks.markers.is_pure_shim``: Python
    modules holding only what ``policy-check graduate`` writes, re-exports of the new
    home, a ``DeprecationWarning``, ``__all__`` and a ``__getattr__`` forwarder; no
    other file). A directory that binds ``__graduated_to__`` but holds anything else (a
    record, a new module, other code) is still a feature: it is checked as one, and
    reported at its ``__init__.py``, line 1, as a shim that holds other code. A missing
    part is reported at ``FEATURE.toml`` (or the feature's ``__init__.py`` when there
    is no ``FEATURE.toml``), line 1; a bad field at its line.
    """

    id = "EXP009"
    name = "feature-record-incomplete"
    summary = "an experimental feature lacks FEATURE.toml, README.md, tests or an example"
    reads = (FEATURE_TOML, FEATURE_README, EXPERIMENTAL_TEST, EXAMPLE)
    triggers = ()  # it reads directories and texts, no Python file's facts
    fingerprint_by_path = True  # a feature's record, even when reported at its __init__.py

    _TREE = {
        "flashinfer/__init__.py": "",
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/experimental/splitk/__init__.py": "",
    }
    VALID = [
        Example(
            {
                **_TREE,
                "flashinfer/experimental/splitk/FEATURE.toml": _GOOD_TOML,
                "flashinfer/experimental/splitk/README.md": _GOOD_README,
                "tests/experimental/splitk/test_splitk.py": "def test():\n    pass\n",
                "examples/splitk_gemm.py": "import flashinfer  # splitk\nif __name__ == '__main__':\n    pass\n",
            }
        ),
        Example({**_TREE, "flashinfer/experimental/splitk/FEATURE.toml": _GOOD_TOML,
                 "flashinfer/experimental/splitk/README.md": _GOOD_README},
                note="no tests/ directory: an unpacked wheel"),
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
    INVALID = [
        Example(
            {**_TREE, "tests/test_x.py": ""},
            expect=(("flashinfer/experimental/splitk/__init__.py", 1),),
        ),
        Example(
            {
                **_TREE,
                "flashinfer/experimental/splitk/FEATURE.toml": _GOOD_TOML.replace("2026-11-30", "2027-01-30").replace(
                    'owner = "octocat"\n', ""
                ),
                "flashinfer/experimental/splitk/README.md": "# splitk\n## Gates\n",
            },
            expect=(
                ("flashinfer/experimental/splitk/FEATURE.toml", 1),
                ("flashinfer/experimental/splitk/FEATURE.toml", 1),
                ("flashinfer/experimental/splitk/FEATURE.toml", 5),
            ),
            note="missing owner (line 1), late target_date (line 5), README items (line 1)",
        ),
        Example(
            {**_TREE, "flashinfer/experimental/splitk/__init__.py": _SHIM,
             "flashinfer/experimental/splitk/fast.py": "def run():\n    pass\n"},
            expect=(("flashinfer/experimental/splitk/__init__.py", 1),
                    ("flashinfer/experimental/splitk/__init__.py", 1)),
            note="a shim that holds other code is still a feature: that, and what it lacks",
        ),
    ]

    def check(self, project):
        s = project.settings
        base = project.root / s.experimental_dir
        if not base.is_dir():
            return
        checkout = (project.root / s.stable_tests).is_dir()
        examples = project.example_texts() if checkout else {}
        for directory in sorted(base.iterdir(), key=lambda p: p.name):
            rel_dir = f"{s.experimental_dir}/{directory.name}"
            if not features.is_feature_name(directory.name) or not directory.is_dir() or project.excluded(rel_dir):
                continue
            if not any(p.suffix == ".py" or p.name == RECORD for p in directory.iterdir()):
                continue
            if features.binds_shim_marker(directory):
                problem = features.shim_problem(directory, s.experimental_package)
                if problem is None:
                    continue  # the pure re-export shim a graduated feature leaves for one release
                yield self.finding(
                    f"{rel_dir}/__init__.py", 1, 1,
                    f"{rel_dir} binds {features.SHIM_MARKER} but the shim holds other code ({problem}): it is "
                    "still an experimental feature; leave only the re-exports `policy-check graduate` writes",
                    subject=f"{directory.name}: a shim holding other code")
            yield from self._check_feature(project, directory, rel_dir, checkout, examples)

    def _check_feature(self, project, directory, rel_dir, checkout, examples):
        s = project.settings
        feature = directory.name
        toml_path = directory / RECORD
        anchor = f"{rel_dir}/{RECORD}" if toml_path.is_file() else f"{rel_dir}/__init__.py"
        missing = []
        if toml_path.is_file():
            for problem in features.read(toml_path).problems:
                yield self.finding(anchor, problem.line, 1, str(problem), subject=f"{feature}: {problem.key or RECORD}")
        else:
            missing.append(RECORD)
        readme = directory / README
        if not readme.is_file():
            missing.append(README)
        else:
            absent = missing_readme_items(readme.read_text(encoding="utf-8", errors="replace"))
            if absent:
                missing.append("README.md sections on " + ", ".join(absent))
        if checkout:
            tests = project.root / s.experimental_tests / feature
            if not (tests.is_dir() and any(tests.rglob("test_*.py"))):
                missing.append(f"tests under {s.experimental_tests}/{feature}/")
            if not any(feature in text for text in examples.values()):
                missing.append(f"a runnable example under {s.examples}/ that mentions {feature}")
        if missing:
            missed = "; ".join(missing)
            yield self.finding(anchor, 1, 1, f"experimental feature {feature} lacks {missed}", subject=f"{feature}: {missed}")
