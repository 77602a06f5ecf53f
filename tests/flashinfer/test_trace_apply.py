"""Trace-apply pins (flashinfer/trace_apply.py), on CPU tensors.

The toy API has stable backends 'ref' and 'alt' and an experimental backend
'fast'; its body records which backend ran and the candidates it was given.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

from flashinfer import autotuner, trace_apply
from flashinfer.tuning import files, tuner
from flashinfer.api_logging import EXPERIMENTAL_AUTO_ENV_VAR, ExperimentalWarning
from flashinfer.autotuner import TuningConfigWarning, autotune, register_api
from flashinfer.trace_apply import apply_trace_config
from flashinfer.utils import (
    CPU_COMPUTE_CAPABILITY,
    backend_requirement,
    experimental_backend,
    supported_compute_capability,
)

API = "toy_models.toy_scale"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_toy_api(*, with_fast=True):
    """Register and return (toy API, list of (backend run, candidates seen)).

    'alt' rejects inputs holding a negative value; 'fast' supports only sm_90,
    besides the CPU, so a pin to it fits CPU calls.
    """
    runs = []

    @supported_compute_capability([CPU_COMPUTE_CAPABILITY])
    def ref_check(x, scale=1.0, backend="auto"):
        return True

    @supported_compute_capability([CPU_COMPUTE_CAPABILITY])
    def alt_check(x, scale=1.0, backend="auto"):
        return not bool((x < 0).any())

    @experimental_backend
    @supported_compute_capability([CPU_COMPUTE_CAPABILITY, 90])
    def fast_check(x, scale=1.0, backend="auto"):
        return True

    checks = {"ref": ref_check, "alt": alt_check}
    if with_fast:
        checks["fast"] = fast_check

    def toy_scale(x, scale=1.0, backend="auto"):
        candidates = toy_scale_api.suitable_auto_backends
        if backend == "auto":
            backend = candidates[0]
        runs.append((backend, candidates))
        return x * scale

    toy_scale.__module__, toy_scale.__qualname__ = API.rsplit(".", 1)
    toy_scale_api = backend_requirement(checks)(toy_scale)
    register_api(toy_scale_api)
    return toy_scale_api, runs


@pytest.fixture(autouse=True)
def _fresh_pins():
    tuner._reset_for_tests()
    trace_apply._reset_for_tests()
    yield
    tuner._reset_for_tests()
    trace_apply._reset_for_tests()


def write_toml(tmp_path, text, name="pins.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def backends_run(runs) -> list:
    return [backend for backend, _ in runs]


def ours(record) -> list:
    """FlashInfer's warnings among those recorded (torch may add its own)."""
    return [w for w in record if issubclass(w.category, (TuningConfigWarning, ExperimentalWarning))]


FAST_PIN = f"""
[[pin]]
api = "{API}"
key = ["cpu", ["x", [4, 8], "float32"]]
backend = "fast"
"""


def test_pin_of_an_experimental_backend_runs_with_the_gate_set_and_warns_once(tmp_path, gate_on):
    api, runs = make_toy_api()
    path = write_toml(tmp_path, FAST_PIN)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # applying a valid config warns nothing
        assert apply_trace_config(path).loaded == 1
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            assert torch.equal(api(torch.ones(4, 8), 2.0), torch.full((4, 8), 2.0))
        api(torch.ones(2, 8))  # another key: automatic selection, gate set
    (experimental,) = ours(record)
    assert issubclass(experimental.category, ExperimentalWarning)
    assert "'fast' selected for 'toy_scale'" in str(experimental.message)
    assert runs[:3] == [("fast", ["fast"])] * 3  # the pin is the call's only candidate
    assert runs[3] == ("ref", ["ref", "alt", "fast"])


