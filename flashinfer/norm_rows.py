"""Row-wise normalisation helpers shared by ``rmsnorm`` and the experimental ``gated_rmsnorm``.

Neutral ground, so that neither side imports the other: `flashinfer.norm` (core)
hands off to ``flashinfer.experimental.gated_rmsnorm`` inside its entry point, and
the experimental kernel module must not import `flashinfer.norm` back. torch only.
"""

from __future__ import annotations

import torch

__all__ = ["rms_normalize_fp32", "row_kernel_threads"]


def row_kernel_threads(hidden_vecs: int, cached_vecs: int) -> int:
    """Threads per block for a one-block-per-row kernel over 16-byte vectors, each
    thread caching ``cached_vecs`` of them (the kernel's CACHED_VECS)."""
    per_thread = -(-hidden_vecs // cached_vecs)
    return min(1024, max(32, -(-per_thread // 32) * 32))


def rms_normalize_fp32(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``x * rsqrt(mean(x^2) + eps) * weight`` in float32 (the torch paths' core)."""
    xf = x.float()
    return xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + eps) * weight.float()
