"""Kernel throughput beside the torch baselines, in one run: python3 benchmarks/kernels.py

- mm_bf16 "nvrtc" vs torch.matmul (cuBLAS) at 4096^3 and 8192^3: TFLOP/s;
- split-K (experimental) vs the stable "nvrtc" kernel and cuBLAS at M in {1, 2, 4, 8, 16},
  K = 8192, N = 8192 and 28672 (the decode shapes split-K is admitted for): microseconds
  and the share of the HBM roofline for reading b once, after a check against float32;
- rmsnorm and gated_rmsnorm (NVRTC) vs their torch paths at 16384 x 8192 bf16:
  GB/s and the share of the H200's 4.8 TB/s, beside a device-to-device copy.

Each figure is the median over several timed repetitions of a CUDA graph holding
REPLAYS calls (so Python launch overhead is out of the number), after warm-up.
Without a GPU the script says so and exits 0. ``--json PATH`` also writes the headline
figures to a JSON record (benchmarks/bench_record.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import flashinfer  # noqa: E402

HBM_TBPS = 4.8
REPLAYS = 10
REPEATS = 7


def _graph_of(fn):
    """A CUDA graph that replays ``fn`` REPLAYS times, or None if capture fails."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            for _ in range(REPLAYS):
                fn()
    except Exception as exc:  # noqa: BLE001 - fall back to eager timing
        print(f"  (graph capture failed: {exc!r}; timing eagerly)")
        return None
    return graph


def time_seconds(fn) -> float:
    """Median seconds per call of ``fn``."""
    graph = _graph_of(fn)
    run = graph.replay if graph is not None else (lambda: [fn() for _ in range(REPLAYS)])
    run()
    torch.cuda.synchronize()
    samples = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3 / REPLAYS)
    return statistics.median(samples)


def bench_gemm() -> dict:
    figures = {}
    print("\n== mm_bf16: NVRTC kernel vs torch.matmul (cuBLAS) ==")
    print(f"{'M=N=K':>8} {'nvrtc TFLOP/s':>14} {'cuBLAS TFLOP/s':>15} {'ratio':>7}")
    for size in (2048, 4096, 8192):
        a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
        flops = 2.0 * size**3
        t_ours = time_seconds(lambda: flashinfer.mm_bf16(a, b, out=out, backend="nvrtc"))
        t_ref = time_seconds(lambda: torch.matmul(a, b, out=out))
        print(f"{size:>8} {flops / t_ours / 1e12:>14.1f} {flops / t_ref / 1e12:>15.1f} {t_ref / t_ours:>7.2f}")
        figures[str(size)] = {"nvrtc_tflops": round(flops / t_ours / 1e12, 1),
                              "cublas_tflops": round(flops / t_ref / 1e12, 1), "ratio": round(t_ref / t_ours, 3)}
        a = b = out = None  # the GPU memory goes before the next size's (the timed lambdas read these names)
    return {"gemm": figures}


def bench_gemm_pipelines() -> dict:
    from flashinfer.gemm import GEMM_PIPELINES, SM90_PIPELINE, run_nvrtc

    # on sm_90: the wgmma kernel's default and its other B form (b transposed first, or read as stored)
    sm90 = (SM90_PIPELINE, SM90_PIPELINE._replace(b_mn_major=not SM90_PIPELINE.b_mn_major))
    configs = (sm90 if torch.cuda.get_device_capability() == (9, 0) else ()) + GEMM_PIPELINES
    print("\n== mm_bf16 NVRTC kernel by configuration ==")
    figures: dict = {}
    for size in (4096, 8192):
        a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
        cells = []
        for config in configs:
            t = time_seconds(lambda: run_nvrtc(a, b, out, pipeline=config))
            cells.append(f"{config.name}: {2.0 * size**3 / t / 1e12:.1f}")
            figures.setdefault(config.name, {})[str(size)] = round(2.0 * size**3 / t / 1e12, 1)
        print(f"{size:>6}  " + "  ".join(cells) + "  TFLOP/s")
        a = b = out = None  # the GPU memory goes before the next size's (the timed lambdas read these names)
    return {"gemm_by_configuration_tflops": figures}


