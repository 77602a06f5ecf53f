"""EXP008 stable-lane-not-isolated."""

from __future__ import annotations

import configparser
import fnmatch
import re
import shlex
from functools import partial

from ..needs import EXPERIMENTAL_NAME, IMPORT_CALLS, STABLE_TEST, Kind
from ..project import DefTarget
from .base import Example, Rule

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


# pytest's own search order in a directory (pytest 9's `locate_config`): the first
# file holding pytest configuration is the one it uses.
CONFIG_FILES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def pytest_config(project):
    """``(path, norecursedirs entries or None, line)`` of the configuration pytest
    would use at the root, or None when there is none. `line` is that of the
    ``norecursedirs`` key in pytest's section, else of the section's header."""
    return pytest_config_in(partial(_root_text, project.root))


def _root_text(root, name: str):
    path = root / name
    if not path.is_file():
        return None
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def pytest_config_in(text_of):
    """`pytest_config` of the files `text_of` gives (a name of `CONFIG_FILES` ->
    its text, or None when there is no such file): the same question asked of
    another revision's files (``policy-check run --policy-from``)."""
    for name in CONFIG_FILES:
        text = text_of(name)
        if text is None:
            continue
        found = _toml_section(name, text) if name.endswith(".toml") else _ini_section(name, text)
        if found is not None:
            header, value = found
            entries = value.split() if isinstance(value, str) else value
            return name, entries, _line_of(text, header, entries is not None)
    return None


def _toml_section(name: str, text: str):
    """``(header, norecursedirs value)`` of pytest's table in a TOML file, or None."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    if name != "pyproject.toml":  # pytest.toml is pytest's even when empty
        return "pytest", data.get("pytest", {}).get("norecursedirs")
    table = data.get("tool", {}).get("pytest", {})
    native = {k: v for k, v in table.items() if k != "ini_options"}
    if native:
        return "tool.pytest", native.get("norecursedirs")
    if "ini_options" in table:
        return "tool.pytest.ini_options", table["ini_options"].get("norecursedirs")
    return None


def _ini_section(name: str, text: str):
    """``(header, norecursedirs value)`` of pytest's section in an ini file, or None."""
    section = "tool:pytest" if name == "setup.cfg" else "pytest"
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    if parser.has_section(section):
        value = parser.get(section, "norecursedirs", fallback=None)
        return section, shlex.split(value) if value is not None else None
    if name in ("pytest.ini", ".pytest.ini"):
        return "", None  # pytest.ini is pytest's even without a [pytest] section
    return None


def _line_of(text: str, header: str, has_key: bool) -> int:
    """The line of ``norecursedirs`` inside ``[header]`` (or of the header), 1 if neither."""
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if line.strip() == f"[{header}]"), None)
    if start is None:
        return 1
    for number in range(start + 1, len(lines) if has_key else start + 1):
        if lines[number].lstrip().startswith("["):
            break
        if re.match(r"^\s*norecursedirs\s*[=:]", lines[number]):
            return number + 1
    return start + 1


def anchored(entry: str, path: str) -> bool:
    """Does a norecursedirs entry exclude `path` by its path, not by a bare name or
    a pattern (``*/experimental``) that matches that name under any directory?"""
    entry = entry.rstrip("/")
    if entry.startswith("./"):
        entry = entry[2:]
    elsewhere = "policy-check-elsewhere/" + path.rpartition("/")[2]
    return "/" in entry and fnmatch.fnmatchcase(path, entry) and not fnmatch.fnmatchcase(elsewhere, entry)


PYTEST_CONFIG = Kind(
    "the pytest configuration file",
    locate=lambda project: [found[0]] if (found := pytest_config(project)) else [],
    comment_markers=("#", ";"),
)