def test_pin_of_an_experimental_backend_is_skipped_while_the_gate_is_unset(tmp_path):
    api, runs = make_toy_api()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        summary = apply_trace_config(write_toml(tmp_path, FAST_PIN))
        for _ in range(3):
            api(torch.ones(4, 8))
    (warning,) = ours(record)  # the load's one warning; the calls add none
    assert issubclass(warning.category, TuningConfigWarning)
    assert EXPERIMENTAL_AUTO_ENV_VAR in str(warning.message) and f"{API}:fast" in str(warning.message)
    assert (summary.loaded, summary.skipped) == (0, {files.GATE_UNSET_REASON: [f"{API}:fast"]})
    assert runs == [("ref", ["ref", "alt"])] * 3  # automatic selection among stable backends


def test_pin_applied_with_the_gate_set_is_ignored_while_the_gate_is_unset_since(tmp_path, monkeypatch):
    api, runs = make_toy_api()
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    assert apply_trace_config(write_toml(tmp_path, FAST_PIN)).loaded == 1
    monkeypatch.delenv(EXPERIMENTAL_AUTO_ENV_VAR)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        api(torch.ones(4, 8))
        api(torch.ones(4, 8))
    (warning,) = ours(record)  # the gate is read per call; said once
    assert issubclass(warning.category, TuningConfigWarning)
    assert "'fast'" in str(warning.message) and EXPERIMENTAL_AUTO_ENV_VAR in str(warning.message)
    assert runs == [("ref", ["ref", "alt"])] * 2
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    with pytest.warns(ExperimentalWarning):
        api(torch.ones(4, 8))
    assert runs[-1] == ("fast", ["fast"])


def test_pin_without_key_covers_every_problem_and_a_keyed_pin_wins(tmp_path):
    api, runs = make_toy_api()
    path = tmp_path / "pins.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "pin": [
                    {"api": API, "backend": "alt"},
                    {"api": API, "key": ["cpu", ["x", [1, 8], "float32"]], "backend": "ref"},
                ],
            }
        )
    )
    assert apply_trace_config(path).loaded == 2
    api(torch.ones(4, 8))
    api(torch.ones(9))
    api(torch.ones(1, 8))
    assert backends_run(runs) == ["alt", "alt", "ref"]


def test_pin_beats_the_tuned_choice_and_explicit_backend_beats_the_pin(tmp_path):
    api, runs = make_toy_api()
    with autotune():
        api(torch.ones(4, 8))
    tuned = runs[-1][0]
    other = "alt" if tuned == "ref" else "ref"
    apply_trace_config(write_toml(tmp_path, f'[[pin]]\napi = "{API}"\nbackend = "{other}"\n'))
    api(torch.ones(4, 8))
    api(torch.ones(4, 8), backend=tuned)
    assert backends_run(runs)[-2:] == [other, tuned]


def test_tuned_choice_applies_to_problems_without_a_pin(tmp_path):
    api, runs = make_toy_api()
    entry = {"api": API, "key": ["cpu", ["x", [4, 8], "float32"]], "backend": "alt", "tactic": None, "experimental": False, "feature": None, "tuned_at": "2026-01-01"}
    (tmp_path / "cache.json").write_text(json.dumps({"format": "flashinfer-autotune-cache", "schema_version": 1, "entries": [entry]}))
    assert autotuner.load_autotune_cache(tmp_path / "cache.json").loaded == 1
    apply_trace_config(write_toml(tmp_path, f'[[pin]]\napi = "{API}"\nkey = ["cpu", ["x", [1, 8], "float32"]]\nbackend = "ref"\n'))
    api(torch.ones(4, 8))  # no pin for this problem: the tuned winner runs first
    api(torch.ones(1, 8))  # pinned
    api(torch.ones(2, 8))  # neither: the heuristic order
    assert runs == [("alt", ["alt", "ref"]), ("ref", ["ref"]), ("ref", ["ref", "alt"])]


