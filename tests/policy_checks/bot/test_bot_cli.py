"""The ``bot`` command group: reachable from ``policy-check``, and PyGithub stays inside it.

PyGithub is the ``bot`` extra: the checker, ``fix`` and the pre-commit hook install and run
without it, and the bot says what to install. That no module outside ``policy_checks/bot/``
imports it is the ``pygithub-in-bot`` contract of pyproject.toml (tests/test_layers.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_checks.bot.cli import NEEDS_PYGITHUB

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[3]


def test_bot_commands_are_reachable_from_policy_check():
    from policy_checks.cli import main

    result = CliRunner().invoke(main, ["bot", "review", "--help"])
    assert result.exit_code == 0 and "--max-writes" in result.output and "--dry-run" in result.output
    result = CliRunner().invoke(main, ["bot", "pr", "--help"])
    assert result.exit_code == 0 and "--api-url" in result.output
    assert "GITHUB_TOKEN" in result.output and "never printed" in result.output


def test_repo_must_be_owner_slash_name(bot_cli):
    result = bot_cli("pr", "--repo", "not-a-repo", "--pr", "1")
    assert result.exit_code == 2 and "expected OWNER/NAME" in result.output


@pytest.mark.parametrize("repo", ["my_org/widgets", "-acme/widgets", "acme/..", "acme/wid gets", "acme/widgets/x"])
def test_repo_follows_githubs_name_rules(bot_cli, repo):
    # The rules of policy_checks.model.records: an owner is a login (no "_"), a name is one GitHub allows.
    for option in ("--repo", "--tracking-repo"):
        args = ("--repo", repo) if option == "--repo" else ("--repo", "acme/widgets", "--tracking-repo", repo)
        result = bot_cli("pr", *args, "--pr", "1")
        assert result.exit_code == 2 and "expected OWNER/NAME" in result.output, result.output


def test_pygithub_is_imported_only_by_the_bot_commands():
    code = (
        "import sys\n"
        "import policy_checks.cli, policy_checks.bot\n"
        "assert 'github' not in sys.modules, 'policy_checks.cli or the bot package imported PyGithub'\n"
        "from policy_checks.cli import main\n"
        "main.get_command(None, 'run')\n"
        "assert 'github' not in sys.modules, 'loading `policy-check run` imported PyGithub'\n"
        "assert sorted(main.get_command(None, 'bot').commands) == ['note', 'pr', 'review']\n"
        "assert not {'github', 'requests'} & set(sys.modules), 'loading `policy-check bot` imported PyGithub'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr


@pytest.fixture
def without_pygithub(tmp_path):
    """Run ``python -m policy_checks ...`` where ``import github`` and ``import requests`` fail, as they do
    where the bot extra is not installed (modules of those names that raise come first on the path,
    for the process pool's children too)."""
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    for name in ("github", "requests"):
        (blocked / f"{name}.py").write_text(f'raise ModuleNotFoundError("No module named {name!r}", name={name!r})\n')
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocked), str(ROOT)])}
    environment.pop("GITHUB_TOKEN", None)
    tree = tmp_path / "project"
    for rel, text in {"pyproject.toml": "[tool.policy-check]\n", "flashinfer/__init__.py": "",
                      "flashinfer/experimental/__init__.py": ""}.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)

    def policy_check(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "policy_checks", *args], cwd=tree, env=environment,
                              capture_output=True, text=True, timeout=120)

    probe = subprocess.run([sys.executable, "-c", "import github"], env=environment, capture_output=True, text=True)
    assert probe.returncode != 0 and "ModuleNotFoundError: No module named 'github'" in probe.stderr
    return policy_check


def test_the_checker_runs_without_pygithub(without_pygithub):
    result = without_pygithub("run", "--no-cache")
    assert result.returncode == 0 and "All clear" in result.stdout, result.stdout + result.stderr
    result = without_pygithub("fix", "--diff")
    assert result.returncode == 0, result.stdout + result.stderr
    result = without_pygithub("--help")
    assert result.returncode == 0 and "bot" in result.stdout, result.stderr
    result = without_pygithub("bot", "pr", "--help")
    assert result.returncode == 0 and "--api-url" in result.stdout, result.stderr


@pytest.mark.parametrize("command", [("pr", "--repo", "acme/widgets", "--pr", "1"), ("review", "--repo", "acme/widgets")])
def test_the_bot_without_pygithub_says_what_to_install(without_pygithub, command):
    result = without_pygithub("bot", *command)
    assert result.returncode == 2
    assert result.stderr == NEEDS_PYGITHUB + "\n" and result.stdout == ""
    # the forms that work (no index serves the distribution): a checkout, or the git URL pinned to a tag
    assert NEEDS_PYGITHUB.startswith("policy-check: the bot needs PyGithub: install the [bot] extra: ")
    assert '`python3 -m pip install ".[bot]"`' in NEEDS_PYGITHUB
    assert ('`python3 -m pip install "flashinfer-policy-check[bot] @ git+https://github.com/flashinfer-ai/'
            'flashinfer-experimental-track@v') in NEEDS_PYGITHUB


def _names(requirements: list) -> set:
    """Distribution names of requirement strings, lower-cased: ``"PyGithub>=2.3"`` -> ``"pygithub"``."""
    return {re.split(r"[\s;<>=!~\[]", requirement, maxsplit=1)[0].lower() for requirement in requirements}


def test_pygithub_is_the_bot_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not _names(project["dependencies"]) & {"pygithub", "requests"}
    assert "pygithub" in _names(project["optional-dependencies"]["bot"])
    assert "flashinfer-policy-check[bot]" in project["optional-dependencies"]["dev"]

