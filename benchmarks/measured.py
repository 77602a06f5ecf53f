"""README.md's "Measured" table, regenerated from the benchmarks' records.

    python benchmarks/measured.py --flashinfer-root DIR   # run the CPU benchmarks, store, rewrite the table
    python benchmarks/measured.py --table-only            # rewrite the table from the stored records only
    python benchmarks/measured.py --check                 # exit 1 if README.md's table is not the records'

Each benchmark the table quotes runs as ``python benchmarks/<script> ARGS --json FILE``
(the arguments below, which the table shows), printing its own output as usual; its
record (benchmarks/bench_record.py: figures, command, date, machine) is stored as
``benchmarks/results/<name>.json``. Then the table between ``<!-- measured:begin -->``
and ``<!-- measured:end -->`` in README.md is rewritten from every stored record, each
row saying where and when its figures were measured.

DIR is FlashInfer 0.7.4's wheel unpacked outside this repository
(``pip download --no-deps flashinfer-python==0.7.4``, unzip; never install it); the
benchmarks that read it are skipped, with a note, when ``--flashinfer-root`` is not given,
and their stored records stay. The GPU benchmarks run only with ``--gpu`` (on a CUDA
machine); their stored records may come from the commit that measured them
(``"source": "commit <sha>"``). The slow ones (every feature of the tree through
``remove`` and ``graduate``: about half an hour, and an interpreter holding FlashInfer's
dependencies, see lifecycle_release.py) run only with ``--slow``. ``--only NAME,...``
runs some benchmarks only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parent
RESULTS = HERE / "results"
README = REPOSITORY / "README.md"
BEGIN = "<!-- measured:begin -->"
END = "<!-- measured:end -->"

sys.path.insert(0, str(HERE))
import bench_record  # noqa: E402

from policy_checks.model.records import graduated_to  # noqa: E402


class RecordError(Exception):
    """A stored record cannot give its rows: missing, unreadable, or lacking a field."""


@dataclass(frozen=True)
class Benchmark:
    name: str  # its record is benchmarks/results/<name>.json
    script: str
    args: Callable  # tree (Path or None) -> the script's arguments, as the table gives them
    figures: tuple  # the figures its rows read, dotted for nested ones ("norms.rmsnorm_tbps")
    rows: Callable  # record -> [(what, figure, target)]
    needs_tree: bool = False
    gpu: bool = False
    slow: bool = False  # run only with --slow (minutes, and an interpreter of its own)


def _version(record: dict) -> str:
    return "FlashInfer " + ((record.get("tree") or {}).get("flashinfer_version") or "(version unknown)")


def _us(ns: float) -> str:
    return f"{ns / 1000:.2f}"


def _dispatch_rows(record: dict) -> list:
    f = record["figures"]
    theirs = f.get("flashinfer")
    compare = (f" (FlashInfer {theirs.get('version') or '?'}'s own, same run: {_us(theirs['explicit_overhead_ns_min'])}"
               f" / {_us(theirs['auto_overhead_ns_min'])})" if theirs else "")
    loaded = "loaded" if f["torch_loaded_by_import_flashinfer"] else "not loaded"
    return [
        (f"dispatch overhead, explicit / auto (min of {f['repeat']} repeats)",
         f"{_us(f['explicit_overhead_ns_min'])} us / {_us(f['auto_overhead_ns_min'])} us{compare}", "0.5 / 1 us"),
        ("`import flashinfer`", f"{f['flashinfer_import_ms']:.1f} ms, torch {loaded} "
         f"(`import torch`: {f['torch_import_ms'] / 1000:.1f} s)", "light"),
    ]


def _check_rows(record: dict) -> list:
    f = record["figures"]
    what = (f"checker on {_version(record)} ({f['files_checked']:,} Python files: `flashinfer/`'s "
            f"{f['package_python_files']:,} less `flashinfer/data`, excluded by default), "
            "cold / warm / one file changed")
    figure = (f"{f['cold_wall_s']:.1f} s / {f['warm_wall_s']:.2f} s / {f['one_changed_wall_s']:.2f} s, "
              f"{f['peak_rss_mib']} MiB (CPU {f['cold_cpu_s']:.1f} / {f['warm_cpu_s']:.2f} / "
              f"{f['one_changed_cpu_s']:.2f} s)")
    return [(what, figure, "5 s / 0.5 s / 1 s, 1 GiB")]


def _parsers_rows(record: dict) -> list:
    f = record["figures"]
    misses = f", {f['misses']} case(s) over the target" if f["misses"] else ""
    return [(f"bot parsers, adversarial {f['largest_size'] // 1024} KB bodies "
             f"({f['cases']} cases x {f['parsers']} parsers)",
             f"slowest {f['slowest_ms']:.1f} ms (`{f['slowest_parser']}`){misses}", f"{f['target_ms']:g} ms")]


def _baseline_rows(record: dict) -> list:
    f = record["figures"]
    return [(f"a {f['entries']:,}-entry baseline on a warm run of {_version(record)}",
             f"{f['wall_added_ms']:+.0f} ms ({f['wall_without_ms']:.0f} -> {f['wall_with_ms']:.0f} ms), "
             f"CPU {f['cpu_added_ms']:+.0f} ms; best of {f['repeat']}", "50 ms")]


def _lifecycle_rows(record: dict) -> list:
    f = record["figures"]
    runs = f["commands"].values()

    def spread(command: str) -> str:
        seconds = [run[f"{command}_s"] for run in runs]
        refused = sum(run[f"{command}_exit"] == 1 for run in runs)
        return (f"{command} {min(seconds):.1f}-{max(seconds):.1f} s"
                + (f" ({refused} refused)" if refused else ""))

    return [
        (f"`policy-check features` on {_version(record)} ({f['features']} features), whole process",
         f"{f['features_s']:.2f} s (best of {f['repeat']})", "1 s"),
        (f"`policy-check remove` / `graduate --diff` on {_version(record)} ({f['python_files_read']:,} Python files "
         f"read, the checker's), {len(f['commands'])} features",
         f"{spread('remove')}, {spread('graduate')} (best of {f['repeat']})", "none set"),
    ]


def _release_rows(record: dict) -> list:
    f = record["figures"]
    s = f["summary"]

    def outcomes(command: str) -> str:
        trials = [t for t in f["trials"] if t["command"] == command]
        done = sum(t["exit"] == 0 for t in trials)
        return f"{command} {done} done, {sum(t['exit'] == 1 for t in trials)} refused"

    failures = sum(1 for t in f["trials"] for c in t["checks"].values() if c["status"] not in ("pass", "n.a."))
    done, refused = s["ratio_done"], s["ratio_refused"]
    features = len({t["feature"] for t in f["trials"]})
    return [(f"`policy-check remove` and `graduate` on every feature of {_version(record)} ({features}), "
             "`--diff` then for real, against a cold `policy-check run` of the same tree",
             f"{outcomes('remove')}, {outcomes('graduate')}; x cold done: median {done['median']:.2f}, max "
             f"{done['max']:.2f}; refused: max {refused['max']:.2f}; {failures} invariant failure{'' if failures == 1 else 's'} "
             f"({len(f['trials'][0]['checks'])} checks a trial)",
             f"{done['limit']:g}x done, {refused['limit']:g}x refused")]


def _jit_rows(record: dict) -> list:
    f = record["figures"]
    return [("JIT cache, cached spec found and read",
             f"{f['disk_hit_us_min']:.0f}-{f['disk_hit_us_max']:.0f} us ({f['specs']} specs)", "1 ms")]


def _autotune_rows(record: dict) -> list:
    f = record["figures"]
    return [(f"autotune cache load, {f['load_entries']:,} entries",
             f"{f['load_wall_ms_min']:.0f} ms, CPU {f['load_cpu_ms_min']:.0f} ms (min of {f['loads']} loads)",
             "100 ms")]


def _sweep_rows(record: dict) -> list:
    g = record["figures"]["default_gemm"]
    ours, cublas = g["tflops"], g["cublas_tflops"]
    return [(f"`mm_bf16` NVRTC vs cuBLAS, 4096^3 / 8192^3 (default kernel `{g['variant']}`)",
             f"{ours['4096']:.0f} / {ours['8192']:.0f} TFLOP/s: {ours['4096'] / cublas['4096']:.2f} / "
             f"{ours['8192'] / cublas['8192']:.2f} of cuBLAS ({cublas['4096']:.0f} / {cublas['8192']:.0f})", "0.5")]


def _kernels_rows(record: dict) -> list:
    f = record["figures"]
    ratios = f["splitk_vs_nvrtc"]["n8192"]
    norms = f["norms"]
    hbm = norms["hbm_tbps"]
    return [
        ("split-K vs stable NVRTC, M = 1, 4, 16, N = K = 8192",
         " / ".join(f"{ratios[m]:.2f}x" for m in ("1", "4", "16")), "1.5x"),
        ("`rmsnorm` / `gated_rmsnorm`, 16384 x 8192 bf16",
         f"{norms['rmsnorm_tbps']:.2f} / {norms['gated_rmsnorm_tbps']:.2f} TB/s "
         f"({norms['rmsnorm_tbps'] / hbm:.0%} / {norms['gated_rmsnorm_tbps'] / hbm:.0%} of {hbm:g})", "70%"),
    ]


#: The table's benchmarks, in the table's order.
LIFECYCLE_FEATURES = ("sm110_xqa", "balanced_gqa_decode", "mega_moe_v3", "gdn_sm120_cute")
BENCHMARKS = (
    Benchmark("dispatch_overhead", "dispatch_overhead.py",
              lambda tree: ["--flashinfer-src", str(tree / "flashinfer")] if tree else [],
              ("repeat", "explicit_overhead_ns_min", "auto_overhead_ns_min", "flashinfer", "flashinfer_import_ms",
               "torch_import_ms", "torch_loaded_by_import_flashinfer"), _dispatch_rows),
    Benchmark("check_speed", "check_speed.py", lambda tree: ["--root", str(tree), "--jobs", "2"],
              ("files_checked", "package_python_files", "cold_wall_s", "warm_wall_s", "one_changed_wall_s",
               "cold_cpu_s", "warm_cpu_s", "one_changed_cpu_s", "peak_rss_mib"), _check_rows, needs_tree=True),
    Benchmark("bot_parsers", "bot_parsers.py", lambda tree: [],
              ("cases", "parsers", "largest_size", "slowest_ms", "slowest_parser", "misses", "target_ms"),
              _parsers_rows),
    Benchmark("baseline_speed", "baseline_speed.py", lambda tree: [str(tree), "--repeat", "11"],
              ("entries", "repeat", "wall_without_ms", "wall_with_ms", "wall_added_ms", "cpu_added_ms"),
              _baseline_rows, needs_tree=True),
    Benchmark("lifecycle_speed", "lifecycle_speed.py",
              lambda tree: [str(tree), "--repeat", "1"] + [a for f in LIFECYCLE_FEATURES for a in ("--feature", f)],
              ("features", "features_s", "repeat", "python_files_read", "commands"), _lifecycle_rows, needs_tree=True),
    Benchmark("lifecycle_release", "lifecycle_release.py",
              lambda tree: ["--tree", str(tree), "--jobs", "2", "--home", "flashinfer.{feature}_api"],
              ("summary.ratio_done.median", "summary.ratio_done.max", "summary.ratio_done.limit",
               "summary.ratio_refused.max", "summary.ratio_refused.limit", "trials"), _release_rows,
              needs_tree=True, slow=True),
    Benchmark("kernel_sweep", "kernel_sweep.py", lambda tree: ["--sections", "sm90"],
              ("default_gemm.variant", "default_gemm.tflops.4096", "default_gemm.tflops.8192",
               "default_gemm.cublas_tflops.4096", "default_gemm.cublas_tflops.8192"), _sweep_rows, gpu=True),
    Benchmark("kernels", "kernels.py", lambda tree: [],
              ("splitk_vs_nvrtc.n8192.1", "splitk_vs_nvrtc.n8192.4", "splitk_vs_nvrtc.n8192.16", "norms.hbm_tbps",
               "norms.rmsnorm_tbps", "norms.gated_rmsnorm_tbps"), _kernels_rows, gpu=True),
    Benchmark("jit_cache", "jit_cache.py", lambda tree: [], ("specs", "disk_hit_us_min", "disk_hit_us_max"), _jit_rows),
    Benchmark("autotune_overhead", "autotune_overhead.py", lambda tree: [],
              ("load_entries", "loads", "load_wall_ms_min", "load_cpu_ms_min"), _autotune_rows),
)
BY_NAME = {benchmark.name: benchmark for benchmark in BENCHMARKS}


# records ----------------------------------------------------------------------------------


def check_record(record, benchmark: Benchmark, where: str) -> dict:
    """`record` if it has every field the table reads, else `RecordError` naming the first missing one."""
    if not isinstance(record, dict):
        raise RecordError(f"{where}: not a JSON object")
    for key in bench_record.REQUIRED:
        if key not in record:
            raise RecordError(f"{where}: the record lacks {key!r} "
                              f"(every record has {', '.join(bench_record.REQUIRED)})")
    if record["benchmark"] != benchmark.name:
        raise RecordError(f"{where}: a record of {record['benchmark']!r}, not of {benchmark.name!r}")
    source = record["source"]
    if not isinstance(source, str) or not (source == "run" or source.startswith("commit ")):
        raise RecordError(f"{where}: 'source' is {source!r}, not 'run' or 'commit <sha>'")
    try:
        datetime.datetime.fromisoformat(str(record["date"]))
    except ValueError:
        raise RecordError(f"{where}: 'date' is {record['date']!r}, not an ISO date") from None
    machine = record["machine"]
    if not isinstance(machine, dict):
        raise RecordError(f"{where}: 'machine' is not an object")
    for key in bench_record.MACHINE_REQUIRED:
        if key not in machine:
            raise RecordError(f"{where}: the record's 'machine' lacks {key!r}")
    for dotted in benchmark.figures:
        value = record["figures"]
        for part in dotted.split("."):
            if not isinstance(value, dict) or part not in value:
                raise RecordError(f"{where}: the record's 'figures' lacks {dotted!r}")
            value = value[part]
    return record


def load_record(path: Path) -> dict:
    benchmark = BY_NAME.get(path.stem)
    if benchmark is None:
        raise RecordError(f"{path}: no benchmark {path.stem!r} in benchmarks/measured.py")
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise RecordError(f"{path}: cannot read the record: {error}") from None
    return check_record(record, benchmark, _shown(path))


def load_records(directory: Path | None = None) -> dict:
    """name -> record (from `RESULTS` by default), for every benchmark of the table;
    `RecordError` if one is missing or bad."""
    directory = RESULTS if directory is None else directory
    records = {}
    for path in sorted(directory.glob("*.json")):
        records[path.stem] = load_record(path)
    missing = [b.name for b in BENCHMARKS if b.name not in records]
    if missing:
        raise RecordError(f"no record for {', '.join(missing)} in {_shown(directory)}: run "
                          f"python benchmarks/measured.py --only {','.join(missing)}")
    return records


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPOSITORY))
    except ValueError:
        return str(path)


# the table ----------------------------------------------------------------------------------


def where(record: dict, benchmark: Benchmark) -> str:
    """Where and when: the machine and date of a run, or the commit its figures come from."""
    machine, date = record["machine"], str(record["date"])[:10]
    if benchmark.gpu or (machine.get("gpu") and record["source"] != "run"):
        place = machine.get("gpu") or "GPU not recorded"
    else:
        load = machine.get("load_average")
        place = f"{machine.get('cpus')} CPUs ({machine.get('processor') or machine.get('platform')})"
        if load:
            place += f", load {load[0]:.1f}"
    if record["source"] != "run":
        return f"{place}, {record['source'].split()[0]} `{record['source'].split()[1][:7]}` ({date})"
    return f"{place}, {date}"


def table(records: dict) -> str:
    """The Markdown table of `records` (name -> record), rows in `BENCHMARKS` order."""
    lines = ["| what | command | figure | target | measured on |", "|---|---|---|---|---|"]
    previous = None
    for benchmark in BENCHMARKS:
        record = records[benchmark.name]
        try:
            rows = benchmark.rows(record)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as error:
            raise RecordError(f"benchmarks/results/{benchmark.name}.json: cannot make its rows: "
                              f"{type(error).__name__}: {error}") from None
        for what, figure, target in rows:
            command = "same" if record["command"] == previous else f"`{record['command']}`"
            previous = record["command"]
            cells = [what, command, figure, target, where(record, benchmark)]
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


# the feature READMEs' figures -----------------------------------------------------------------
#
# A feature README quotes its figures between the same markers, one list item made here from
# the records: a figure a feature README states elsewhere is one nobody re-measures
# (tests/benchmarks/test_measured_table.py looks for them).


def _splitk_figures(records: dict) -> str:
    record = records["kernels"]
    ratios = record["figures"]["splitk_vs_nvrtc"]["n8192"]
    return (f"- Measured on {where(record, BY_NAME['kernels'])} (`{record['command']}`), N = K = 8192,\n"
            f"  M = 1, 4, 16: {' / '.join(f'{ratios[m]:.2f}x' for m in ('1', '4', '16'))} the speed of the stable\n"
            f"  `\"nvrtc\"` backend (target 1.5x).")


def _gated_rmsnorm_figures(records: dict) -> str:
    record = records["kernels"]
    norms = record["figures"]["norms"]
    return (f"- Measured on {where(record, BY_NAME['kernels'])} (`{record['command']}`) at\n"
            f"  16384 x 8192 bf16: {norms['gated_rmsnorm_tbps']:.2f} TB/s, "
            f"{norms['gated_rmsnorm_tbps'] / norms['hbm_tbps']:.0%} of the {norms['hbm_tbps']:g} TB/s HBM\n"
            f"  bandwidth (target 70%).")


#: feature -> its README's measured block, made from the records.
FEATURE_FIGURES = {
    "splitk_gemm": _splitk_figures,
    "gated_rmsnorm": _gated_rmsnorm_figures,
}


def feature_readme(feature: str, repository: Path = REPOSITORY) -> Path | None:
    """The feature's README: in its experimental directory, or, once it graduated, in
    the home its shim names; None once it was removed. So ``remove`` and ``graduate``
    of a feature leave this script and its test working."""
    directory = repository / "flashinfer" / "experimental" / feature
    home = graduated_to(directory, "flashinfer.experimental") if directory.is_dir() else None
    readme = (repository.joinpath(*home.split(".")) if home else directory) / "README.md"
    return readme if readme.is_file() else None


def feature_blocks(records: dict, repository: Path = REPOSITORY) -> dict:
    """README path (relative to `repository`) -> (its current measured block, the block
    the records make), for each feature still in the repository."""
    blocks = {}
    for feature, make in FEATURE_FIGURES.items():
        readme = feature_readme(feature, repository)
        if readme is not None:
            blocks[readme.relative_to(repository).as_posix()] = (readme_table(readme.read_text()), make(records))
    return blocks


def readme_table(text: str) -> str:
    """The table between the markers of README.md's text, without the markers."""
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 or end < begin:
        raise RecordError(f"a README has no {BEGIN} ... {END} markers")
    return text[begin + len(BEGIN):end].strip("\n")


