"""The row helpers rmsnorm shares with experimental row kernels (flashinfer/norm_rows.py)."""

from __future__ import annotations

import torch

from flashinfer import norm_rows


def test_row_kernel_threads_cover_the_row():
    for vecs in (1, 31, 256, 1024, 4096, 5000):
        threads = norm_rows.row_kernel_threads(vecs, 4)  # CACHED_VECS of csrc/rmsnorm.cu
        assert threads % 32 == 0 and 32 <= threads <= 1024
        assert threads * 4 >= min(vecs, 4096)  # up to 4096 vectors stay in registers


def test_row_kernel_threads_follow_the_vectors_each_thread_caches():
    assert norm_rows.row_kernel_threads(1024, 2) == 512
    assert norm_rows.row_kernel_threads(1024, 8) == 128


def test_rms_normalize_fp32_matches_the_formula():
    x = torch.tensor([[3.0, 4.0]], dtype=torch.bfloat16)
    weight = torch.tensor([1.0, 2.0])
    out = norm_rows.rms_normalize_fp32(x, weight, 0.0)
    assert out.dtype == torch.float32
    rms = (12.5) ** 0.5
    torch.testing.assert_close(out, torch.tensor([[3.0 / rms, 8.0 / rms]]))
