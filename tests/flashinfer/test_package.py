"""What `import flashinfer` and `import flashinfer.experimental` do (and do not) import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import flashinfer

ROOT = Path(__file__).resolve().parents[2]

PRIMITIVES = {
    "ExperimentalWarning",
    "experimental_auto_backends_allowed",
    "experimental_backend",
    "flashinfer_experimental_api",
    "require_experimental_auto_backends",
    "warn_experimental_backend_once",
}


def run_python(code: str):
    """Run ``code`` in a fresh interpreter; return the JSON value it printed last."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    ).stdout
    return json.loads(out.splitlines()[-1])


def modules_after(code: str) -> list:
    """``sys.modules`` keys after running ``code`` in a fresh interpreter."""
    return run_python(code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))")


def test_import_flashinfer_is_light():
    loaded = modules_after("import flashinfer")
    assert "flashinfer" in loaded
    heavy = [
        m
        for m in loaded
        if m.split(".")[0] in {"torch", "numpy", "cuda", "nvidia"}
        or m.startswith("flashinfer.experimental")
        or m in {"flashinfer.utils", "flashinfer.gemm", "flashinfer.norm", "flashinfer.jit"}
    ]
    assert heavy == []


def test_gate_primitives_import_without_torch():
    loaded = modules_after("from flashinfer import flashinfer_experimental_api, ExperimentalWarning")
    assert "flashinfer.api_logging" in loaded
    assert not [m for m in loaded if m.split(".")[0] == "torch"]
    assert not [m for m in loaded if m.startswith("flashinfer.experimental")]


def test_lazy_exports_resolve_to_their_modules():
    from flashinfer import api_logging, utils

    assert flashinfer.backend_requirement is utils.backend_requirement
    assert flashinfer.BackendSupportedError is utils.BackendSupportedError
    assert flashinfer.CPU_COMPUTE_CAPABILITY == 0
    assert flashinfer.flashinfer_experimental_api is api_logging.flashinfer_experimental_api
    assert flashinfer.ExperimentalWarning is api_logging.ExperimentalWarning
    assert "backend_requirement" in dir(flashinfer)


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'flashinfer' has no attribute 'nope'"):
        flashinfer.nope  # noqa: B018


def test_experimental_package_reexports_exactly_the_six_primitives():
    import flashinfer.experimental as exp
    from flashinfer import api_logging, utils

    assert set(exp.__all__) == PRIMITIVES
    # In a fresh interpreter (here, feature subpackages may have been imported since):
    # the package namespace holds the six primitives and nothing else public...
    public = run_python(
        "import json, flashinfer.experimental as e\n"
        "print(json.dumps([n for n in vars(e) if not n.startswith('_')]))"
    )
    assert set(public) == PRIMITIVES
    for name in PRIMITIVES:  # ...and these are the core objects themselves
        source = utils if name == "experimental_backend" else api_logging
        assert getattr(exp, name) is getattr(source, name)


def test_import_flashinfer_experimental_enforces_nothing():
    """With the gate unset the import succeeds and warns nothing of FlashInfer's.

    Only FlashInfer's warnings count (its categories, or raised from its files):
    what torch says on import is not ours, for instance "Failed to initialize
    NumPy" on a machine without NumPy, which nothing here requires.
    """
    result = run_python(
        "import os; os.environ.pop('FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS', None)\n"
        "import json, sys, warnings\n"
        "with warnings.catch_warnings(record=True) as record:\n"
        "    warnings.simplefilter('always')\n"
        "    import flashinfer.experimental\n"
        "package = os.path.dirname(flashinfer.__file__) + os.sep\n"
        "ours = [f'{w.category.__name__}: {w.message} ({w.filename})' for w in record\n"
        "        if w.category.__module__.startswith('flashinfer') or w.filename.startswith(package)]\n"
        "print(json.dumps({'warnings': ours, 'modules': sorted(sys.modules)}))"
    )
    assert result["warnings"] == []
    assert "flashinfer.experimental" in result["modules"]


def test_gate_demo_example_runs():
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "gate_demo.py")],
        capture_output=True, text=True, check=True, cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"},
    ).stdout
    assert "ran 'reference' (candidates ['reference'], kept out by the gate ['fast'])" in out
    assert "BackendSupportedError: No suitable auto backends found for scale" in out
    assert out.count("ExperimentalWarning") == 1
    assert "ran 'fast' (candidates ['fast', 'reference']" in out


def test_the_runtime_dependencies_import_without_a_warning():
    """torch warns on every import when NumPy is missing; the runtime extra declares it,
    so importing the kernels' stack warns about nothing."""
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", "import torch, flashinfer.gemm, flashinfer.norm"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == ""
