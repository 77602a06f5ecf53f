"""The package's typed face: type checkers read ``flashinfer.gated_rmsnorm`` through the
``if TYPE_CHECKING:`` imports, which the lazy table generates, so a wrong call of a
top-level name is reported (PEP 562 alone makes every lazy name ``Any``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from policy_checks.editing.exports import typed_face_text
from policy_checks.model import exports
from policy_checks.model.facts import extract

ROOT = Path(__file__).resolve().parents[2]

# Line 5 passes a string where eps is a float, line 6 leaves out two arguments; line 7 is right.
CONSUMER = """\
import torch

import flashinfer

x = torch.ones(2, 4)
flashinfer.gated_rmsnorm(x, x, torch.ones(4), eps="big")
flashinfer.gated_rmsnorm(x)
flashinfer.rmsnorm(x, torch.ones(4))
"""
WRONG_LINES = {6, 7}


def _serves(name: str) -> bool:
    """Does the package's lazy table serve `name`? After ``policy-check remove
    gated_rmsnorm`` it does not, and the module ``__getattr__`` makes the name ``Any``."""
    facts = extract((ROOT / "flashinfer/__init__.py").read_bytes(), "flashinfer", True)
    return any(entry.name == name for entry in facts.published.lazy)


needs_the_demo = pytest.mark.skipif(not _serves("gated_rmsnorm"), reason="gated_rmsnorm is not served (removed)")


def test_the_typed_face_is_the_one_generated_from_the_lazy_table():
    data = (ROOT / "flashinfer/__init__.py").read_bytes()
    facts = extract(data, "flashinfer", True)
    assert exports.face_problems(facts) == []
    assert typed_face_text([(e.name, e.module) for e in facts.published.lazy]) in data.decode()


@needs_the_demo
def test_mypy_reports_a_wrong_call_of_a_lazy_export(tmp_path):
    pytest.importorskip("mypy", reason="mypy is not installed (the dev extra has it)")
    (tmp_path / "consumer.py").write_text(CONSUMER)
    # torch is not followed (slow, and not what is under test); FlashInfer's own errors are not ours
    (tmp_path / "mypy.ini").write_text("[mypy]\ncache_dir = .mypy_cache\n[mypy-torch.*]\nfollow_imports = skip\n"
                                       "[mypy-flashinfer.*]\nignore_errors = True\n")
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "consumer.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "MYPYPATH": str(ROOT)})
    flagged = {int(line.split(":")[1]) for line in done.stdout.splitlines()
               if line.startswith("consumer.py:") and ": error:" in line}
    assert flagged == WRONG_LINES, done.stdout + done.stderr


@needs_the_demo
def test_pyright_reports_a_wrong_call_of_a_lazy_export(tmp_path):
    pytest.importorskip("pyright", reason="pyright is not installed (the dev extra has it)")
    (tmp_path / "consumer.py").write_text(CONSUMER)
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"extraPaths": [str(ROOT)], "typeCheckingMode": "basic"}))
    done = subprocess.run([sys.executable, "-m", "pyright", "--outputjson", "consumer.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        pytest.skip(f"pyright could not run here (offline, no node?): {done.stderr[-500:] or done.stdout[-500:]}")
    flagged = {d["range"]["start"]["line"] + 1 for d in report["generalDiagnostics"] if d["severity"] == "error"}
    assert flagged == WRONG_LINES, report["generalDiagnostics"]
