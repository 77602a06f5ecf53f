"""EXP008's routes around the configuration: links under the lane, conftest hooks,
command lines (each beside a harmless twin). The rule's examples hold the text-only
cases; links need a real file system, so they are here."""

from __future__ import annotations

import os

from policy_checks.rules.readers import conftest_hooks, pytest_commands
from policy_checks.rules.exp008 import anchored

from ..conftest import located, python_calls, write_tree

TREE = {
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "pytest.ini": "[pytest]\nnorecursedirs = tests/experimental\n",
    "tests/test_ok.py": "def test_ok():\n    pass\n",
    "tests/experimental/feat/test_feat.py": "def test_feat():\n    pass\n",
    "examples/run.py": "",
}


def test_links_to_the_experimental_tests_are_found(check, tmp_path):
    root = write_tree(tmp_path / "project", TREE)
    os.symlink("experimental", root / "tests" / "all_experimental")  # the folder itself
    os.makedirs(root / "tests" / "sub")
    os.symlink("../experimental/feat/test_feat.py", root / "tests" / "sub" / "test_copy.py")  # into it
    os.symlink("..", root / "tests" / "sub" / "up")  # a folder holding it
    os.symlink("../examples", root / "tests" / "examples")  # harmless: elsewhere
    os.symlink("feat", root / "tests" / "experimental" / "alias")  # harmless: inside the experimental lane
    result = check({}, root=root, select=["EXP008"])
    assert located(result, "EXP008") == [
        ("tests/all_experimental", 1), ("tests/sub/test_copy.py", 1), ("tests/sub/up", 1),
    ]
    messages = {f.path: f.message for f in result.findings}
    assert "-> tests/experimental/feat/test_feat.py" in messages["tests/sub/test_copy.py"]


def test_a_tree_without_links_is_clean(check):
    assert located(check(TREE, select=["EXP008"]), "EXP008") == []


def test_a_root_conftest_is_read_too(check):
    files = {**TREE, "conftest.py": "def pytest_ignore_collect(collection_path):\n    return False\n"}
    assert located(check(files, select=["EXP008"]), "EXP008") == [("conftest.py", 2)]
    files["conftest.py"] = "def pytest_ignore_collect(collection_path):\n    return True if collection_path else None\n"
    assert located(check(files, select=["EXP008"]), "EXP008") == []


def test_hooks_that_only_skip_or_deselect_are_harmless():
    harmless = (
        "import pytest\n"
        "def pytest_collection_modifyitems(config, items):\n"
        "    for item in items:\n        item.add_marker(pytest.mark.skip)\n"
        "    items[:] = sorted(items, key=lambda i: i.name)\n"
        "    items[:] = [i for i in items if i.name != 'x']\n"
        "    items.remove(items[0])\n"
        "    del items[0]\n"
        "def pytest_collect_directory(path, parent):\n    print(path)\n"
    )
    assert conftest_hooks.readmissions(harmless) == []
    adding = harmless.replace("items.remove(items[0])", "items[:] = items + extra")
    assert [r.line for r in conftest_hooks.readmissions(adding)] == [7]
    replacing = harmless.replace("print(path)", "return MyDir.from_parent(parent, path=path)")
    assert [r.key for r in conftest_hooks.readmissions(replacing)] == ["pytest_collect_directory collects"]


def test_command_lines():
    keep = lambda entry: anchored(entry, "tests/experimental")  # noqa: E731
    problems = lambda line: [p.key for _, a in pytest_commands.invocations(line)  # noqa: E731
                             for p in pytest_commands.problems(a, "tests/experimental", "pytest.ini", keep)]
    assert problems("python -m pytest tests/ -x -q -p no:cacheprovider -c pytest.ini --rootdir=.") == []
    assert problems("pytest tests/experimental -p no:xdist -o norecursedirs=x") == []  # the other lane
    assert problems("echo pytest-ish; python -m policy_checks run") == []
    assert problems("pytest tests -onorecursedirs=.git && pytest --override-ini norecursedirs=x tests") == [
        "-o norecursedirs", "-o norecursedirs"]
    assert problems("cd x; py.test -c other.ini --rootdir /tmp -p no:conftestguard --noconftest tests") == [
        "-c", "--rootdir", "-p no:conftestguard", "--noconftest"]
    assert problems("pytest tests ./tests/experimental/feat") == ["experimental path"]
    assert problems("pytest 'unbalanced -o norecursedirs=x") == ["-o norecursedirs"]


def test_workflow_reading_is_bounded(check):
    # a billion-laughs document: every alias is one node, visited once
    lines = ["a0: &a0 {run: pytest tests/ -o norecursedirs=x}"]
    lines += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, 30)]
    files = {**TREE, ".github/workflows/bomb.yml": "\n".join(lines) + "\n"}
    assert located(check(files, select=["EXP008"]), "EXP008") == [(".github/workflows/bomb.yml", 1)]


def test_reading_a_long_script_is_linear():
    def cost(n):
        script = "pytest tests/ -o norecursedirs=x \\\n" * n
        return python_calls(lambda: list(pytest_commands.invocations(script)))

    small, large = cost(200), cost(800)
    assert large < 5 * small


def test_a_conftest_deeper_than_the_parser_takes_is_exp000_not_a_crash(check):
    """Python's parser gives up on deep nesting with MemoryError, not SyntaxError: the
    hook reader reads nothing there, and the run reports the file as unreadable."""
    deep = '"x": ' + "[" * 5000
    assert conftest_hooks.readmissions(deep) == []
    result = check({**TREE, "tests/conftest.py": deep}, select=["EXP000", "EXP008"])
    assert [f.rule for f in result.findings if f.path == "tests/conftest.py"] == ["EXP000"]
