"""bf16 matrix multiplication, ``mm_bf16``, with three backends.

- ``"torch"``: `torch.matmul`; runs on any device.
- ``"nvrtc"``: a tiled tensor-core kernel compiled at run time; CUDA, sm_80 and
  newer: wgmma (csrc/gemm_bf16_sm90.cu) on sm_90, mma.sync (csrc/gemm_bf16.cu)
  elsewhere.
- ``"splitk"`` (experimental): a split-K kernel for decode shapes (M <= 16),
  under ``flashinfer/experimental/splitk_gemm/``. Only its checker is imported
  here (a support module); the kernel is imported when the backend runs.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Optional

import torch

from .api_logging import flashinfer_api
from .capabilities import CPU_COMPUTE_CAPABILITY, NVRTC_CAPABILITIES, supported_compute_capability
from .experimental.splitk_gemm.support import check_splitk
from .gemm_layout import check_16_byte_operands
from .jit import CSRC_DIR, JitSpec, common_headers, read_source
from .utils import backend_requirement

__all__ = ["GEMM_PIPELINES", "SM90_PIPELINE", "GemmConfig", "gemm_bf16_spec", "gemm_shared_bytes", "mm_bf16", "pipeline_for", "run_nvrtc"]

_KERNEL = "fi_mm_bf16"
_KERNEL_SM90 = "fi_mm_bf16_sm90"


class GemmConfig(NamedTuple):
    """One compiled form of csrc/gemm_bf16.cu (its macros); the first two fields are the pipeline."""

    block_k: int = 64
    stages: int = 4
    block_m: int = 128
    block_n: int = 256
    warps_m: int = 2
    warps_n: int = 4
    frag_pipeline: bool = False  # double-buffered mma fragments (FRAG_PIPELINE)
    free_schedule: bool = False  # mma asm not volatile (FI_MMA_FREE_SCHEDULE)
    group_m: int = 8  # tile rows walked together, for L2 reuse (GROUP_M)
    min_blocks: int = 1  # blocks per SM the register budget must allow (MIN_BLOCKS)
    wgmma: bool = False  # csrc/gemm_bf16_sm90.cu (sm_90 only; 128 x block_n x 64 tiles, 2 warpgroups)
    b_mn_major: bool = False  # wgmma kernel reads b as stored, [K, N] (B_MN_MAJOR); else b transposed first

    @property
    def threads(self) -> int:
        return 256 if self.wgmma else 32 * self.warps_m * self.warps_n

    @property
    def name(self) -> str:
        if self.wgmma:
            return f"sm90_128x{self.block_n}x64_s{self.stages}_g{self.group_m}" + "_bmn" * self.b_mn_major
        flags = "_fp" * self.frag_pipeline + "_fs" * self.free_schedule
        return (f"{self.block_m}x{self.block_n}x{self.block_k}_s{self.stages}_w{self.warps_m}x{self.warps_n}"
                f"_g{self.group_m}_b{self.min_blocks}{flags}")


#: Measured on an H200 (benchmarks/kernel_sweep.py --sections sm90, in commit d50395d; its record:
#: benchmarks/results/kernel_sweep.json; cuBLAS 773 / 807 TFLOP/s at 4096^3 / 8192^3). The wgmma
#: kernel reading b as stored, first choice on sm_90: 517 / 535 TFLOP/s (67% / 66% of cuBLAS);
#: the same kernel on b transposed on the host first: 368 / 474. The AOT registry
#: (flashinfer/aot.py) lists it first; it builds for sm_90 only.
SM90_PIPELINE = GemmConfig(64, 4, 128, 256, wgmma=True, b_mn_major=True)
#: The portable mma.sync kernel's configurations, fastest first; elsewhere a device runs
#: the first whose shared memory fits one block. (64, 4) with free mma scheduling: 311 / 327
#: TFLOP/s on the H200 (plain (64, 4), the previous default: 308 / 306).
GEMM_PIPELINES = (
    GemmConfig(64, 4, free_schedule=True),
    GemmConfig(64, 3),
    GemmConfig(32, 4),
    GemmConfig(32, 3),
)
_MAX_SHARED_BY_ARCH = {80: 163 * 1024, 87: 163 * 1024, 90: 227 * 1024, 100: 227 * 1024, 103: 227 * 1024}


@functools.lru_cache(maxsize=None)
def gemm_bf16_spec(*config) -> JitSpec:
    """The stable tensor-core GEMM kernel in one configuration (``GemmConfig`` fields);
    every one in `GEMM_PIPELINES` is registered for AOT builds."""
    c = GemmConfig(*config)
    if c.wgmma:  # wgmma needs the arch-specific target sm_90a (the later --gpu-architecture wins)
        return JitSpec(f"gemm_bf16_{c.name}", read_source(CSRC_DIR / "gemm_bf16_sm90.cu"), [_KERNEL_SM90],
                       headers=common_headers(), archs=(90,),
                       options=["--gpu-architecture=sm_90a", f"-DBN={c.block_n}", f"-DSTAGES={c.stages}",
                                f"-DGROUP_M={c.group_m}", f"-DB_MN_MAJOR={int(c.b_mn_major)}"])
    options = [f"-DBK={c.block_k}", f"-DSTAGES={c.stages}", f"-DBM={c.block_m}", f"-DBN={c.block_n}",
               f"-DWARPS_M={c.warps_m}", f"-DWARPS_N={c.warps_n}", f"-DGROUP_M={c.group_m}",
               f"-DMIN_BLOCKS={c.min_blocks}", f"-DFRAG_PIPELINE={int(c.frag_pipeline)}"]
    if c.free_schedule:
        options.append("-DFI_MMA_FREE_SCHEDULE")
    return JitSpec(f"gemm_bf16_{c.name}", read_source(CSRC_DIR / "gemm_bf16.cu"), [_KERNEL],
                   headers=common_headers(), options=options)


def gemm_shared_bytes(*config) -> int:
    """Dynamic shared memory of the kernel: stages x (padded A tile + padded B tile), bf16
    (the sm90 kernel: unpadded 128 x 64 and block_n x 64 tiles, plus 1 KB for alignment)."""
    c = GemmConfig(*config)
    if c.wgmma:
        return c.stages * (128 + c.block_n) * 64 * 2 + 1024
    return c.stages * (c.block_m * (c.block_k + 8) + c.block_k * (c.block_n + 8)) * 2


def _check_inputs(a, b, out=None, backend="auto") -> bool:
    """Shared validation: 2-D bf16 operands with matching inner dimensions."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"mm_bf16: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2:
            raise ValueError(f"mm_bf16: {name} must be 2-D, got shape {tuple(t.shape)}")
        if t.dtype != torch.bfloat16:
            raise ValueError(f"mm_bf16: {name} must be torch.bfloat16, got {t.dtype}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"mm_bf16: a is {tuple(a.shape)} and b is {tuple(b.shape)}; a.shape[1] must equal b.shape[0]")
    if a.device != b.device:
        raise ValueError(f"mm_bf16: a is on {a.device} and b on {b.device}")
    if out is not None:
        expected = (a.shape[0], b.shape[1])
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != expected or out.dtype != torch.bfloat16 or out.device != a.device:
            got = f"{tuple(out.shape)} {out.dtype} on {out.device}" if isinstance(out, torch.Tensor) else type(out).__name__
            raise ValueError(f"mm_bf16: out must be a {expected} torch.bfloat16 tensor on {a.device}, got {got}")
    return True


@supported_compute_capability([CPU_COMPUTE_CAPABILITY, *NVRTC_CAPABILITIES])
def _check_torch(a, b, out=None, backend="auto") -> bool:
    return True


@supported_compute_capability(NVRTC_CAPABILITIES)
def _check_nvrtc(a, b, out=None, backend="auto") -> bool:
    check_16_byte_operands("nvrtc", a, b, out)
    return True


def _order_backends(candidates, a, b, out=None, backend="auto"):
    """Decode shapes on CUDA (M <= 16, K >= 1024) prefer split-K; else the tiled kernel; torch last."""
    m, k = a.shape
    if a.is_cuda and m <= 16 and k >= 1024:
        order = ("splitk", "nvrtc", "torch")
    elif a.is_cuda:
        order = ("nvrtc", "torch", "splitk")
    else:  # on the CPU split-K is only a reference emulation
        order = ("torch", "splitk", "nvrtc")
    return [name for name in order if name in candidates]


_pipelines: dict = {}


def pipeline_for(device: torch.device) -> tuple:
    """The configuration for ``device``: `SM90_PIPELINE` on sm_90, else the first of
    `GEMM_PIPELINES` whose shared memory fits one block."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    chosen = _pipelines.get(index)
    if chosen is None:
        props = torch.cuda.get_device_properties(index)
        limit = getattr(props, "shared_memory_per_block_optin", None) or _MAX_SHARED_BY_ARCH.get(
            props.major * 10 + props.minor, 99 * 1024)
        sm90 = (props.major, props.minor) == (9, 0)  # the wgmma kernel runs on sm_90 only
        candidates = ((SM90_PIPELINE,) if sm90 else ()) + GEMM_PIPELINES
        fitting = [p for p in candidates if gemm_shared_bytes(*p) <= limit]
        chosen = _pipelines[index] = fitting[0] if fitting else GEMM_PIPELINES[-1]
    return chosen


def run_nvrtc(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, pipeline=None) -> torch.Tensor:
    """Launch the tiled kernel (inputs already validated); ``pipeline`` is a `GemmConfig`
    (or a tuple of its leading fields), by default the device's `pipeline_for`."""
    from .jit import get_kernel

    m, k = a.shape
    n = b.shape[1]
    if out.numel() == 0:
        return out
    config = GemmConfig(*(pipeline or pipeline_for(a.device)))
    spec = gemm_bf16_spec(*config)
    kernel = get_kernel(spec, spec.kernels[0], a.device)
    if config.wgmma and not config.b_mn_major:  # this form reads B K-major: pass B transposed
        b = b.t().contiguous()
    tiles = -(-m // config.block_m) * -(-n // config.block_n)
    kernel.launch((tiles,), (config.threads,), [a, b, out, m, n, k], shared_mem=gemm_shared_bytes(*config))
    return out


@backend_requirement(
    {"torch": _check_torch, "nvrtc": _check_nvrtc, "splitk": check_splitk},
    common_check=_check_inputs,
    heuristic_func=_order_backends,
)
@flashinfer_api
def mm_bf16(
    a: torch.Tensor,
    b: torch.Tensor,
    out: Optional[torch.Tensor] = None,
    backend: str = "auto",
) -> torch.Tensor:
    """Matrix product of two bf16 matrices with fp32 accumulation.

    Parameters
    ----------
    a : torch.Tensor
        ``(M, K)`` bfloat16 matrix.
    b : torch.Tensor
        ``(K, N)`` bfloat16 matrix, on the same device as ``a``.
    out : torch.Tensor, optional
        ``(M, N)`` bfloat16 output; allocated when omitted.
    backend : str
        ``"torch"`` (any device), ``"nvrtc"`` (CUDA sm_80+; contiguous operands,
        K and N divisible by 8) or ``"auto"``, which picks the first of
        ``mm_bf16.suitable_auto_backends``. Automatic selection considers
        experimental backends only when ``FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1``.

    Returns
    -------
    torch.Tensor
        ``a @ b`` as an ``(M, N)`` bfloat16 tensor (``out`` when given).
    """
    if backend == "auto":
        backend = mm_bf16.suitable_auto_backends[0]
    if out is None:
        out = torch.empty((a.shape[0], b.shape[1]), dtype=torch.bfloat16, device=a.device)
    if backend == "splitk":
        from .experimental.splitk_gemm.kernel import run

        return run(a, b, out)
    if backend == "nvrtc":
        return run_nvrtc(a, b, out)
    return torch.matmul(a, b, out=out)
