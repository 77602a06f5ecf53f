"""`tests/tools.py`: a tool the dev extra installed beside the interpreter is found
without an activated venv (PATH lacking its directory)."""

from __future__ import annotations

import subprocess

import pytest

from .tools import BESIDE, tool, tool_env


@pytest.mark.parametrize("name", ["actionlint", "shellcheck"])
def test_a_tool_beside_the_interpreter_is_found_off_path(monkeypatch, name):
    if not (BESIDE / name).is_file():
        pytest.skip(f"{name} is not installed beside {BESIDE}")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert tool(name) == str(BESIDE / name)
    assert subprocess.run([tool(name), "--version"], capture_output=True, env=tool_env()).returncode == 0


def test_actionlint_finds_shellcheck_through_the_environment(monkeypatch, tmp_path):
    if not (BESIDE / "actionlint").is_file() or not (BESIDE / "shellcheck").is_file():
        pytest.skip("actionlint and shellcheck are not installed beside the interpreter")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "w.yml").write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
                                     "    steps:\n      - run: echo $UNQUOTED\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    done = subprocess.run([tool("actionlint"), "-no-color"], cwd=tmp_path, capture_output=True, text=True,
                          env=tool_env(), timeout=120)
    assert "SC2086" in done.stdout, done.stdout + done.stderr  # shellcheck ran
