"""A tree without an experimental package (FlashInfer before its experimental track) is
clean because the containment rules had nothing to check: `run` and `features` say so,
in text, instead of a bare "All clear"; the JSON reports keep their shape."""

from __future__ import annotations

import json

from click.testing import CliRunner

from policy_checks.cli import main

from .conftest import write_tree

PRE_TRACK = {
    "flashinfer/__init__.py": "from .gemm import mm\n",
    "flashinfer/gemm.py": "def mm(a, b):\n    return a\n",
}
NOTHING_TO_CHECK = "no experimental package (flashinfer/experimental) in this tree"


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_run_says_the_rules_had_nothing_to_check(tmp_path):
    write_tree(tmp_path, PRE_TRACK)
    done = invoke("run", "--root", str(tmp_path), "--no-cache")
    assert done.exit_code == 0
    assert done.output == (f"All clear: 2 files checked; {NOTHING_TO_CHECK}, so the containment rules had "
                           "nothing to check\n")
    assert json.loads(invoke("run", "--root", str(tmp_path), "--no-cache", "--format", "json").output)["findings"] == []


def test_features_says_there_is_no_experimental_package(tmp_path):
    write_tree(tmp_path, PRE_TRACK)
    assert NOTHING_TO_CHECK in invoke("features", "--root", str(tmp_path)).output
    assert json.loads(invoke("features", "--root", str(tmp_path), "--format", "json").output)["features"] == []


def test_a_tree_with_the_package_says_nothing_of_the_kind(tmp_path):
    write_tree(tmp_path, {**PRE_TRACK, "flashinfer/experimental/__init__.py": ""})
    done = invoke("run", "--root", str(tmp_path), "--no-cache")
    assert done.exit_code == 0 and done.output == "All clear: 3 files checked\n"
    assert "No experimental features.\n" == invoke("features", "--root", str(tmp_path)).output
