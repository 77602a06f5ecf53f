"""The AOT listing as settings name it: a listing function of another shape named by the
``aot-listing`` setting, and an AOT module the settings name that the tree no longer has
(a finding: its listing is not audited, never counted clean)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from policy_checks.cli import main

from ..conftest import write_tree

KERNEL = "flashinfer.experimental.feat.kernel"
TREE = {
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/experimental/feat/__init__.py": "",
    "flashinfer/experimental/feat/kernel.py": "X = 1\n",
    # a listing of its own shape, reaching experimental code when called
    "flashinfer/aot.py": f"def aot_specs(include_all: bool):\n    import {KERNEL}\n    return []\n",
}


def _audit(root, *args):
    result = CliRunner().invoke(main, ["audit", "--root", str(root), "--format", "json", "-j", "1", *args])
    assert result.exit_code in (0, 1), result.output
    return [(f["rule"], f["path"], f["line"], f["message"]) for f in json.loads(result.stdout)["findings"]]


def test_the_aot_listing_setting_names_a_listing_of_another_shape(tmp_path):
    root = write_tree(tmp_path / "tree", {**TREE, "pyproject.toml": '[tool.policy-check]\naot-listing = "aot_specs"\n'})
    [(rule, path, line, message)] = _audit(root)
    assert (rule, path, line) == ("AUD002", "flashinfer/aot.py", 2) and KERNEL in message


def test_without_the_setting_the_listing_is_not_audited_and_the_message_says_how(tmp_path):
    root = write_tree(tmp_path / "tree", TREE)
    [(rule, path, _, message)] = _audit(root)
    assert (rule, path) == ("AUD000", "flashinfer/aot.py") and "aot-listing setting" in message


def test_an_aot_module_the_settings_name_that_is_gone_is_a_finding(tmp_path):
    root = write_tree(tmp_path / "tree", {
        **TREE, "pyproject.toml": '[tool.policy-check]\naot-listing = "aot_specs"\n'
                                  'aot-modules = ["flashinfer.aot", "flashinfer.aot_gone"]\n'})
    found = _audit(root)
    assert [(r, p, n) for r, p, n, _ in found] == [("AUD002", "flashinfer/aot.py", 2), ("AUD000", "pyproject.toml", 3)]
    assert "flashinfer.aot_gone (aot-modules) is not in the tree" in found[1][3]


def test_the_default_aot_module_absent_is_a_note_only(tmp_path):
    """The twin: a package without flashinfer.aot, the default named by nobody."""
    root = write_tree(tmp_path / "tree", {k: v for k, v in TREE.items() if k != "flashinfer/aot.py"})
    assert _audit(root) == []
    text = CliRunner().invoke(main, ["audit", "--root", str(root), "-j", "1"]).output
    assert "note: no AOT listing audited: flashinfer.aot (the default aot-modules) is not in the tree" in text
