"""The experimental split-K backend of mm_bf16 without a GPU: opt-in, gate, warnings,
its CPU emulation, the launch plan, the JIT-only kernel spec and the feature record."""

import subprocess
import sys
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
import warnings
from pathlib import Path

import pytest
import torch

from flashinfer import ExperimentalWarning, aot, mm_bf16
from flashinfer.api_logging import EXPERIMENTAL_AUTO_ENV_VAR
from flashinfer.experimental.splitk_gemm import kernel, support
from flashinfer.jit import compile_spec
from flashinfer.jit.elf import function_symbols

FEATURE_DIR = Path(kernel.__file__).parent
REPO = FEATURE_DIR.parents[2]


def operands(m, k, n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(m, k, generator=gen).to(torch.bfloat16),
            torch.randn(k, n, generator=gen).to(torch.bfloat16))


def test_explicit_backend_warns_once_and_matches_float64():
    a, b = operands(3, 2500, 40)
    with pytest.warns(ExperimentalWarning, match="'splitk' selected for 'mm_bf16'"):
        out = mm_bf16(a, b, backend="splitk")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExperimentalWarning)
        mm_bf16(a, b, backend="splitk")  # a second warning would raise here
    ref = a.double() @ b.double()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2


def test_explicit_backend_needs_no_gate():
    assert EXPERIMENTAL_AUTO_ENV_VAR not in __import__("os").environ
    a, b = operands(1, 64, 8)
    with pytest.warns(ExperimentalWarning):
        assert mm_bf16(a, b, backend="splitk").shape == (1, 8)


def test_explicit_backend_refuses_large_m_with_the_reason():
    a, b = operands(17, 64, 8)
    with pytest.raises(ValueError, match="M <= 16"):
        mm_bf16(a, b, backend="splitk")


def test_gate_decides_whether_auto_may_consider_splitk(monkeypatch):
    a, b = operands(4, 2048, 16)
    mm_bf16(a, b)
    assert "splitk" not in mm_bf16.suitable_auto_backends
    assert mm_bf16.dropped_experimental_backends == ["splitk"]
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    with pytest.warns(ExperimentalWarning, match="may be selected automatically"):
        mm_bf16(a, b)
    assert "splitk" in mm_bf16.suitable_auto_backends
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "0")  # only "1" opens the gate
    mm_bf16(a, b)
    assert "splitk" not in mm_bf16.suitable_auto_backends


def test_checker_is_a_marked_experimental_backend():
    assert support.check_splitk.is_experimental
    assert support.check_splitk.is_compute_capability_supported(0)
    assert support.check_splitk.is_compute_capability_supported(90)
    assert not support.check_splitk.is_compute_capability_supported(75)


@pytest.mark.parametrize("n,k", [(8192, 8192), (64, 8192), (200, 1000), (8, 8), (4096, 24)])
def test_plan_splits_covers_k_in_16_deep_ranges(n, k):
    splits, k_per_split = kernel.plan_splits(n, k, sm_count=132)
    assert splits >= 1 and k_per_split % 16 == 0
    assert (splits - 1) * k_per_split < k <= splits * k_per_split
    if -(-n // 64) >= 132 * 3 // 4:
        assert splits == 1  # enough column slabs: no fp32 workspace


def test_plan_splits_spreads_narrow_outputs_over_the_gpu():
    splits, _ = kernel.plan_splits(64, 8192, sm_count=132)
    assert splits >= 8


@pytest.mark.parametrize("arch", [80, 90])
def test_kernel_spec_compiles_and_is_experimental(arch):
    spec = kernel.splitk_spec()
    assert spec.experimental and spec.created_in == kernel.__name__
    kind, image, _ = compile_spec(spec, arch)
    assert kind == "cubin" and "fi_splitk_gemm_bf16" in function_symbols(image)


def test_aot_registry_refuses_the_kernel():
    with pytest.raises(aot.AotRefusedError, match="splitk_gemm_bf16.*JIT-only"):
        aot.register(kernel.splitk_spec())


def test_core_imports_only_the_support_module():
    code = ("import sys, flashinfer.gemm; "
            "print(sorted(m for m in sys.modules if m.startswith('flashinfer.experimental.')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert result.stdout.strip() == "['flashinfer.experimental.splitk_gemm', 'flashinfer.experimental.splitk_gemm.support']"


def test_feature_record_is_complete():
    record = tomllib.loads((FEATURE_DIR / "FEATURE.toml").read_text())
    assert record["kind"] == "backend" and record["backends"] == ["mm_bf16:splitk"]
    assert (record["target_date"] - record["admitted"]).days <= 28
    for field in ("owner", "tracking_issue", "target_release", "apis", "auto_routing"):
        assert field in record
    readme = (FEATURE_DIR / "README.md").read_text().lower()
    for topic in ("what is experimental", "supported cases", "gate", "automatic routing"):
        assert topic in readme
