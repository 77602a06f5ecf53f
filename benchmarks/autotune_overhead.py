"""What autotuning and trace-apply add to a dispatch, and how fast a cache loads.

1. Per-call cost of the tuned lookup on ``backend="auto"``, on CPU tensors: a toy
   API with two stable backends (``(M, K) x (K, N)`` operands, trivial body) is
   called with no hooks installed, then with the autotuner's hook installed and
   (a) no winner known for the API, (b) winners known but not for this problem,
   (c) a winner for this problem (the tuned lookup proper), then (d) also with
   trace-apply's hook installed and no pin for the API. Printed: ns of CPU time
   per call (min of the rounds) and the difference to the no-hook call. The same lookup
   is also timed directly for `flashinfer.gemm.mm_bf16`'s key function.
2. Loading a cache of 10,000 entries (distinct problem keys of the toy API and of
   ``mm_bf16``): ms per `load_autotune_cache`, min and median of the repeats, in
   wall time and in this process's CPU time (which a busy machine inflates less).

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
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.pop("FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS", None)

import torch  # noqa: E402

from flashinfer import trace_apply  # noqa: E402,F401  (registers the pin hook)
from flashinfer.dispatch.hooks import hooks as dispatch_hooks  # noqa: E402
from flashinfer.tuning import cache_format, registry, tuner  # noqa: E402
from flashinfer.utils import CPU_COMPUTE_CAPABILITY, backend_requirement, supported_compute_capability  # noqa: E402


def make_api():
    @supported_compute_capability([CPU_COMPUTE_CAPABILITY])
    def ok(a, b, out=None, backend="auto"):
        return True

    @backend_requirement({"first": ok, "second": ok})
    def toy_mm(a, b, out=None, backend="auto"):
        return a

    registry.register_api(toy_mm)
    return toy_mm


def interleaved_ns(cases, number: int, repeat: int) -> dict:
    """ns per call of each ``(label, set_up, call)``, min over ``repeat`` rounds.

    Each round times every case once, in turn, so that a busy machine slows all
    cases alike instead of skewing the differences; the timer is this process's
    CPU time, so time spent descheduled on a busy machine does not count.
    """
    best = {label: float("inf") for label, _, _ in cases}
    for _ in range(repeat):
        for label, set_up, call in cases:
            set_up()
            seconds = timeit.Timer(call, timer=time.process_time).timeit(number)
            best[label] = min(best[label], seconds / number * 1e9)
    return best


TUNED_AT = "2026-11-01T00:00:00+00:00"


def minimal_hook(winners: dict):
    """A reference tuned-choice hook: the least any hook can do per call.

    The default key's reads (shape and dtype of each tensor, the first one's
    device) inlined, one dict lookup, no table, no safety nets. The dispatch's
    cost of calling a hook, and of moving the winner to the front, stays.
    """

    def hook(dispatch, candidates, arguments):
        key = []
        for name, value in arguments.items():
            if value.__class__ is torch.Tensor:
                if not key:
                    key.append("cuda" if value.is_cuda else "cpu")
                key.append((name, value.shape, value.dtype))
        backend = winners.get(tuple(key))
        return backend if backend in candidates else None

    return hook


def bench_lookup(number: int, repeat: int) -> dict:
    api = make_api()
    a, b = torch.ones(16, 64), torch.ones(64, 32)
    tuned, pinned = dispatch_hooks.tuned_choice, dispatch_hooks.pinned_backend
    table = tuner._table(api)
    key = tuner.key_of(api, {"a": a, "b": b})
    other_key = tuner.key_of(api, {"a": torch.ones(8, 64), "b": b})

    def hooks(tuned_hook, pinned_hook, keys):
        def set_up():
            dispatch_hooks.set_tuned_choice(tuned_hook)
            dispatch_hooks.set_pinned_backend(pinned_hook)
            table.entries.clear()
            for tuned_key in keys:
                tuner._remember(table, tuned_key, "second", TUNED_AT)

        return set_up

    reference = minimal_hook({("cpu", ("a", a.shape, a.dtype), ("b", b.shape, b.dtype)): "second"})
    call = lambda: api(a, b)  # noqa: E731
    cases = [
        ("auto, no hooks", hooks(None, None, []), call),
        ("auto, tuner hook, nothing tuned for the API", hooks(tuned, None, []), call),
        ("auto, tuner hook, other problems tuned", hooks(tuned, None, [other_key]), call),
        ("auto, tuner hook, this problem tuned", hooks(tuned, None, [other_key, key]), call),
        ("auto, tuner + trace-apply hooks, no pins", hooks(tuned, pinned, [other_key, key]), call),
        ("auto, reference: minimal hook, this problem", hooks(reference, None, []), call),
    ]
    for set_up in (hooks(tuned, None, [key]), hooks(reference, None, [])):
        set_up()
        assert api(a, b) is a and api.suitable_auto_backends == ["second", "first"]

    # The real op: mm_bf16 on a decode shape has two CPU candidates with the gate set
    # (torch, splitk); its tuned winner is torch, already first, so the figure is
    # the lookup alone, without the reordering a different winner would add.
    from flashinfer.gemm import mm_bf16

    a_mm, b_mm = torch.ones(4, 64, dtype=torch.bfloat16), torch.ones(64, 32, dtype=torch.bfloat16)
    mm_arguments = {"a": a_mm, "b": b_mm, "out": None, "backend": "auto"}
    tuner._remember(tuner._table(mm_bf16), tuner.key_of(mm_bf16, mm_arguments), "torch", TUNED_AT)
    os.environ["FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"] = "1"

    def only_tuner(tuned_hook):
        def set_up():
            dispatch_hooks.set_tuned_choice(tuned_hook)
            dispatch_hooks.set_pinned_backend(None)

        return set_up

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the gate's one ExperimentalWarning
        mm_bf16(a_mm, b_mm)
    assert mm_bf16.suitable_auto_backends == ["torch", "splitk"]
    mm_call = lambda: mm_bf16(a_mm, b_mm)  # noqa: E731
    toy_arguments = {"a": a, "b": b, "out": None, "backend": "auto"}
    cases += [
        ("auto, mm_bf16 (4x64 @ 64x32), no hooks", only_tuner(None), mm_call),
        ("auto, mm_bf16 (4x64 @ 64x32), this problem tuned", only_tuner(tuned), mm_call),
        ("tuned_choice() alone, toy (default key)", hooks(tuned, pinned, [key]),
         lambda: tuner.tuned_choice(api, ("first", "second"), toy_arguments)),
        ("tuned_choice() alone, mm_bf16 (its key)", only_tuner(tuned),
         lambda: tuner.tuned_choice(mm_bf16, ("splitk", "torch"), mm_arguments)),
    ]
    try:
        best = interleaved_ns(cases, number, repeat)
    finally:
        os.environ.pop("FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS", None)
        dispatch_hooks.set_tuned_choice(tuned)
        dispatch_hooks.set_pinned_backend(pinned)
    print(f"Tuned lookup (CPU tensors; ns of CPU time per call, min of {repeat} interleaved rounds of {number} calls):")
    for label, ns in best.items():
        if label.startswith("auto, mm_bf16"):
            base = best["auto, mm_bf16 (4x64 @ 64x32), no hooks"]
        else:
            base = best["auto, no hooks"]
        extra = f"+{ns - base:6.0f} ns" if label.startswith("auto") else "(the hook itself)"
        print(f"  {label:<52} {ns:8.0f} ns   {extra}")
    return {"tuned_lookup_added_ns": round(best["auto, tuner hook, this problem tuned"] - best["auto, no hooks"]),
            "mm_bf16_tuned_lookup_added_ns": round(best["auto, mm_bf16 (4x64 @ 64x32), this problem tuned"]
                                                   - best["auto, mm_bf16 (4x64 @ 64x32), no hooks"])}


def bench_load(entries: int, repeat: int) -> dict:
    api = make_api()
    half = entries // 2
    records = [
        {"api": registry.api_name(api), "key": ["cpu", ["a", [m, 64], "float32"], ["b", [64, 32], "float32"]],
         "backend": "second", "tactic": None, "experimental": False, "feature": None, "tuned_at": "2026-11-01T00:00:00+00:00"}
        for m in range(1, half + 1)
    ] + [
        {"api": "flashinfer.gemm.mm_bf16", "key": [m, 4096, 4096, "bfloat16", "cuda"], "backend": "nvrtc",
         "tactic": None, "experimental": False, "feature": None, "tuned_at": "2026-11-01T00:00:00+00:00"}
        for m in range(1, entries - half + 1)
    ]
    document = {"format": cache_format.CACHE_FORMAT, "schema_version": cache_format.CACHE_SCHEMA_VERSION, "flashinfer_version": "0", "entries": records}
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "cache.json")
        with open(path, "w") as file:
            json.dump(document, file, indent=1)
        size = os.path.getsize(path)
        times = []
        for _ in range(max(repeat, 5)):
            tuner._tables.clear()
            began, cpu_began = time.perf_counter(), time.process_time()
            summary = tuner.load_autotune_cache(path)
            times.append(((time.perf_counter() - began) * 1e3, (time.process_time() - cpu_began) * 1e3))
            assert summary.loaded == entries, summary
    wall, cpu = [t[0] for t in times], [t[1] for t in times]
    print(f"Loading a cache of {entries} entries ({size / 1e6:.1f} MB, {len(times)} loads), ms per load:")
    print(f"  wall time: min {min(wall):.1f}, median {statistics.median(wall):.1f}")
    print(f"  CPU time:  min {min(cpu):.1f}, median {statistics.median(cpu):.1f}")
    return {"load_entries": entries, "loads": len(times), "load_wall_ms_min": round(min(wall), 1),
            "load_wall_ms_median": round(statistics.median(wall), 1), "load_cpu_ms_min": round(min(cpu), 1),
            "load_cpu_ms_median": round(statistics.median(cpu), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=10000, help="calls per timing")
    parser.add_argument("--repeat", type=int, default=15, help="rounds of timings")
    parser.add_argument("--entries", type=int, default=10000, help="entries in the cache to load")
    parser.add_argument("--json", type=Path, help="also write the headline figures to this JSON record")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}")
    figures = {"number": args.number, "repeat": args.repeat, **bench_lookup(args.number, args.repeat)}
    figures.update(bench_load(args.entries, args.repeat))
    if args.json:
        import bench_record

        bench_record.write(args.json, "autotune_overhead", figures, bench_record.command("autotune_overhead.py"))


if __name__ == "__main__":
    main()
