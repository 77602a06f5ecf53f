"""The split-K kernel against float64 references on a GPU (skipped without one)."""

import pytest
import torch

from flashinfer import mm_bf16

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.filterwarnings("ignore::flashinfer.ExperimentalWarning"),
]


@pytest.mark.parametrize("m", [1, 3, 4, 8, 15, 16])
@pytest.mark.parametrize("n,k", [(8192, 8192), (64, 8192), (200, 1000), (8, 8), (4104, 24)])
def test_splitk_matches_float64(m, n, k):
    gen = torch.Generator(device="cuda").manual_seed(m * 7919 + n * 31 + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=gen)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    mm_bf16(a, b, out=out, backend="splitk")
    ref = a.double() @ b.double()
    assert torch.isfinite(out).all(), "some outputs were never written"
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2


def test_auto_with_gate_picks_splitk_for_decode(monkeypatch):
    monkeypatch.setenv("FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS", "1")
    a = torch.randn(4, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 512, device="cuda", dtype=torch.bfloat16)
    out = mm_bf16(a, b)
    assert mm_bf16.suitable_auto_backends[0] == "splitk"
    assert ((out.double() - a.double() @ b.double()).norm() / (a.double() @ b.double()).norm()).item() < 1e-2
