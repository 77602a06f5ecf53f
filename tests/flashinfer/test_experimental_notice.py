"""An experimental API's calls are visible to type checkers (``experimental_notice``, PEP 702
semantics): pyright and mypy report each call site with the message, while at run time the
only signal stays one ExperimentalWarning per API per process, and no DeprecationWarning."""

from __future__ import annotations

import ast
import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import flashinfer
from flashinfer import api_logging
from flashinfer.api_logging import ExperimentalWarning, experimental_notice, flashinfer_experimental_api

ROOT = Path(__file__).resolve().parents[2]

CONSUMER = """\
import torch

import flashinfer
import flashinfer.norm as fn

x = torch.ones(2, 4)
w = torch.ones(4)
flashinfer.rmsnorm(x, w)
flashinfer.gated_rmsnorm(x, x, w)
fn.rmsnorm(x, w)
fn.gated_rmsnorm(x, x, w)
"""
STABLE_LINES, EXPERIMENTAL_LINES = {8, 10}, {9, 11}


def test_the_notice_changes_nothing_at_run_time():
    def op(x):
        return x

    assert experimental_notice("op is experimental")(op) is op
    with pytest.raises(TypeError):
        experimental_notice("")
    assert not hasattr(flashinfer.gated_rmsnorm, "__deprecated__")


def test_one_experimental_warning_and_no_deprecation_warning():
    @experimental_notice("notice_op is experimental")
    @flashinfer_experimental_api(feature="notice_op")
    def notice_op(x):
        return x

    api_logging._reset_warnings_for_tests()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        notice_op(1)
        notice_op(2)
    assert [type(w.message) for w in caught] == [ExperimentalWarning]


def _python313():
    """A Python 3.13 that runs (a pyenv shim of a version not selected does not)."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.13*/bin/python3.13")))
    candidates.append(shutil.which("python3.13"))
    for python in filter(None, candidates):
        if subprocess.run([python, "-c", "pass"], capture_output=True, timeout=60).returncode == 0:
            return python
    return None


def test_python_313_emits_no_deprecation_warning():
    """Python 3.13 has ``warnings.deprecated``, whose run-time wrapper warns on each call; the
    notice must not be it (api_logging is standard library only, so no torch is needed)."""
    python = _python313()
    if python is None:
        pytest.skip("no Python 3.13 interpreter on this machine")
    code = textwrap.dedent("""\
        import warnings
        from flashinfer.api_logging import ExperimentalWarning, experimental_notice, flashinfer_experimental_api
        @experimental_notice("op is experimental")
        @flashinfer_experimental_api(feature="op")
        def op(x):
            return x
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            op(1); op(2)
        print(sorted(type(w.message).__name__ for w in caught), hasattr(op, "__deprecated__"))
    """)
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['ExperimentalWarning'] False"


def test_type_checkers_see_every_lazy_export():
    """``flashinfer/__init__.pyi`` re-exports exactly the lazy table's names, each from its
    module; ``py.typed`` says the package is typed (mypy reads an installed package only then)."""
    tree = ast.parse((ROOT / "flashinfer/__init__.pyi").read_text())
    imported = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                assert alias.asname == alias.name  # an explicit re-export
                imported[alias.name] = node.module
    assert imported == flashinfer._LAZY_EXPORTS
    assert (ROOT / "flashinfer/py.typed").is_file()


def _consumer(tmp_path) -> Path:
    (tmp_path / "consumer.py").write_text(CONSUMER)
    return tmp_path


def test_pyright_reports_each_experimental_call(tmp_path):
    try:
        import pyright  # noqa: F401
    except ImportError:
        pytest.skip("pyright is not installed (the dev extra has it: pip install 'pyright[nodejs]')")
    work = _consumer(tmp_path)
    (work / "pyrightconfig.json").write_text(json.dumps(
        {"extraPaths": [str(ROOT)], "reportDeprecated": "error", "typeCheckingMode": "basic"}))
    done = subprocess.run([sys.executable, "-m", "pyright", "--outputjson", "consumer.py"], cwd=work,
                          capture_output=True, text=True, timeout=300)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        pytest.skip(f"pyright could not run here (no node?): {done.stderr[-500:] or done.stdout[-500:]}")
    diagnostics = [(d["range"]["start"]["line"] + 1, d.get("rule"), d["message"]) for d in report["generalDiagnostics"]]
    flagged = {line for line, rule, message in diagnostics if rule == "reportDeprecated" and "experimental" in message}
    assert flagged == EXPERIMENTAL_LINES, diagnostics
    assert not [d for d in diagnostics if d[0] in STABLE_LINES], diagnostics  # stable calls type-check


def test_mypy_reports_each_experimental_call(tmp_path):
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.skip("mypy is not installed (the dev extra has it)")
    work = _consumer(tmp_path)
    # torch is not followed (slow, and not what is under test); FlashInfer's own errors are not ours
    (work / "mypy.ini").write_text("[mypy]\nenable_error_code = deprecated\ncache_dir = .mypy_cache\n"
                                   "[mypy-torch.*]\nfollow_imports = skip\n[mypy-flashinfer.*]\nignore_errors = True\n")
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "consumer.py"], cwd=work,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "MYPYPATH": str(ROOT)})
    lines = done.stdout.splitlines()
    flagged = {int(line.split(":")[1]) for line in lines
               if "[deprecated]" in line and "gated_rmsnorm is deprecated" in line and "experimental" in line}
    assert flagged == EXPERIMENTAL_LINES, done.stdout
    assert not [line for line in lines if line.startswith("consumer.py:") and int(line.split(":")[1]) in STABLE_LINES]
