"""This repository keeps its typed face through ``remove`` and ``graduate``: gated_rmsnorm is
served lazily by flashinfer/__init__.py, whose ``if TYPE_CHECKING:`` imports are the lazy
table's other half; after either command, on a copy of the work tree, the two still agree
and the face is still the text generated from the table."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy_checks.editing.exports import typed_face_text
from policy_checks.model import exports
from policy_checks.model.facts import extract

from .conftest import require_experimental

# the benchmarks that measure gated_rmsnorm: remove refuses over them until a person drops them
MEASURING = ("benchmarks/kernel_sweep.py", "benchmarks/kernels.py")


def face_of_copy(copy: Path) -> tuple:
    """The copy's disagreements between table and face, and whether the face is still the
    text generated from the table."""
    data = (copy / "flashinfer/__init__.py").read_bytes()
    facts = extract(data, "flashinfer", True)
    generated = typed_face_text([(e.name, e.module) for e in facts.published.lazy])
    return exports.face_problems(facts), generated in data.decode()


@pytest.mark.parametrize("command", [("remove", "gated_rmsnorm"),
                                     ("graduate", "gated_rmsnorm", "--to", "flashinfer.gated_norm")])
def test_this_repository_keeps_its_typed_face(repo_copy, command):
    require_experimental("gated_rmsnorm")
    copy = repo_copy.root
    for rel in MEASURING:
        if (copy / rel).exists():
            repo_copy.drop_benchmark(rel)
    assert face_of_copy(copy) == ([], True)
    done = repo_copy.policy_check(*command, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert face_of_copy(copy) == ([], True)
    served = {e.name for e in extract((copy / "flashinfer/__init__.py").read_bytes(), "flashinfer", True).published.lazy}
    assert ("gated_rmsnorm" in served) == (command[0] == "graduate")
