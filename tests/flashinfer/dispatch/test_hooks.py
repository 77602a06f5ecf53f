"""The dispatch's hooks object (flashinfer/dispatch/hooks.py): registration and lazy loading."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from flashinfer.dispatch.hooks import DispatchHooks

ROOT = Path(__file__).resolve().parents[3]


def test_empty_hooks_answer_nothing():
    hooks = DispatchHooks()
    assert hooks.pinned_backend is None and hooks.tuned_choice is None


def test_registered_hooks_are_what_the_dispatch_reads():
    hooks = DispatchHooks()
    tuned, pinned = (lambda d, c, a: "x"), (lambda d, a: "y")
    hooks.set_tuned_choice(tuned)
    hooks.set_pinned_backend(pinned)
    assert hooks.tuned_choice is tuned and hooks.pinned_backend is pinned
    hooks.set_tuned_choice(None)
    assert hooks.tuned_choice is None


def test_the_loader_runs_once_on_the_first_hook_call_and_may_register():
    hooks = DispatchHooks()
    runs = []

    def loader():
        runs.append(1)
        hooks.set_tuned_choice(lambda dispatch, candidates, arguments: candidates[-1])

    hooks.load_lazily(loader)
    assert hooks.tuned_choice is not None and hooks.pinned_backend is not None  # stand-ins
    assert hooks.tuned_choice("api", ("a", "b"), {}) == "b"  # loaded, then answered
    assert hooks.pinned_backend is None  # nothing registered it: the dispatch skips it
    assert hooks.tuned_choice("api", ("a", "c"), {}) == "c"
    assert runs == [1]


def test_a_stand_in_with_nothing_registered_answers_none():
    hooks = DispatchHooks()
    hooks.load_lazily(lambda: None)
    assert hooks.pinned_backend("api", {}) is None
    assert hooks.pinned_backend is None and hooks.tuned_choice is None


def test_a_hook_registered_before_the_first_call_replaces_its_stand_in_only():
    hooks = DispatchHooks()
    runs = []
    hooks.load_lazily(lambda: runs.append(1))
    tuned = lambda dispatch, candidates, arguments: None  # noqa: E731
    hooks.set_tuned_choice(tuned)
    assert hooks.tuned_choice is tuned and runs == []
    assert hooks.pinned_backend("api", {}) is None  # the other stand-in still loads
    assert runs == [1] and hooks.tuned_choice is tuned


def test_importing_dispatch_loads_neither_tuning_nor_trace_apply():
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLASHINFER_")}
    env["PYTHONPATH"] = str(ROOT)
    code = (
        "import json, sys, torch, flashinfer.utils\n"
        "from flashinfer.utils import backend_requirement, supported_compute_capability\n"
        "ok = supported_compute_capability([0])(lambda x, backend='auto': True)\n"
        "api = backend_requirement({'a': ok, 'b': ok})(lambda x, backend='auto': x)\n"
        "api(torch.ones(1))\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('flashinfer'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout.splitlines()[-1])
    assert "flashinfer.dispatch.hooks" in loaded
    assert not [m for m in loaded if m.startswith(("flashinfer.tuning.", "flashinfer.trace_apply", "flashinfer.autotuner"))]
