"""How fast is ``policy-check consumer`` per file, against ``policy-check run``? Prints figures;
asserts nothing.

    python benchmarks/consumer_speed.py --flashinfer-root /tmp/fi --consumer /tmp/vllm [--jobs 2]

``--flashinfer-root`` is an unpacked FlashInfer wheel (``pip download --no-deps
flashinfer-python==0.7.4``, unzipped outside this repository, never installed);
``--consumer`` the Python sources of a serving framework (the vllm wheel, unzipped the same
way). Each command is a fresh process, timed from the outside, best of ``--repeat``:

- ``run``: ``policy-check run --root FLASHINFER --no-cache`` (every file read, a cold run), and
  again with a warm facts cache;
- ``surface``: ``policy-check consumer surface --root FLASHINFER`` (the index, once per release);
- ``consumer``: ``policy-check consumer --surface FILE CONSUMER`` (the check itself), with
  ``--no-cache`` (every file that imports FlashInfer parsed) and with its findings remembered.

Files per second is files checked / wall seconds (and / CPU seconds: user + system of the
process and its workers, steadier on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY / "benchmarks"))

import bench_record  # noqa: E402


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list) -> tuple:
    """``(wall seconds, CPU seconds, stdout)`` of one fresh process."""
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    cpu, start = _cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "policy_checks", *command], capture_output=True, text=True,
                          env=environment, cwd=REPOSITORY)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - start, _cpu() - cpu, done.stdout


def best(command: list, repeat: int) -> tuple:
    runs = [timed(command) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs), runs[-1][2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flashinfer-root", type=Path, required=True)
    parser.add_argument("--consumer", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="workers of `run`")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this JSON record")
    args = parser.parse_args()
    fi, consumer = args.flashinfer_root.resolve(), args.consumer.resolve()

    run_wall, run_cpu, out = best(["run", "--root", str(fi), "--no-cache", "--jobs", str(args.jobs),
                                   "--format", "json", "--exit-zero"], args.repeat)
    run_files = json.loads(out)["files_checked"]
    with tempfile.TemporaryDirectory(prefix="consumer-speed-") as scratch:
        warm = ["run", "--root", str(fi), "--cache-dir", str(Path(scratch) / "cache"), "--jobs", str(args.jobs),
                "--format", "json", "--exit-zero"]
        timed(warm)  # fills the cache
        warm_wall, warm_cpu, _ = best(warm, args.repeat)
        surface = Path(scratch) / "surface.json"
        surface_wall, surface_cpu, _ = best(["consumer", "surface", "--root", str(fi), "-o", str(surface)],
                                            args.repeat)
        check = ["consumer", "--surface", str(surface), "--root", str(consumer), "--format", "json", str(consumer)]
        check_wall, check_cpu, out = best([*check, "--no-cache"], args.repeat)
        remembered = [*check, "--cache-dir", str(Path(scratch) / "cache")]
        timed(remembered)  # fills the store
        warm_check_wall, warm_check_cpu, _ = best(remembered, args.repeat)
    report = json.loads(out)
    check_files = report["files_checked"]

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; best of {args.repeat}")
    print(f"  {'command':<52} {'files':>6} {'wall s':>7} {'cpu s':>7} {'files/s':>8} {'files/cpu s':>11}")
    rows = [
        (f"run --root {fi.name} --no-cache --jobs {args.jobs}", run_files, run_wall, run_cpu),
        (f"run --root {fi.name} (warm cache) --jobs {args.jobs}", run_files, warm_wall, warm_cpu),
        (f"consumer surface --root {fi.name}", run_files, surface_wall, surface_cpu),
        (f"consumer --surface FILE {consumer.name} --no-cache", check_files, check_wall, check_cpu),
        (f"consumer --surface FILE {consumer.name} (warm cache)", check_files, warm_check_wall, warm_check_cpu),
    ]
    for label, files, wall, cpu in rows:
        print(f"  {label:<52} {files:>6} {wall:>7.2f} {cpu:>7.2f} {files / wall:>8.0f} {files / max(cpu, 1e-9):>11.0f}")
    print(f"  consumer findings on {consumer.name}: {len(report['findings'])}")
    figures = {
        "run_files_per_s": round(run_files / run_wall), "run_files_per_cpu_s": round(run_files / max(run_cpu, 1e-9)),
        "run_warm_files_per_s": round(run_files / warm_wall),
        "consumer_files_per_s": round(check_files / check_wall),
        "consumer_files_per_cpu_s": round(check_files / max(check_cpu, 1e-9)),
        "consumer_warm_files_per_s": round(check_files / warm_check_wall),
        "surface_s": round(surface_wall, 2), "consumer_findings": len(report["findings"]),
    }
    if args.json:
        command = re.sub(r"--json \S+", "", " ".join(sys.argv)).strip()
        bench_record.write(args.json, "consumer_speed", figures, command)


if __name__ == "__main__":
    main()
