"""The composite actions other repositories use in one ``uses:`` line: the gate
(``.github/actions/policy-check``) and the bot's PR check (``.github/actions/policy-check-bot``).

Their shell steps run here as the runner runs them (``bash --noprofile --norc -eo
pipefail``, the step's ``env`` with its expressions filled in, ``$GITHUB_OUTPUT``,
``$RUNNER_TEMP``, ``$GITHUB_ACTION_PATH``), on a scratch pull request; the steps that use
other actions (checkout, setup-python, upload-sarif) and the installation (which needs an
index) are held to their text instead, and the installed checker is this environment's.
The examples of the docs are linted as the workflows they are (actionlint through the
local actions, zizmor as published).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ...tools import tool, tool_env

ROOT = Path(__file__).resolve().parents[3]
ACTIONS = ROOT / ".github" / "actions"
GATE, BOT = ACTIONS / "policy-check", ACTIONS / "policy-check-bot"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
IDENTITY = ["-c", "user.name=policy-check test", "-c", "user.email=test@example.invalid"]
VIOLATION = "from .experimental import splitk\n\ndef mm(x):\n    return x\n"
CLEAN = "def mm(x):\n    return x\n"

needs_git = pytest.mark.skipif(shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash")


def steps(action: Path) -> list:
    return yaml.safe_load((action / "action.yml").read_text())["runs"]["steps"]


def step(action: Path, key: str) -> dict:
    [found] = [s for s in steps(action) if s.get("id") == key or s.get("name") == key]
    return found


class Runner:
    """Runs an action's shell steps as the runner would; `values` answers expressions."""

    def __init__(self, action: Path, tmp_path: Path, values: dict):
        self.action, self.values = action, dict(values)
        self.workspace = tmp_path / "workspace"
        self.temp = tmp_path / "runner-temp"
        self.workspace.mkdir(exist_ok=True)
        self.temp.mkdir(exist_ok=True)

    def expand(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self.values[m.group(1)], str(text))  # KeyError: an expression to teach

    def run(self, key: str) -> subprocess.CompletedProcess:
        chosen = step(self.action, key)
        assert chosen["shell"] == "bash" and "working-directory" not in chosen
        output = self.temp / f"output-{key}"
        output.write_text("")
        environment = {
            "PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", str(self.temp)),
            "RUNNER_TEMP": str(self.temp), "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_ACTION_PATH": str(self.action), "GITHUB_OUTPUT": str(output),
            **{k: v for k, v in os.environ.items() if k in ("POLICY_CHECK_CACHE_DIR", "XDG_CACHE_HOME", "SYSTEMROOT")},
            **{name: self.expand(value) for name, value in chosen.get("env", {}).items()},
        }
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", chosen["run"]],
                              cwd=self.workspace, env=environment, capture_output=True, text=True, timeout=300)
        for line in output.read_text().splitlines():
            name, _, value = line.partition("=")
            self.values[f"steps.{chosen.get('id')}.outputs.{name}"] = value
        return done


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def pull_request(tmp_path) -> tuple:
    """A pull request checked out as the gate checks it out (``path``, whole history):
    (runner, base commit, write the head's files and commit them)."""
    runner = Runner(GATE, tmp_path, {"inputs.path": "pr"})
    checkout = runner.workspace / "pr"
    (checkout / "flashinfer" / "experimental").mkdir(parents=True)
    for rel, text in {"flashinfer/__init__.py": "", "flashinfer/experimental/__init__.py": "", "flashinfer/gemm.py": CLEAN}.items():
        (checkout / rel).write_text(text)
    git(checkout, "init", "-q")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "base")
    base = git(checkout, "rev-parse", "HEAD")

    def head(files: dict) -> None:
        for rel, text in files.items():
            (checkout / rel).write_text(text)
        git(checkout, "add", "-A")
        git(checkout, "commit", "-q", "-m", "head")

    runner.values.update({
        "inputs.policy-from": base,
        "steps.install.outputs.python": sys.executable,  # the installation is held to its text below
    })
    return runner, base, head


def gate(runner: Runner) -> tuple:
    """The check, SARIF and verdict steps: (annotations step, SARIF log, verdict step)."""
    check = runner.run("check")
    assert check.returncode == 0, check.stderr  # the verdict waits for the last step
    sarif = runner.run("sarif")
    assert sarif.returncode == 0, sarif.stderr
    verdict = runner.run("The verdict")
    log = json.loads(Path(runner.values["steps.sarif.outputs.file"]).read_text())
    return check, log, verdict