class StableLaneNotIsolated(Rule):
    """The stable test lane can collect or import experimental code.

    ``pytest tests/`` is the stable lane and must pass whether or not experimental
    features exist; ``tests/experimental/`` is its own lane. Two things break that:
    a pytest configuration that does not exclude ``tests/experimental`` with a
    path-anchored ``norecursedirs`` entry (a bare ``experimental`` or
    ``*/experimental`` would also hide any other directory of that name), reported
    on the configuration file pytest uses (found in pytest's own order:
    ``pytest.toml``, ``.pytest.toml``, ``pytest.ini``, ``.pytest.ini``,
    ``pyproject.toml``, ``tox.ini``, ``setup.cfg``); and a stable test (under
    ``tests/``, outside ``tests/experimental/``) that imports, at any scope and
    also through ``pytest.importorskip``, a module below
    ``flashinfer.experimental`` (the package's own re-exported primitives are
    fine). Checked only when the project has the stable test directory.
    """

    id = "EXP008"
    name = "stable-lane-not-isolated"
    summary = "the stable test lane is not isolated from tests/experimental"
    # A stable test imports below the experimental package with an absolute name
    # (tests are not in the package), which names it, or through an import function.
    reads = (STABLE_TEST, PYTEST_CONFIG)
    triggers = (EXPERIMENTAL_NAME, *IMPORT_CALLS)

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
        Example(
            {
                **_TREE,
                "pyproject.toml": "[tool.pytest]\nnorecursedirs = ['tests/experimental']\n",
                "tox.ini": "[pytest]\nnorecursedirs = experimental\n",
            },
            note="pytest 9's native [tool.pytest] table, found before tox.ini",
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
            {**_TREE, "setup.cfg": "[flake8]\nnorecursedirs = x\n[tool:pytest]\nnorecursedirs = experimental\n"},
            expect=(("setup.cfg", 4),),
            note="the line of the pytest section's key, not another section's",
        ),
        Example(
            {
                **_TREE,
                ".pytest.ini": "[pytest]\nnorecursedirs = experimental\n",
                "pyproject.toml": "[tool.pytest.ini_options]\nnorecursedirs = ['tests/experimental']\n",
            },
            expect=((".pytest.ini", 2),),
            note="the hidden .pytest.ini comes before pyproject.toml",
        ),
        Example(
            {**_TREE, "pytest.ini": "[pytest]\nnorecursedirs = */experimental\n"},
            expect=(("pytest.ini", 2),),
            note="a leading wildcard matches every directory called experimental",
        ),
        Example(
            {**_TREE, "pytest.toml": "[pytest]\nnorecursedirs = ['experimental']\n", "pytest.ini": "[pytest]\n"},
            expect=(("pytest.toml", 2),),
            note="pytest.toml comes first of all",
        ),
        Example(
            {
                **_TREE,
                "tox.ini": "[pytest]\nnorecursedirs = tests/experimental\n",
                "tests/test_bad.py": (
                    "from flashinfer.experimental import feat\n"  # 1
                    "def test_x():\n    import flashinfer.experimental.feat\n"  # 3
                    "import pytest\nfeat = pytest.importorskip('flashinfer.experimental.feat')\n"  # 5
                ),
            },
            expect=(("tests/test_bad.py", 1), ("tests/test_bad.py", 3), ("tests/test_bad.py", 5)),
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
                subject="pytest configuration",
            )
        else:
            name, entries, line = config
            if not any(anchored(e, s.experimental_tests) for e in entries or ()):
                yield self.finding(
                    name, line, 1,
                    f"pytest's norecursedirs does not exclude {s.experimental_tests} by path; "
                    f"add the entry `{s.experimental_tests}`",
                    subject="norecursedirs",
                )
        prefix = s.experimental_package + "."
        for rel, facts in project.primary_facts(STABLE_TEST):
            for imp in facts.imports:
                below = [t for t in project.import_targets(imp) if t.startswith(prefix)]
                if not below and imp.module == s.experimental_package:
                    for name, _ in imp.names:
                        target = project.resolve(imp.module, name) if name != "*" else None
                        if isinstance(target, DefTarget) and target.module.startswith(prefix):
                            below.append(target.module)
                if below:
                    yield self.finding(
                        rel, imp.line, imp.column,
                        f"stable test imports {below[-1]}; experimental tests belong under "
                        f"{s.experimental_tests}/",
                        subject=below[-1],
                    )
