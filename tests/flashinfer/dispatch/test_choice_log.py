"""Which backend ``backend="auto"`` picked (flashinfer/dispatch/choice_log.py): the record, the
log line with each dropped backend's reason, once per (API, backend), and nothing while off."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import flashinfer.dispatch
from flashinfer.api_logging import EXPERIMENTAL_AUTO_ENV_VAR
from flashinfer.dispatch import choice_log
from flashinfer.dispatch.hooks import hooks
from flashinfer.utils import (
    CPU_COMPUTE_CAPABILITY as CPU,
    BackendSupportedError,
    backend_requirement,
    experimental_backend,
    supported_compute_capability,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def reporting():
    """Reporting on for one test; the hook slot and the record restored after it."""
    before = hooks.chose
    choice_log.reset()
    choice_log.enable()
    yield
    hooks.set_chose(before)
    choice_log.reset()


def make_api():
    @supported_compute_capability([CPU])
    def ref(x, backend="auto"):
        return x.numel() < 100

    @supported_compute_capability([90])
    def hopper(x, backend="auto"):
        return True

    @experimental_backend
    @supported_compute_capability([CPU])
    def fast(x, backend="auto"):
        return True

    @supported_compute_capability([CPU])
    def strict(x, backend="auto"):
        raise ValueError("needs an even length")

    @backend_requirement({"ref": ref, "hopper": hopper, "fast": fast, "strict": strict})
    def op(x, backend="auto"):
        return x

    return op


def test_each_choice_is_recorded_once_with_the_reasons(reporting, monkeypatch, caplog):
    monkeypatch.delenv(EXPERIMENTAL_AUTO_ENV_VAR, raising=False)
    op = make_api()
    with caplog.at_level(logging.INFO, logger="flashinfer.dispatch"):
        op(torch.ones(3))
        op(torch.ones(5))  # the same choice: not reported again
    [choice] = flashinfer.dispatch.choices()
    assert choice.api == "op" and choice.backend == "ref" and choice.candidates == ("ref",)
    reasons = dict(choice.dropped)
    assert reasons["hopper"] == "unsuitable: compute capability 0 is not supported"
    assert reasons["fast"] == f"experimental, and {EXPERIMENTAL_AUTO_ENV_VAR} is not 1"
    assert reasons["strict"].startswith("unsuitable: its checker") and "needs an even length" in reasons["strict"]
    [record] = [r for r in caplog.records if r.name == "flashinfer.dispatch"]
    assert "op: backend='auto' chose 'ref'" in record.getMessage() and "hopper: unsuitable" in record.getMessage()

    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    with pytest.warns(UserWarning):
        op(torch.ones(200))  # too big for 'ref': the experimental backend is picked
    latest = flashinfer.dispatch.choices()[-1]
    assert latest.backend == "fast" and dict(latest.dropped)["ref"].startswith("unsuitable: its checker")


def test_no_candidate_is_reported_as_a_choice_of_nothing(reporting, monkeypatch):
    monkeypatch.delenv(EXPERIMENTAL_AUTO_ENV_VAR, raising=False)
    op = make_api()
    with pytest.raises(BackendSupportedError):
        op(torch.ones(200))
    [choice] = flashinfer.dispatch.choices()
    assert choice.backend is None and dict(choice.dropped)["fast"].startswith("experimental")


def test_explicit_backends_and_disabled_reporting_record_nothing(reporting):
    op = make_api()
    op(torch.ones(3), backend="ref")
    assert flashinfer.dispatch.choices() == []
    choice_log.disable()
    assert hooks.chose is None  # the dispatch reads the slot and calls nothing
    op(torch.ones(3))
    assert flashinfer.dispatch.choices() == []


def test_the_environment_variable_turns_it_on_in_a_fresh_process():
    code = (
        "import torch, flashinfer.dispatch as d\n"
        "from flashinfer.utils import backend_requirement, experimental_backend, supported_compute_capability\n"
        "ok = supported_compute_capability([0])(lambda x, backend='auto': True)\n"
        "fast = experimental_backend(supported_compute_capability([0])(lambda x, backend='auto': True))\n"
        "@backend_requirement({'ref': ok, 'fast': fast})\n"
        "def op(x, backend='auto'):\n"
        "    return x\n"
        "op(torch.ones(2)); op(torch.ones(3))\n"
        "print([(c.api, c.backend) for c in d.choices()])\n"
    )
    env = {**os.environ, "FLASHINFER_LOG_BACKEND_CHOICE": "1", "PYTHONPATH": str(ROOT)}
    env.pop(EXPERIMENTAL_AUTO_ENV_VAR, None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "[('op', 'ref')]" in done.stdout
    assert "[flashinfer.dispatch] op: backend='auto' chose 'ref' (candidates: ref); dropped: fast: experimental" in done.stderr