def with_table(text: str, new: str) -> str:
    readme_table(text)  # the markers are there
    begin, end = text.find(BEGIN), text.find(END)
    return text[:begin + len(BEGIN)] + "\n" + new + "\n" + text[end:]


# running ---------------------------------------------------------------------------------


def run(benchmark: Benchmark, tree: Path | None) -> str:
    """Run one benchmark and store its record; returns a line for the summary."""
    if benchmark.needs_tree and tree is None:
        return f"{benchmark.name}: skipped, it needs --flashinfer-root DIR (the stored record stays)"
    command = [sys.executable, str(HERE / benchmark.script), *benchmark.args(tree)]
    print(f"\n=== {benchmark.name}: {' '.join(command[1:])}", flush=True)
    environment = {k: v for k, v in os.environ.items() if k != "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"}
    with tempfile.TemporaryDirectory(prefix="measured-") as scratch:
        out = Path(scratch) / "record.json"
        done = subprocess.run([*command, "--json", str(out)], cwd=REPOSITORY, env=environment)
        if done.returncode != 0:
            return f"{benchmark.name}: FAILED (exit {done.returncode}); the stored record stays"
        if not out.is_file():
            return f"{benchmark.name}: wrote no record (no device?); the stored record stays"
        record = check_record(json.loads(out.read_text()), benchmark, f"{benchmark.name}'s new record")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{benchmark.name}.json").write_text(json.dumps(record, indent=1) + "\n")
    return f"{benchmark.name}: stored benchmarks/results/{benchmark.name}.json"


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flashinfer-root", type=Path, metavar="DIR",
                        help="FlashInfer 0.7.4's unpacked wheel (holds flashinfer/); "
                             "without it the benchmarks that read it are skipped")
    parser.add_argument("--only", default="", help=f"comma-separated, of: {', '.join(BY_NAME)}")
    parser.add_argument("--gpu", action="store_true", help="also run the GPU benchmarks (a CUDA device is needed)")
    parser.add_argument("--slow", action="store_true",
                        help="also run the slow ones (lifecycle_release: every feature of the tree, about "
                             "half an hour, with FlashInfer's dependencies in /tmp/fi074/venv)")
    parser.add_argument("--table-only", action="store_true",
                        help="run nothing: rewrite the table from the stored records")
    parser.add_argument("--check", action="store_true",
                        help="run nothing: exit 1 if README.md's table is not the records'")
    args = parser.parse_args(argv)
    only = [name for name in args.only.split(",") if name]
    unknown = [name for name in only if name not in BY_NAME]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {list(BY_NAME)}")
    tree = args.flashinfer_root.resolve() if args.flashinfer_root else None
    if tree is not None and not (tree / "flashinfer" / "__init__.py").is_file():
        parser.error(f"{tree} holds no flashinfer package (unzip the wheel there)")

    summary = []
    if not (args.table_only or args.check):
        for benchmark in BENCHMARKS:
            if only and benchmark.name not in only:
                continue
            if benchmark.gpu and not args.gpu:
                summary.append(f"{benchmark.name}: GPU benchmark, not run without --gpu (the stored record stays)")
                continue
            if benchmark.slow and not args.slow:
                summary.append(f"{benchmark.name}: slow, not run without --slow (the stored record stays)")
                continue
            summary.append(run(benchmark, tree))
    try:
        new = table(load_records())
        text = README.read_text()
        current = readme_table(text)
        blocks = feature_blocks(load_records())
    except RecordError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    drifted = [rel for rel, (now, made) in blocks.items() if now != made]
    if args.check:
        if current != new or drifted:
            print("README.md's Measured table or the figures of " + (", ".join(drifted) or "no feature README")
                  + " differ from the stored records: run python benchmarks/measured.py --table-only", file=sys.stderr)
            return 1
        print("README.md's Measured table and the feature READMEs' figures are the stored records'")
        return 0
    for rel in drifted:
        path = REPOSITORY / rel
        path.write_text(with_table(path.read_text(), blocks[rel][1]))
        summary.append(f"{rel}: its measured figures rewritten")
    if current != new:
        README.write_text(with_table(text, new))
    print("\n".join(["", *summary, f"README.md: the Measured table {'rewritten' if current != new else 'unchanged'}"]))
    return 1 if any("FAILED" in line for line in summary) else 0


if __name__ == "__main__":
    sys.exit(main())
