"""EXP008 stable-lane-not-isolated."""

from __future__ import annotations

import configparser
import fnmatch
import re
import shlex

from .base import Example, Rule

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


def pytest_config(project):
    """``(path, norecursedirs entries or None, line)`` of the configuration pytest
    would use at the root (pytest.ini, then pyproject.toml, tox.ini, setup.cfg), or
    None when there is none."""
    root = project.root
    for name, section in (("pytest.ini", "pytest"), ("pyproject.toml", None), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        path = root / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if section is None:
            try:
                table = tomllib.loads(text).get("tool", {}).get("pytest", {}).get("ini_options")
            except tomllib.TOMLDecodeError:
                continue
            if table is None:
                continue
            value = table.get("norecursedirs")
            entries = value.split() if isinstance(value, str) else value
            header = r"^\s*\[tool\.pytest\.ini_options\]"
        else:
            parser = configparser.ConfigParser(interpolation=None)
            try:
                parser.read_string(text)
            except configparser.Error:
                continue
            if not parser.has_section(section):
                if name == "pytest.ini":
                    return name, None, 1  # pytest.ini wins even without a [pytest] section
                continue
            value = parser.get(section, "norecursedirs", fallback=None)
            entries = shlex.split(value) if value is not None else None
            header = rf"^\s*\[{re.escape(section)}\]"
        line = _line_of(text, r"^\s*norecursedirs\s*=") if entries is not None else _line_of(text, header)
        return name, entries, line
    return None


def _line_of(text: str, pattern: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(pattern, line):
            return number
    return 1


def anchored(entry: str, path: str) -> bool:
    """Does a norecursedirs entry exclude exactly `path` by its path (not by a bare name)?"""
    entry = entry.rstrip("/")
    if entry.startswith("./"):
        entry = entry[2:]
    return "/" in entry and fnmatch.fnmatchcase(path, entry)


class StableLaneNotIsolated(Rule):
    """The stable test lane can collect or import experimental code.

    ``pytest tests/`` is the stable lane and must pass whether or not experimental
    features exist; ``tests/experimental/`` is its own lane. Two things break that:
    a pytest configuration that does not exclude ``tests/experimental`` with a
    path-anchored ``norecursedirs`` entry (a bare ``experimental`` would also hide
    any other directory of that name), reported on the configuration file pytest
    uses; and a stable test (under ``tests/``, outside ``tests/experimental/``)
    that imports, at any scope, a module below ``flashinfer.experimental`` (the
    package's own re-exported primitives are fine). Checked only when the project
    has the stable test directory.
    """

    id = "EXP008"
    name = "stable-lane-not-isolated"
    summary = "the stable test lane is not isolated from tests/experimental"

    _TREE = {
        "flashinfer/__init__.py": "",
        "flashinfer/experimental/__init__.py": "from ..utils import experimental_backend\n",
        "flashinfer/experimental/feat/__init__.py": "",
        "tests/experimental/feat/test_feat.py": "import flashinfer.experimental.feat\n",
    }
    VALID = [
        Example(
            {
                **_TREE,
                "pytest.ini": "[pytest]\nnorecursedirs = .git tests/experimental\n",
                "tests/test_ok.py": "from flashinfer.experimental import experimental_backend\n",
            }
        ),
        Example(
            {
                **_TREE,
                "pyproject.toml": "[tool.pytest.ini_options]\nnorecursedirs = ['tests/experimental/']\n",
            }
        ),
    ]
    INVALID = [
        Example(
            {**_TREE, "pytest.ini": "[pytest]\naddopts = -q\nnorecursedirs = experimental\n"},
            expect=(("pytest.ini", 3),),
            note="a bare name is not path-anchored",
        ),
        Example({**_TREE, "setup.cfg": "[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n"}, expect=(("setup.cfg", 3),)),
        Example(
            {
                **_TREE,
                "tox.ini": "[pytest]\nnorecursedirs = tests/experimental\n",
                "tests/test_bad.py": (
                    "from flashinfer.experimental import feat\n"  # 1
                    "def test_x():\n    import flashinfer.experimental.feat\n"  # 3
                ),
            },
            expect=(("tests/test_bad.py", 1), ("tests/test_bad.py", 3)),
        ),
    ]

    def check(self, project):
        s = project.settings
        if not (project.root / s.stable_tests).is_dir():
            return
        config = pytest_config(project)
        if config is None:
            yield self.finding(
                "pytest.ini", 1, 1,
                f"no pytest configuration: add `norecursedirs = {s.experimental_tests}` to keep the "
                "experimental lane out of the stable one",
            )
        else:
            name, entries, line = config
            if not any(anchored(e, s.experimental_tests) for e in entries or ()):
                yield self.finding(
                    name, line, 1,
                    f"pytest's norecursedirs does not exclude {s.experimental_tests} by path; "
                    f"add the entry `{s.experimental_tests}`",
                )
        prefix = s.experimental_package + "."
        for rel in sorted(project.primary):
            if not project.is_stable_test(rel):
                continue
            facts = project.facts(rel)
            if facts.syntax_error is not None:
                continue
            for imp in facts.imports:
                below = [t for t in project.import_targets(imp) if t.startswith(prefix)]
                if not below and imp.module == s.experimental_package:
                    for name, _ in imp.names:
                        target = project.resolve(imp.module, name) if name != "*" else None
                        if target and target[0] == "def" and target[1].startswith(prefix):
                            below.append(target[1])
                if below:
                    yield self.finding(
                        rel, imp.line, imp.column,
                        f"stable test imports {below[-1]}; experimental tests belong under "
                        f"{s.experimental_tests}/",
                    )
