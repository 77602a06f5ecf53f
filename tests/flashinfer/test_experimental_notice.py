"""An experimental API's calls are visible to type checkers (``experimental_notice``, PEP 702
semantics): pyright and mypy report each call site with the message, while at run time the
only signal stays one ExperimentalWarning per API per process, and no DeprecationWarning."""

from __future__ import annotations

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

from flashinfer import api_logging
from flashinfer.api_logging import ExperimentalWarning, experimental_notice, flashinfer_experimental_api

ROOT = Path(__file__).resolve().parents[2]

# A library that marks an API as this repository's experimental APIs are marked (a toy, so
# that the test holds whichever features the tree has), and a consumer calling it. The
# stable call goes to a real dispatching API: its generated __call__ must type-check.
LIBRARY = """\
from flashinfer.api_logging import experimental_notice, flashinfer_experimental_api


@experimental_notice("toylib.fused is an experimental FlashInfer API: no compatibility guarantee")
@flashinfer_experimental_api(feature="fused")
def fused(x: int) -> int:
    return x


def plain(x: int) -> int:
    return x
"""
CONSUMER = """\
import torch

import flashinfer.norm
import toylib
from toylib import plain

x = torch.ones(2, 4)
flashinfer.norm.rmsnorm(x, torch.ones(4))
toylib.fused(1)
plain(2)
toylib.fused(3)
"""
STABLE_LINES, EXPERIMENTAL_LINES = {8, 10}, {9, 11}


def test_the_notice_changes_nothing_at_run_time():
    def op(x):
        return x

    marked = experimental_notice("op is experimental")(op)
    assert marked is op and not hasattr(marked, "__deprecated__")
    with pytest.raises(TypeError):
        experimental_notice("")


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


def test_the_package_is_marked_typed():
    """PEP 561: mypy reads an installed package (and so sees a notice) only with ``py.typed``."""
    assert (ROOT / "flashinfer/py.typed").is_file()


def _consumer(tmp_path) -> Path:
    (tmp_path / "toylib.py").write_text(LIBRARY)
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
               if "[deprecated]" in line and "toylib.fused is deprecated" in line and "experimental" in line}
    assert flagged == EXPERIMENTAL_LINES, done.stdout
    assert not [line for line in lines if line.startswith("consumer.py:") and int(line.split(":")[1]) in STABLE_LINES]
