"""gated_rmsnorm's implementation: NVRTC kernel on CUDA (bf16), torch elsewhere."""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from flashinfer.jit import JitSpec, common_headers, get_kernel, read_source
from flashinfer.norm import rms_normalize_fp32, row_kernel_threads

__all__ = ["gated_rmsnorm_spec", "kernel_applies", "run", "run_torch"]

_KERNEL = "fi_gated_rmsnorm_bf16"


@functools.lru_cache(maxsize=None)
def gated_rmsnorm_spec() -> JitSpec:
    """The gated RMSNorm kernel; experimental, so JIT-only."""
    source = read_source(Path(__file__).with_name("gated_rmsnorm.cu"))
    return JitSpec("gated_rmsnorm_bf16", source, [_KERNEL], headers=common_headers())


def kernel_applies(x: torch.Tensor, z: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether the NVRTC kernel can run these (validated) inputs."""
    tensors = (x, z, weight)
    return (
        x.is_cuda
        and torch.cuda.get_device_capability(x.device) >= (8, 0)
        and all(t.dtype == torch.bfloat16 and t.is_contiguous() and t.data_ptr() % 16 == 0 for t in tensors)
        and x.shape[-1] % 8 == 0
    )


def run_torch(x: torch.Tensor, z: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    y = rms_normalize_fp32(x, weight, eps) * torch.nn.functional.silu(z.float())
    return y.to(x.dtype)


def run(x: torch.Tensor, z: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    if not kernel_applies(x, z, weight):
        return run_torch(x, z, weight, eps)
    out = torch.empty_like(x)
    if x.numel() == 0:
        return out
    hidden = x.shape[-1]
    kernel = get_kernel(gated_rmsnorm_spec(), _KERNEL, x.device)
    kernel.launch(
        (x.numel() // hidden,), (row_kernel_threads(hidden // 8),),
        [x, z, weight, out, hidden // 8, 1.0 / hidden, eps],
    )
    return out