@needs_git
def test_the_gate_fails_a_violation_with_annotations_and_sarif(pull_request):
    runner, base, head = pull_request
    head({"flashinfer/gemm.py": VIOLATION})
    check, log, verdict = gate(runner)
    assert runner.values["steps.check.outputs.status"] == "1"
    assert "::error file=flashinfer/gemm.py,line=1" in check.stdout
    [result] = log["runs"][0]["results"]
    assert result["ruleId"] == "EXP001"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "flashinfer/gemm.py"
    assert verdict.returncode == 1 and "findings" in verdict.stderr


@needs_git
def test_the_gate_judges_with_the_base_commits_policy(pull_request):
    """A suppression the pull request adds to its own violation does not pass the gate."""
    runner, base, head = pull_request
    head({"flashinfer/gemm.py": VIOLATION.replace("splitk\n", "splitk  # policy: ignore[EXP001] trust me\n", 1)})
    check, log, verdict = gate(runner)
    assert "hidden by a policy change" in check.stdout and verdict.returncode == 1


@needs_git
def test_the_gate_passes_a_clean_pull_request_and_runs_without_a_base(pull_request):
    runner, base, head = pull_request
    head({"flashinfer/norm.py": CLEAN})
    check, log, verdict = gate(runner)
    assert runner.values["steps.check.outputs.status"] == "0" and verdict.returncode == 0
    assert log["runs"][0]["results"] == []
    runner.values["inputs.policy-from"] = ""  # a push: the tree's own policy only
    check, log, verdict = gate(runner)
    assert verdict.returncode == 0, check.stdout + check.stderr


@needs_git
def test_an_error_is_exit_status_2_not_findings(pull_request):
    runner, base, head = pull_request
    runner.values["inputs.policy-from"] = "0" * 40  # a commit the checkout does not have
    check = runner.run("check")
    assert runner.values["steps.check.outputs.status"] == "2", check.stderr
    verdict = runner.run("The verdict")
    assert verdict.returncode == 2 and "error" in verdict.stderr


@needs_git
def test_the_installation_refuses_the_workspace_itself_as_the_checkout(tmp_path):
    runner = Runner(GATE, tmp_path, {"steps.python.outputs.python-path": "/nonexistent/python"})
    for path in (".", "./", ""):
        runner.values["inputs.path"] = path
        done = runner.run("install")
        assert done.returncode == 2 and "not the workspace" in done.stderr
    runner.values["inputs.path"] = "pr"
    assert runner.run("install").returncode not in (0, 2)  # past the guard, at the missing interpreter


