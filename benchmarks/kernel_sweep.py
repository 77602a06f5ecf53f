"""Kernel variant sweep, for picking defaults on a GPU: python3 benchmarks/kernel_sweep.py

For every variant of the stable GEMM (`flashinfer.gemm.GemmConfig`) and of the
experimental gated RMSNorm (`GatedConfig`): correctness against a float64 reference
on the benchmark shape and on ragged shapes (output poisoned with NaN first; the
GPU tests' tolerances), then the median time of REPS launches with CUDA events
(each launch queued behind a sleep kernel, so host overhead stays out). Prints a
table and, last, the best correct variant per kernel; a wrong variant is reported
and never chosen. With $OUT set, the rows also go to $OUT/sweep_<sections>.json. ``--sections``
picks kernels (gated, gemm, sm90; all by default). ``--json PATH`` also writes the headline
figures (the default GEMM configuration's TFLOP/s beside cuBLAS, the best variant of each
kernel) to a JSON record (benchmarks/bench_record.py).

``--compile-only [--arch 90]`` needs no GPU: it compiles every variant with NVRTC
and prints ptxas' register and spill report, for checking variants before a GPU run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import statistics
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flashinfer.experimental.gated_rmsnorm.kernel import GatedConfig, gated_rmsnorm_spec  # noqa: E402
from flashinfer.gemm import GemmConfig, gemm_bf16_spec  # noqa: E402

HBM_TBPS = 4.8
REPS = 25

G = GemmConfig
#: GEMM variants: (block_k, stages, block_m, block_n, warps_m, warps_n, frag_pipeline,
#: free_schedule, group_m, min_blocks, wgmma, b_mn_major). The first mma.sync row is the
#: previous default elsewhere; the first b_mn_major row is the sm_90 default (`SM90_PIPELINE`).
GEMM_VARIANTS = [
    G(64, 4),
    G(64, 3),
    G(32, 4),
    G(32, 6),
    G(64, 4, frag_pipeline=True),
    G(64, 4, free_schedule=True),
    G(64, 4, frag_pipeline=True, free_schedule=True),
    G(64, 4, group_m=4),
    G(64, 4, group_m=16),
    G(64, 4, 256, 128, 4, 2),
    G(64, 4, 256, 128, 4, 2, True, True),
    G(32, 4, 128, 128, 2, 2, min_blocks=2),
    G(64, 3, 128, 128, 2, 2, min_blocks=2),
    G(32, 4, 128, 128, 2, 2, True, True, min_blocks=2),
    G(32, 4, 128, 128, 2, 4, min_blocks=2),
    G(32, 4, 128, 128, 2, 4, True, True, min_blocks=2),
    G(64, 4, frag_pipeline=True, free_schedule=True, group_m=16),
    G(64, 3, frag_pipeline=True, free_schedule=True),
    G(32, 4, frag_pipeline=True, free_schedule=True),
    G(64, 4, 128, 256, wgmma=True),
    G(64, 6, 128, 128, wgmma=True),
    G(64, 4, 128, 128, wgmma=True),
    G(64, 4, 128, 256, group_m=16, wgmma=True),
    # b read as stored ([K, N], MN-major for wgmma): no host transpose before the launch
    G(64, 4, 128, 256, wgmma=True, b_mn_major=True),
    G(64, 4, 128, 256, group_m=16, wgmma=True, b_mn_major=True),
    G(64, 4, 128, 256, group_m=4, wgmma=True, b_mn_major=True),
    G(64, 3, 128, 256, wgmma=True, b_mn_major=True),  # 1 slice ahead, not 2: is the kernel latency-bound?
    G(64, 6, 128, 128, wgmma=True, b_mn_major=True),
    G(64, 7, 128, 128, wgmma=True, b_mn_major=True),
]

Z = GatedConfig
#: Gated RMSNorm variants: (cached_vecs, max_threads, z_first, fast_silu). First: the default.
GATED_VARIANTS = [
    Z(4, 1024, False, False),
    Z(4, 1024, False, True),
    Z(4, 1024, True, False),
    Z(4, 1024, True, True),
    Z(2, 1024, True, True),
    Z(1, 1024, True, True),
    Z(2, 512, True, False),
    Z(2, 1024, False, True),
    Z(8, 1024, False, True),
    Z(4, 256, True, True),
    Z(8, 128, True, True),
]

GEMM_CHECK_SHAPES = [(4096, 4096, 4096), (4095, 4104, 4136), (129, 264, 40), (300, 1000, 4104)]
GEMM_TIME_SIZES = (4096, 8192)
GATED_CHECK_SHAPES = [(16384, 8192), (1000, 3000), (7, 8200), (3, 40)]
GATED_TIME_SHAPE = (16384, 8192)


def spec_of(kind: str, config: tuple):
    return gemm_bf16_spec(*config) if kind == "gemm" else gated_rmsnorm_spec(GatedConfig(*config))


def _compile_report(job):
    """Worker: NVRTC with ptxas -v for one variant; returns (label, summary)."""
    from flashinfer.jit import compile_spec

    kind, config, arch = job
    spec = spec_of(kind, config)
    try:
        _, _, log = compile_spec(spec, arch, ["--ptxas-options=-v"])
    except Exception as exc:  # noqa: BLE001 - report the variant and go on
        return spec.name, f"COMPILE ERROR: {exc}"
    regs = re.findall(r"Used (\d+) registers", log)
    spill = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    stack = re.findall(r"(\d+) bytes stack frame", log)
    return spec.name, f"regs {regs} stack {stack} spills {spill}"


def _prebuild(job):
    """Worker: compile one variant into the disk cache (no GPU needed)."""
    from flashinfer.jit import build

    kind, config, arch = job
    t = time.perf_counter()
    try:
        build(spec_of(kind, config), arch)
    except Exception as exc:  # noqa: BLE001 - the main process reports it again
        return f"{kind} {config}: {exc!r}"
    return f"{spec_of(kind, config).name}: {time.perf_counter() - t:.1f} s"


def _pool() -> ProcessPoolExecutor:
    """NVRTC workers; spawned, so none inherits the parent's CUDA state."""
    return ProcessPoolExecutor(max_workers=min(16, os.cpu_count() or 1),
                               mp_context=multiprocessing.get_context("spawn"))


