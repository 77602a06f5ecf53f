"""What autotuning and trace-apply add to a dispatch, and how fast a cache loads.

1. Per-call cost of the tuned lookup on ``backend="auto"``, on CPU tensors: a toy
   API with two stable backends (``(M, K) x (K, N)`` operands, trivial body) is
   called with no hooks installed, then with the autotuner's hook installed and
   (a) no winner known for the API, (b) winners known but not for this problem,
   (c) a winner for this problem (the tuned lookup proper), then (d) also with
   trace-apply's hook installed and no pin for the API. Printed: ns per call
   (min of the repeats) and the difference to the no-hook call. The same lookup
   is also timed directly for `flashinfer.gemm.mm_bf16`'s key function.
2. Loading a cache of 10,000 entries (distinct problem keys of the toy API and of
   ``mm_bf16``): ms per `load_autotune_cache`, min and median of the repeats.

Run: ``python benchmarks/autotune_overhead.py`` (``--help`` for options).
Targets (issue 5): the tuned lookup adds at most 1 us to a dispatch; loading
10,000 entries takes under 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.pop("FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS", None)

import torch  # noqa: E402

from flashinfer import autotuner, trace_apply, utils  # noqa: E402
from flashinfer.utils import CPU_COMPUTE_CAPABILITY, backend_requirement, supported_compute_capability  # noqa: E402


def make_api():
    @supported_compute_capability([CPU_COMPUTE_CAPABILITY])
    def ok(a, b, out=None, backend="auto"):
        return True

    @backend_requirement({"first": ok, "second": ok})
    def toy_mm(a, b, out=None, backend="auto"):
        return a

    autotuner.register_api(toy_mm)
    return toy_mm


def interleaved_ns(cases, number: int, repeat: int) -> dict:
    """ns per call of each ``(label, set_up, call)``, min over ``repeat`` rounds.

    Each round times every case once, in turn, so that a busy machine slows all
    cases alike instead of skewing the differences.
    """
    best = {label: float("inf") for label, _, _ in cases}
    for _ in range(repeat):
        for label, set_up, call in cases:
            set_up()
            best[label] = min(best[label], timeit.timeit(call, number=number) / number * 1e9)
    return best


def bench_lookup(number: int, repeat: int) -> None:
    api = make_api()
    a, b = torch.ones(16, 64), torch.ones(64, 32)
    tuned, pinned = utils.tuned_choice_hook, utils.pinned_backend_hook
    table = autotuner._table(api)
    key = autotuner.key_of(api, {"a": a, "b": b})
    other_key = autotuner.key_of(api, {"a": torch.ones(8, 64), "b": b})
    entry = autotuner._Entry("second", None, False, None, autotuner._now())

    def hooks(tuned_hook, pinned_hook, keys):
        def set_up():
            utils.tuned_choice_hook, utils.pinned_backend_hook = tuned_hook, pinned_hook
            table.entries.clear()
            table.entries.update(dict.fromkeys(keys, entry))

        return set_up

    call = lambda: api(a, b)  # noqa: E731
    cases = [
        ("auto, no hooks", hooks(None, None, []), call),
        ("auto, tuner hook, nothing tuned for the API", hooks(tuned, None, []), call),
        ("auto, tuner hook, other problems tuned", hooks(tuned, None, [other_key]), call),
        ("auto, tuner hook, this problem tuned", hooks(tuned, None, [other_key, key]), call),
        ("auto, tuner + trace-apply hooks, no pins", hooks(tuned, pinned, [other_key, key]), call),
    ]
    hooks(tuned, None, [key])()
    assert api(a, b) is a and api.suitable_auto_backends == ["second", "first"]

    from flashinfer.gemm import mm_bf16

    arguments = {"a": torch.ones(4, 64, dtype=torch.bfloat16), "b": torch.ones(64, 32, dtype=torch.bfloat16), "out": None, "backend": "auto"}
    autotuner._table(mm_bf16).entries[autotuner.key_of(mm_bf16, arguments)] = autotuner._Entry("torch", None, False, None, "x")
    candidates = ("splitk", "torch")
    assert autotuner.tuned_choice(mm_bf16, candidates, arguments) == "torch"
    toy_arguments = {"a": a, "b": b, "out": None, "backend": "auto"}
    cases += [
        ("tuned_choice() alone, toy (default key)", hooks(tuned, pinned, [key]), lambda: autotuner.tuned_choice(api, ("first", "second"), toy_arguments)),
        ("tuned_choice() alone, mm_bf16 (its key)", lambda: None, lambda: autotuner.tuned_choice(mm_bf16, candidates, arguments)),
    ]
    best = interleaved_ns(cases, number, repeat)
    base = best["auto, no hooks"]
    print(f"Tuned lookup (CPU tensors; ns per call, min of {repeat} interleaved rounds of {number} calls):")
    for label, ns in best.items():
        extra = f"+{ns - base:6.0f} ns" if label.startswith("auto") else "(the hook itself)"
        print(f"  {label:<44} {ns:8.0f} ns   {extra}")


def bench_load(entries: int, repeat: int) -> None:
    api = make_api()
    half = entries // 2
    records = [
        {"api": autotuner.api_name(api), "key": ["cpu", ["a", [m, 64], "float32"], ["b", [64, 32], "float32"]],
         "backend": "second", "tactic": None, "experimental": False, "feature": None, "tuned_at": "2026-11-01T00:00:00+00:00"}
        for m in range(1, half + 1)
    ] + [
        {"api": "flashinfer.gemm.mm_bf16", "key": [m, 4096, 4096, "bfloat16", "cuda"], "backend": "nvrtc",
         "tactic": None, "experimental": False, "feature": None, "tuned_at": "2026-11-01T00:00:00+00:00"}
        for m in range(1, entries - half + 1)
    ]
    document = {"format": autotuner.CACHE_FORMAT, "schema_version": autotuner.CACHE_SCHEMA_VERSION, "flashinfer_version": "0", "entries": records}
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "cache.json")
        with open(path, "w") as file:
            json.dump(document, file, indent=1)
        size = os.path.getsize(path)
        times = []
        for _ in range(max(repeat, 5)):
            autotuner._tables.clear()
            began = time.perf_counter()
            summary = autotuner.load_autotune_cache(path)
            times.append((time.perf_counter() - began) * 1e3)
            assert summary.loaded == entries, summary
    print(f"Loading a cache of {entries} entries ({size / 1e6:.1f} MB, {repeat} loads):")
    print(f"  min {min(times):.1f} ms, median {statistics.median(times):.1f} ms per load")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=10000, help="calls per timing")
    parser.add_argument("--repeat", type=int, default=15, help="rounds of timings")
    parser.add_argument("--entries", type=int, default=10000, help="entries in the cache to load")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}")
    bench_lookup(args.number, args.repeat)
    bench_load(args.entries, args.repeat)


if __name__ == "__main__":
    main()
