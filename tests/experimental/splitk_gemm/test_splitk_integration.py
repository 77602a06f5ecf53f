"""The split-K backend inside the stable machinery, on CPU tensors: mm_bf16's dispatch and
heuristic, its capability list, autotuning and its cache, and trace-apply pins.

These tests lived in the stable lane (tests/flashinfer/) and name the real backend; the
stable lane keeps feature-free versions of the same mechanisms, so that removing this
feature removes these tests with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch

from flashinfer import BackendSupportedError, ExperimentalWarning, autotuner, gemm, mm_bf16, trace_apply
from flashinfer.api_logging import EXPERIMENTAL_AUTO_ENV_VAR
from flashinfer.autotuner import TuningConfigWarning, autotune, load_autotune_cache
from flashinfer.capabilities import NVRTC_CAPABILITIES
from flashinfer.trace_apply import apply_trace_config
from flashinfer.tuning import tuner

from ...autotune_files import write_cache

REPO = Path(__file__).resolve().parents[3]
BF16 = torch.bfloat16


def operands(m, k, n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(m, k, generator=gen).to(BF16), torch.randn(k, n, generator=gen).to(BF16))


@pytest.fixture(autouse=True)
def _fresh_tuning_and_pins():
    tuner._reset_for_tests()
    trace_apply._reset_for_tests()
    yield
    tuner._reset_for_tests()
    trace_apply._reset_for_tests()


def ours(record) -> list:
    """FlashInfer's warnings among those recorded (torch may add its own)."""
    return [w for w in record if issubclass(w.category, (TuningConfigWarning, ExperimentalWarning))]


# -- dispatch and heuristic (from tests/flashinfer/test_gemm.py) ---------------------------


def test_auto_on_cpu_picks_torch_and_gate_unset_drops_splitk():
    a, b = operands(4, 2048, 16)  # a decode shape: split-K would apply
    mm_bf16(a, b)
    assert mm_bf16.suitable_auto_backends == ["torch"]
    assert mm_bf16.dropped_experimental_backends == ["splitk"]


def test_gate_set_on_cpu_still_prefers_torch(monkeypatch):
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    a, b = operands(4, 2048, 16)
    with pytest.warns(ExperimentalWarning, match="splitk"):
        mm_bf16(a, b)
    assert mm_bf16.suitable_auto_backends == ["torch", "splitk"]
    assert mm_bf16.dropped_experimental_backends == []


def test_gate_set_large_m_excludes_splitk(monkeypatch):
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    a, b = operands(64, 32, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExperimentalWarning)  # split-K is no candidate: no warning
        mm_bf16(a, b)
    assert mm_bf16.suitable_auto_backends == ["torch"]


def test_experimental_backends_and_heuristic_order():
    assert mm_bf16.experimental_backends == frozenset({"splitk"})
    a, b = operands(4, 2048, 16)
    assert gemm._order_backends(["torch", "nvrtc", "splitk"], a, b) == ["torch", "splitk", "nvrtc"]


def test_unknown_backend_lists_splitk_among_the_available_ones():
    a, b = operands(2, 8, 8)
    with pytest.raises(BackendSupportedError, match="nvrtc, splitk, torch"):
        mm_bf16(a, b, backend="cutlass")


# -- capabilities (from tests/flashinfer/test_capabilities.py) -----------------------------


def test_splitk_declares_the_one_nvrtc_list_and_the_cpu():
    assert mm_bf16.backend_checks["splitk"]._supported_ccs == set(NVRTC_CAPABILITIES) | {0}


# -- autotuning (from tests/flashinfer/test_autotuner.py) ----------------------------------

MM_SPLITK_ENTRY = {
    "api": "flashinfer.gemm.mm_bf16",
    "key": [4, 32, 64, "bfloat16", "cpu"],
    "backend": "splitk",
    "tactic": None,
    "experimental": True,
    "feature": "splitk_gemm",
    "tuned_at": "2026-11-01T00:00:00+00:00",
}


