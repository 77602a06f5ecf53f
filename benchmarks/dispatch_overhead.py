"""Per-call overhead of `backend_requirement` dispatch, and import times.

Prints nanoseconds per call (min and median of the repeats) for a plain function
and for one toy API decorated with `backend_requirement` -- explicit stable
backend, explicit experimental backend, ``backend="auto"`` with the gate unset and
set, and ``skip_check=True`` -- on CPU tensors; the overhead is the difference to
the plain call. The toy API has a common check, a heuristic and two backends
(one experimental) whose checkers just return True, so the figures are the
dispatch's own cost.

If FlashInfer 0.7.4's source is unzipped (``--flashinfer-src``, default
``/tmp/fi/src/flashinfer``), its ``utils.backend_requirement`` is loaded in
isolation (heavy imports replaced by stubs in this process only, CPU tensors given
capability 0) and measured on the same API, for comparison.

Last, the wall time of ``import flashinfer`` and ``import torch`` in fresh
interpreters (median of several runs, minus an empty interpreter's start-up; every
one runs with ``-X importtime``, whose cumulative figure the last run gives).

Run: ``python benchmarks/dispatch_overhead.py`` (``--help`` for options).
Targets, on a 2-core CI machine: overhead <= 0.5 us with an explicit backend,
<= 1 us with ``backend="auto"``. Other processes on the machine inflate the
figures; compare against a checkout of the previous version run alternately.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import statistics
import subprocess
import sys
import time
import timeit
import types
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GATE = "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"

CASES = [
    # (label, statement, gate set)
    ("plain function call", "plain(a, b)", False),
    ("explicit stable backend", 'api(a, b, backend="ref")', False),
    ("explicit experimental backend", 'api(a, b, backend="exp")', False),
    ("auto, gate unset", "api(a, b)", False),
    ("auto, gate set", "api(a, b)", True),
    ("skip_check=True, explicit", 'api(a, b, backend="ref", skip_check=True)', False),
]


def build_api(utils_module):
    """The toy API, decorated with the given module's primitives."""
    backend_requirement = utils_module.backend_requirement
    supported = utils_module.supported_compute_capability
    experimental = utils_module.experimental_backend

    @supported([0, 80, 90, 100])
    def check_ref(a, b, out=None, backend="auto"):
        return True

    @experimental
    @supported([0, 90, 100])
    def check_exp(a, b, out=None, backend="auto"):
        return True

    def common(a, b, out=None, backend="auto"):
        return True

    def heuristic(candidates, a, b, out=None, backend="auto"):
        return candidates

    @backend_requirement({"ref": check_ref, "exp": check_exp}, common, heuristic)
    def api(a, b, out=None, backend="auto"):
        return out

    return api


def plain(a, b, out=None, backend="auto"):
    return out


def time_case(stmt: str, namespace: dict, number: int, repeat: int) -> tuple:
    """(min, median) nanoseconds per call."""
    timer = timeit.Timer(stmt, globals=namespace)
    runs = [t / number * 1e9 for t in timer.repeat(repeat=repeat, number=number)]
    return min(runs), statistics.median(runs)


def measure(label: str, utils_module, number: int, repeat: int) -> dict:
    import torch

    namespace = {"api": build_api(utils_module), "plain": plain, "a": torch.ones(8), "b": torch.ones(8)}
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # each experimental warning fires once anyway
        for case, stmt, gate in CASES:
            if gate:
                os.environ[GATE] = "1"
            else:
                os.environ.pop(GATE, None)
            eval(stmt, namespace)  # first call: warnings, caches
            results[case] = time_case(stmt, namespace, number, repeat)
    os.environ.pop(GATE, None)
    base_min, base_med = results["plain function call"]
    print(f"\n{label}")
    print(f"  {'case':32} {'min ns':>9} {'median ns':>10} {'overhead min':>13} {'overhead med':>13}")
    for case, (lo, med) in results.items():
        print(f"  {case:32} {lo:9.0f} {med:10.0f} {lo - base_min:13.0f} {med - base_med:13.0f}")
    return results


def load_flashinfer_utils(src: Path):
    """FlashInfer 0.7.4's utils.py as module ``_fi074.utils``, heavy imports stubbed.

    Only the names utils.py imports at module level are stubbed (its JIT helpers and
    pynvml); its api_logging.py is FlashInfer's own. CPU tensors have no capability
    there (it raises for non-CUDA devices), so `get_compute_capability` answers
    (0, 0) for them, like this project's CPU capability.
    """
    def stub(name: str, **attrs):
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module
        return module

    stub("_fi074", __path__=[str(src)])
    stub("_fi074.jit", __path__=[])
    stub("_fi074.jit.spdlog", gen_spdlog_module=lambda *a, **k: None)
    stub("_fi074.jit.env", has_flashinfer_jit_cache=lambda: False, has_flashinfer_cubin=lambda: False)
    if importlib.util.find_spec("pynvml") is None:
        stub("pynvml")
    module = importlib.import_module("_fi074.utils")
    real = module.get_compute_capability
    module.get_compute_capability = lambda device: (0, 0) if device.type != "cuda" else real(device)
    return module