def test_pin_of_a_removed_backend_is_skipped_and_calls_fall_back(tmp_path):
    api, runs = make_toy_api(with_fast=False)
    path = write_toml(
        tmp_path,
        f"""
        [[pin]]
        api = "{API}"
        backend = "fast"

        [[pin]]
        api = "flashinfer.gone.op"
        backend = "ref"
        """,
    )
    with pytest.warns(TuningConfigWarning) as record:
        summary = apply_trace_config(path)
    assert len(record) == 1
    message = str(record[0].message)
    assert "skipped 2" in message and f"{API}:fast" in message and "flashinfer.gone.op:ref" in message
    assert summary.skipped == {
        "of a backend that no longer exists": [f"{API}:fast"],
        "of an unknown API": ["flashinfer.gone.op:ref"],
    }
    api(torch.ones(4, 8))
    assert runs == [("ref", ["ref", "alt"])]


def test_pin_that_does_not_fit_the_call_falls_back_with_one_warning(tmp_path):
    api, runs = make_toy_api()
    apply_trace_config(write_toml(tmp_path, f'[[pin]]\napi = "{API}"\nbackend = "alt"\n'))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        api(-torch.ones(4, 8))
        api(-torch.ones(4, 8))
    (warning,) = record
    assert issubclass(warning.category, TuningConfigWarning)
    assert "'alt' does not fit this call" in str(warning.message)
    assert backends_run(runs) == ["ref", "ref"]
    api(torch.ones(4, 8))
    assert backends_run(runs)[-1] == "alt"


