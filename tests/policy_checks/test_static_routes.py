"""The routes around the static rules that text alone can close (issue "containment
judged by what runs"): each route a hostile pull request would take, reported, beside a
harmless twin that stays clean. Trees are tiny; the baseline route runs in a real git
repository holding the base and the head commits, as CI runs the checker."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from policy_checks.cli import main

from .conftest import write_tree
from .test_policy_change import BASE, cli, commit, git

INIT = {
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/experimental/feat/__init__.py": "",
    "flashinfer/experimental/feat/kernels.py": "def run():\n    pass\n",
}


def found(result, rule=None) -> list:
    """``(path, line, rule)`` of each finding (of `rule` only, given one)."""
    return [(f.path, f.line, f.rule) for f in result.findings if rule is None or f.rule == rule]


def messages(result, rule) -> list:
    return [f.message for f in result.findings if f.rule == rule]


# route 11: baseline debt moved ----------------------------------------------------------

LEGACY = "def old():\n    from flashinfer.experimental.feat import helper\n    return helper\n"  # EXP007 in old


@pytest.fixture
def indebted(tmp_path):
    """A repository whose base commit carries one baselined EXP007 in flashinfer/legacy.py."""
    root = write_tree(tmp_path / "repo", {**BASE, "flashinfer/legacy.py": LEGACY})
    git(root, "init", "-q")
    commit(root, "a tree with debt")
    assert CliRunner().invoke(main, ["baseline", "--root", str(root), "--no-cache"]).exit_code == 0
    return root, commit(root, "its baseline")


def test_an_orphaned_baseline_entry_accepts_nothing_elsewhere(indebted):
    root, base = indebted
    # the module that carried the debt deleted, the same import added to a clean module
    commit(root, "move the debt", {"flashinfer/clean.py": LEGACY}, removed=["flashinfer/legacy.py"])
    for extra in ((), ("--policy-from", base)):
        result = cli(root, "--format", "json", *extra)
        assert result.exit_code == 1, result.output
        document = json.loads(result.output)
        assert [(f["path"], f["rule"]) for f in document["findings"]] == [("flashinfer/clean.py", "EXP007")]
        assert document["baselined"] == 0 and document["baseline_fixed"] == 1


def test_deleting_the_indebted_module_is_paid_debt(indebted):
    root, base = indebted
    commit(root, "pay the debt", removed=["flashinfer/legacy.py"])
    for extra in ((), ("--policy-from", base)):
        result = cli(root, "--format", "json", *extra)
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["baseline_fixed"] == 1
