"""The real ``pre-commit`` runs the ``policy-check-consumer`` hook of this checkout's
``.pre-commit-hooks.yaml`` on a scratch serving repository: warnings pass, ``--error``
fails, and only what is being committed is read (as tests/policy_checks/test_precommit_hook.py
does for ``policy-check``: ``language: system``, this interpreter, no network)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml

from policy_checks.consumer import surface as surface_module

from ..conftest import write_tree
from ..test_precommit_hook import CHECKOUT, _git, _hook_source

pytestmark = pytest.mark.skipif(shutil.which("pre-commit") is None or shutil.which("git") is None,
                                reason="needs git and pre-commit")
USE = "import flashinfer\n\nflashinfer.toy_gated_norm(1)\n"


def _entry() -> str:
    [hook] = [h for h in yaml.safe_load((CHECKOUT / ".pre-commit-hooks.yaml").read_text())
              if h["id"] == "policy-check-consumer"]
    words = shlex.split(hook["entry"])
    assert words[0] == "python" and "--staged" in words
    return shlex.join([sys.executable, *words[1:]])


def _repository(tmp_path, *args: str):
    source, head = _hook_source(tmp_path)
    surface = surface_module.Surface("9.9.1", frozenset({"flashinfer.toy_gated_norm"}), {}, "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS")
    scratch = write_tree(tmp_path / "serving", {
        "serve.py": USE,
        "flashinfer-surface.json": surface_module.dumps(surface),
        ".pre-commit-config.yaml": (
            f"repos:\n  - repo: {source}\n    rev: {head}\n    hooks:\n"
            f"      - id: policy-check-consumer\n        language: system\n        entry: {_entry()}\n"
            f"        args: [--surface, flashinfer-surface.json{''.join(', ' + a for a in args)}]\n"
            "        verbose: true\n"
        ),
    })
    _git(scratch, "init", "-q")
    environment = {**os.environ, "PYTHONPATH": str(CHECKOUT), "PRE_COMMIT_HOME": str(tmp_path / "home"),
                   "GIT_CONFIG_GLOBAL": os.devnull}

    def hook():
        return subprocess.run(["pre-commit", "run", "--color", "never", "--all-files"], cwd=scratch,
                              env=environment, capture_output=True, text=True, timeout=300)

    return scratch, hook


def test_warnings_pass_and_error_mode_fails(tmp_path):
    scratch, hook = _repository(tmp_path / "warn")
    _git(scratch, "add", "-A")
    warned = hook()
    assert warned.returncode == 0, warned.stdout + warned.stderr
    assert "serve.py:3:1: CON001" in warned.stdout

    scratch, hook = _repository(tmp_path / "error", "--error")
    write_tree(scratch, {"untracked.py": USE})  # not being committed: never read
    _git(scratch, "add", "serve.py", "flashinfer-surface.json", ".pre-commit-config.yaml")
    failed = hook()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "serve.py:3:1: CON001" in failed.stdout and "untracked.py" not in failed.stdout
