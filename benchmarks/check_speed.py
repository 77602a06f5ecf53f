"""How fast is `policy-check run` on a real FlashInfer tree? Prints figures; asserts nothing.

    python benchmarks/check_speed.py --root /tmp/fi/src --jobs 2 [--repeat 3]

Get the tree with ``pip download --no-deps flashinfer-python==0.7.4`` and unzip the
wheel into a folder outside this repository (never install it here). Four runs,
each a fresh ``python -m policy_checks run`` process, timed from the outside, with
the cache in a fresh temporary directory (removed afterwards):

- cold: no cache directory;
- warm: the cache from the cold run, nothing changed;
- one file changed: a comment appended to one core module (restored afterwards);
- no cache: ``--no-cache`` (the cache neither read nor written).

Each run is reported as wall-clock seconds and CPU seconds (user + system, of the
run's process and its workers, from ``getrusage(RUSAGE_CHILDREN)``): on a shared
machine the wall clock follows the neighbours' load, the CPU time much less.
``--repeat N`` does the four runs N times (each time with a fresh cache) and
reports the best of each. Peak memory is the largest resident set of the run's
processes (the main process or one worker).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(root: Path, jobs: int, cache: str, *extra: str) -> tuple:
    """``(wall seconds, CPU seconds, files checked, findings)`` of one run."""
    command = [sys.executable, "-m", "policy_checks", "run", "--root", str(root), "--format", "json",
               "--jobs", str(jobs), "--exit-zero", "--cache-dir", cache, *extra]
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    cpu, start = _cpu(), time.perf_counter()
    # run in the repository: ``-m`` puts the working directory first on sys.path
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=True, cwd=REPOSITORY)
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    document = json.loads(done.stdout)
    return seconds, cpu, document["files_checked"], len(document["findings"])


def four_runs(root: Path, jobs: int, changed: str) -> dict:
    """label -> `timed_run` result, with a fresh cache directory (removed afterwards)."""
    runs = {}
    with tempfile.TemporaryDirectory(prefix="policy-check-bench-") as cache:
        runs["cold (no cache dir)"] = timed_run(root, jobs, cache)
        runs["warm (nothing changed)"] = timed_run(root, jobs, cache)
        changed_path = root / changed
        original = changed_path.read_bytes()
        stat = changed_path.stat()
        try:
            changed_path.write_bytes(original + b"\n# benchmark edit\n")
            runs["one file changed"] = timed_run(root, jobs, cache)
        finally:
            changed_path.write_bytes(original)
            os.utime(changed_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        runs["--no-cache"] = timed_run(root, jobs, cache, "--no-cache")
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/fi/src"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--changed", default="flashinfer/gemm/gemm_base.py", help="file edited for the one-file run")
    parser.add_argument("--repeat", type=int, default=1, help="do the four runs this many times; report the best")
    parser.add_argument("--json", type=Path, help="also write the headline figures to this JSON record")
    args = parser.parse_args()
    root = args.root.resolve()
    if not (root / "flashinfer" / "__init__.py").is_file():
        sys.exit(f"{root} holds no flashinfer package; see this script's docstring")
    rounds = [four_runs(root, args.jobs, args.changed) for _ in range(max(args.repeat, 1))]
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

    first = rounds[0]["cold (no cache dir)"]
    print(f"tree: {root}  jobs: {args.jobs}  CPUs: {os.cpu_count()}  best of {len(rounds)}")
    print(f"files checked: {first[2]}  findings: {first[3]}")
    for label in rounds[0]:
        wall = min(r[label][0] for r in rounds)
        cpu = min(r[label][1] for r in rounds)
        print(f"{label:<24} {wall:6.2f} s wall  {cpu:6.2f} s CPU   ({first[3]} findings)")
    print(f"peak RSS of one process: {peak_mib:.0f} MiB")
    if len({r[label][3] for r in rounds for label in r}) != 1:
        print("WARNING: runs disagree on the number of findings")
    if args.json:
        import bench_record

        keys = {"cold (no cache dir)": "cold", "warm (nothing changed)": "warm", "one file changed": "one_changed",
                "--no-cache": "no_cache"}
        figures = {"files_checked": first[2], "findings": first[3], "jobs": args.jobs, "repeat": len(rounds),
                   # every Python file under flashinfer/, also those the checker's settings exclude
                   "package_python_files": sum(1 for _ in (root / "flashinfer").rglob("*.py")),
                   "peak_rss_mib": round(peak_mib)}
        for label, key in keys.items():
            figures[f"{key}_wall_s"] = round(min(r[label][0] for r in rounds), 3)
            figures[f"{key}_cpu_s"] = round(min(r[label][1] for r in rounds), 3)
        bench_record.write(args.json, "check_speed", figures, bench_record.command("check_speed.py", tree=root),
                           tree={"flashinfer_version": bench_record.tree_version(root)})


if __name__ == "__main__":
    main()