def test_the_gate_installs_its_own_copy_in_isolation_and_reads_the_pull_request_only():
    install = step(GATE, "install")["run"]
    assert '"$PYTHON" -I -m venv "$venv"' in install
    assert '"$venv/bin/python" -I -m pip install --disable-pip-version-check --no-input "$GITHUB_ACTION_PATH/../../.."' in install
    source = (GATE / "../../..").resolve()
    assert source == ROOT and 'name = "flashinfer-policy-check"' in (source / "pyproject.toml").read_text()
    for each in steps(GATE):
        script = each.get("run", "")
        assert not re.search(r"(^|[;&|(\s])(cd|pushd)\s", script)
        for line in script.splitlines():  # every interpreter isolated, pip and the checker as modules
            if re.search(r"python|\$CHECKER|\$PYTHON", line) and not line.lstrip().startswith(("#", "echo", "venv=")):
                assert re.search(r'(python"?|\$CHECKER"|\$PYTHON") -I -m ', line), line
    [checkout] = [s for s in steps(GATE) if s.get("uses", "").startswith("actions/checkout@")]
    assert checkout["with"] == {"path": "${{ inputs.path }}", "fetch-depth": 0, "persist-credentials": False}
    [python] = [s for s in steps(GATE) if s.get("uses", "").startswith("actions/setup-python@")]
    assert python["with"]["update-environment"] is False  # the caller's PATH is left alone
    [upload] = [s for s in steps(GATE) if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert upload["with"]["checkout_path"] == "${{ github.workspace }}/${{ inputs.path }}"
    assert upload["with"]["sarif_file"] == "${{ steps.sarif.outputs.file }}"
    assert "head.repo.full_name == github.repository" in upload["if"] and "inputs.upload-sarif" in upload["if"]
    names = [s.get("id") or s.get("name") for s in steps(GATE)]
    assert names.index("check") < names.index("sarif") < names.index("Upload to code scanning") < names.index("The verdict")


@needs_git
def test_the_bot_step_runs_policy_check_bot_pr(tmp_path):
    """The step's command line reaches the bot: without a token it stops where the bot
    asks for one (exit 2), after click accepted --repo, --pr and --dry-run."""
    runner = Runner(BOT, tmp_path, {
        "steps.install.outputs.python": sys.executable, "inputs.token": "", "inputs.bot-login": "github-actions[bot]",
        "inputs.tracking-repos": "", "inputs.repository": "acme/widgets", "inputs.pull-request": "7",
    })
    for dry_run in ("false", "true"):
        runner.values["inputs.dry-run"] = dry_run
        done = runner.run("Check the pull request")
        assert done.returncode == 2 and "GITHUB_TOKEN is not set" in done.stderr, done.stderr
    runner.values["inputs.pull-request"] = "0"
    assert "--pr" in runner.run("Check the pull request").stderr  # click rejected it: the value got there


def test_the_bot_checks_nothing_out_and_hands_the_token_to_one_step():
    assert not [s for s in steps(BOT) if s.get("uses", "").startswith("actions/checkout@")]
    holding = [s for s in steps(BOT) if "inputs.token" in json.dumps(s)]
    assert [s["name"] for s in holding] == ["Check the pull request"]
    assert holding[0]["env"]["GITHUB_TOKEN"] == "${{ inputs.token }}"
    install = step(BOT, "install")["run"]
    assert '"$venv/bin/python" -I -m pip install --disable-pip-version-check --no-input "$GITHUB_ACTION_PATH/../../..[bot]"' in install
    assert '"$BOT" -I -m policy_checks "${args[@]}"' in holding[0]["run"]
    assert 'args=(bot pr --repo "$REPO" --pr "$PR_NUMBER")' in holding[0]["run"]


# The docs' examples ---------------------------------------------------------------------------

# The docs' blocks name the real repository and this version's release tag (copyable as they are).
PLACEHOLDER = re.compile(r"flashinfer-ai/flashinfer-experimental-track/\.github/actions/([\w-]+)@(v\d+\.\d+\.\d+)")


def examples() -> dict:
    """name -> the workflow of a docs example that uses one of the actions."""
    found = {}
    for page in ("policy_check.rst", "bot.rst"):
        text = (ROOT / "docs" / page).read_text()
        for block in re.findall(r"\.\. code-block:: yaml\n\n((?:   .*\n|\n)+)", text):
            workflow = "\n".join(line[3:] for line in block.splitlines()) + "\n"
            used = PLACEHOLDER.search(workflow)
            if used:
                found[used.group(1)] = workflow
    return found


def test_the_docs_show_each_action_pinned_with_its_permissions():
    found = examples()
    assert set(found) == {"policy-check", "policy-check-bot"}
    [gate_job] = yaml.safe_load(found["policy-check"])["jobs"].values()
    assert gate_job["permissions"] == {"contents": "read", "actions": "read", "security-events": "write"}
    [bot_job] = yaml.safe_load(found["policy-check-bot"])["jobs"].values()
    reference = yaml.safe_load((ROOT / ".github/workflows/experimental-track.yml").read_text())["jobs"]["check"]
    assert bot_job["permissions"] == reference["permissions"] and bot_job["if"] == reference["if"]


@pytest.mark.skipif(tool("actionlint") is None, reason="actionlint is not installed")
def test_actionlint_accepts_the_docs_examples(tmp_path):
    shutil.copytree(ACTIONS, tmp_path / ".github" / "actions")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir()
    for name, workflow in examples().items():
        (workflows / f"{name}.yml").write_text(PLACEHOLDER.sub(r"./.github/actions/\1", workflow))
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    done = subprocess.run([tool("actionlint"), "-no-color"], cwd=tmp_path, capture_output=True, text=True,
                          env=tool_env(), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(tool("zizmor") is None, reason="zizmor is not installed")
def test_zizmor_accepts_the_docs_examples_as_published(tmp_path):
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for name, workflow in examples().items():
        # pinned by commit as the docs say (the tag's commit in its place, the tag as a comment)
        pinned = PLACEHOLDER.sub(r"flashinfer-ai/flashinfer-experimental-track/.github/actions/\1@" + "a" * 40 + r" # \2",
                                 workflow)
        (workflows / f"{name}.yml").write_text(pinned)
    done = subprocess.run([tool("zizmor"), "--offline", "--pedantic", "--no-progress", str(workflows)],
                          capture_output=True, text=True, env=tool_env(), timeout=120)
    assert done.returncode == 0 and "No findings to report" in done.stdout, done.stdout + done.stderr
