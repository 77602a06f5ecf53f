"""What applying a baseline adds to a warm ``policy-check run``.

    python benchmarks/baseline_speed.py [TREE] [--repeat N] [--entries N]

TREE defaults to the unpacked FlashInfer 0.7.4 wheel (/tmp/fi/fi074). The script
writes the tree's real baseline (``policy-check baseline --file``, outside the
tree), pads it with synthetic entries that match nothing up to ``--entries`` (1,000
by default: they are all reported as fixed, the prune-report path), warms the
facts cache, then times ``policy-check run --format json`` with ``--no-baseline``
and with ``--baseline FILE``, alternating, best of N runs of the whole process
(wall-clock, and CPU seconds, which a busy machine disturbs less). The cache lives in a scratch directory ($POLICY_CHECK_CACHE_DIR), never in
the tree. Target: at most 50 ms added.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policy_checks.engine import baseline  # noqa: E402


def policy_check(*args) -> tuple:
    """Wall-clock and CPU seconds (user + system) of one run of the whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "policy_checks", *args], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"policy-check {' '.join(args)} failed:\n{done.stderr}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", default="/tmp/fi/fi074")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="also write the headline figures to this JSON record")
    options = parser.parse_args()
    tree = Path(options.tree).resolve()
    with tempfile.TemporaryDirectory(prefix="baseline-speed-") as scratch:
        os.environ["POLICY_CHECK_CACHE_DIR"] = str(Path(scratch) / "cache")
        figures = measure(tree, Path(scratch), options)
    if options.json:
        import bench_record

        bench_record.write(options.json, "baseline_speed", figures,
                           bench_record.command("baseline_speed.py", tree=tree),
                           tree={"flashinfer_version": bench_record.tree_version(tree)})


def measure(tree: Path, scratch: Path, options) -> dict:
    """Prints the figures; returns them (ms, best of the runs)."""
    file = scratch / "baseline.json"
    policy_check("baseline", "--root", str(tree), "--file", str(file))  # also warms the cache
    counts = baseline.read(file).counts
    real = len(counts)
    for n in range(options.entries - real):
        fp = baseline.Fingerprint("EXP007", f"flashinfer.synthetic_{n // 10}", f"helper_{n}",
                                  f"flashinfer.experimental.synthetic_{n}.kernels")
        counts[fp] = 1
    baseline.write(file, counts)
    common = ("run", "--root", str(tree), "--format", "json")
    check = json.loads(subprocess.run([sys.executable, "-m", "policy_checks", *common, "--baseline", str(file)],
                                      capture_output=True, text=True).stdout)
    print(f"{tree}: {real} real entries + {len(counts) - real} synthetic = {len(counts)}; "
          f"with the baseline: {len(check['findings'])} new, {check['baselined']} baselined, "
          f"{check['baseline_fixed']} fixed")

    figures = {"entries": len(counts), "real_entries": real, "repeat": options.repeat}
    without, with_baseline = [], []
    for _ in range(options.repeat):
        without.append(policy_check(*common, "--no-baseline"))
        with_baseline.append(policy_check(*common, "--baseline", str(file)))
    for label, index, key in (("wall-clock", 0, "wall"), ("CPU (user + system)", 1, "cpu")):
        a = min(t[index] for t in without) * 1000
        b = min(t[index] for t in with_baseline) * 1000
        print(f"warm run, {label}, best of {options.repeat}: without a baseline {a:.0f} ms, "
              f"with {len(counts)} entries {b:.0f} ms: {b - a:+.0f} ms")
        figures.update({f"{key}_without_ms": round(a, 1), f"{key}_with_ms": round(b, 1),
                        f"{key}_added_ms": round(b - a, 1)})
    return figures


if __name__ == "__main__":
    main()
