"""What a feature lacks, computed once (``policy_checks.model.records.survey``) for EXP009 and the
board: one finding per item, each with a fingerprint of its own, reported at a file that
exists; and paying any part of a baselined feature's debt only ever removes entries."""

from __future__ import annotations

import collections
import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_checks.model import records as features
from policy_checks.cli import main
from policy_checks.model.config import from_table
from policy_checks.model.records import FIELDS, README_PARTS, markdown_headings, missing_readme_parts
from policy_checks.engine.runner import run

from ..conftest import write_tree

FEATURE_DIR = "flashinfer/experimental/splitk"
RECORD_LINES = {
    "kind": 'kind = "backend"', "owner": 'owner = "octocat"', "tracking_issue": "tracking_issue = 12",
    "admitted": "admitted = 2026-11-02", "target_release": 'target_release = "0.8.0"',
    "target_date": "target_date = 2026-11-30", "apis": "apis = []", "backends": 'backends = ["mm_bf16:splitk"]',
    "auto_routing": "auto_routing = true",
}
PART_HEADINGS = {"what is experimental": "## What is experimental", "supported cases and limits": "## Supported cases",
                 "gates": "## Gates", "automatic routing": "## Automatic routing"}
ITEMS = ("FEATURE.toml", *FIELDS, "README.md", *(f"README.md: {p}" for p in README_PARTS), "tests", "example")


def tree_with(present: frozenset, root: Path) -> Path:
    """A source checkout whose feature ``splitk`` has exactly the items ``present``: a field
    needs the record to live in, a README part the README (each written when asked for)."""
    files = {"flashinfer/__init__.py": "", "flashinfer/experimental/__init__.py": "", f"{FEATURE_DIR}/__init__.py": "",
             "tests/test_stable.py": "def test():\n    pass\n"}
    if "FEATURE.toml" in present or present & set(FIELDS):
        files[f"{FEATURE_DIR}/FEATURE.toml"] = "".join(RECORD_LINES[f] + "\n" for f in FIELDS if f in present)
    parts = [p for p in README_PARTS if f"README.md: {p}" in present]
    if "README.md" in present or parts:
        files[f"{FEATURE_DIR}/README.md"] = "# Split-K\n\n" + "".join(PART_HEADINGS[p] + "\nx\n\n" for p in parts)
    if "tests" in present:
        files["tests/experimental/splitk/test_splitk.py"] = "def test():\n    pass\n"
    if "example" in present:
        files["examples/splitk_demo.py"] = "# splitk\nprint('splitk')\n"
    return write_tree(root, files)


def exp009(root: Path):
    return run(root, from_table({"select": ["EXP009"]}), use_cache=False, progress=False)


def items_reported(result) -> list[str]:
    return sorted(f.subject.split(": ", 1)[1] for f in result.findings)


def board_lacks(root: Path) -> dict:
    result = CliRunner().invoke(main, ["features", "--root", str(root), "--format", "json", "--today", "2026-11-27"])
    assert result.exit_code == 0, result.output
    return {row["feature"]: row["lacks"] for row in json.loads(result.output)["features"]}


# --- one finding per item, as the board lists them -------------------------------------------

def test_nothing_at_all_lacks_every_item_one_finding_each(tmp_path):
    root = tree_with(frozenset(), tmp_path / "p")
    result = exp009(root)
    assert items_reported(result) == sorted(ITEMS)
    assert {f.path for f in result.findings} == {f"{FEATURE_DIR}/__init__.py"}
    assert len({(f.path, f.subject) for f in result.findings}) == len(ITEMS)  # each its own fingerprint
    assert board_lacks(root) == {"splitk": list(ITEMS)}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(present=st.frozensets(st.sampled_from(ITEMS)))
def test_the_board_and_exp009_name_the_same_items(tmp_path_factory, present):
    root = tree_with(present, tmp_path_factory.mktemp("agree"))
    reported = items_reported(exp009(root))
    lacks = board_lacks(root).get("splitk", [])
    assert sorted(lacks) == reported
    implied = set(present) | ({"FEATURE.toml"} if present & set(FIELDS) else set()) | (
        {"README.md"} if any(i.startswith("README.md: ") for i in present) else set())
    assert set(reported) == set(ITEMS) - implied


def test_a_wrong_value_is_reported_at_its_line_and_listed_on_the_board(tmp_path):
    root = tree_with(frozenset(ITEMS), tmp_path / "p")
    toml = root / FEATURE_DIR / "FEATURE.toml"
    toml.write_text(toml.read_text().replace('owner = "octocat"', 'owner = "not a login"'))
    [finding] = exp009(root).findings
    assert (finding.path, finding.line, finding.subject) == (f"{FEATURE_DIR}/FEATURE.toml", 2, "splitk: owner")
    assert board_lacks(root) == {"splitk": ["owner"]}


def test_every_location_is_a_file_that_exists(tmp_path):
    """A feature without ``__init__.py`` (a namespace package) is reported at its first
    Python file, one with no Python file at its FEATURE.toml: never at a missing file."""
    root = write_tree(tmp_path / "p", {
        "flashinfer/__init__.py": "", "flashinfer/experimental/__init__.py": "",
        "flashinfer/experimental/namespace/b_kernels.py": "", "flashinfer/experimental/namespace/a_api.py": "",
        "flashinfer/experimental/namespace/README.md": "# x\n",
        "flashinfer/experimental/record_only/FEATURE.toml": "kind = 1\n",
    })
    result = exp009(root)
    assert {f.path for f in result.findings} == {
        "flashinfer/experimental/namespace/a_api.py", "flashinfer/experimental/record_only/FEATURE.toml"}
    assert all((root / f.path).is_file() for f in result.findings)