#: What each --sections name sweeps. "sm90" (the wgmma kernel) is its own section so that it
#: can run in a process of its own: a fault there cannot spoil the other sections' context.
SECTIONS = {
    "gated": ("gated", GATED_VARIANTS),
    "gemm": ("gemm", [c for c in GEMM_VARIANTS if not c.wgmma]),
    "sm90": ("gemm", [c for c in GEMM_VARIANTS if c.wgmma]),
}


def all_jobs(arch: int, sections=tuple(SECTIONS)):
    return [(SECTIONS[s][0], tuple(c), arch) for s in sections for c in SECTIONS[s][1]
            if arch == 90 or not getattr(c, "wgmma", False)]


def compile_only(arch: int, sections) -> int:
    with _pool() as pool:
        for name, summary in pool.map(_compile_report, all_jobs(arch, sections)):
            print(f"{name:<48} {summary}")
    return 0


# ---------------------------------------------------------------- on the GPU


def time_ms(fn) -> float:
    """Median milliseconds of one call, each launch queued behind a sleep kernel."""
    import torch

    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(400_000)
        start.record()
        fn()
        end.record()
        samples.append((start, end))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in samples)


def gemm_error(config, shape, cache) -> str:
    """'' when the variant matches float64 on ``shape``, else what is wrong."""
    import torch

    from flashinfer.gemm import run_nvrtc

    if shape not in cache:
        m, n, k = shape
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        cache.clear()  # one reference at a time keeps memory small
        cache[shape] = (a, b, a.double() @ b.double())
    a, b, ref = cache[shape]
    out = torch.full(ref.shape, float("nan"), device="cuda", dtype=torch.bfloat16)
    run_nvrtc(a, b, out, pipeline=config)
    torch.cuda.synchronize()
    if not torch.isfinite(out).all():
        return f"{int((~torch.isfinite(out)).sum())} non-finite at {shape}"
    err = ((out.double() - ref).norm() / ref.norm()).item()
    return "" if err < 1e-2 else f"rel err {err:.3g} at {shape}"


