"""How fast is `policy-check fix --diff` next to `policy-check run` on a real FlashInfer tree? Prints figures; asserts nothing.

    python benchmarks/fix_speed.py --root /tmp/fi/src --jobs 2 [--repeat 3]

Get the tree with ``pip download --no-deps flashinfer-python==0.7.4`` and unzip the
wheel into a folder outside this repository (never install it here). Each run is a
fresh ``python -m policy_checks`` process, timed from the outside, with the facts cache
in a fresh temporary directory (removed afterwards); the tree is never written:

- ``run`` cold: no cache directory (it fills the cache);
- ``run`` warm: the cache from the cold run, nothing changed;
- ``fix --diff`` warm, no baseline: every fixable finding is planned (on 0.7.4 the four
  EXP001 findings, all left for a person: one libcst parse of each of their three files);
- ``baseline --file`` (in the temporary directory): today's findings accepted;
- ``run`` warm and ``fix --diff`` warm with that baseline: nothing new, so ``fix`` plans
  nothing and imports no libcst.

Each run is reported as wall-clock seconds and CPU seconds (user + system, of the run's
process and its workers, from ``getrusage(RUSAGE_CHILDREN)``); on a shared machine the
wall clock follows the neighbours' load, the CPU time much less. ``--repeat N`` does it
all N times (each time with a fresh cache) and reports the best of each. The ratios
``fix --diff`` / ``run`` compare the warm runs.
"""

from __future__ import annotations

import argparse
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


def timed(*arguments: str, ok=(0, 1)) -> tuple:
    """``(wall seconds, CPU seconds, exit status)`` of one ``python -m policy_checks`` process."""
    command = [sys.executable, "-m", "policy_checks", *arguments]
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    cpu, start = _cpu(), time.perf_counter()
    # run in the repository: ``-m`` puts the working directory first on sys.path
    done = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=REPOSITORY)
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    if done.returncode not in ok:
        sys.exit(f"{' '.join(arguments)} exited {done.returncode}:\n{done.stderr}")
    return seconds, cpu, done.returncode


def one_round(root: Path, jobs: int) -> dict:
    """label -> `timed` result, with a fresh cache directory (removed afterwards)."""
    runs = {}
    with tempfile.TemporaryDirectory(prefix="policy-check-fix-bench-") as scratch:
        cache = str(Path(scratch) / "cache")
        baseline = str(Path(scratch) / "baseline.json")
        common = ("--root", str(root), "--cache-dir", cache)
        run = ("run", *common, "--jobs", str(jobs), "--format", "json", "--exit-zero")
        runs["run cold"] = timed(*run, "--no-baseline")
        runs["run warm"] = timed(*run, "--no-baseline")
        runs["fix --diff warm"] = timed("fix", *common, "--diff", "--no-baseline")
        timed("baseline", "--root", str(root), "--cache-dir", cache, "--file", baseline)
        runs["run warm, baseline"] = timed(*run, "--baseline", baseline)
        runs["fix --diff warm, baseline"] = timed("fix", *common, "--diff", "--baseline", baseline)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/fi/src"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="do it all this many times; report the best")
    args = parser.parse_args()
    root = args.root.resolve()
    if not (root / "flashinfer" / "__init__.py").is_file():
        sys.exit(f"{root} holds no flashinfer package; see this script's docstring")
    rounds = [one_round(root, args.jobs) for _ in range(max(args.repeat, 1))]
    print(f"tree: {root}  jobs: {args.jobs}  CPUs: {os.cpu_count()}  best of {len(rounds)}")
    best = {label: (min(r[label][0] for r in rounds), min(r[label][1] for r in rounds), rounds[0][label][2])
            for label in rounds[0]}
    for label, (wall, cpu, status) in best.items():
        print(f"{label:<28} {wall:6.2f} s wall  {cpu:6.2f} s CPU   exit {status}")
    for fix, run in (("fix --diff warm", "run warm"), ("fix --diff warm, baseline", "run warm, baseline")):
        print(f"{fix} / {run}: {best[fix][0] / best[run][0]:.2f}x wall, {best[fix][1] / best[run][1]:.2f}x CPU")


if __name__ == "__main__":
    main()
