"""End to end on a GPU: autotune a decode step with the gate set, then load that cache with the gate unset.

    python3 benchmarks/autotune_decode_gpu.py tune CACHE   # gate set: tune, save, print the winners
    python3 benchmarks/autotune_decode_gpu.py load CACHE   # gate unset: load, run, print what runs first

Two processes, as a deployment would have them: the saved cache must record ``splitk``
where it won, and the process without the gate must run a stable backend for every shape.
Prints; asserts only that the second process never puts an experimental backend first.
Without a GPU it says so and exits 0.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

import flashinfer

GATE = "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"
K = 8192
SHAPES = [(m, n) for n in (8192, 28672) for m in (1, 2, 4, 8, 16)]  # the decode shapes of benchmarks/kernels.py


def decode_step() -> list[tuple[int, int, tuple]]:
    """One call per shape; returns (M, N, candidates in the order they run) of each."""
    seen = []
    for m, n in SHAPES:
        a = torch.randn(m, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, n, device="cuda", dtype=torch.bfloat16)
        flashinfer.mm_bf16(a, b)
        seen.append((m, n, tuple(flashinfer.mm_bf16.suitable_auto_backends)))
    torch.cuda.synchronize()
    return seen


def main(mode: str, cache: Path) -> int:
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to run (run this on a GPU machine)")
        return 0
    if mode == "tune":
        os.environ[GATE] = "1"
        with flashinfer.autotune(cache=cache):
            decode_step()
        entries = json.loads(cache.read_text())["entries"]
        for entry in entries:
            print(f"tuned {entry['key']}: {entry['backend']} (experimental: {entry['experimental']})")
        print(f"splitk won {sum(e['backend'] == 'splitk' for e in entries)} of {len(entries)} shapes")
        return 0
    os.environ.pop(GATE, None)
    flashinfer.load_autotune_cache(cache)
    experimental_first = 0
    for m, n, order in decode_step():
        print(f"gate unset, M={m} N={n}: runs {order[0] if order else None} (candidates {order})")
        experimental_first += bool(order) and order[0] == "splitk"
    print("an experimental backend ran with the gate unset" if experimental_first else "stable backends only: ok")
    return 1 if experimental_first else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
