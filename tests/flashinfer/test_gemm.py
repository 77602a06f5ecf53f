"""mm_bf16 on the CPU: the torch backend against float64, validation, and dispatch choices.

Kernel launches are covered by test_kernels_gpu.py (GPU only). These tests name no
experimental backend, so they pass whichever features exist; an experimental backend of
mm_bf16 and its place in the dispatch are covered by its feature's tests under
tests/experimental/.
"""

import re
import warnings

import pytest
import torch

from flashinfer import BackendSupportedError, ExperimentalWarning, gemm, mm_bf16
from flashinfer.api_logging import EXPERIMENTAL_AUTO_ENV_VAR


def operands(m, k, n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=gen).to(torch.bfloat16)
    b = torch.randn(k, n, generator=gen).to(torch.bfloat16)
    return a, b


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (5, 37, 3), (64, 128, 96), (33, 1000, 17)])
def test_torch_backend_matches_float64(m, k, n):
    a, b = operands(m, k, n, seed=m + k + n)
    out = mm_bf16(a, b, backend="torch")
    ref = a.double() @ b.double()
    assert out.dtype == torch.bfloat16 and out.shape == (m, n)
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2


def test_out_is_written_and_returned():
    a, b = operands(4, 8, 6)
    out = torch.full((4, 6), float("nan"), dtype=torch.bfloat16)
    assert mm_bf16(a, b, out=out) is out
    assert torch.isfinite(out).all()


def test_auto_on_cpu_picks_torch_and_gate_unset_drops_only_experimental_backends():
    a, b = operands(4, 2048, 16)  # a decode shape
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExperimentalWarning)  # the gate is unset: no experimental candidate
        mm_bf16(a, b)
    candidates = mm_bf16.suitable_auto_backends
    assert candidates[0] == "torch" and not set(candidates) & mm_bf16.experimental_backends
    assert set(mm_bf16.dropped_experimental_backends) <= mm_bf16.experimental_backends


def test_gate_set_on_cpu_still_prefers_torch(monkeypatch):
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    a, b = operands(4, 2048, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)  # whichever experimental backends exist
        mm_bf16(a, b)
    candidates = mm_bf16.suitable_auto_backends
    assert candidates[0] == "torch" and "nvrtc" not in candidates  # nvrtc cannot run CPU tensors
    assert mm_bf16.dropped_experimental_backends == []


class _ReportsCuda(torch.Tensor):
    """A CPU tensor that says it is on CUDA (the heuristic's CUDA branch, without a GPU)."""

    is_cuda = True


def test_stable_backends_are_not_experimental_and_heuristic_order():
    assert not {"torch", "nvrtc"} & mm_bf16.experimental_backends
    marked = {name for name, check in mm_bf16.backend_checks.items() if getattr(check, "is_experimental", False)}
    assert mm_bf16.experimental_backends == marked
    for m, k in ((4, 2048), (64, 32)):  # a decode shape and a large one
        a, b = operands(m, k, 16)
        assert gemm._order_backends(["nvrtc", "torch"], a, b) == ["torch", "nvrtc"]  # CPU: torch first
        a, b = a.as_subclass(_ReportsCuda), b.as_subclass(_ReportsCuda)
        assert gemm._order_backends(["torch", "nvrtc"], a, b) == ["nvrtc", "torch"]  # CUDA: the kernel first
        assert gemm._order_backends(["torch"], a, b) == ["torch"]  # orders, never adds


def test_nvrtc_backend_refuses_cpu_tensors():
    a, b = operands(4, 8, 8)
    with pytest.raises(BackendSupportedError, match="nvrtc"):
        mm_bf16(a, b, backend="nvrtc")


@pytest.mark.parametrize(
    "a,b,message",
    [
        (torch.zeros(4, 8), torch.zeros(8, 2, dtype=torch.bfloat16), "a must be torch.bfloat16"),
        (torch.zeros(4, 8, dtype=torch.bfloat16), torch.zeros(8, dtype=torch.bfloat16), "b must be 2-D"),
        (torch.zeros(4, 8, dtype=torch.bfloat16), torch.zeros(7, 2, dtype=torch.bfloat16), r"a.shape\[1\] must equal"),
    ],
)
def test_bad_operands_are_named(a, b, message):
    with pytest.raises(ValueError, match=message):
        mm_bf16(a, b)


def test_bad_out_is_named():
    a, b = operands(4, 8, 6)
    with pytest.raises(ValueError, match="out must be a"):
        mm_bf16(a, b, out=torch.empty(4, 5, dtype=torch.bfloat16))


