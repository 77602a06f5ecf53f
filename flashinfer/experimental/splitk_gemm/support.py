"""Support module of the split-K backend: its `backend_requirement` checker only.

Imported by core (`flashinfer.gemm`) at module level, so it imports nothing but
the standard library, torch and core modules outside ``flashinfer.jit``.
"""

from __future__ import annotations

import torch

from flashinfer.capabilities import CPU_COMPUTE_CAPABILITY, NVRTC_CAPABILITIES, supported_compute_capability
from flashinfer.experimental import experimental_backend
from flashinfer.gemm_layout import check_16_byte_operands

__all__ = ["MAX_M", "check_splitk"]

#: Largest M (rows of ``a``) the split-K kernel handles: one mma tile of rows.
MAX_M = 16


@experimental_backend
@supported_compute_capability([CPU_COMPUTE_CAPABILITY, *NVRTC_CAPABILITIES])
def check_splitk(a: torch.Tensor, b: torch.Tensor, out=None, backend="auto") -> bool:
    """Decode shapes only: ``M <= 16``; on CUDA also 16-byte rows and pointers."""
    if a.shape[0] > MAX_M:
        raise ValueError(f"mm_bf16 backend 'splitk' handles M <= {MAX_M} rows of a, got M={a.shape[0]}")
    if a.is_cuda:
        check_16_byte_operands("splitk", a, b, out)
    return True
