"""EXP008 stable-lane-not-isolated."""

from __future__ import annotations

import configparser
import fnmatch
import re
import shlex
from functools import partial

from ..analysis.needs import EXPERIMENTAL_NAME, IMPORT_CALLS, STABLE_TEST, Kind
from ..model.project import DefTarget
from .readers import lane_links, pytest_commands, workflows
from .base import Configuration, Example, Rule
from .readers.conftest_hooks import readmissions

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


# pytest's own search order in a directory (pytest 9's `locate_config`): the first
# file holding pytest configuration is the one it uses.
CONFIG_FILES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def configuration_at(text_of):
    """``(file, norecursedirs entries or None)`` that `pytest_config_in` finds, or None:
    what decides EXP008's finding on the configuration, in a form two revisions compare."""
    found = pytest_config_in(text_of)
    return None if found is None else (found[0], None if found[1] is None else tuple(found[1]))


def configuration_words(config) -> str:
    if config is None:
        return "no pytest configuration"
    name, entries = config
    return f"{name} with norecursedirs = {' '.join(entries)}" if entries else f"{name} without norecursedirs"


def pytest_config(project):
    """``(path, norecursedirs entries or None, line)`` of the configuration pytest uses
    for the stable lane (``pytest tests/``). None when there is none. Pytest looks in the
    lane's directory first, then in each directory above it, up to the root. So a
    ``tests/pytest.ini`` wins over the root's. `line` is that of the ``norecursedirs``
    key in pytest's section, else of the section's header."""
    for directory in lane_links.lane_directories(project.settings):
        found = pytest_config_in(partial(_root_text, project.root / directory))
        if found is not None:
            name, entries, line = found
            return (f"{directory}/{name}" if directory else name), entries, line
    return None


def _root_text(root, name: str):
    path = root / name
    if not path.is_file():
        return None
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def pytest_config_in(text_of):
    """`pytest_config` of the files `text_of` gives. `text_of` maps a name of
    `CONFIG_FILES` -> its text, or None when there is no such file. This asks the same
    question of another revision's files (``policy-check run --policy-from``)."""
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
    """Does a norecursedirs entry exclude `path` by its path? A bare name does not. Nor
    does a pattern (``*/experimental``) that matches that name under any directory."""
    entry = entry.rstrip("/")
    if entry.startswith("./"):
        entry = entry[2:]
    elsewhere = "policy-check-elsewhere/" + path.rpartition("/")[2]
    return "/" in entry and fnmatch.fnmatchcase(path, entry) and not fnmatch.fnmatchcase(elsewhere, entry)


def addopts_of(project, rel: str):
    """``(line, arguments)`` of ``addopts`` in pytest's section of the configuration file
    `rel`, or None."""
    text = project.read_text(rel)
    if text is None:
        return None
    name = rel.rpartition("/")[2]
    value = None
    if name.endswith(".toml"):
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return None
        table = data.get("pytest", {}) if name != "pyproject.toml" else data.get("tool", {}).get("pytest", {})
        table = table.get("ini_options", table) if isinstance(table, dict) and "ini_options" in table else table
        value = table.get("addopts") if isinstance(table, dict) else None
    else:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error:
            return None
        section = "tool:pytest" if name == "setup.cfg" else "pytest"
        value = parser.get(section, "addopts", fallback=None) if parser.has_section(section) else None
    if value is None:
        return None
    try:
        arguments = shlex.split(" ".join(value) if isinstance(value, list) else str(value))
    except ValueError:
        arguments = str(value).split()
    line = next((n for n, text_line in enumerate(text.splitlines(), 1)
                 if re.match(r"^\s*addopts\s*[=:]", text_line)), 1)
    return line, arguments


PYTEST_CONFIG = Kind(
    "the pytest configuration file",
    locate=lambda project: [found[0]] if (found := pytest_config(project)) else [],
    comment_markers=("#", ";"),
)
WORKFLOWS = Kind("GitHub workflows", locate=lambda project: workflows.workflow_files(project), comment_markers=("#",))
# The conftest files the stable lane loads that are not among the checked Python files (a
# root conftest.py): their suppression comments are read as text. The others are Python
# files of the stable tests, whose suppressions come from their facts.
CONFTESTS = Kind(
    "the conftest files the stable lane loads",
    locate=lambda project: [rel for rel in lane_links.lane_conftests(project) if rel not in project.files],
    comment_markers=("#",),
)


