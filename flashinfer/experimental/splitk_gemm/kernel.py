"""The split-K kernel's spec, launch plan and launcher, plus its CPU emulation.

On CUDA the kernel (splitk_gemm.cu) streams B once: each block owns 64 columns
and a K range, its warps split that range, and several K ranges (when the grid
would otherwise leave SMs idle) add fp32 partials into a workspace. On the CPU
`run` computes the same split-K sum with torch (fp32 partial products over K
chunks), so the backend can be exercised anywhere; it is not fast there.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Tuple

import torch

from flashinfer.jit import JitSpec, common_headers, get_kernel, read_source

__all__ = ["plan_splits", "run", "splitk_spec"]

_KERNEL = "fi_splitk_gemm_bf16"
_SLAB, _THREADS, _STEP = 64, 256, 16  # must match splitk_gemm.cu
_MIN_K_PER_SPLIT = 512
_CPU_CHUNK = 1024


@functools.lru_cache(maxsize=None)
def splitk_spec() -> JitSpec:
    """The split-K kernel; experimental, so JIT-only (never in the AOT registry)."""
    source = read_source(Path(__file__).with_name("splitk_gemm.cu"))
    return JitSpec("splitk_gemm_bf16", source, [_KERNEL], headers=common_headers())


def plan_splits(n: int, k: int, sm_count: int) -> Tuple[int, int]:
    """(number of K ranges, K per range): one range when the column slabs fill the GPU."""
    slabs = -(-n // _SLAB)
    k_steps = -(-k // _STEP)
    splits = 1
    if slabs < sm_count * 3 // 4:
        splits = max(1, min(-(-2 * sm_count // slabs), k // _MIN_K_PER_SPLIT))
    k_per_split = -(-k_steps // splits) * _STEP
    return -(-k // k_per_split) if k else 1, max(k_per_split, _STEP)


def _run_cpu(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    acc = torch.zeros((a.shape[0], b.shape[1]), dtype=torch.float32, device=a.device)
    for lo in range(0, a.shape[1], _CPU_CHUNK):
        acc += a[:, lo:lo + _CPU_CHUNK].float() @ b[lo:lo + _CPU_CHUNK].float()
    return out.copy_(acc)


def run(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``out = a @ b`` for ``a`` with at most 16 rows (inputs already validated)."""
    if not a.is_cuda:
        return _run_cpu(a, b, out)
    m, k = a.shape
    n = b.shape[1]
    if out.numel() == 0:
        return out
    sm_count = torch.cuda.get_device_properties(a.device).multi_processor_count
    splits, k_per_split = plan_splits(n, k, sm_count)
    kernel = get_kernel(splitk_spec(), _KERNEL, a.device)
    grid = (-(-n // _SLAB), splits)
    if splits == 1:
        kernel.launch(grid, (_THREADS,), [a, b, out, None, m, n, k, k_per_split])
        return out
    partial = torch.zeros((m, n), dtype=torch.float32, device=a.device)
    kernel.launch(grid, (_THREADS,), [a, b, None, partial, m, n, k, k_per_split])
    return out.copy_(partial)
