"""The ``bot`` command group: reachable from ``policy-check``, and PyGithub stays inside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

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


def test_pygithub_is_imported_only_by_the_bot_commands():
    code = (
        "import sys\n"
        "import policy_checks.cli, policy_checks.bot\n"
        "assert 'github' not in sys.modules, 'policy_checks.cli or the bot package imported PyGithub'\n"
        "from policy_checks.cli import main\n"
        "main.get_command(None, 'run')\n"
        "assert 'github' not in sys.modules, 'loading `policy-check run` imported PyGithub'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
