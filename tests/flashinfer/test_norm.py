"""rmsnorm on the CPU: torch backend against float64, validation, dispatch.

Kernel launches are covered by test_kernels_gpu.py (GPU only); experimental norms
by their features' tests under tests/experimental/.
"""

import pytest
import torch

from flashinfer import BackendSupportedError, norm, rmsnorm


def float64_rmsnorm(x, w, eps):
    xd = x.double()
    return xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + eps) * w.double()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(1, 1), (3, 17), (2, 5, 64), (4, 4096)])
def test_torch_backend_matches_float64(shape, dtype):
    gen = torch.Generator().manual_seed(sum(shape))
    x = (torch.randn(*shape, generator=gen) * 3).to(dtype)
    w = torch.randn(shape[-1], generator=gen).to(dtype)
    out = rmsnorm(x, w, eps=1e-5, backend="torch")
    ref = float64_rmsnorm(x, w, 1e-5)
    tolerance = 1e-6 if dtype == torch.float32 else 1e-2
    assert out.dtype == dtype and out.shape == x.shape
    assert ((out.double() - ref).norm() / ref.norm()).item() < tolerance


def test_eps_matters_for_tiny_inputs():
    x = torch.full((1, 8), 1e-4)
    w = torch.ones(8)
    assert rmsnorm(x, w, eps=0.0)[0, 0].item() == pytest.approx(1.0, rel=1e-5)
    assert rmsnorm(x, w, eps=1.0)[0, 0].item() == pytest.approx(1e-4, rel=1e-3)


def test_out_is_written_and_returned():
    x, w = torch.randn(3, 8), torch.randn(8)
    out = torch.full_like(x, float("nan"))
    assert rmsnorm(x, w, out=out) is out
    assert torch.isfinite(out).all()


def test_auto_on_cpu_picks_torch():
    rmsnorm(torch.randn(2, 8), torch.randn(8))
    assert rmsnorm.suitable_auto_backends == ["torch"]
    assert rmsnorm.experimental_backends == frozenset()


def test_nvrtc_backend_refuses_cpu_tensors():
    with pytest.raises(BackendSupportedError, match="nvrtc"):
        rmsnorm(torch.randn(2, 8, dtype=torch.bfloat16), torch.randn(8, dtype=torch.bfloat16), backend="nvrtc")


@pytest.mark.parametrize(
    "x,w,eps,message",
    [
        (torch.randn(2, 8), torch.randn(7), 1e-6, r"weight must have shape \(8,\)"),
        (torch.randn(2, 8), torch.randn(8), -1.0, "eps must be a non-negative number"),
        (torch.randn(2, 8), torch.randn(8), "1e-6", "eps must be a non-negative number"),
        (torch.ones(2, 8, dtype=torch.int32), torch.randn(8), 1e-6, "x must be a floating-point"),
        (torch.randn(2, 0), torch.randn(0), 1e-6, "non-empty last dimension"),
    ],
)
def test_bad_inputs_are_named(x, w, eps, message):
    with pytest.raises(ValueError, match=message):
        rmsnorm(x, w, eps=eps)


def test_rmsnorm_spec_is_stable():
    spec = norm.rmsnorm_spec()
    assert not spec.experimental and spec.kernels == ("fi_rmsnorm_bf16",)

