"""The experimental gated_rmsnorm API without a GPU: the opt-in warning, the torch path
against float64, validation, the JIT-only kernel spec and the feature record."""

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
import warnings
from pathlib import Path

import pytest
import torch

from flashinfer import ExperimentalWarning, aot, gated_rmsnorm
from flashinfer.experimental.gated_rmsnorm import kernel
from flashinfer.jit import compile_spec
from flashinfer.jit.elf import function_symbols

FEATURE_DIR = Path(kernel.__file__).parent


def float64_reference(x, z, w, eps):
    xd, zd = x.double(), z.double()
    return xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + eps) * w.double() * zd * torch.sigmoid(zd)


@pytest.fixture
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        yield


def test_first_call_warns_once_and_needs_no_gate():
    x, w = torch.randn(2, 8), torch.randn(8)
    with pytest.warns(ExperimentalWarning, match="'gated_rmsnorm' is an experimental"):
        gated_rmsnorm(x, x, w)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExperimentalWarning)
        gated_rmsnorm(x, x, w)


def test_marked_experimental_with_a_docs_banner():
    assert gated_rmsnorm.is_experimental and gated_rmsnorm.experimental_feature == "gated_rmsnorm"
    assert gated_rmsnorm.__doc__.startswith(".. warning::")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(1, 1), (3, 24), (2, 5, 64), (4, 4096)])
def test_torch_path_matches_float64(quiet, shape, dtype):
    gen = torch.Generator().manual_seed(sum(shape) + 3)
    x = (torch.randn(*shape, generator=gen) * 2).to(dtype)
    z = (torch.randn(*shape, generator=gen) * 4).to(dtype)
    w = torch.randn(shape[-1], generator=gen).to(dtype)
    out = gated_rmsnorm(x, z, w, eps=1e-5)
    ref = float64_reference(x, z, w, 1e-5)
    tolerance = 1e-5 if dtype == torch.float32 else 1e-2
    assert out.dtype == dtype and out.shape == x.shape
    assert ((out.double() - ref).norm() / ref.norm()).item() < tolerance


def test_gate_of_zero_zeroes_the_output(quiet):
    x, w = torch.randn(3, 16), torch.randn(16)
    assert (gated_rmsnorm(x, torch.zeros_like(x), w) == 0).all()


@pytest.mark.parametrize(
    "z,w,message",
    [
        (torch.randn(2, 9), torch.randn(8), "z must match x"),
        (torch.randn(2, 8).double(), torch.randn(8), "z must match x"),
        (torch.randn(2, 8), torch.randn(3), "gated_rmsnorm: weight must have shape"),
    ],
)
def test_bad_inputs_are_named(quiet, z, w, message):
    with pytest.raises(ValueError, match=message):
        gated_rmsnorm(torch.randn(2, 8), z, w)


def test_kernel_does_not_apply_on_cpu():
    x = torch.randn(2, 8, dtype=torch.bfloat16)
    assert not kernel.kernel_applies(x, x, torch.randn(8, dtype=torch.bfloat16))


def test_kernel_spec_is_experimental():
    assert kernel.gated_rmsnorm_spec().experimental


@pytest.mark.parametrize("arch", [80, 90])
def test_kernel_spec_compiles(arch):
    kind, image, _ = compile_spec(kernel.gated_rmsnorm_spec(), arch)
    assert kind == "cubin" and "fi_gated_rmsnorm_bf16" in function_symbols(image)


def test_config_macros_and_block_size():
    config = kernel.GatedConfig(2, 512, z_first=False, fast_silu=True)
    spec = kernel.gated_rmsnorm_spec(config)
    assert spec.experimental and spec.name != kernel.gated_rmsnorm_spec().name
    assert {"-DCACHED_VECS=2", "-DMAX_THREADS=512", "-DZ_FIRST=0", "-DFAST_SILU=1"} <= set(spec.options)
    assert config.threads(1024) == 512  # 1024 vectors, 2 cached per thread
    assert config.threads(4096) == 512  # capped by the launch bound; the rest read twice
    assert config.threads(5) == 32


def test_aot_registry_refuses_the_kernel():
    with pytest.raises(aot.AotRefusedError, match="gated_rmsnorm_bf16.*JIT-only"):
        aot.register(kernel.gated_rmsnorm_spec())


def test_feature_record_is_complete():
    record = tomllib.loads((FEATURE_DIR / "FEATURE.toml").read_text())
    assert record["kind"] == "api" and record["apis"] == ["flashinfer.gated_rmsnorm"]
    assert (record["target_date"] - record["admitted"]).days <= 28
    for field in ("owner", "tracking_issue", "target_release", "backends", "auto_routing"):
        assert field in record
    readme = (FEATURE_DIR / "README.md").read_text().lower()
    for topic in ("what is experimental", "supported cases", "gate", "automatic routing"):
        assert topic in readme
