"""docs/add_experimental_backend.rst, followed word for word in a scratch copy of this
repository: each ``:caption:`` block is written to the file it names, the ``diff`` block is
applied with ``git apply``, each ``$`` command of the console block runs; then the
checker is clean and the new experimental test passes. The checker's findings before the
last steps show that each step was needed."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from policy_checks.model.records import graduated_to

from ..round_trips.conftest import repo_copy  # noqa: F401  (a fixture: the scratch copy)

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "add_experimental_backend.rst"
CONTEXT_FEATURE = re.compile(r"^ .*\bexperimental\.(\w+)", re.M)  # a diff's context line naming a feature
BLOCK = re.compile(r"^\.\. code-block:: (\w+)\n((?:   :\w+: .*\n)*)\n((?:   .*\n|\n)+)", re.M)


def blocks():
    """``(language, caption or None, text)`` of each code block, in page order."""
    found = []
    for language, options, body in BLOCK.findall(PAGE.read_text()):
        caption = re.search(r":caption: (.*)", options)
        lines = [line[3:] for line in body.rstrip("\n").splitlines()]
        if language == "diff":  # a blank context line is " " in a diff; the page leaves it empty
            lines = [line or " " for line in lines]
        found.append((language, caption.group(1).strip() if caption else None, "\n".join(lines) + "\n"))
    return found


def features_built_on(diff: str) -> set:
    """The features the page's diff keeps as context (the page adds its backend beside
    ``splitk``): the diff applies only while each is still there, as it was."""
    return set(CONTEXT_FEATURE.findall(diff))


def absent(root: Path, features) -> set:
    """Those of `features` that are no longer experimental features at `root`:
    removed, or graduated (a shim is left)."""
    gone = set()
    for feature in features:
        directory = root / "flashinfer" / "experimental" / feature
        if not directory.is_dir() or graduated_to(directory, "flashinfer.experimental"):
            gone.add(feature)
    return gone


def test_the_page_is_in_the_docs_and_every_step_has_a_block():
    made = [caption for _, caption, _ in blocks() if caption]
    assert "flashinfer/experimental/chunked_gemm/support.py" in made
    assert "tests/experimental/chunked_gemm/test_chunked_gemm.py" in made
    assert [language for language, _, _ in blocks()].count("diff") == 1
    assert [language for language, _, _ in blocks()].count("console") == 1


def test_the_walkthrough_follows_the_features_it_builds_on(tmp_path):
    """After ``remove splitk_gemm`` (or its graduation) the page's diff cannot apply: the
    walk-through says so and skips, rather than failing a repository that did right."""
    diff = next(text for language, _, text in blocks() if language == "diff")
    assert features_built_on(diff) == {"splitk_gemm"}
    (tmp_path / "flashinfer/experimental/gated_rmsnorm").mkdir(parents=True)
    assert absent(tmp_path, {"splitk_gemm", "gated_rmsnorm"}) == {"splitk_gemm"}


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