def test_unknown_backend_lists_the_available_ones():
    a, b = operands(2, 8, 8)
    available = ", ".join(sorted(mm_bf16.backend_checks))  # "nvrtc, torch" and any experimental ones
    assert {"nvrtc", "torch"} <= set(mm_bf16.backend_checks)
    with pytest.raises(BackendSupportedError, match=re.escape(available)):
        mm_bf16(a, b, backend="cutlass")


class FakeProps:
    def __init__(self, major, minor, optin=None):
        self.major, self.minor = major, minor
        if optin is not None:
            self.shared_memory_per_block_optin = optin


SM90 = gemm.SM90_PIPELINE


@pytest.mark.parametrize(
    "props,expected",
    [
        (FakeProps(9, 0, 227 * 1024), SM90),
        (FakeProps(9, 0), SM90),  # no attribute: the per-arch table
        (FakeProps(10, 0, 227 * 1024), gemm.GemmConfig(64, 4, free_schedule=True)),  # wgmma is sm_90 only
        (FakeProps(8, 0, 163 * 1024), gemm.GemmConfig(64, 3)),
        (FakeProps(8, 6, 99 * 1024), gemm.GemmConfig(32, 3)),
        (FakeProps(8, 9), gemm.GemmConfig(32, 3)),  # no attribute: 99 KB by default
    ],
)
def test_pipeline_fits_the_device(monkeypatch, props, expected):
    monkeypatch.setattr(gemm, "_pipelines", {})
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    assert gemm.pipeline_for(torch.device("cuda", 0)) == expected
    assert gemm.gemm_shared_bytes(*expected) <= getattr(props, "shared_memory_per_block_optin", 227 * 1024)


def test_config_macros_reach_the_spec():
    spec = gemm.gemm_bf16_spec(*gemm.GemmConfig(32, 3, 256, 128, 4, 2, True, True, 16, 2))
    assert {"-DBK=32", "-DSTAGES=3", "-DBM=256", "-DBN=128", "-DWARPS_M=4", "-DWARPS_N=2", "-DGROUP_M=16",
            "-DMIN_BLOCKS=2", "-DFRAG_PIPELINE=1", "-DFI_MMA_FREE_SCHEDULE"} <= set(spec.options)
    assert spec.kernels == ("fi_mm_bf16",)
    assert gemm.gemm_shared_bytes(32, 3, 256, 128) == 3 * (256 * 40 + 32 * 136) * 2


def test_wgmma_spec_targets_sm90a_only():
    spec = gemm.gemm_bf16_spec(*SM90)
    assert spec.archs == (90,) and spec.kernels == ("fi_mm_bf16_sm90",)
    assert spec.options[0] == "--gpu-architecture=sm_90a" and "-DBN=256" in spec.options
    assert SM90 == gemm.GemmConfig(64, 4, 128, 256, wgmma=True, b_mn_major=True)
    assert not any(p.wgmma for p in gemm.GEMM_PIPELINES)
    assert SM90.threads == 256 and gemm.gemm_shared_bytes(*SM90) == 4 * (128 + 256) * 64 * 2 + 1024


def test_mn_major_b_form_is_its_own_spec_and_compiles_without_spills():
    """B read as stored ([K, N]) is a separate compiled form: its own macro, name and cubin,
    with the entry point and no register spills (ptxas' report, no GPU needed)."""
    from flashinfer.jit import compile_spec
    from flashinfer.jit.elf import function_symbols

    k_major = gemm.GemmConfig(64, 4, 128, 256, wgmma=True)
    mn_major = k_major._replace(b_mn_major=True)
    spec = gemm.gemm_bf16_spec(*mn_major)
    assert "-DB_MN_MAJOR=1" in spec.options and "-DB_MN_MAJOR=0" in gemm.gemm_bf16_spec(*k_major).options
    assert spec.name != gemm.gemm_bf16_spec(*k_major).name and spec.name.endswith("_bmn")
    assert gemm.gemm_shared_bytes(*mn_major) == gemm.gemm_shared_bytes(*k_major)
    kind, image, log = compile_spec(spec, 90, ["--ptxas-options=-v"])
    assert kind == "cubin" and "fi_mm_bf16_sm90" in function_symbols(image)
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", log), log


def test_every_pipeline_spec_is_stable_and_distinct():
    specs = [gemm.gemm_bf16_spec(*p) for p in gemm.GEMM_PIPELINES]
    assert len({s.name for s in specs}) == len({s.digest for s in specs}) == len(specs)
    assert not any(s.experimental for s in specs)