class StableLaneNotIsolated(Rule):
    """The stable test lane can collect or import experimental code.

    ``pytest tests/`` is the stable lane. It must pass whether or not experimental
    features exist. ``tests/experimental/`` is its own lane. Two things break that.

    One is a pytest configuration without a path-anchored ``norecursedirs`` entry for
    ``tests/experimental``. A bare ``experimental`` or ``*/experimental`` would also hide
    any other directory of that name. It is reported on the configuration file pytest
    uses. That file is found in pytest's own order: ``pytest.toml``, ``.pytest.toml``,
    ``pytest.ini``, ``.pytest.ini``, ``pyproject.toml``, ``tox.ini``, ``setup.cfg``.

    The other is a stable test that imports a module below ``flashinfer.experimental``. A
    stable test lies under ``tests/``, outside ``tests/experimental/``. Any scope counts,
    and so does ``pytest.importorskip``. The package's own re-exported primitives are
    fine. This is checked only when the project has the stable test directory.

    What else decides what ``pytest tests/`` collects is read too.

    The configuration is the first pytest finds from the lane's directory up. A
    ``tests/pytest.ini`` wins over the root's. One further below is never read for the
    lane. Its ``addopts`` are read too.

    A link under ``tests/`` (outside ``tests/experimental/``) may lead to the
    experimental tests, into them, or to a folder holding them. Pytest matches
    ``norecursedirs`` against the link's path.

    Conftest hooks may re-admit or add tests
    (`policy_checks.rules.readers.conftest_hooks`). One is ``pytest_ignore_collect``
    answering anything but True/None. One is
    ``pytest_collect_directory``/``pytest_collection`` returning a collector. One is
    ``pytest_collection_modifyitems`` adding items. Writes to ``norecursedirs`` or
    ``config.args`` count too. Hooks that only skip or deselect are fine.

    The workflows' pytest command lines and ``PYTEST_ADDOPTS`` are read
    (`policy_checks.rules.readers.pytest_commands`). Those may hold ``-o norecursedirs=``
    without the exclusion. They may hold ``-c``, ``--rootdir``, ``-p no:`` or
    ``--noconftest``. They may name experimental paths beside stable ones. A command
    naming only experimental paths is the experimental lane.
    """

    id = "EXP008"
    name = "stable-lane-not-isolated"
    summary = "the stable test lane is not isolated from tests/experimental"
    # the messages, one per way the stable lane can reach experimental tests ({lane}: their directory)
    NO_CONFIG = ("no pytest configuration: add `norecursedirs = {lane}` to keep the experimental lane out of the "
                 "stable one")
    NOT_EXCLUDED = "pytest's norecursedirs does not exclude {lane} by path; add the entry `{lane}`{why}"
    LANE_CONFIG = (" ({name} is the configuration `pytest {stable}/` reads: pytest looks in the lane's directory "
                   "before the root)")
    IMPORT = "stable test imports {module}; experimental tests belong under {lane}/"
    ADDOPTS = "addopts: {problem}; the stable lane may collect {lane}"
    LINK = ("link {rel} -> {target} lets `pytest {stable}/` collect {lane} (norecursedirs matches the link's path, "
            "not its target)")
    CONFTEST = "{problem}: the stable lane may collect {lane}"
    WORKFLOW = "a workflow's pytest {problem}; the stable lane may collect {lane}"
    # A stable test imports below the experimental package with an absolute name
    # (tests are not in the package), which names it, or through an import function.
    reads = (STABLE_TEST, PYTEST_CONFIG, WORKFLOWS, CONFTESTS)
    configuration = Configuration("pytest configuration", "pytest-config", CONFIG_FILES,
                                  configuration_at, configuration_words)
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
        Example(
            {
                **_TREE,
                "pytest.ini": "[pytest]\nnorecursedirs = tests/experimental\naddopts = -p no:cacheprovider\n",
                "tests/unit/pytest.ini": "[pytest]\nnorecursedirs = .git\n",
                "tests/conftest.py": (
                    "def pytest_ignore_collect(collection_path, config):\n"
                    "    if collection_path.name == 'slow':\n        return True\n"
                    "    return None\n"
                    "def pytest_collection_modifyitems(config, items):\n"
                    "    items[:] = [item for item in items if 'gpu' not in item.keywords]\n"
                    "    config.addinivalue_line('norecursedirs', 'scratch')\n"
                ),
                ".github/workflows/tests.yml": (
                    "on: [push]\njobs:\n  lane:\n    runs-on: ubuntu-latest\n    steps:\n"
                    "      - run: python -m pytest \"$LANE\" -p no:cacheprovider\n"
                    "      - run: |\n          pytest tests/experimental/ -o norecursedirs=.git\n"
                    "      - run: pytest tests/ -o 'norecursedirs=.git tests/experimental'\n"
                ),
            },
            note="harmless twins: a configuration below the lane's directory (pytest never reads it for "
                 "`pytest tests/`), hooks that only ignore more or deselect, the experimental lane's own "
                 "command line, an override that keeps the exclusion",
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
        Example(
            {
                **_TREE,
                "pytest.ini": "[pytest]\nnorecursedirs = tests/experimental\n",
                "tests/pytest.ini": "[pytest]\nnorecursedirs = .git\n",
            },
            expect=(("tests/pytest.ini", 2),),
            note="`pytest tests/` reads tests/pytest.ini first: the root's exclusion no longer applies",
        ),
        Example(
            {
                **_TREE,
                "pytest.ini": "[pytest]\nnorecursedirs = tests/experimental\naddopts = -q -o norecursedirs=.git\n",
                "tests/conftest.py": (
                    "def pytest_ignore_collect(collection_path, config):\n"  # 1
                    "    return collection_path.name == 'slow'\n"  # 2: False re-admits everything else
                    "def pytest_collection_modifyitems(session, config, items):\n"  # 3
                    "    items.extend(session.perform_collect(['tests/experimental'], genitems=True))\n"  # 4
                ),
                "tests/sub/conftest.py": "def pytest_configure(config):\n    config.args.append('tests/experimental')\n",
            },
            expect=(("pytest.ini", 3), ("tests/conftest.py", 2), ("tests/conftest.py", 4),
                    ("tests/sub/conftest.py", 2)),
            note="addopts overriding norecursedirs; conftest hooks that re-admit or add tests",
        ),
        Example(
            {
                **_TREE,
                "pytest.ini": "[pytest]\nnorecursedirs = tests/experimental\n",
                ".github/workflows/tests.yml": (
                    "on: [push]\njobs:\n  lane:\n    runs-on: ubuntu-latest\n    steps:\n"  # 1-5
                    "      - run: python -m pytest tests/ -o norecursedirs=.git\n"  # 6
                    "      - run: |\n"  # 7
                    "          echo start\n"  # 8
                    "          python3 -I -m pytest tests/ \\\n            -c other.ini\n"  # 9-10
                    "      - run: pytest tests/ tests/experimental/feat/test_feat.py\n"  # 11
                    "      - env:\n          PYTEST_ADDOPTS: --override-ini=norecursedirs=.git\n"  # 12-13
                    "        run: pytest tests/\n"
                ),
            },
            expect=((".github/workflows/tests.yml", 6), (".github/workflows/tests.yml", 10),
                    (".github/workflows/tests.yml", 11), (".github/workflows/tests.yml", 13)),
            note="a workflow's command line: -o norecursedirs, -c another file, experimental tests named in the "
                 "stable step, PYTEST_ADDOPTS",
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
                self.NO_CONFIG.format(lane=s.experimental_tests),
                subject="pytest configuration",
            )
        else:
            name, entries, line = config
            if not any(anchored(e, s.experimental_tests) for e in entries or ()):
                yield self.finding(
                    name, line, 1,
                    self.NOT_EXCLUDED.format(lane=s.experimental_tests, why=self.LANE_CONFIG.format(
                        name=name, stable=s.stable_tests) if "/" in name else ""),
                    subject="norecursedirs",
                )
            yield from self._addopts(project, name)
        yield from self._links(project)
        yield from self._conftests(project)
        yield from self._workflows(project, config[0] if config else None)
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
                        self.IMPORT.format(module=below[-1], lane=s.experimental_tests),
                        subject=below[-1],
                    )

    def _anchored(self, project):
        return partial(lambda path, entry: anchored(entry, path), project.settings.experimental_tests)

    def _addopts(self, project, rel):
        found = addopts_of(project, rel)
        if found is None:
            return
        line, arguments = found
        for problem in pytest_commands.problems(arguments, project.settings.experimental_tests, rel,
                                                self._anchored(project)):
            yield self.finding(rel, line, 1, self.ADDOPTS.format(problem=problem.message,
                                                                 lane=project.settings.experimental_tests),
                               subject=f"addopts {problem.key}")

    def _links(self, project):
        s = project.settings
        for rel, target in lane_links.links_to_experimental(project):
            yield self.finding(
                rel, 1, 1,
                self.LINK.format(rel=rel, target=target, stable=s.stable_tests, lane=s.experimental_tests),
                subject=f"link {rel}",
            )

    def _conftests(self, project):
        for rel in lane_links.lane_conftests(project):
            if rel in project.files:
                project.summary(rel)  # read whole here: EXP000 reports it if it does not parse
            text = project.read_text(rel)
            for found in readmissions(text or ""):
                yield self.finding(rel, found.line, found.column,
                                   self.CONFTEST.format(problem=found.message,
                                                        lane=project.settings.experimental_tests),
                                   subject=found.key)

    def _workflows(self, project, config_file):
        s = project.settings
        for rel, line, problem in workflows.pytest_problems(project, config_file, self._anchored(project)):
            yield self.finding(rel, line, 1, self.WORKFLOW.format(problem=problem.message, lane=s.experimental_tests),
                               subject=f"workflow pytest {problem.key}")