def import_times(runs: int) -> dict:
    """Prints the import times; returns them (ms, minus start-up) and whether torch got loaded."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def timed(code: str) -> tuple:
        """(median wall seconds of `runs` fresh interpreters, the last run's ``-X importtime``
        stderr): the import table comes from a timed run, so no interpreter runs only for it."""
        samples, err = [], ""
        for _ in range(max(runs, 1)):
            start = time.perf_counter()
            err = subprocess.run([sys.executable, "-X", "importtime", "-c", code],
                                 env=env, check=True, capture_output=True, text=True).stderr
            samples.append(time.perf_counter() - start)
        return statistics.median(samples), err

    def cumulative_us(err: str, module: str) -> int:
        for line in err.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2] == module:
                return int(parts[1])
        return -1

    empty = timed("pass")[0]  # start-up with -X importtime too, so the difference is the import
    print(f"\nimport time in a fresh interpreter (median of {runs}; `python -c pass` takes {empty * 1e3:.0f} ms)")
    print(f"  {'statement':36} {'wall ms':>8} {'minus start-up':>15} {'-X importtime ms':>17}")
    figures = {"python_start_ms": round(empty * 1e3, 1)}
    for stmt, module in [
        ("import flashinfer", "flashinfer"),
        ("import torch", "torch"),
        ("import flashinfer.utils (dispatch)", "flashinfer.utils"),
    ]:
        total, err = timed(stmt.split(" (")[0])
        print(
            f"  {stmt:36} {total * 1e3:8.1f} {(total - empty) * 1e3:15.1f} "
            f"{cumulative_us(err, module) / 1e3:17.1f}"
        )
        figures[f"{module.replace('.', '_')}_import_ms"] = round((total - empty) * 1e3, 1)
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, flashinfer; print(len(sys.modules), 'torch' in sys.modules)"],
        env=env, check=True, capture_output=True, text=True,
    ).stdout.split()
    print(f"  after `import flashinfer`: {loaded[0]} modules loaded, torch loaded: {loaded[1]}")
    figures["torch_loaded_by_import_flashinfer"] = loaded[1] == "True"
    return figures


def overheads(results: dict) -> dict:
    """ns over the plain call of the explicit stable backend and of ``backend="auto"``
    with the gate unset: min and median of the repeats."""
    base_min, base_med = results["plain function call"]
    out = {}
    for key, case in (("explicit", "explicit stable backend"), ("auto", "auto, gate unset")):
        out[f"{key}_overhead_ns_min"] = round(results[case][0] - base_min, 1)
        out[f"{key}_overhead_ns_median"] = round(results[case][1] - base_med, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=100_000, help="calls per repeat")
    parser.add_argument("--repeat", type=int, default=7, help="repeats per case")
    parser.add_argument("--import-runs", type=int, default=5, help="fresh interpreters per import")
    parser.add_argument("--flashinfer-src", type=Path, default=Path("/tmp/fi/src/flashinfer"))
    parser.add_argument("--json", type=Path, help="also write the headline figures to this JSON record")
    args = parser.parse_args()

    import torch

    print(
        f"python {platform.python_version()}, torch {torch.__version__}, "
        f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}; "
        f"{args.number} calls x {args.repeat} repeats per case"
    )
    from flashinfer import utils

    ours = measure("this project (flashinfer.utils.backend_requirement)", utils, args.number, args.repeat)
    theirs = None
    if (args.flashinfer_src / "utils.py").exists():
        try:
            fi = load_flashinfer_utils(args.flashinfer_src)
        except Exception as exc:  # a different FlashInfer layout: skip, say why
            print(f"\nFlashInfer comparison skipped: {type(exc).__name__}: {exc}")
        else:
            theirs = measure(f"FlashInfer 0.7.4 ({args.flashinfer_src}/utils.py)", fi, args.number, args.repeat)
    else:
        print(f"\nFlashInfer comparison skipped: no {args.flashinfer_src}/utils.py")
    imports = import_times(args.import_runs)
    if args.json:
        import bench_record

        tree = args.flashinfer_src.parent
        bench_record.write(args.json, "dispatch_overhead", {
            "number": args.number, "repeat": args.repeat, **overheads(ours),
            "flashinfer": (dict(overheads(theirs), version=bench_record.tree_version(tree))
                           if theirs is not None else None),
            **imports,
        }, bench_record.command("dispatch_overhead.py", tree=tree if theirs is not None else None))


if __name__ == "__main__":
    main()
