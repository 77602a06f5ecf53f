"""The 16-byte operand layout the NVRTC GEMM kernels (stable and split-K) require."""

import pytest
import torch

from flashinfer.gemm_layout import check_16_byte_operands

BF16 = torch.bfloat16


def operands(m=4, k=64, n=32):
    return torch.zeros(m, k, dtype=BF16), torch.zeros(k, n, dtype=BF16)


def test_contiguous_aligned_operands_pass_with_or_without_out():
    a, b = operands()
    check_16_byte_operands("nvrtc", a, b, None)
    check_16_byte_operands("nvrtc", a, b, torch.zeros(4, 32, dtype=BF16))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: (torch.zeros(64, 4, dtype=BF16).t(), operands()[1], None), "contiguous"),
        (lambda: (torch.zeros(4, 60, dtype=BF16), torch.zeros(60, 32, dtype=BF16), None), "K=60"),
        (lambda: (*operands(n=36), None), "N=36"),
        # one element past a 16-byte boundary: the pointer is 2-byte aligned only
        (lambda: (torch.zeros(4 * 64 + 1, dtype=BF16)[1:].view(4, 64), operands()[1], None), "aligned"),
        (lambda: (*operands(), torch.zeros(32, 4, dtype=BF16).t()), "contiguous"),
    ],
)
def test_each_violation_is_refused_naming_the_backend(make, message):
    a, b, out = make()
    with pytest.raises(ValueError, match=message) as refused:
        check_16_byte_operands("nvrtc", a, b, out)
    assert "mm_bf16 backend 'nvrtc'" in str(refused.value)
