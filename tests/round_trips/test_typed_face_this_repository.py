"""This repository keeps its typed face through ``remove`` and ``graduate``: gated_rmsnorm is
served lazily by flashinfer/__init__.py, whose ``if TYPE_CHECKING:`` imports are the lazy
table's other half; after either command, on a copy of the work tree, the two still agree
and the face is still the text generated from the table."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from policy_checks.editing.exports import typed_face_text
from policy_checks.model import exports
from policy_checks.model.facts import extract
from policy_checks.model.records import graduated_to

from .conftest import REPO


def repository_copy(tmp_path) -> Path:
    """A copy of this work tree as git lists it, less the benchmarks that measure
    gated_rmsnorm (remove refuses over them until a person drops them)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.split(b"\0")
    copy = tmp_path / "copy"
    for rel in filter(None, (name.decode() for name in listed)):
        if (REPO / rel).is_file():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, copy / rel)
    for rel in ("benchmarks/kernel_sweep.py", "benchmarks/kernels.py"):
        (copy / rel).unlink(missing_ok=True)
    return copy


def face_of_copy(copy: Path) -> tuple:
    """The copy's disagreements between table and face, and whether the face is still the
    text generated from the table."""
    data = (copy / "flashinfer/__init__.py").read_bytes()
    facts = extract(data, "flashinfer", True)
    generated = typed_face_text([(e.name, e.module) for e in facts.published.lazy])
    return exports.face_problems(facts), generated in data.decode()


@pytest.mark.parametrize("command", [("remove", "gated_rmsnorm"),
                                     ("graduate", "gated_rmsnorm", "--to", "flashinfer.gated_norm")])
def test_this_repository_keeps_its_typed_face(tmp_path, command):
    feature_dir = REPO / "flashinfer/experimental/gated_rmsnorm"
    if not feature_dir.is_dir() or graduated_to(feature_dir):
        pytest.skip("gated_rmsnorm is not an experimental feature of this repository (removed or graduated)")
    copy = repository_copy(tmp_path)
    assert face_of_copy(copy) == ([], True)
    done = subprocess.run([sys.executable, "-m", "policy_checks", *command, "--root", str(copy)],
                          capture_output=True, text=True, timeout=600, cwd=copy,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert face_of_copy(copy) == ([], True)
    served = {e.name for e in extract((copy / "flashinfer/__init__.py").read_bytes(), "flashinfer", True).published.lazy}
    assert ("gated_rmsnorm" in served) == (command[0] == "graduate")
