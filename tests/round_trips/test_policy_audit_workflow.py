"""The shipped audit job, run for real: the ``run`` commands of
``.github/workflows/policy-audit.yml`` (read from the YAML, run with bash as the runner
runs them) on the layout its checkout steps make, a ``base`` checkout and a ``pr``
checkout with history, on a copy of this repository. The job must pass a pull request
that adds harmless code and fail one whose core module loads experimental code.

Minutes: two fresh environments are installed (pip, from its configured index; torch is
pinned to 2.13.0 by a constraint so that pip takes the CPU build the machine holds rather
than fetch a CUDA one), and this repository is audited twice.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from .conftest import REPO

WORKFLOW = REPO / ".github" / "workflows" / "policy-audit.yml"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def _pull_request(origin: Path, name: str, files: dict) -> str:
    """A branch of `origin` off its first commit adding `files`; its commit."""
    _git(origin, "checkout", "-q", "-b", name, "base")
    for rel, text in files.items():
        (origin / rel).write_text(text, encoding="utf-8")
    _git(origin, "add", "-A")
    _git(origin, "commit", "-qm", name)
    return _git(origin, "rev-parse", "HEAD")


def test_the_audit_job_passes_a_clean_pull_request_and_fails_a_violating_one(repo_copy, tmp_path):
    origin = repo_copy.root
    _git(origin, "init", "-q")
    _git(origin, "add", "-A")
    _git(origin, "commit", "-qm", "base")
    _git(origin, "branch", "base")
    base_sha = _git(origin, "rev-parse", "HEAD")
    clean = _pull_request(origin, "clean", {"flashinfer/harmless_addition.py": "VALUE = 1\n"})
    # a feature of this repository's, found rather than named: the graduate and remove round
    # trips list every literal that still names a feature's path
    feature = min(d.name for d in (origin / "flashinfer" / "experimental").iterdir() if (d / "__init__.py").is_file())
    leaking = _pull_request(origin, "leaking", {"flashinfer/leaking_addition.py": f"import flashinfer.experimental.{feature}\n"})

    job = tmp_path / "job"
    job.mkdir()
    _git(job, "clone", "-q", str(origin), "pr")  # fetch-depth: 0
    _git(job, "clone", "-q", str(origin), "base")
    _git(job / "base", "checkout", "-q", base_sha)
    tools = tmp_path / "tools"  # setup-python: `python` on the PATH
    tools.mkdir()
    os.symlink(getattr(sys, "_base_executable", sys.executable), tools / "python")
    constraint = tmp_path / "constraints.txt"
    constraint.write_text("torch==2.13.0\n", encoding="utf-8")
    (tmp_path / "runner").mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{tools}{os.pathsep}{env.get('PATH', '')}", RUNNER_TEMP=str(tmp_path / "runner"),
               PIP_CONSTRAINT=str(constraint), BASE_SHA=base_sha,
               PIP_RETRIES="0")  # an index this machine cannot reach (PyTorch's) is given up at once

    [definition] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"].values()
    steps = [step for step in definition["steps"] if "run" in step]
    *installs, audit = steps
    assert "policy_checks audit" in audit["run"] and len(installs) == 2

    def run(step: dict) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=job, env={**env, **step.get("env", {})},
                              capture_output=True, text=True, timeout=1800)

    for step in installs:
        done = run(step)
        assert done.returncode == 0, f"{step['name']}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"

    audit = {**audit, "env": {}}  # BASE_SHA is set above: the expression is the runner's
    _git(job / "pr", "checkout", "-q", clean)
    passed = run(audit)
    assert passed.returncode == 0, passed.stdout[-4000:] + passed.stderr[-4000:]
    assert "note: interpreter: " in passed.stderr and "/audited/bin/python" in passed.stderr

    _git(job / "pr", "checkout", "-q", leaking)
    failed = run(audit)
    assert failed.returncode == 1, failed.stdout[-4000:] + failed.stderr[-4000:]
    annotations = [line for line in failed.stdout.splitlines() if line.startswith("::error")]
    assert len(annotations) == 1 and "file=flashinfer/leaking_addition.py,line=1" in annotations[0], failed.stdout
    assert "AUD001" in annotations[0]
