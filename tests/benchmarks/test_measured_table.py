"""README.md's "Measured" table is what benchmarks/measured.py makes of the stored records
(benchmarks/results/), and a record that lacks a field is a clear error. No benchmark runs."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from ..benchmark_modules import BENCHMARKS, load_benchmark

ROOT = Path(__file__).resolve().parents[2]


measured = load_benchmark("measured")
bench_record = sys.modules["bench_record"]


def test_readme_table_is_the_stored_records_table():
    current = measured.readme_table((ROOT / "README.md").read_text())
    assert current == measured.table(measured.load_records()), (
        "README.md's Measured table drifted from benchmarks/results/: run python benchmarks/measured.py --table-only")


def test_every_row_says_where_it_was_measured():
    records = measured.load_records()
    for name, record in records.items():
        benchmark = measured.BY_NAME[name]
        assert record["command"].startswith(f"python benchmarks/{benchmark.script}"), name
        assert "--json" not in record["command"], name
        if record["source"] == "run":
            assert record["machine"]["cpus"], name
        else:  # figures written from the commit that measured them
            assert record["source"].split()[0] == "commit" and len(record["source"].split()[1]) == 40, name
        if benchmark.gpu:
            assert record["machine"]["gpu"], name
    lines = measured.readme_table((ROOT / "README.md").read_text()).splitlines()[2:]
    assert len(lines) == sum(len(measured.BY_NAME[name].rows(records[name])) for name in records)
    assert all(line.count(" | ") == 4 and line.rstrip(" |").split(" | ")[-1] for line in lines)


def test_every_quoted_benchmark_writes_a_record():
    for benchmark in measured.BENCHMARKS:
        assert '"--json"' in (BENCHMARKS / benchmark.script).read_text(), benchmark.script


@pytest.fixture
def results(tmp_path, monkeypatch):
    """A copy of the stored records, in place of benchmarks/results/."""
    copy = tmp_path / "results"
    shutil.copytree(BENCHMARKS / "results", copy)
    monkeypatch.setattr(measured, "RESULTS", copy)
    return copy


def _edit(path: Path, change) -> None:
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))


@pytest.mark.parametrize("field", bench_record.REQUIRED)
def test_a_record_without_a_required_field_is_an_error(results, field):
    _edit(results / "check_speed.json", lambda record: record.pop(field))
    with pytest.raises(measured.RecordError, match=f"check_speed.json: the record lacks '{field}'"):
        measured.load_records()


@pytest.mark.parametrize("field", bench_record.MACHINE_REQUIRED)
def test_a_record_whose_machine_lacks_a_field_is_an_error(results, field):
    _edit(results / "jit_cache.json", lambda record: record["machine"].pop(field))
    with pytest.raises(measured.RecordError, match=f"jit_cache.json: the record's 'machine' lacks '{field}'"):
        measured.load_records()


def _nested_figure():
    """``(benchmark name, dotted field)`` of the first figure of the table that lies
    below the top of its record's figures (the benchmarks follow the features: any
    such figure will do)."""
    return next((b.name, field) for b in measured.BENCHMARKS for field in b.figures if "." in field)


def _pop(figures: dict, dotted: str) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        figures = figures[key]
    figures.pop(last)


def test_a_record_without_a_figure_its_row_shows_is_an_error(results):
    name, field = _nested_figure()
    _edit(results / f"{name}.json", lambda record: _pop(record["figures"], field))
    lacks = f"{name}.json: the record's 'figures' lacks '{field}'"
    with pytest.raises(measured.RecordError, match=re.escape(lacks)):
        measured.load_records()


def test_a_missing_or_unknown_record_is_an_error(results):
    (results / "bot_parsers.json").unlink()
    with pytest.raises(measured.RecordError, match="no record for bot_parsers"):
        measured.load_records()
    (results / "other.json").write_text("{}")
    with pytest.raises(measured.RecordError, match="no benchmark 'other'"):
        measured.load_records()


def test_a_bad_source_or_date_is_an_error(results):
    last = results / f"{measured.BENCHMARKS[-1].name}.json"
    _edit(last, lambda record: record.update(source="somewhere"))
    with pytest.raises(measured.RecordError, match="'source' is 'somewhere'"):
        measured.load_records()
    _edit(last, lambda record: record.update(source="run", date="yesterday"))
    with pytest.raises(measured.RecordError, match="'date' is 'yesterday'"):
        measured.load_records()


def test_table_only_rewrites_a_drifted_table_and_check_sees_it(results, tmp_path, monkeypatch, capsys):
    readme = tmp_path / "README.md"
    text = (ROOT / "README.md").read_text()
    readme.write_text(text.replace(measured.readme_table(text), "| stale |"))
    monkeypatch.setattr(measured, "README", readme)
    assert measured.main(["--check"]) == 1
    _edit(results / "jit_cache.json", lambda record: record["figures"].update(disk_hit_us_min=12.3, disk_hit_us_max=45.6))
    assert measured.main(["--table-only"]) == 0
    assert measured.main(["--check"]) == 0
    new = readme.read_text()
    assert "| 12-46 us (" in new
    # nothing but the table changed
    assert new.replace(measured.readme_table(new), "") == text.replace(measured.readme_table(text), "")
    capsys.readouterr()


def test_the_recorded_command_leaves_out_the_record_and_names_the_tree_dir(tmp_path):
    tree = tmp_path / "fi"
    (tree / "flashinfer").mkdir(parents=True)
    argv = ["--root", str(tree), "--jobs", "2", "--json", "x.json"]
    command = bench_record.command("check_speed.py", argv, tree=tree)
    assert command == "python benchmarks/check_speed.py --root DIR --jobs 2"
    argv = [f"--flashinfer-src={tree}/flashinfer", "--json=x"]
    command = bench_record.command("dispatch_overhead.py", argv, tree=tree)
    assert command == "python benchmarks/dispatch_overhead.py --flashinfer-src=DIR/flashinfer"


# A figure stated in prose nobody re-measures: a speed-up, a time or a bandwidth.
FIGURE = re.compile(r"\b\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?x\b|\b\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)? ?(?:us|ms|TB/s|TFLOP/s)\b")


def test_feature_readmes_figures_are_the_records():
    """Each feature README's measured block is what measured.py makes of the stored records
    (split-K once claimed 3.7-4.6x where its record says 2.09-2.25x)."""
    blocks = measured.feature_blocks(measured.load_records())
    readmes = {feature: measured.feature_readme(feature) for feature in measured.FEATURE_FIGURES}
    assert set(blocks) == {str(path.relative_to(ROOT)) for path in readmes.values() if path is not None}
    assert {str(p.relative_to(ROOT)) for p in (ROOT / "flashinfer/experimental").glob("*/README.md")
            if FIGURE.search(p.read_text()) or measured.BEGIN in p.read_text()} <= set(blocks)
    for rel, (current, made) in blocks.items():
        assert current == made, f"{rel}'s figures drifted from benchmarks/results/: run benchmarks/measured.py --table-only"
    if readmes["splitk_gemm"] is not None:  # still in the repository (not removed)
        assert "2.25x / 2.19x / 2.09x" in blocks[str(readmes["splitk_gemm"].relative_to(ROOT))][0]


def test_feature_readmes_state_no_figure_outside_the_measured_block():
    for readme in sorted((ROOT / "flashinfer/experimental").glob("*/README.md")):
        text = readme.read_text()
        if measured.BEGIN in text:
            text = text[:text.index(measured.BEGIN)] + text[text.index(measured.END):]
        stray = FIGURE.findall(text)
        assert not stray, f"{readme.relative_to(ROOT)} states {stray} outside its measured block (no record backs them)"


def test_a_slow_benchmark_runs_only_when_asked(results, tmp_path, monkeypatch, capsys):
    readme = tmp_path / "README.md"
    readme.write_text((ROOT / "README.md").read_text())
    monkeypatch.setattr(measured, "README", readme)
    ran = []
    monkeypatch.setattr(measured, "run", lambda benchmark, tree: ran.append(benchmark.name) or f"{benchmark.name}: ran")
    assert measured.main(["--only", "lifecycle_release"]) == 0
    assert ran == [] and "lifecycle_release: slow, not run without --slow" in capsys.readouterr().out
    assert measured.main(["--only", "lifecycle_release", "--slow"]) == 0
    assert ran == ["lifecycle_release"]


def test_feature_readmes_are_found_where_remove_and_graduate_leave_them(tmp_path):
    """After ``graduate gated_rmsnorm --to flashinfer.gated_norm`` its README lies in the
    new home, which the shim names; after ``remove splitk_gemm`` there is none to fill."""
    from policy_checks.lifecycle.graduate.move import shim

    feature = "gated_rmsnorm"  # named once: a graduation of it lists each string spelling its old path
    readme = f"# {feature}\n\n{measured.BEGIN}\n- stale\n{measured.END}\n"
    (tmp_path / "flashinfer/gated_norm").mkdir(parents=True)
    (tmp_path / "flashinfer/gated_norm/README.md").write_text(readme)
    old = tmp_path / "flashinfer" / "experimental" / feature
    old.mkdir(parents=True)
    (old / "__init__.py").write_bytes(shim(feature, f"flashinfer.experimental.{feature}",
                                           "flashinfer.gated_norm", True, "flashinfer.gated_norm"))
    assert measured.feature_readme(feature, tmp_path) == tmp_path / "flashinfer/gated_norm/README.md"
    assert measured.feature_readme("splitk_gemm", tmp_path) is None
    if "kernels" not in measured.BY_NAME:
        pytest.skip("the kernels benchmark, whose figures the block quotes, went with the features")
    blocks = measured.feature_blocks(measured.load_records(), tmp_path)
    assert list(blocks) == ["flashinfer/gated_norm/README.md"]
    assert blocks["flashinfer/gated_norm/README.md"][0] == "- stale"
