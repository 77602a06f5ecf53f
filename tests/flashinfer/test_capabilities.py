"""Compute capabilities (flashinfer/capabilities.py): the rule and the kernels' one list."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from flashinfer import capabilities, utils
from flashinfer.capabilities import CPU_COMPUTE_CAPABILITY, NVRTC_CAPABILITIES, compute_capability

ROOT = Path(__file__).resolve().parents[2]


def test_cpu_and_meta_tensors_have_the_cpu_capability():
    assert compute_capability(torch.ones(1)) == CPU_COMPUTE_CAPABILITY == 0
    assert compute_capability(torch.ones(1, device="meta")) == 0


def test_utils_reexports_the_same_objects():
    for name in ("CPU_COMPUTE_CAPABILITY", "compute_capability", "supported_compute_capability"):
        assert getattr(utils, name) is getattr(capabilities, name)


def test_every_nvrtc_backend_declares_the_one_list():
    from flashinfer.gemm import mm_bf16
    from flashinfer.norm import rmsnorm

    nvrtc = set(NVRTC_CAPABILITIES)
    assert mm_bf16.backend_checks["nvrtc"]._supported_ccs == nvrtc
    assert rmsnorm.backend_checks["nvrtc"]._supported_ccs == nvrtc
    assert mm_bf16.backend_checks["torch"]._supported_ccs == nvrtc | {0}
    assert rmsnorm.backend_checks["torch"]._supported_ccs == nvrtc | {0}
    for api in (mm_bf16, rmsnorm):  # and whichever experimental backends they have
        for name, check in api.backend_checks.items():
            assert check._supported_ccs - {0} == nvrtc, f"{api.__name__} backend {name!r}"


def test_importing_capabilities_does_not_import_torch():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    code = "import json, sys, flashinfer.capabilities, flashinfer.track; print(json.dumps('torch' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) is False


class _ReportsCuda(torch.Tensor):
    """A CPU tensor that says it is on CUDA device 3 (the rule's CUDA branch, without a GPU)."""

    is_cuda = True

    def get_device(self):
        return 3


def test_the_cuda_branch_asks_torch_once_per_device_and_dispatch_uses_it(monkeypatch):
    asked = []
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index: asked.append(index) or (9, 0))
    monkeypatch.setattr(capabilities, "_cuda_capabilities", {})
    x = torch.ones(2).as_subclass(_ReportsCuda)
    assert compute_capability(x) == 90 and compute_capability(x) == 90
    assert asked == [3]

    @utils.supported_compute_capability([90])
    def on_gpu(x, backend="auto"):
        return True

    @utils.supported_compute_capability([CPU_COMPUTE_CAPABILITY])
    def on_cpu(x, backend="auto"):
        return True

    @utils.backend_requirement({"cpu": on_cpu, "gpu": on_gpu})
    def op(x, backend="auto"):
        return op.suitable_auto_backends

    assert op(x) == ["gpu"]
    assert op(torch.ones(2)) == ["cpu"]
    with pytest.raises(utils.BackendSupportedError, match=r"backend 'cpu' with capability 90; it supports \[0\]"):
        op(x, backend="cpu")