# --- the fingerprint property: paying debt off only removes entries ---------------------------

def fingerprints(root: Path) -> collections.Counter:
    return collections.Counter(exp009(root).fingerprints)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.frozensets(st.sampled_from(ITEMS)), added=st.frozensets(st.sampled_from(ITEMS), min_size=1))
def test_adding_items_to_a_baselined_feature_only_removes_entries(tmp_path_factory, before, added):
    """Baseline the feature with the items ``before``; add ``added`` (a correct record with
    more fields, a README with more sections, tests, an example): no fingerprint is new."""
    old = fingerprints(tree_with(before, tmp_path_factory.mktemp("before")))
    new = fingerprints(tree_with(before | added, tmp_path_factory.mktemp("after")))
    assert not new - old, sorted(new - old)
    assert sum(new.values()) <= sum(old.values())


def test_a_record_added_to_a_baselined_feature_keeps_the_run_green(tmp_path):
    """The issue's case, end to end: the baseline accepts a feature with nothing; a correct
    FEATURE.toml is added; `run` stays green and counts the record's entries as fixed."""
    root = tree_with(frozenset({"tests", "example"}), tmp_path / "p")
    assert CliRunner().invoke(main, ["baseline", "--root", str(root)]).exit_code == 0
    tree_with(frozenset({"FEATURE.toml", *FIELDS}), root)
    result = CliRunner().invoke(main, ["run", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert "10 baselined finding(s) no longer found (fixed)" in result.output
    assert "All clear" in result.output  # the README's five entries still accept its findings


# --- reading the README as Markdown ----------------------------------------------------------

def test_headings_are_atx_and_setext_outside_code_blocks():
    text = (
        "Title\n=====\n\nSection two\n-----------\n\n   ### Three ###\n#NotAHeading\n    # indented code\n\n"
        "```bash\n# a comment\n```\n~~~~\n# not either\n~~~\n# still code\n~~~~\n"
        "````md\n```\n# inside a longer fence\n````\n**Bold lead-in.** text\n#\n## Closed #\n"
    )
    assert markdown_headings(text) == ["Title", "Section two", "Three", "Bold lead-in.", "", "Closed"]


@pytest.mark.parametrize("heading, part, names", [
    ("# Qwen gated attention block (experimental)", "gates", False),
    ("## Gates", "gates", True),
    ("## Gating and opt-in", "gates", True),
    ("## How to opt in", "gates", True),
    ("## Gatekeeping", "gates", False),
    ("## Autograd", "automatic routing", False),
    ("## Auto-routing and autotuning", "automatic routing", True),
    ('## With backend="auto"', "automatic routing", True),
    ("## Supported shapes", "supported cases and limits", True),
    ("## Unsupported dtypes", "supported cases and limits", True),
    ("## Unsupportable", "supported cases and limits", False),
    ("## Scope", "what is experimental", True),
])
def test_a_heading_names_a_part_by_a_whole_word(heading, part, names):
    assert (part not in missing_readme_parts(heading + "\n")) is names


def test_comment_lines_in_code_blocks_cover_nothing():
    text = ("# Block (experimental)\n\n## Supported cases and limits\n\n```python\n# gates: set the variable\n"
            "# auto routing: none\n```\n")
    assert missing_readme_parts(text) == ["gates", "automatic routing"]


@pytest.mark.parametrize("line", ["#" * 200_000, "*" * 200_000, "`" * 200_000, "~" * 200_000, "- " * 100_000,
                                  "**" + "a" * 200_000, "# " + "gate " * 40_000])
def test_reading_hostile_readmes_takes_linear_time(line):
    start = time.perf_counter()
    missing_readme_parts((line + "\n") * 5)
    assert time.perf_counter() - start < 2.0


@given(st.text(alphabet="#*`~=- \nagtesuporAIG_\t>|", max_size=300))
def test_any_text_reads_without_error(text):
    missing_readme_parts(text)


# --- on FlashInfer 0.7.4 (FI074_TREE names an unpacked flashinfer-python 0.7.4 wheel) ---------
# Opt-in, so that what the default lane runs never depends on what lies in a machine's /tmp.

FI074 = Path(os.environ.get("FI074_TREE") or "/nonexistent")


@pytest.mark.skipif(not (FI074 / "flashinfer/experimental").is_dir(),
                    reason="set FI074_TREE to an unpacked flashinfer-python 0.7.4 wheel")
def test_on_flashinfer_074_every_finding_is_at_a_file_and_agrees_with_the_board():
    result = run(FI074, from_table({}), select=["EXP009"], use_cache=False, progress=False)
    assert all((FI074 / f.path).is_file() for f in result.findings)
    by_feature = collections.defaultdict(list)
    for finding in result.findings:
        feature, item = finding.subject.split(": ", 1)
        by_feature[feature].append(item)
    board = board_lacks(FI074)
    assert len(board) == 71 and {k: sorted(v) for k, v in board.items()} == {
        k: sorted(v) for k, v in by_feature.items()}
    assert "flashinfer/experimental/deepgemm_kgroup_gemm/__init__.py" not in {f.path for f in result.findings}
    features_with_readme = [f for f in features.survey(FI074, from_table({}), lambda rel: False, lambda: ())
                            if (f.path / "README.md").is_file()]
    assert len(features_with_readme) == 4