def test_mm_bf16_tuning_records_the_winner_and_its_feature(tmp_path, gate_on):
    a, b = torch.ones(4, 64, dtype=BF16), torch.ones(64, 32, dtype=BF16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        with autotune(cache=tmp_path / "cache.json"):
            assert torch.equal(mm_bf16(a, b), torch.full((4, 32), 64.0, dtype=BF16))
    (entry,) = json.loads((tmp_path / "cache.json").read_text())["entries"]
    assert entry["api"] == "flashinfer.gemm.mm_bf16" and entry["key"] == [4, 32, 64, "bfloat16", "cpu"]
    expected = {"torch": (False, None), "splitk": (True, "splitk_gemm")}
    assert (entry["experimental"], entry["feature"]) == expected[entry["backend"]]


def test_mm_bf16_loaded_splitk_winner_is_used_only_with_the_gate(tmp_path, monkeypatch):
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    assert load_autotune_cache(write_cache(tmp_path / "cache.json", [MM_SPLITK_ENTRY])).loaded == 1
    a, b = torch.ones(4, 64, dtype=BF16), torch.ones(64, 32, dtype=BF16)
    with pytest.warns(ExperimentalWarning, match="'splitk'"):
        mm_bf16(a, b)
    assert mm_bf16.suitable_auto_backends == ["splitk", "torch"]  # untuned: torch first on CPU
    monkeypatch.delenv(EXPERIMENTAL_AUTO_ENV_VAR)
    mm_bf16(a, b)
    assert mm_bf16.suitable_auto_backends == ["torch"]


MM_ENV_SCRIPT = textwrap.dedent(
    """
    import json, sys, warnings, torch
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        import flashinfer
        a, b = torch.ones(4, 64, dtype=torch.bfloat16), torch.ones(64, 32, dtype=torch.bfloat16)
        flashinfer.mm_bf16(a, b)
        flashinfer.mm_bf16(a, b)
    print(json.dumps({
        "candidates": flashinfer.mm_bf16.suitable_auto_backends,
        "splitk_imported": "flashinfer.experimental.splitk_gemm.kernel" in sys.modules,
        "warnings": [f"{w.category.__name__}: {w.message}" for w in record],
    }))
    """
)


def test_mm_bf16_cache_with_splitk_winner_loaded_without_the_gate_in_a_fresh_process(tmp_path):
    cache = write_cache(tmp_path / "cache.json", [MM_SPLITK_ENTRY])
    environment = {**os.environ, "PYTHONPATH": str(REPO), autotuner.AUTOTUNE_CACHE_ENV_VAR: str(cache)}
    environment.pop(EXPERIMENTAL_AUTO_ENV_VAR, None)
    result = subprocess.run([sys.executable, "-c", MM_ENV_SCRIPT], env=environment, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["candidates"] == ["torch"]
    assert report["splitk_imported"] is False
    (warning,) = report["warnings"]
    assert warning.startswith("TuningConfigWarning: autotune cache")
    assert "skipped 1" in warning and "flashinfer.gemm.mm_bf16:splitk" in warning
    assert "no longer exists" not in warning  # held aside by the gate, not unknown


# -- trace-apply pins (from tests/flashinfer/test_trace_apply.py) --------------------------


def write_toml(tmp_path, text, name="pins.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_mm_bf16_keyed_pin_is_the_only_candidate(tmp_path, gate_on):
    path = write_toml(
        tmp_path,
        """
        [[pin]]
        api = "flashinfer.gemm.mm_bf16"
        key = [4, 32, 64, "bfloat16", "cpu"]
        backend = "torch"
        """,
    )
    apply_trace_config(path)
    a, b = torch.ones(4, 64, dtype=BF16), torch.ones(64, 32, dtype=BF16)
    mm_bf16(a, b)
    assert mm_bf16.suitable_auto_backends == ["torch"]  # unpinned, the gate adds splitk
    with pytest.warns(ExperimentalWarning):
        mm_bf16(a[:2], b)
    assert mm_bf16.suitable_auto_backends == ["torch", "splitk"]


def test_mm_bf16_pin_to_splitk_applies_only_with_the_gate(tmp_path, monkeypatch):
    path = write_toml(tmp_path, '[[pin]]\napi = "flashinfer.gemm.mm_bf16"\nbackend = "splitk"\n')
    a, b = torch.ones(4, 64, dtype=BF16), torch.ones(64, 32, dtype=BF16)
    with pytest.warns(TuningConfigWarning, match=EXPERIMENTAL_AUTO_ENV_VAR) as record:
        assert apply_trace_config(path).loaded == 0
    assert len(record) == 1
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = mm_bf16(a, b)
    assert ours(record) == []  # no pin, no experimental backend
    assert torch.equal(out, torch.full((4, 32), 64.0, dtype=BF16))
    assert mm_bf16.suitable_auto_backends == ["torch"]

    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    assert apply_trace_config(path).loaded == 1
    with pytest.warns(ExperimentalWarning, match="'splitk' selected for 'mm_bf16'"):
        out = mm_bf16(a, b)
    assert torch.equal(out, torch.full((4, 32), 64.0, dtype=BF16))
    assert mm_bf16.suitable_auto_backends == ["splitk"]
