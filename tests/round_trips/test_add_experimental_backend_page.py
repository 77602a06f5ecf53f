"""docs/add_experimental_backend.rst, followed word for word in a scratch copy of this
repository: each ``:caption:`` block is written to the file it names, the ``diff`` block is
applied with ``git apply``, each ``$`` command of the console block runs; then the
checker is clean and the new experimental test passes. The checker's findings before the
last steps show that each step was needed. A round trip: it copies the whole repository
and runs a lane there."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys

import pytest

from ..docs.test_add_experimental_backend import ROOT, absent, blocks, features_built_on


@pytest.mark.timeout(600)
@pytest.mark.skipif(shutil.which("git") is None, reason="git applies the page's diff")
def test_following_the_page_gives_a_clean_checker_and_a_passing_lane(repo_copy):  # noqa: F811
    root = repo_copy.root
    diff = next(text for language, _, text in blocks() if language == "diff")
    gone = absent(ROOT, features_built_on(diff))
    if gone:
        pytest.skip(f"the page's diff builds on {', '.join(sorted(gone))}, no longer an experimental feature here")
    commands = []
    for language, caption, text in blocks():
        if caption:
            (root / caption).parent.mkdir(parents=True, exist_ok=True)
            (root / caption).write_text(text)
        elif language == "diff":
            done = subprocess.run(["git", "apply", "-"], input=text, cwd=root, capture_output=True, text=True)
            assert done.returncode == 0, "the page's diff no longer applies to flashinfer/gemm.py: " + done.stderr
            # before the record, README, test and example exist, EXP009 asks for them
            lacking = repo_copy.policy_check("run", "--no-cache", "--format", "json", check=False)
            assert lacking.returncode == 1 and '"EXP009"' in lacking.stdout
        elif language == "console":
            commands += [line[2:] for line in text.splitlines() if line.startswith("$ ")]
    assert len(commands) == 2
    for command in commands:
        words = shlex.split(command)
        if words[0] == "policy-check":
            words = [sys.executable, "-m", "policy_checks", *words[1:], "--no-cache"]
        elif words[0] == "python3":
            words = [sys.executable, *words[1:]]
        done = repo_copy.run(*words, check=False)
        assert done.returncode == 0, f"$ {command}\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
        if "policy_checks" in words:
            assert done.stdout.startswith("All clear"), done.stdout
        else:
            assert "2 passed" in done.stdout, done.stdout
    example = repo_copy.run(sys.executable, "examples/chunked_gemm_demo.py", check=False)
    assert example.returncode == 0 and "chunked vs torch" in example.stdout, example.stderr[-3000:]
