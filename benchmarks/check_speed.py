"""How fast is `policy-check run` on a real FlashInfer tree? Prints figures; asserts nothing.

    python benchmarks/check_speed.py --root /tmp/fi/src --jobs 2

Get the tree with ``pip download --no-deps flashinfer-python==0.7.4`` and unzip the
wheel into a folder outside this repository (never install it here). Four runs,
each a fresh ``python -m policy_checks run`` process, timed from the outside, with
the cache in a fresh temporary directory (removed afterwards):

- cold: no cache directory;
- warm: the cache from the cold run, nothing changed;
- one file changed: a comment appended to one core module (restored afterwards);
- no cache: ``--no-cache`` (the cache neither read nor written).

Peak memory is the largest resident set of the run's processes (the main process
or one worker), from ``getrusage(RUSAGE_CHILDREN)``.
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


def timed_run(root: Path, jobs: int, cache: str, *extra: str) -> tuple:
    command = [sys.executable, "-m", "policy_checks", "run", "--root", str(root), "--format", "json",
               "--jobs", str(jobs), "--exit-zero", "--cache-dir", cache, *extra]
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=True)
    seconds = time.perf_counter() - start
    document = json.loads(done.stdout)
    return seconds, document["files_checked"], len(document["findings"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/fi/src"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--changed", default="flashinfer/gemm/gemm_base.py", help="file edited for the one-file run")
    args = parser.parse_args()
    root = args.root.resolve()
    if not (root / "flashinfer" / "__init__.py").is_file():
        sys.exit(f"{root} holds no flashinfer package; see this script's docstring")
    with tempfile.TemporaryDirectory(prefix="policy-check-bench-") as cache:
        cold = timed_run(root, args.jobs, cache)
        warm = timed_run(root, args.jobs, cache)
        changed_path = root / args.changed
        original = changed_path.read_bytes()
        stat = changed_path.stat()
        try:
            changed_path.write_bytes(original + b"\n# benchmark edit\n")
            one = timed_run(root, args.jobs, cache)
        finally:
            changed_path.write_bytes(original)
            os.utime(changed_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        no_cache = timed_run(root, args.jobs, cache, "--no-cache")
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

    print(f"tree: {root}  jobs: {args.jobs}  CPUs: {os.cpu_count()}")
    print(f"files checked: {cold[1]}  findings: {cold[2]}")
    for label, (seconds, _, findings) in (
        ("cold (no cache dir)", cold), ("warm (nothing changed)", warm),
        ("one file changed", one), ("--no-cache", no_cache),
    ):
        print(f"{label:<24} {seconds:6.2f} s   ({findings} findings)")
    print(f"peak RSS of one process: {peak_mib:.0f} MiB")
    if len({cold[2], warm[2], one[2], no_cache[2]}) != 1:
        print("WARNING: runs disagree on the number of findings")


if __name__ == "__main__":
    main()
