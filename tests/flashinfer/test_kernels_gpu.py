"""The stable NVRTC kernels against float64 references, on a GPU (skipped without one).

Shapes include ragged ones: M, N and K that are not multiples of the 128 x 256 x 32
GEMM tile, and hidden sizes that are not multiples of a block's vector span.
Outputs are poisoned with NaN first, so an element the kernel never writes fails.
"""

import pytest
import torch

from flashinfer import mm_bf16, rmsnorm
from flashinfer.gemm import GEMM_PIPELINES, SM90_PIPELINE, GemmConfig, run_nvrtc

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def describe_mismatch(out: torch.Tensor, ref: torch.Tensor) -> str:
    """Where the output is wrong: unwritten (NaN) count and the worst element."""
    diff = (out.double() - ref).abs().nan_to_num(float("inf"))
    worst = divmod(int(diff.argmax()), out.shape[-1])
    return (f"{int(torch.isnan(out).sum())} NaN of {out.numel()}, rel err {relative_error(out.nan_to_num(), ref):.3g}, "
            f"worst at {worst}: {out.flatten()[diff.argmax()].item()} vs {ref.flatten()[diff.argmax()].item():.4g}")


def check_gemm(m, n, k, **kwargs):
    gen = torch.Generator(device="cuda").manual_seed(m * 1_000_003 + n * 1009 + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=gen)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    result = run_nvrtc(a, b, out, **kwargs)
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    assert result is out
    assert torch.isfinite(out).all() and relative_error(out, ref) < 1e-2, describe_mismatch(out, ref)


GEMM_SHAPES = [
    (1, 8, 8),
    (7, 24, 40),
    (16, 64, 8192),
    (128, 256, 32),
    (129, 264, 40),
    (255, 520, 1000),
    (300, 1000, 4104),
    (1024, 2048, 512),
    (2048, 2048, 2048),
]


@pytest.mark.parametrize("m,n,k", GEMM_SHAPES)
def test_mm_bf16_nvrtc_matches_float64(m, n, k):
    gen = torch.Generator(device="cuda").manual_seed(m * 1_000_003 + n * 1009 + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=gen)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    result = mm_bf16(a, b, out=out, backend="nvrtc")
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    assert result is out
    assert torch.isfinite(out).all() and relative_error(out, ref) < 1e-2, describe_mismatch(out, ref)


#: The configurations a device may pick, plus both tile widths of the sm90 (wgmma) kernel,
#: each reading B transposed (K-major) and as stored (MN-major).
SM90_FORMS = [GemmConfig(64, s, 128, n, wgmma=True, b_mn_major=mn) for s, n in ((4, 256), (6, 128)) for mn in (False, True)]
CONFIGS = tuple(dict.fromkeys([SM90_PIPELINE, *SM90_FORMS, *GEMM_PIPELINES]))


@pytest.mark.parametrize("pipeline", CONFIGS, ids=lambda c: c.name)
@pytest.mark.parametrize("m,n,k", [(129, 264, 40), (300, 1000, 4104), (1000, 1032, 4136)])
def test_mm_bf16_pipeline_variants(m, n, k, pipeline):
    if pipeline.wgmma and torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the wgmma kernel needs sm_90")
    check_gemm(m, n, k, pipeline=pipeline)


def test_mm_bf16_nvrtc_k_zero_gives_zeros():
    a = torch.empty(5, 0, device="cuda", dtype=torch.bfloat16)
    b = torch.empty(0, 16, device="cuda", dtype=torch.bfloat16)
    out = torch.full((5, 16), float("nan"), device="cuda", dtype=torch.bfloat16)
    mm_bf16(a, b, out=out, backend="nvrtc")
    assert (out == 0).all()


def test_mm_bf16_auto_picks_nvrtc_on_cuda():
    a = torch.randn(256, 512, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(512, 256, device="cuda", dtype=torch.bfloat16)
    out = mm_bf16(a, b)
    assert mm_bf16.suitable_auto_backends[0] == "nvrtc"
    assert relative_error(out, a.double() @ b.double()) < 1e-2


def test_mm_bf16_nvrtc_rejects_unaligned_k():
    a = torch.randn(4, 12, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(12, 16, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="divisible by 8"):
        mm_bf16(a, b, backend="nvrtc")
    assert mm_bf16(a, b).shape == (4, 16)  # auto falls back to torch


NORM_SHAPES = [(1, 8), (3, 24), (7, 4096), (5, 8192), (33, 5000), (2, 40008), (2, 3, 64)]


@pytest.mark.parametrize("shape", NORM_SHAPES)
def test_rmsnorm_nvrtc_matches_float64(shape):
    gen = torch.Generator(device="cuda").manual_seed(sum(shape))
    x = torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=gen) * 3
    w = torch.randn(shape[-1], device="cuda", dtype=torch.bfloat16, generator=gen)
    out = torch.full_like(x, float("nan"))
    rmsnorm(x, w, eps=1e-5, out=out, backend="nvrtc")
    xd = x.double()
    ref = xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + 1e-5) * w.double()
    assert torch.isfinite(out).all()
    assert relative_error(out, ref) < 1e-2
    assert ((out.double() - ref).abs() <= 0.02 * ref.abs() + 0.02).all()
