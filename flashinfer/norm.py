"""Normalisation: ``rmsnorm`` (stable) and the thin entry point of ``gated_rmsnorm``.

``rmsnorm`` has a ``"torch"`` backend (any device and float dtype) and an
``"nvrtc"`` backend (csrc/rmsnorm.cu: bf16 on CUDA, one block per row, 16-byte
vectors). ``gated_rmsnorm`` is experimental: this module only validates its
arguments and hands off to ``flashinfer.experimental.gated_rmsnorm``.
"""

from __future__ import annotations

import functools
from typing import Optional

import torch

from .api_logging import experimental_notice, flashinfer_api, flashinfer_experimental_api
from .capabilities import CPU_COMPUTE_CAPABILITY, NVRTC_CAPABILITIES, supported_compute_capability
from .jit import CSRC_DIR, JitSpec, common_headers, read_source
from .norm_rows import rms_normalize_fp32, row_kernel_threads
from .utils import backend_requirement

__all__ = ["gated_rmsnorm", "rmsnorm", "rmsnorm_spec"]

_KERNEL = "fi_rmsnorm_bf16"
_CACHED_VECS = 4  # CACHED_VECS in rmsnorm.cu


@functools.lru_cache(maxsize=None)
def rmsnorm_spec() -> JitSpec:
    """The stable RMSNorm kernel (registered for AOT builds)."""
    return JitSpec("rmsnorm_bf16", read_source(CSRC_DIR / "rmsnorm.cu"), [_KERNEL], headers=common_headers())


def validate_norm_inputs(api: str, x, weight, eps, out=None) -> None:
    """Shared validation of ``rmsnorm`` and ``gated_rmsnorm``; raises naming the argument."""
    for name, t in (("x", x), ("weight", weight)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{api}: {name} must be a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point():
            raise ValueError(f"{api}: {name} must be a floating-point tensor, got {t.dtype}")
    if x.dim() < 1 or x.shape[-1] == 0:
        raise ValueError(f"{api}: x must have a non-empty last dimension, got shape {tuple(x.shape)}")
    if weight.dim() != 1 or weight.shape[0] != x.shape[-1]:
        raise ValueError(f"{api}: weight must have shape ({x.shape[-1]},), got {tuple(weight.shape)}")
    if weight.device != x.device:
        raise ValueError(f"{api}: x is on {x.device} and weight on {weight.device}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
        raise ValueError(f"{api}: eps must be a non-negative number, got {eps!r}")
    if out is not None and (
        not isinstance(out, torch.Tensor) or out.shape != x.shape or out.dtype != x.dtype or out.device != x.device
    ):
        raise ValueError(f"{api}: out must match x ({tuple(x.shape)}, {x.dtype}, {x.device})")


def _check_inputs(x, weight, eps=1e-6, out=None, backend="auto") -> bool:
    validate_norm_inputs("rmsnorm", x, weight, eps, out)
    return True


@supported_compute_capability([CPU_COMPUTE_CAPABILITY, *NVRTC_CAPABILITIES])
def _check_torch(x, weight, eps=1e-6, out=None, backend="auto") -> bool:
    return True


@supported_compute_capability(NVRTC_CAPABILITIES)
def _check_nvrtc(x, weight, eps=1e-6, out=None, backend="auto") -> bool:
    tensors = (x, weight) if out is None else (x, weight, out)
    if any(t.dtype != torch.bfloat16 for t in tensors):
        raise ValueError("rmsnorm backend 'nvrtc' needs bfloat16 x, weight and out")
    if not all(t.is_contiguous() for t in tensors):
        raise ValueError("rmsnorm backend 'nvrtc' needs contiguous x, weight and out")
    if x.shape[-1] % 8 or any(t.data_ptr() % 16 for t in tensors):
        raise ValueError(f"rmsnorm backend 'nvrtc' needs a hidden size divisible by 8 and 16-byte aligned tensors, got {x.shape[-1]}")
    return True


def _order_backends(candidates, x, weight, eps=1e-6, out=None, backend="auto"):
    """The kernel first where it can run, torch otherwise."""
    order = ("nvrtc", "torch")
    return [name for name in order if name in candidates]


@backend_requirement(
    {"torch": _check_torch, "nvrtc": _check_nvrtc},
    common_check=_check_inputs,
    heuristic_func=_order_backends,
)
@flashinfer_api
def rmsnorm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    out: Optional[torch.Tensor] = None,
    backend: str = "auto",
) -> torch.Tensor:
    """Root-mean-square normalisation over the last dimension.

    Computes ``out = x / sqrt(mean(x**2, dim=-1) + eps) * weight`` in float32 and
    stores it in ``x``'s dtype.

    Parameters
    ----------
    x : torch.Tensor
        ``(..., hidden)`` floating-point input.
    weight : torch.Tensor
        ``(hidden,)`` scale, on ``x``'s device.
    eps : float
        Added to the mean square before the square root.
    out : torch.Tensor, optional
        Output like ``x``; allocated when omitted.
    backend : str
        ``"torch"`` (any device and float dtype), ``"nvrtc"`` (CUDA sm_80+,
        contiguous bfloat16, hidden size divisible by 8) or ``"auto"`` (the
        kernel when it can run, else torch).

    Returns
    -------
    torch.Tensor
        The normalised tensor (``out`` when given).
    """
    if backend == "auto":
        backend = rmsnorm.suitable_auto_backends[0]
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    if backend == "nvrtc":
        if x.numel() == 0:
            return out
        from .jit import get_kernel

        hidden = x.shape[-1]
        kernel = get_kernel(rmsnorm_spec(), _KERNEL, x.device)
        threads = row_kernel_threads(hidden // 8, _CACHED_VECS)
        kernel.launch((x.numel() // hidden,), (threads,), [x, weight, out, hidden // 8, 1.0 / hidden, float(eps)])
        return out
    return out.copy_(rms_normalize_fp32(x, weight, eps))


@experimental_notice(
    "flashinfer.gated_rmsnorm is an experimental FlashInfer API: no compatibility guarantee, it may "
    "change or be removed without deprecation (docs/experimental.rst)"
)
@flashinfer_experimental_api(feature="gated_rmsnorm")
def gated_rmsnorm(x: torch.Tensor, z: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm of ``x`` gated by SiLU of ``z`` (hybrid-attention / Mamba-2 style).

    Computes, in float32, and returns in ``x``'s dtype::

        out = x / sqrt(mean(x**2, dim=-1) + eps) * weight * z * sigmoid(z)

    Parameters
    ----------
    x : torch.Tensor
        ``(..., hidden)`` floating-point input.
    z : torch.Tensor
        Gate, same shape, dtype and device as ``x``.
    weight : torch.Tensor
        ``(hidden,)`` scale.
    eps : float
        Added to the mean square before the square root.

    Returns
    -------
    torch.Tensor
        A new tensor shaped like ``x``.
    """
    validate_norm_inputs("gated_rmsnorm", x, weight, eps)
    if not isinstance(z, torch.Tensor) or z.shape != x.shape or z.dtype != x.dtype or z.device != x.device:
        got = f"{tuple(z.shape)} {z.dtype} on {z.device}" if isinstance(z, torch.Tensor) else type(z).__name__
        raise ValueError(f"gated_rmsnorm: z must match x ({tuple(x.shape)} {x.dtype} on {x.device}), got {got}")
    from .experimental.gated_rmsnorm.kernel import run

    return run(x, z, weight, float(eps))
