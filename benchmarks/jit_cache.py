"""JIT cache warm paths, no GPU needed: python3 benchmarks/jit_cache.py

For each stable kernel: the NVRTC compile (cold), finding and reading the verified
disk entry (warm process, empty memo: key, read, sha256 check) and the in-process
memo hit. Target: a cached spec found and read in under 1 ms.
"""

from __future__ import annotations

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
    return 0


if __name__ == "__main__":
    sys.exit(main())
