"""Operand layout the NVRTC GEMM kernels need, stable and experimental alike.

Lightweight on purpose (torch only): the split-K support module checks it at
import of ``flashinfer.gemm``, so it must not pull in kernels or the JIT.
"""

from __future__ import annotations

from typing import Optional

import torch

__all__ = ["check_16_byte_operands"]


def check_16_byte_operands(
    backend: str, a: torch.Tensor, b: torch.Tensor, out: Optional[torch.Tensor]
) -> None:
    """Raise `ValueError` (naming ``backend``) unless the kernels can load 16-byte vectors.

    That is: contiguous ``a``, ``b`` and ``out``, K and N multiples of 8 (16-byte
    bf16 rows) and 16-byte aligned pointers.
    """
    tensors = (a, b) if out is None else (a, b, out)
    if not all(t.is_contiguous() for t in tensors):
        raise ValueError(f"mm_bf16 backend '{backend}' needs contiguous a, b and out")
    if a.shape[1] % 8 or b.shape[1] % 8:
        raise ValueError(
            f"mm_bf16 backend '{backend}' needs K and N divisible by 8 (16-byte rows), "
            f"got K={a.shape[1]}, N={b.shape[1]}"
        )
    if any(t.data_ptr() % 16 for t in tensors):
        raise ValueError(f"mm_bf16 backend '{backend}' needs 16-byte aligned a, b and out")
