"""JIT cache warm paths, no GPU needed: python3 benchmarks/jit_cache.py

For each stable kernel: the NVRTC compile (cold), finding and reading the verified
disk entry (warm process, empty memo: key, read, sha256 check) and the in-process
memo hit. Target: a cached spec found and read in under 1 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flashinfer import aot  # noqa: E402
from flashinfer.jit import cache  # noqa: E402

ARCH = 90


def median_us(fn, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the headline figures to this JSON record")
    args = parser.parse_args()
    specs = []
    with tempfile.TemporaryDirectory() as root:
        os.environ[cache.CACHE_DIR_ENV_VAR] = root
        print(f"{'spec':<20} {'entry KB':>8} {'compile ms':>11} {'disk hit us':>12} {'memo hit us':>12}")
        for spec in aot.registered_specs():
            cache.clear_memo()
            start = time.perf_counter()
            compiled = cache.build(spec, ARCH)
            compile_ms = (time.perf_counter() - start) * 1e3
            assert compiled.origin == "compiled"

            def from_disk():
                cache.clear_memo()
                assert cache.build(spec, ARCH).origin == "disk"

            disk = median_us(from_disk, 200)
            memo = median_us(lambda: cache.build(spec, ARCH), 2000)
            size_kb = compiled.path.stat().st_size / 1024
            print(f"{spec.name:<20} {size_kb:>8.1f} {compile_ms:>11.1f} {disk:>12.1f} {memo:>12.2f}")
            specs.append({"spec": spec.name, "compile_ms": round(compile_ms, 1), "disk_hit_us": round(disk, 1),
                          "memo_hit_us": round(memo, 2)})
    if args.json:
        import bench_record

        bench_record.write(args.json, "jit_cache", {
            "arch": ARCH, "specs": len(specs),
            "disk_hit_us_min": min(s["disk_hit_us"] for s in specs),
            "disk_hit_us_max": max(s["disk_hit_us"] for s in specs),
            "memo_hit_us_max": max(s["memo_hit_us"] for s in specs),
            "by_spec": specs,
        }, bench_record.command("jit_cache.py"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