def bench_splitk() -> dict:
    """The decode shapes the split-K backend exists for: M in {1, 2, 4, 8, 16} against N = K = 8192
    and a 70B-class MLP projection (N = 28672, K = 8192); the target is splitk/cuBLAS >= 1 for
    every shape and, at M = 1, at least 85% of the HBM roofline for reading ``b`` once."""
    print("\n== mm_bf16 decode shapes: split-K (experimental) vs stable NVRTC vs cuBLAS, one run ==")
    print(f"{'M':>4} {'N':>6} {'splitk us':>10} {'roofline':>9} {'nvrtc us':>9} {'cuBLAS us':>10} "
          f"{'splitk/nvrtc':>13} {'splitk/cuBLAS':>14}")
    k = 8192
    rows, ratios = [], {}
    for n in (8192, 28672):
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        for m in (1, 2, 4, 8, 16):
            a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            reference = (a.float() @ b.float()).to(torch.bfloat16)
            flashinfer.mm_bf16(a, b, out=out, backend="splitk")
            torch.testing.assert_close(out.float(), reference.float(), rtol=2e-2, atol=2e-1)  # checked before timed
            t_split = time_seconds(lambda: flashinfer.mm_bf16(a, b, out=out, backend="splitk"))
            t_nvrtc = time_seconds(lambda: flashinfer.mm_bf16(a, b, out=out, backend="nvrtc"))
            t_ref = time_seconds(lambda: torch.matmul(a, b, out=out))
            floor = 2 * k * n / (HBM_TBPS * 1e12)  # reading b once at the HBM bandwidth
            print(f"{m:>4} {n:>6} {t_split * 1e6:>10.1f} {100 * floor / t_split:>8.0f}% {t_nvrtc * 1e6:>9.1f} "
                  f"{t_ref * 1e6:>10.1f} {t_nvrtc / t_split:>12.2f}x {t_ref / t_split:>13.2f}x")
            rows.append({"m": m, "n": n, "k": k, "splitk_us": round(t_split * 1e6, 1),
                         "nvrtc_us": round(t_nvrtc * 1e6, 1), "cublas_us": round(t_ref * 1e6, 1),
                         "roofline": round(floor / t_split, 3)})
            ratios.setdefault(f"n{n}", {})[str(m)] = round(t_nvrtc / t_split, 2)
        b = None  # the GPU memory goes before the next shape's
    return {"splitk_vs_nvrtc": ratios, "splitk": rows}


def bench_norms() -> dict:
    rows, hidden = 16384, 8192
    print(f"\n== norms at {rows} x {hidden} bf16 (share of {HBM_TBPS} TB/s) ==")
    x = torch.randn(rows, hidden, device="cuda", dtype=torch.bfloat16)
    z = torch.randn(rows, hidden, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(hidden, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    size = x.numel() * 2

    def report(label, seconds, nbytes):
        tbps = nbytes / seconds / 1e12
        print(f"{label:<34} {seconds * 1e6:>9.1f} us {tbps:>6.2f} TB/s {100 * tbps / HBM_TBPS:>6.1f}%")
        return round(tbps, 2)

    figures = {"hbm_tbps": HBM_TBPS}
    figures["copy_tbps"] = report("device-to-device copy (ceiling)", time_seconds(lambda: out.copy_(x)), 2 * size)
    figures["rmsnorm_tbps"] = report(
        "rmsnorm nvrtc", time_seconds(lambda: flashinfer.rmsnorm(x, w, out=out, backend="nvrtc")), 2 * size)
    report("rmsnorm torch", time_seconds(lambda: flashinfer.rmsnorm(x, w, out=out, backend="torch")), 2 * size)
    figures["gated_rmsnorm_tbps"] = report(
        "gated_rmsnorm nvrtc (experimental)", time_seconds(lambda: flashinfer.gated_rmsnorm(x, z, w)), 3 * size)
    from flashinfer.experimental.gated_rmsnorm.kernel import run_torch

    report("gated_rmsnorm torch path", time_seconds(lambda: run_torch(x, z, w, 1e-6)), 3 * size)
    return {"norms": figures}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the headline figures to this JSON record")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to time (run this on a GPU machine)")
        return 0
    warnings.simplefilter("ignore", flashinfer.ExperimentalWarning)
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}")
    figures: dict = {"failed": []}
    for section in (bench_gemm, bench_splitk, bench_norms, bench_gemm_pipelines):
        try:
            figures.update(section())
        except Exception as exc:  # noqa: BLE001 - report and go on with the next section
            print(f"  {section.__name__} failed: {exc!r}")
            figures["failed"].append(section.__name__)
    if args.json:
        import bench_record

        bench_record.write(args.json, "kernels", figures, bench_record.command("kernels.py"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
