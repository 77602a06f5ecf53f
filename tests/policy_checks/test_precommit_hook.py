"""The real ``pre-commit`` program runs the ``policy-check`` hook defined by this
checkout's ``.pre-commit-hooks.yaml`` on a scratch repository: it fails on a
violation and passes once it is fixed, and it judges what is being committed: a staged
violation fails it, an untracked or gitignored one never does.

The hook source is a scratch git repository holding this checkout's manifest
(pre-commit clones it locally, no network), so the test does not depend on how CI
checked this repository out. The consumer config overrides ``language: system`` so
that nothing is pip-installed (CI and this machine are offline) and runs the manifest's
own entry with this interpreter (its ``python`` is the hook environment's); the
manifest's id, entry, pass_filenames and always_run are the ones under test. The hook
keeps its cache outside the repository it checks.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from policy_checks.engine import store

from .conftest import write_tree

CHECKOUT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("pre-commit") is None or shutil.which("git") is None,
    reason="needs git and pre-commit",
)
IDENTITY = ["-c", "user.name=policy-check test", "-c", "user.email=test@example.invalid"]
VIOLATION = "from .experimental import splitk\n\ndef mm(x):\n    return x\n"
CLEAN = "def mm(x):\n    return x\n"


def _git(cwd, *args, env=None):
    return subprocess.run(["git", *IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def _hook_source(tmp_path) -> tuple:
    """A git repository holding this checkout's hook manifest: (path, commit)."""
    source = write_tree(tmp_path / "hook-source", {
        ".pre-commit-hooks.yaml": (CHECKOUT / ".pre-commit-hooks.yaml").read_text(),
    })
    _git(source, "init", "-q")
    _git(source, "add", "-A")
    _git(source, "commit", "-q", "-m", "hook manifest")
    return source, _git(source, "rev-parse", "HEAD")


def _manifest_entry() -> str:
    """The manifest's entry with this interpreter for its ``python``: in the hook's own
    environment (``language: python``) ``python`` is that environment's interpreter."""
    [hook] = [h for h in yaml.safe_load((CHECKOUT / ".pre-commit-hooks.yaml").read_text()) if h["id"] == "policy-check"]
    words = shlex.split(hook["entry"])
    assert words[0] == "python", hook["entry"]
    return shlex.join([sys.executable, *words[1:]])


def _consumer(tmp_path, files: dict) -> tuple:
    """A scratch repository using the hook: (path, environment, run the hook)."""
    source, head = _hook_source(tmp_path)
    scratch = write_tree(tmp_path / "scratch", {
        **files,
        ".pre-commit-config.yaml": (
            "repos:\n"
            f"  - repo: {source}\n"
            f"    rev: {head}\n"
            "    hooks:\n"
            "      - id: policy-check\n"
            "        language: system\n"
            f"        entry: {_manifest_entry()}\n"
        ),
    })
    _git(scratch, "init", "-q")
    environment = {
        **os.environ,
        "PYTHONPATH": str(CHECKOUT),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_CONFIG_GLOBAL": os.devnull,
    }

    def hook(*args):
        return subprocess.run(
            ["pre-commit", "run", "--color", "never", *args],
            cwd=scratch, env=environment, capture_output=True, text=True, timeout=300,
        )

    return scratch, environment, hook


def test_hook_fails_on_a_violation_then_passes(tmp_path):
    scratch, _, hook = _consumer(tmp_path, {
        "flashinfer/__init__.py": "",
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/gemm.py": "from .experimental import splitk\n\ndef mm(x):\n    return x\n",
    })
    _git(scratch, "add", "-A")

    failing = hook("--all-files")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "flashinfer/gemm.py:1:1: EXP001" in failing.stdout

    (scratch / "flashinfer/gemm.py").write_text(
        "def mm(x):\n    return x\n"
    )
    _git(scratch, "add", "-A")
    passing = hook("--all-files")
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "Passed" in passing.stdout
    status = _git(scratch, "status", "--porcelain", "--ignored", "--untracked-files=all").splitlines()
    assert [line for line in status if line.startswith(("??", "!!"))] == []  # nothing written in the tree
    assert list(Path(os.environ[store.ENVIRONMENT]).rglob("facts-*.json"))


def test_the_hook_judges_what_is_being_committed(tmp_path):
    """Untracked and gitignored files never block a commit; the staged content does, even
    when the work tree has fixed it (pre-commit stashes the unstaged change), and an
    unstaged violation in a tracked file does not (it is not being committed)."""
    scratch, environment, hook = _consumer(tmp_path, {
        "flashinfer/__init__.py": "",
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/gemm.py": CLEAN,
        ".gitignore": "flashinfer/generated.py\n",
    })
    _git(scratch, "add", "-A")
    _git(scratch, "commit", "-q", "-m", "clean", "--no-verify")
    write_tree(scratch, {
        "flashinfer/generated.py": VIOLATION,  # gitignored
        "flashinfer/scratch.py": VIOLATION,  # untracked
        "README.md": "unrelated\n",
    })
    _git(scratch, "add", "README.md")
    unrelated = hook()
    assert unrelated.returncode == 0, unrelated.stdout + unrelated.stderr
    assert "EXP001" not in unrelated.stdout

    (scratch / "flashinfer/gemm.py").write_text(VIOLATION)  # a violation, not staged
    not_staged = hook()
    assert not_staged.returncode == 0, not_staged.stdout + not_staged.stderr
    assert (scratch / "flashinfer/gemm.py").read_text() == VIOLATION  # pre-commit put it back

    _git(scratch, "add", "flashinfer/gemm.py")
    (scratch / "flashinfer/gemm.py").write_text(CLEAN)  # fixed on disk, not in the index
    staged = hook()
    assert staged.returncode == 1, staged.stdout + staged.stderr
    assert "flashinfer/gemm.py:1:1: EXP001" in staged.stdout
    assert "scratch.py" not in staged.stdout and "generated.py" not in staged.stdout

    # The same through `git commit` with the hook installed: blocked, then let through.
    subprocess.run(["pre-commit", "install"], cwd=scratch, env=environment, check=True, capture_output=True)
    blocked = subprocess.run(["git", *IDENTITY, "commit", "-q", "-m", "gemm"], cwd=scratch, env=environment,
                             capture_output=True, text=True, timeout=300)
    assert blocked.returncode != 0 and "flashinfer/gemm.py:1:1: EXP001" in blocked.stdout + blocked.stderr
    _git(scratch, "add", "flashinfer/gemm.py")
    _git(scratch, "commit", "-q", "-m", "gemm", env=environment)  # the scratch file is still there
    assert (scratch / "flashinfer/scratch.py").exists()


def test_manifest_and_config_validate():
    for command, name in (("validate-manifest", ".pre-commit-hooks.yaml"), ("validate-config", ".pre-commit-config.yaml")):
        done = subprocess.run(["pre-commit", command, str(CHECKOUT / name)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr


def test_both_hooks_run_the_staged_mode():
    """The hook other repositories use and this repository's own read what is committed."""
    [hook] = [h for h in yaml.safe_load((CHECKOUT / ".pre-commit-hooks.yaml").read_text()) if h["id"] == "policy-check"]
    [local] = yaml.safe_load((CHECKOUT / ".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    assert shlex.split(hook["entry"]) == ["python", "-m", "policy_checks", "run", "--staged"]  # the hook's own env
    assert shlex.split(local["entry"]) == ["policy-check", "run", "--staged"]
    assert hook["language"] == "python" and hook["pass_filenames"] is False and hook["always_run"] is True
