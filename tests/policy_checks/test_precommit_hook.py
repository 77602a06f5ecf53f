"""The real ``pre-commit`` program runs the ``policy-check`` hook defined by this
checkout's ``.pre-commit-hooks.yaml`` on a scratch repository: it fails on a
violation and passes once it is fixed.

The hook source is a scratch git repository holding this checkout's manifest
(pre-commit clones it locally, no network), so the test does not depend on how CI
checked this repository out. The consumer config overrides ``language: system``
and the entry so that nothing is pip-installed (CI and this machine are offline);
the manifest's id, pass_filenames and always_run are the ones under test. The hook
keeps its cache outside the repository it checks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from policy_checks import cache

from .conftest import write_tree

CHECKOUT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("pre-commit") is None or shutil.which("git") is None,
    reason="needs git and pre-commit",
)
IDENTITY = ["-c", "user.name=policy-check test", "-c", "user.email=test@example.invalid"]


def _git(cwd, *args):
    return subprocess.run(["git", *IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _hook_source(tmp_path) -> tuple:
    """A git repository holding this checkout's hook manifest: (path, commit)."""
    source = write_tree(tmp_path / "hook-source", {
        ".pre-commit-hooks.yaml": (CHECKOUT / ".pre-commit-hooks.yaml").read_text(),
    })
    _git(source, "init", "-q")
    _git(source, "add", "-A")
    _git(source, "commit", "-q", "-m", "hook manifest")
    return source, _git(source, "rev-parse", "HEAD")


def test_hook_fails_on_a_violation_then_passes(tmp_path):
    source, head = _hook_source(tmp_path)
    scratch = write_tree(tmp_path / "scratch", {
        "flashinfer/__init__.py": "",
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/gemm.py": "from .experimental import splitk\n\ndef mm(x):\n    return x\n",
        ".pre-commit-config.yaml": (
            "repos:\n"
            f"  - repo: {source}\n"
            f"    rev: {head}\n"
            "    hooks:\n"
            "      - id: policy-check\n"
            "        language: system\n"
            f"        entry: {sys.executable} -m policy_checks run\n"
        ),
    })
    _git(scratch, "init", "-q")
    _git(scratch, "add", "-A")
    environment = {
        **os.environ,
        "PYTHONPATH": str(CHECKOUT),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_CONFIG_GLOBAL": os.devnull,
    }

    def hook():
        return subprocess.run(
            ["pre-commit", "run", "--all-files", "--color", "never"],
            cwd=scratch, env=environment, capture_output=True, text=True, timeout=300,
        )

    failing = hook()
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "flashinfer/gemm.py:1:1: EXP001" in failing.stdout

    (scratch / "flashinfer/gemm.py").write_text(
        "def mm(x):\n    return x\n"
    )
    _git(scratch, "add", "-A")
    passing = hook()
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "Passed" in passing.stdout
    status = _git(scratch, "status", "--porcelain", "--ignored", "--untracked-files=all").splitlines()
    assert [line for line in status if line.startswith(("??", "!!"))] == []  # nothing written in the tree
    assert list(Path(os.environ[cache.ENVIRONMENT]).rglob("facts-*.json"))


def test_manifest_and_config_validate():
    for command, name in (("validate-manifest", ".pre-commit-hooks.yaml"), ("validate-config", ".pre-commit-config.yaml")):
        done = subprocess.run(["pre-commit", command, str(CHECKOUT / name)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
