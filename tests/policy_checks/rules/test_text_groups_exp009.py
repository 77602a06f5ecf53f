"""Text output: a feature's EXP009 findings (one per missing item, so that a baseline
follows each) read as one heading per feature with its items under it; JSON and SARIF
keep one result per item."""

from __future__ import annotations

import json

from click.testing import CliRunner

from policy_checks.cli import main

from ..conftest import write_tree

TREE = {
    "flashinfer/__init__.py": "",
    "flashinfer/gemm.py": "from .experimental.bare import run\n",  # an EXP001 between the features' findings
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/experimental/bare/__init__.py": "def run():\n    pass\n",
    "flashinfer/experimental/partial/__init__.py": "",
    "flashinfer/experimental/partial/FEATURE.toml": 'kind = "api"\nowner = "octocat"\n',
}


def run(root, *args):
    return CliRunner().invoke(main, ["run", "--root", str(root), "--no-cache", *args])


def test_text_has_one_heading_per_feature_with_its_items_under_it(tmp_path):
    write_tree(tmp_path, TREE)
    lines = run(tmp_path).output.splitlines()
    headings = [line for line in lines if ": EXP009 " in line]
    assert headings == [
        "flashinfer/experimental/bare/__init__.py:1:1: EXP009 experimental feature bare lacks 15 item(s):",
        "flashinfer/experimental/partial/__init__.py:1:1: EXP009 experimental feature partial lacks 12 item(s):",
    ]
    start = lines.index(headings[0])
    items = lines[start + 1:start + 16]
    assert all(line.startswith("    ") and not line.startswith("    experimental feature") for line in items)
    assert "    FEATURE.toml is missing, so nothing states `owner`" in "\n".join(items)
    assert lines[start + 16] == headings[1]
    assert any(" EXP001 " in line for line in lines)
    # the summary counts the findings and, by rule, the entries a person reads above
    assert ("28 finding(s) in 5 files checked, listed as 3 entries "
            "(EXP001 1; EXP009 27 under 2 feature heading(s))") in lines


def test_the_summary_says_entries_only_when_headings_make_them_fewer(tmp_path):
    write_tree(tmp_path, TREE)
    statistics = run(tmp_path, "--statistics").output.splitlines()  # no entries listed: none counted
    assert "28 finding(s) in 5 files checked" in statistics
    one_each = write_tree(tmp_path / "one_each", {"flashinfer/__init__.py": "", "flashinfer/experimental/__init__.py": "",
                                                  "flashinfer/gemm.py": TREE["flashinfer/gemm.py"]})
    assert "1 finding(s) in 3 files checked" in run(one_each).output.splitlines()


def test_json_and_sarif_keep_one_result_per_item(tmp_path):
    write_tree(tmp_path, TREE)
    report = json.loads(run(tmp_path, "--format", "json").output)
    assert sum(f["rule"] == "EXP009" for f in report["findings"]) == 27
    sarif = json.loads(run(tmp_path, "--format", "sarif").output)
    assert sum(r["ruleId"] == "EXP009" for r in sarif["runs"][0]["results"]) == 27