@pytest.mark.parametrize(
    "name, content, problem",
    [
        ("pins.toml", "[[pin]\napi = ", "not valid TOML"),
        ("pins.json", '{"pin": [', "not valid JSON"),
        ("pins.json", '{"version": 2, "pin": []}', "version 2 is not supported"),
        ("pins.json", '{"pin": {"api": "x"}}', "'pin' must be a list"),
        ("pins.toml", b"version = '\xff'", "not valid TOML"),
    ],
    ids=["bad-toml", "truncated-json", "future-version", "pin-not-list", "not-utf8-toml"],
)
def test_bad_config_files_are_reported_and_ignored(tmp_path, name, content, problem):
    api, runs = make_toy_api()
    (tmp_path / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.warns(TuningConfigWarning, match=problem):
        assert apply_trace_config(tmp_path / name).error is not None
    api(torch.ones(4, 8))
    assert backends_run(runs) == ["ref"]


@pytest.mark.timeout(60)  # turns a hang (a blocking open of the FIFO) into a failure
@pytest.mark.parametrize(
    "kind, name, problem",
    [
        ("deep", "pins.json", "nested too deeply"),
        ("deep", "pins.toml", "nested too deeply"),
        ("fifo", "pins.toml", "not a regular file"),
        ("dev-zero", "pins.json", "not a regular file"),
    ],
    ids=["deep-json", "deep-toml", "fifo", "dev-zero"],
)
def test_hostile_config_files_are_reported_and_ignored(tmp_path, untrusted_file, kind, name, problem):
    api, runs = make_toy_api()
    path = untrusted_file(kind, tmp_path / name)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        summary = apply_trace_config(path)
    (warning,) = ours(record)
    assert issubclass(warning.category, TuningConfigWarning) and problem in str(warning.message)
    assert summary.error is not None and summary.loaded == 0
    api(torch.ones(4, 8))
    assert backends_run(runs) == ["ref"]


def test_a_config_longer_than_the_cap_is_ignored(tmp_path, monkeypatch):
    make_toy_api()
    path = write_toml(tmp_path, f'[[pin]]\napi = "{API}"\nbackend = "alt"\n')
    size = path.stat().st_size
    monkeypatch.setattr(files, "MAX_CONFIG_BYTES", size - 1)
    with pytest.warns(TuningConfigWarning, match=f"larger than {size - 1} bytes"):
        assert apply_trace_config(path).loaded == 0
    monkeypatch.setattr(files, "MAX_CONFIG_BYTES", size)
    assert apply_trace_config(path).loaded == 1


def test_malformed_pins_are_skipped(tmp_path):
    make_toy_api()
    path = write_toml(
        tmp_path,
        f"""
        [[pin]]
        api = "{API}"

        [[pin]]
        api = "{API}"
        backend = "alt"
        keys = [1]

        [[pin]]
        api = "{API}"
        backend = "alt"
        key = [{{ rows = 4 }}]
        """,
    )
    with pytest.warns(TuningConfigWarning, match="skipped 3"):
        assert apply_trace_config(path).loaded == 0


def test_config_named_by_environment_variable_applies_on_first_auto_call(tmp_path):
    script = textwrap.dedent(
        """
        import torch, warnings
        from flashinfer.utils import backend_requirement, supported_compute_capability
        warnings.simplefilter("error")

        @supported_compute_capability([0])
        def ok(x, backend="auto"):
            return True

        @backend_requirement({"ref": ok, "alt": ok})
        def toy(x, backend="auto"):
            print("ran", backend if backend != "auto" else toy.suitable_auto_backends[0])

        toy(torch.ones(2))
        """
    )
    path = write_toml(tmp_path, '[[pin]]\napi = "__main__.toy"\nbackend = "alt"\n')
    environment = {**os.environ, "PYTHONPATH": REPO, trace_apply.TRACE_APPLY_ENV_VAR: str(path)}
    environment.pop(EXPERIMENTAL_AUTO_ENV_VAR, None)
    result = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ran", "alt"]


# -- the stable ops ----------------------------------------------------------------------


def test_mm_bf16_pin_to_a_backend_that_cannot_run_here_falls_back(tmp_path):
    from flashinfer.gemm import mm_bf16

    apply_trace_config(write_toml(tmp_path, '[[pin]]\napi = "flashinfer.gemm.mm_bf16"\nbackend = "nvrtc"\n'))
    a, b = torch.ones(4, 64, dtype=torch.bfloat16), torch.ones(64, 32, dtype=torch.bfloat16)
    with pytest.warns(TuningConfigWarning, match="'nvrtc' does not fit this call"):
        out = mm_bf16(a, b)  # CPU tensors: capability 0, which nvrtc does not support
    assert torch.equal(out, torch.full((4, 32), 64.0, dtype=torch.bfloat16))
    assert_stable_cpu_choice(mm_bf16)


def test_mm_bf16_keyed_pin_applies_to_its_problem_only(tmp_path):
    """A pin keyed by mm_bf16's problem key ([M, N, K, dtype, device]) reaches calls of that
    problem only: the pinned 'nvrtc' cannot run CPU tensors, which the call reports."""
    from flashinfer.gemm import mm_bf16

    path = write_toml(
        tmp_path,
        """
        [[pin]]
        api = "flashinfer.gemm.mm_bf16"
        key = [4, 32, 64, "bfloat16", "cpu"]
        backend = "nvrtc"
        """,
    )
    assert apply_trace_config(path).loaded == 1
    a, b = torch.ones(4, 64, dtype=torch.bfloat16), torch.ones(64, 32, dtype=torch.bfloat16)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = mm_bf16(a[:2], b)  # another problem: no pin
    assert ours(record) == []
    assert torch.equal(out, torch.full((2, 32), 64.0, dtype=torch.bfloat16))
    with pytest.warns(TuningConfigWarning, match="'nvrtc' does not fit this call"):
        out = mm_bf16(a, b)  # the pinned problem
    assert torch.equal(out, torch.full((4, 32), 64.0, dtype=torch.bfloat16))
    assert_stable_cpu_choice(mm_bf16)


def assert_stable_cpu_choice(api) -> None:
    """Automatic selection of CPU operands without the gate: torch first, nothing
    experimental (whichever experimental backends exist, or have graduated)."""
    candidates = api.suitable_auto_backends
    assert candidates[0] == "torch" and not set(candidates) & api.experimental_backends, candidates