def gated_error(config, shape, cache) -> str:
    import torch

    from flashinfer.experimental.gated_rmsnorm.kernel import run

    if shape not in cache:
        x = torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * 2
        z = torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * 4
        w = torch.randn(shape[-1], device="cuda", dtype=torch.bfloat16)
        xd, zd = x.double(), z.double()
        ref = xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + 1e-6) * w.double() * zd * torch.sigmoid(zd)
        cache.clear()
        cache[shape] = (x, z, w, ref)
    x, z, w, ref = cache[shape]
    out = run(x, z, w, 1e-6, config=config)
    torch.cuda.synchronize()
    if not torch.isfinite(out).all():
        return f"{int((~torch.isfinite(out)).sum())} non-finite at {shape}"
    err = ((out.double() - ref).norm() / ref.norm()).item()
    if err >= 1e-2 or not ((out.double() - ref).abs() <= 0.02 * ref.abs() + 0.02).all():
        return f"rel err {err:.3g} (or an element off) at {shape}"
    return ""


def check_all(kind, variants, shapes, check) -> dict:
    """{variant: error text} over all shapes, one shape's reference at a time."""
    errors = {v: "" for v in variants}
    cache: dict = {}
    for shape in shapes:
        for v in variants:
            if errors[v]:
                continue
            try:
                errors[v] = check(v, shape, cache)
            except Exception as exc:  # noqa: BLE001 - a failing variant is reported, not fatal
                errors[v] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    cache.clear()
    return errors


def sweep_gemm(rows: list, variants: list) -> None:
    import torch

    from flashinfer.gemm import run_nvrtc

    errors = check_all("gemm", variants, GEMM_CHECK_SHAPES, gemm_error)
    results = {v: {} for v in variants}
    cublas = {}
    for size in GEMM_TIME_SIZES:
        a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
        flop = 2.0 * size**3
        cublas[size] = flop / time_ms(partial(torch.matmul, a, b, out=out)) / 1e9
        for v in variants:
            if errors[v]:
                continue
            results[v][size] = flop / time_ms(partial(run_nvrtc, a, b, out, pipeline=v)) / 1e9
        del a, b, out
    print("\n== mm_bf16 variants (TFLOP/s, % of cuBLAS) cuBLAS: "
          + ", ".join(f"{s}^3 {t:.1f}" for s, t in cublas.items()))
    for v in variants:
        name = gemm_bf16_spec(*v).name
        cells = "  ".join(f"{s}: {results[v][s]:6.1f} {100 * results[v][s] / cublas[s]:5.1f}%" for s in results[v])
        print(f"{name:<52} {'ok   ' if not errors[v] else 'WRONG'} {cells or errors[v]}")
        rows.append({"kernel": "gemm", "variant": name, "config": list(v), "error": errors[v],
                     "tflops": results[v], "cublas": cublas})


