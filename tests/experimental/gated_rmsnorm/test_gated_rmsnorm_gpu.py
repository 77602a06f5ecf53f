"""The gated RMSNorm kernel against a float64 reference on a GPU (skipped without one)."""

import pytest
import torch

from flashinfer import gated_rmsnorm
from flashinfer.experimental.gated_rmsnorm import kernel
from flashinfer.experimental.gated_rmsnorm.kernel import kernel_applies

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.filterwarnings("ignore::flashinfer.ExperimentalWarning"),
]


@pytest.mark.parametrize("shape", [(1, 8), (3, 24), (7, 4096), (5, 8192), (33, 5000), (2, 40008), (2, 3, 64)])
def test_gated_rmsnorm_kernel_matches_float64(shape):
    gen = torch.Generator(device="cuda").manual_seed(sum(shape) + 1)
    x = torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=gen) * 2
    z = torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=gen) * 4
    w = torch.randn(shape[-1], device="cuda", dtype=torch.bfloat16, generator=gen)
    assert kernel_applies(x, z, w)  # the NVRTC kernel, not the torch path
    out = gated_rmsnorm(x, z, w, eps=1e-6)
    xd, zd = x.double(), z.double()
    ref = xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + 1e-6) * w.double() * zd * torch.sigmoid(zd)
    assert torch.isfinite(out).all()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2
    assert ((out.double() - ref).abs() <= 0.02 * ref.abs() + 0.02).all()


@pytest.mark.parametrize("config", [kernel.DEFAULT_CONFIG, kernel.GatedConfig(2, 512, False, False)], ids=str)
def test_kernel_variants_with_large_gates(config):
    """silu's fast division at |z| = 100 (exp(-z) overflows for z = -100)."""
    x = torch.randn(9, 3000, device="cuda", dtype=torch.bfloat16)
    z = (torch.randint(0, 2, (9, 3000), device="cuda") * 200 - 100).to(torch.bfloat16)
    w = torch.randn(3000, device="cuda", dtype=torch.bfloat16)
    out = kernel.run(x, z, w, 1e-6, config=config)
    xd, zd = x.double(), z.double()
    ref = xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + 1e-6) * w.double() * zd * torch.sigmoid(zd)
    assert torch.isfinite(out).all()
    assert ((out.double() - ref).abs() <= 0.02 * ref.abs() + 0.02).all()