def sweep_gated(rows: list) -> None:
    import torch

    import flashinfer
    from flashinfer.experimental.gated_rmsnorm.kernel import run

    errors = check_all("gated", GATED_VARIANTS, GATED_CHECK_SHAPES, gated_error)
    x = torch.randn(*GATED_TIME_SHAPE, device="cuda", dtype=torch.bfloat16)
    z = torch.randn(*GATED_TIME_SHAPE, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(GATED_TIME_SHAPE[-1], device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    size = x.numel() * 2
    copy_tbps = 2 * size / time_ms(lambda: out.copy_(x)) / 1e9
    norm_tbps = 2 * size / time_ms(lambda: flashinfer.rmsnorm(x, w, out=out, backend="nvrtc")) / 1e9
    print(f"\n== gated_rmsnorm variants at {GATED_TIME_SHAPE} bf16 (TB/s, % of {HBM_TBPS}); "
          f"copy {copy_tbps:.2f} TB/s, rmsnorm nvrtc {norm_tbps:.2f} TB/s ({100 * norm_tbps / HBM_TBPS:.1f}%)")
    for v in GATED_VARIANTS:
        name = gated_rmsnorm_spec(v).name
        tbps = None
        if not errors[v]:
            ms = time_ms(partial(run, x, z, w, 1e-6, config=v))
            tbps = 3 * size / ms / 1e9
        cell = f"{ms * 1e3:7.1f} us {tbps:5.2f} TB/s {100 * tbps / HBM_TBPS:5.1f}%" if tbps else errors[v]
        print(f"{name:<52} {'ok   ' if not errors[v] else 'WRONG'} {cell}")
        rows.append({"kernel": "gated", "variant": name, "config": list(v), "error": errors[v], "tbps": tbps,
                     "copy_tbps": copy_tbps, "rmsnorm_tbps": norm_tbps})


def best_lines(rows: list) -> list:
    gemm = [r for r in rows if r["kernel"] == "gemm" and not r["error"] and r["tflops"]]
    gated = [r for r in rows if r["kernel"] == "gated" and not r["error"] and r["tbps"]]
    lines = []
    if gemm:  # both sizes must reach the target: rank by the worse ratio to cuBLAS
        best = max(gemm, key=lambda r: min(r["tflops"][s] / r["cublas"][s] for s in r["tflops"]))
        lines.append(f"BEST gemm: {best['variant']} config={best['config']} " + ", ".join(
            f"{s}^3 {best['tflops'][s]:.1f} TFLOP/s ({100 * best['tflops'][s] / best['cublas'][s]:.1f}%)"
            for s in best["tflops"]))
    if gated:
        best = max(gated, key=lambda r: r["tbps"])
        lines.append(f"BEST gated: {best['variant']} config={best['config']} {best['tbps']:.2f} TB/s "
                     f"({100 * best['tbps'] / HBM_TBPS:.1f}%)")
    return lines


def headline(rows: list, sections: list) -> dict:
    """The record's figures: the default GEMM configuration of the swept sections (`SM90_PIPELINE`
    with sm90, else the first of `GEMM_PIPELINES`) beside cuBLAS, and the best correct variants."""
    from flashinfer.gemm import GEMM_PIPELINES, SM90_PIPELINE

    default = SM90_PIPELINE if "sm90" in sections else GEMM_PIPELINES[0]
    figures: dict = {"sections": sections}
    for row in rows:
        if row["kernel"] == "gemm" and tuple(row["config"]) == tuple(default) and not row["error"]:
            figures["default_gemm"] = {"variant": row["variant"],
                                       "tflops": {str(s): round(t, 1) for s, t in row["tflops"].items()},
                                       "cublas_tflops": {str(s): round(t, 1) for s, t in row["cublas"].items()}}
    figures["best"] = best_lines(rows)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile-only", action="store_true", help="compile with ptxas -v; no GPU needed")
    parser.add_argument("--arch", type=int, default=90)
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated, of {list(SECTIONS)}")
    parser.add_argument("--json", type=Path, help="also write the headline figures to this JSON record")
    args = parser.parse_args()
    sections = [s for s in args.sections.split(",") if s]
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {list(SECTIONS)}")
    if args.compile_only:
        return compile_only(args.arch, sections)

    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to sweep (try --compile-only)")
        return 0
    import flashinfer
    from flashinfer.jit.launch import device_arch

    warnings.simplefilter("ignore", flashinfer.ExperimentalWarning)
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}")
    t = time.perf_counter()
    with _pool() as pool:
        built = list(pool.map(_prebuild, all_jobs(device_arch(torch.device("cuda", 0)), sections)))
    print(f"compiled {len(built)} variants in {time.perf_counter() - t:.1f} s: " + "; ".join(built))
    rows: list = []
    for section in sections:
        t = time.perf_counter()
        kind, variants = SECTIONS[section]
        try:
            if kind == "gated":
                sweep_gated(rows)
            else:
                sweep_gemm(rows, variants)
        except Exception as exc:  # noqa: BLE001 - report and go on with the next kernel
            print(f"  section {section} failed: {exc!r}")
        print(f"  (section {section}: {time.perf_counter() - t:.1f} s)")
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], f"sweep_{'_'.join(sections)}.json").write_text(json.dumps(rows, indent=1))
    for line in best_lines(rows):
        print(line)
    if args.json:
        import bench_record

        bench_record.write(args.json, "kernel_sweep", headline(rows, sections), bench_record.command("kernel_sweep.py"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
