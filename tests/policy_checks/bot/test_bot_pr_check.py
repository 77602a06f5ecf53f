"""``policy-check bot pr`` against the fake GitHub API, over real HTTP through PyGithub."""

from __future__ import annotations

import json
import threading

import pytest

from policy_checks.bot import policy_weakening as pw
from policy_checks.bot.baseline_diff import baseline_texts_change
from policy_checks.bot.client import connect
from policy_checks.bot.comments import BotIdentity
from policy_checks.bot.pr_check import PR_MARKER, run_pr_check
from policy_checks.bot.writes import Writes

REPO = "acme/widgets"

ISSUE = """### Owner

@octocat

### Use case

Fast split-K bf16 GEMM for small batches.

### Why experimental

A new kernel whose numerics are still being validated.

### Graduation plan

Target release: 0.8.0
Target date: 2026-11-20
"""

BODY = """## Description

Adds split-K.

## Experimental Track

<!-- Tick the box if this PR adds or changes experimental code. -->
- [x] This PR adds or changes experimental-track code
  - Tracking issue: #1
"""

UNTICKED = BODY.replace("[x]", "[ ]")
EXPERIMENTAL_FILE = ("flashinfer/experimental/splitk/kernel.py", "+@flashinfer_experimental_api\n+def run(): pass")
CORE_FILE = ("flashinfer/gemm.py", "+from flashinfer.experimental.splitk import run")


@pytest.fixture
def repo(github_api):
    github_api.add_collaborator(REPO, "octocat", "write")
    github_api.add_collaborator(REPO, "maintainer", "maintain")
    github_api.add_user("outsider")
    github_api.add_issue(REPO, ISSUE)  # #1
    return github_api


def status_of(g, pr: int) -> dict | None:
    sha = g.repo(REPO).pulls[pr]["head"]["sha"]
    statuses = [s for s in g.repo(REPO).statuses.get(sha, []) if s["context"] == "experimental-track"]
    return statuses[0] if statuses else None


def bot_comments(g, pr: int) -> list[dict]:
    return [c for c in g.comments_by(REPO, pr) if c["body"].startswith(PR_MARKER)]


def check(bot_cli, pr: int, *extra: str, **kw):
    return bot_cli("pr", "--repo", REPO, "--pr", str(pr), *extra, **kw)


BUDGET = 10  # 8, and two requests for the texts of 100 files at base and head (50 paths a request)


def test_declared_pr_passes_labels_and_comments_within_budget(repo, bot_cli):
    files = [EXPERIMENTAL_FILE, CORE_FILE] + [(f"tests/experimental/splitk/test_{i}.py", "+x") for i in range(98)]
    pr = repo.add_pull(REPO, BODY, files)
    repo.requests.clear()
    result = check(bot_cli, pr)
    assert result.exit_code == 0, result.output
    assert len(repo.requests) <= BUDGET, repo.requests
    assert [op for op, _ in repo.graphql_log].count("FilesAtRevisions") == 2  # 100 Python files, 50 a request
    print(f"PR check, first run, 100 files: {len(repo.requests)} requests")
    assert status_of(repo, pr)["state"] == "success"
    assert "experimental" in repo.labels_of(REPO, pr)
    [comment] = bot_comments(repo, pr)
    assert "Core files: these get normal core review** (1)" in comment["body"]
    assert "`flashinfer/gemm.py`" in comment["body"] and "Experimental files** (99)" in comment["body"]
    assert "… and 69 more" in comment["body"]  # long lists are bounded

    # A re-run with nothing new changes nothing: no comment, no edit, no status, no label.
    repo.requests.clear()
    assert check(bot_cli, pr).exit_code == 0
    assert repo.writes() == []
    print(f"PR check, unchanged re-run: {len(repo.requests)} requests")
    assert len(repo.requests) <= BUDGET
    assert len(bot_comments(repo, pr)) == 1


@pytest.mark.parametrize("owner", ["@carol", "`@carol`"], ids=["owner-mentioned", "owner-looked-up"])
@pytest.mark.parametrize("thread", [False, True], ids=["empty-thread", "commented-thread"])
@pytest.mark.parametrize("labelled", [False, True], ids=["no-label", "label-preset"])
@pytest.mark.parametrize("extended", [False, True], ids=["in-window", "extension-needed"])
@pytest.mark.parametrize("login", [False, True], ids=["login-asked", "login-configured"])
def test_every_run_stays_within_10_requests(repo, bot_cli, owner, thread, labelled, extended, login):
    """The budget in every combination of the optional reads and writes, on a 100-file PR that also adds
    baseline debt (a weakening, approved by a maintainer before the first run)."""
    repo.add_user("carol")  # exists, but appears nowhere else: only the issue can prove it
    repo.add_comment(REPO, 1, "/experimental owner @carol", "maintainer")  # carol did not write the issue
    body = ISSUE.replace("@octocat", owner)
    if extended:
        body = body.replace("2026-11-20", "2026-12-10")  # needs the maintainer's 2 weeks
        repo.add_comment(REPO, 1, "/experimental extend 4 please", "outsider")  # refused, no request
        repo.add_comment(REPO, 1, "/experimental extend 2 waiting for CUTLASS 4.1", "maintainer")
    repo.repo(REPO).issues[1]["body"] = body
    files = [EXPERIMENTAL_FILE, baseline_change(repo, {B12X: 1}, {B12X: 1, MOE: 1})]  # read with the files
    files += [(f"tests/experimental/splitk/test_{i}.py", "+x") for i in range(98)]
    pr = repo.add_pull(REPO, BODY, files, labels=("experimental",) if labelled else ())
    set_baseline(repo, pr, {B12X: 1}, {B12X: 1, MOE: 1})
    repo.add_comment(REPO, pr, f"/experimental-track approve-policy {digest({B12X: 1}, {B12X: 1, MOE: 1})}",
                     "maintainer")
    if thread:
        repo.add_comment(REPO, pr, "LGTM @carol", "outsider")
    env = {"BOT_LOGIN": repo.bot_login} if login else {}
    counts = []
    for step in ("first run", "unchanged re-run", "new push"):
        if step == "new push":
            repo.repo(REPO).pulls[pr]["head"]["sha"] = "feed" * 10
        repo.requests.clear()
        result = check(bot_cli, pr, env=env)
        assert result.exit_code == 0, result.output
        assert len(repo.requests) <= BUDGET, (step, repo.requests)
        if step == "unchanged re-run":
            assert repo.writes() == []
        counts.append(len(repo.requests))
    assert len(bot_comments(repo, pr)) == 1 and status_of(repo, pr)["state"] == "success"
    assert "**Policy weakened: approved by `@\u200dmaintainer`**" in bot_comments(repo, pr)[0]["body"]
    assert "experimental" in repo.labels_of(REPO, pr)
    assert repo.count("GET", r"^/users/carol$") <= (3 if "`" in owner else 0)
    assert repo.count("GET", r"^/user$") == 0 if login else 1  # asked once, answered 403 for an installation token
    print(f"PR check requests (first, unchanged, new push): {counts}")


def test_extension_counts_when_collaborators_are_unreadable(repo, bot_cli):
    """Without the collaborator listing, only the maintainer's permission is asked (the outsider's association rules it out)."""
    repo.collaborators_forbidden = True
    repo.repo(REPO).issues[1]["body"] = ISSUE.replace("2026-11-20", "2026-12-10")
    repo.add_comment(REPO, 1, "/experimental extend 4 please", "outsider")
    repo.add_comment(REPO, 1, "/experimental extend 2 waiting for CUTLASS 4.1", "maintainer")
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    assert check(bot_cli, pr).exit_code == 0
    assert repo.count("GET", r"/collaborators/maintainer/permission$") == 1
    assert repo.count("GET", r"/collaborators/outsider/permission$") == 0


def test_undeclared_experimental_paths_fail(repo, bot_cli):
    pr = repo.add_pull(REPO, UNTICKED, [EXPERIMENTAL_FILE])
    result = check(bot_cli, pr)
    assert result.exit_code == 1
    assert status_of(repo, pr)["state"] == "failure"
    assert "does not declare it" in status_of(repo, pr)["description"]
    assert "tick the box" in bot_comments(repo, pr)[0]["body"]
    assert "experimental" not in repo.labels_of(REPO, pr)


def test_undeclared_decorator_in_core_fails(repo, bot_cli):
    pr = repo.add_pull(REPO, None, [("flashinfer/norm.py", "+@flashinfer_experimental_api\n+def f(): ...")])
    assert check(bot_cli, pr).exit_code == 1
    assert status_of(repo, pr)["state"] == "failure"


def test_removed_decorator_is_not_an_addition(repo, bot_cli):
    pr = repo.add_pull(REPO, None, [("flashinfer/norm.py", "-@flashinfer_experimental_api\n+++ b/x")])
    assert check(bot_cli, pr).exit_code == 0


def test_plain_pr_gets_a_status_but_no_comment(repo, bot_cli):
    pr = repo.add_pull(REPO, "Fix a typo.", [("README.md", "+typo")])
    assert check(bot_cli, pr).exit_code == 0
    assert status_of(repo, pr) == {**status_of(repo, pr), "state": "success", "description": "Not an Experimental Track PR"}
    assert bot_comments(repo, pr) == []
    repo.requests.clear()
    assert check(bot_cli, pr).exit_code == 0
    assert repo.writes() == []  # the status is read back instead of written twice


def test_ticked_box_without_experimental_code_is_said(repo, bot_cli):
    pr = repo.add_pull(REPO, BODY, [("README.md", "+docs")])
    assert check(bot_cli, pr).exit_code == 0
    assert "touches no experimental path" in bot_comments(repo, pr)[0]["body"]


@pytest.mark.parametrize(
    "body, problem",
    [
        (BODY.replace("#1", "#77"), "does not exist"),
        (BODY.replace("  - Tracking issue: #1\n", ""), "no `Tracking issue:` reference"),
        (BODY.replace("#1", "https://github.com/acme/widgets/pull/1"), "pull request, not an issue"),
        (BODY.replace("#1", "acme/nowhere#3"), "`acme/nowhere#3` does not exist"),
        (BODY.replace("#1", "acme/elsewhere#3"), "`acme/elsewhere#3` is in another repository"),
    ],
)
def test_bad_tracking_references_fail(repo, bot_cli, body, problem):
    repo.collaborators_forbidden = True  # an error on another part of the answer changes nothing
    pr = repo.add_pull(REPO, body, [EXPERIMENTAL_FILE])
    result = check(bot_cli, pr, "--tracking-repo", "acme/nowhere")
    assert result.exit_code == 1 and problem in bot_comments(repo, pr)[0]["body"]


def test_tracking_reference_to_a_pull_request_number_fails(repo, bot_cli):
    other = repo.add_pull(REPO, "x", [("README.md", "+")])
    pr = repo.add_pull(REPO, BODY.replace("#1", f"#{other}"), [EXPERIMENTAL_FILE])
    assert check(bot_cli, pr).exit_code == 1
    assert "is a pull request, not an issue" in bot_comments(repo, pr)[0]["body"]


@pytest.mark.parametrize(
    "issue, problem",
    [
        (ISSUE.replace("Fast split-K bf16 GEMM for small batches.", "_No response_"), "no `### Use case`"),
        (ISSUE.replace("### Why experimental", "### Why"), "no `### Why experimental`"),
        (ISSUE.replace("Target release: 0.8.0", ""), "no `Target release: X.Y.Z`"),
        (ISSUE.replace("@octocat", "@ghost-user") + "\n/experimental owner @ghost-user", "unconfirmed"),
        (ISSUE.replace("2026-11-20", "2026-12-15"), "more than four weeks after admission"),
    ],
)
def test_incomplete_tracking_issues_fail(repo, bot_cli, issue, problem):
    repo.repo(REPO).issues[1]["body"] = issue
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    assert check(bot_cli, pr).exit_code == 1
    assert problem in bot_comments(repo, pr)[0]["body"]


def test_closed_tracking_issue_fails(repo, bot_cli):
    repo.repo(REPO).issues[1]["state"] = "closed"
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    assert check(bot_cli, pr).exit_code == 1
    assert "tracking issue #1 is closed" in status_of(repo, pr)["description"]


def test_mentioned_owner_is_proven_by_the_rendered_issue(repo, bot_cli):
    repo.add_user("carol")
    repo.add_comment(REPO, 1, "/experimental owner @carol", "maintainer")
    repo.repo(REPO).issues[1]["body"] = ISSUE.replace("@octocat", "@carol")
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    assert check(bot_cli, pr).exit_code == 0
    assert repo.count("GET", r"^/users/") == 0  # GitHub linked the mention: carol exists


def test_owner_not_proven_otherwise_is_looked_up(repo, bot_cli):
    repo.add_user("carol")
    repo.add_comment(REPO, 1, "/experimental owner @carol", "maintainer")
    repo.repo(REPO).issues[1]["body"] = ISSUE.replace("@octocat", "`@carol`")  # code: not linked
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    assert check(bot_cli, pr).exit_code == 0
    assert repo.count("GET", r"^/users/carol$") == 1


def test_maintainer_extension_allows_a_later_target(repo, bot_cli):
    repo.repo(REPO).issues[1]["body"] = ISSUE.replace("2026-11-20", "2026-12-10")
    repo.add_comment(REPO, 1, "/experimental extend 2 waiting for CUTLASS 4.1", "outsider")
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    assert check(bot_cli, pr).exit_code == 1  # an outsider cannot extend
    repo.add_comment(REPO, 1, "/experimental extend 2 waiting for CUTLASS 4.1", "maintainer")
    assert check(bot_cli, pr).exit_code == 0
    assert status_of(repo, pr)["state"] == "success"
    assert len(bot_comments(repo, pr)) == 1  # the comment was updated in place


def test_comment_is_found_by_marker_and_login(repo, bot_cli):
    pr = repo.add_pull(REPO, UNTICKED, [EXPERIMENTAL_FILE])
    forged = repo.add_comment(REPO, pr, PR_MARKER + "\nI am not the bot", "outsider")
    assert check(bot_cli, pr).exit_code == 1
    [ours] = bot_comments(repo, pr)
    first_id = ours["id"]
    assert forged["body"].endswith("I am not the bot")  # untouched
    repo.repo(REPO).issues[pr]["body"] = BODY
    repo.requests.clear()
    assert check(bot_cli, pr).exit_code == 0
    [ours] = bot_comments(repo, pr)
    assert ours["id"] == first_id and "**Result:** passed" in ours["body"]
    assert repo.count("PATCH") == 1 and repo.count("POST", "/comments$") == 0


def test_a_leftover_duplicate_is_removed_even_when_the_newer_copy_is_current(repo, bot_cli):
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    assert check(bot_cli, pr).exit_code == 0
    [current] = bot_comments(repo, pr)
    repo.add_comment(REPO, pr, PR_MARKER + "\nstale", repo.bot_login, created="2026-11-01T00:00:00Z")
    repo.repo(REPO).comments[pr].sort(key=lambda c: c["created_at"])  # GitHub lists oldest first
    assert check(bot_cli, pr).exit_code == 0
    [kept] = bot_comments(repo, pr)
    assert kept["id"] != current["id"] and kept["body"] == current["body"]  # the oldest, brought up to date


def test_user_text_is_escaped(repo, bot_cli):
    weird = "flashinfer/experimental/x/@everyone `` [a](b) <b>.py"
    pr = repo.add_pull(REPO, BODY, [(weird, "+x")])
    check(bot_cli, pr)
    body = bot_comments(repo, pr)[0]["body"]
    assert "@everyone" not in body and "```flashinfer/experimental/x/@\u200deveryone `` [a](b) <b>.py```" in body


def test_dry_run_prints_writes_and_makes_none(repo, bot_cli):
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    result = check(bot_cli, pr, "--dry-run")
    assert result.exit_code == 0
    assert repo.writes() == []
    for line in ("[dry-run] would add the label `experimental`", "[dry-run] would set the commit status",
                 "[dry-run] would create a bot comment on #2"):
        assert line in result.output
    assert PR_MARKER in result.output  # the comment body it would write


def test_read_only_token_gives_a_clear_report(repo, bot_cli):
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    result = check(bot_cli, pr, token=repo.read_only_token)
    assert result.exit_code == 0 and result.exception is None or isinstance(result.exception, SystemExit)
    assert "Refused: the token may not write these" in result.output
    assert "a maintainer, please add the `experimental` label" in result.output
    assert "Traceback" not in result.output
    assert repo.token not in result.output and repo.read_only_token not in result.output


def test_step_summary_is_written(repo, bot_cli, tmp_path):
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    summary = tmp_path / "summary.md"
    check(bot_cli, pr, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert "### Experimental Track check" in summary.read_text()


def test_two_runs_at_once_leave_one_comment(repo):
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    # Both runs list the (empty) thread before either creates its comment.
    repo.inject("GET", rf"/issues/{pr}/comments$", barrier=threading.Barrier(2), times=2)
    errors = []

    def run():
        try:
            gh = connect(repo.token, repo.url, retry_budget_s=3, write_interval_s=0)
            run_pr_check(gh, REPO, pr, Writes(dry_run=False, echo=lambda s: None), BotIdentity(gh))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    assert errors == []
    assert repo.count("POST", rf"/issues/{pr}/comments$") == 2  # the race really happened
    assert len(bot_comments(repo, pr)) == 1


def test_missing_token_is_a_usage_error(repo, bot_cli):
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    result = check(bot_cli, pr, token="")
    assert result.exit_code == 2 and "GITHUB_TOKEN is not set" in result.output


def test_bad_token_is_reported_without_the_token(repo, bot_cli):
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    result = check(bot_cli, pr, token="sekrit-value-123")
    assert result.exit_code == 2 and "rejected the token (401" in result.output
    assert "sekrit-value-123" not in result.output and "sekrit" not in repr(result.exception)


def test_missing_pr_is_reported(repo, bot_cli):
    result = check(bot_cli, 999)
    assert result.exit_code == 2 and "read pull request #999 of acme/widgets: not found" in result.output


def test_label_refused_is_asked_for_in_the_comment(repo, bot_cli):
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    repo.inject("POST", r"/labels$", 403, body={"message": "Resource not accessible by integration"})
    assert check(bot_cli, pr).exit_code == 0
    assert "a maintainer, please add the `experimental` label" in bot_comments(repo, pr)[0]["body"]
    assert status_of(repo, pr)["state"] == "success"


def test_tracking_issue_in_another_repository(repo, bot_cli):
    repo.add_issue("acme/roadmap", ISSUE, number=5)
    pr = repo.add_pull(REPO, BODY.replace("#1", "acme/roadmap#5"), [EXPERIMENTAL_FILE])
    assert check(bot_cli, pr, env={"TRACKING_REPOS": "acme/other acme/roadmap"}).exit_code == 0
    assert "Tracking issue: `acme/roadmap#5` (open)" in bot_comments(repo, pr)[0]["body"]
    [(operation, variables)] = [(op, v) for op, v in repo.graphql_log if op != "FilesAtRevisions"]  # one request
    assert operation == "PrContext" and (variables["issueOwner"], variables["issueName"], variables["issue"]) == (
        "acme", "roadmap", 5)


def test_tracking_issue_in_an_unlisted_repository_is_not_read(repo, bot_cli):
    """The PR's author chooses the tracking issue's repository: without a setting it does not count."""
    repo.add_issue("evil/repo", ISSUE, number=1, author="mallory")
    pr = repo.add_pull(REPO, BODY.replace("#1", "evil/repo#1"), [EXPERIMENTAL_FILE], author="mallory")
    assert check(bot_cli, pr).exit_code == 1
    assert "`evil/repo#1` is in another repository" in bot_comments(repo, pr)[0]["body"]
    assert all(not variables["withIssue"] for op, variables in repo.graphql_log if op == "PrContext")


def test_permissions_are_read_on_this_repository_not_the_tracking_issues(repo, bot_cli):
    """An admin of the tracking issue's repository who is nobody here cannot extend a deadline."""
    repo.add_collaborator("evil/repo", "mallory", "admin")
    body = ISSUE.replace("2026-11-20", "2026-12-10").replace("@octocat", "@mallory")
    repo.add_issue("evil/repo", body, number=1, author="mallory")
    repo.add_comment("evil/repo", 1, "/experimental extend 4 trust me", "mallory")
    pr = repo.add_pull(REPO, BODY.replace("#1", "evil/repo#1"), [EXPERIMENTAL_FILE], author="mallory")
    assert check(bot_cli, pr, "--tracking-repo", "evil/repo").exit_code == 1
    assert "no maintainer extension covers it" in bot_comments(repo, pr)[0]["body"]
    repo.add_comment("evil/repo", 1, "/experimental extend 4 CUTLASS 4.1", "maintainer")  # a maintainer here
    assert check(bot_cli, pr, "--tracking-repo", "evil/repo").exit_code == 0


def test_owner_must_be_vouched_for(repo, bot_cli):
    """Naming somebody else as Owner needs the issue's author to be them, an assignee, the PR's author,
    or a maintainer's confirmation; a confirmation from anyone else does not count."""
    repo.add_user("carol")
    repo.repo(REPO).issues[1]["body"] = ISSUE.replace("@octocat", "@carol")  # written by octocat
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE], author="dave")
    assert check(bot_cli, pr).exit_code == 1
    body = bot_comments(repo, pr)[0]["body"]
    assert "Owner `carol` is unconfirmed" in body and "Owner: `carol` (unconfirmed)" in body
    repo.add_comment(REPO, 1, "/experimental owner @carol", "outsider")
    assert check(bot_cli, pr).exit_code == 1
    repo.repo(REPO).issues[1]["assignees"] = [repo._user("carol")]
    assert check(bot_cli, pr).exit_code == 0
    repo.repo(REPO).issues[1]["assignees"] = []
    repo.add_comment(REPO, 1, "/experimental owner @carol", "maintainer")
    assert check(bot_cli, pr).exit_code == 0
    pr2 = repo.add_pull(REPO, BODY.replace("#1", "#1 "), [EXPERIMENTAL_FILE], author="carol")
    repo.repo(REPO).comments[1].clear()
    assert check(bot_cli, pr2).exit_code == 0  # the PR's author names themselves


def test_the_bots_own_comment_is_recognised_through_graphql(repo, bot_cli):
    """GraphQL names the Actions bot `github-actions` (a Bot), REST `github-actions[bot]`: the sticky
    comment is still edited in place, never re-created and deleted, and follows the verdict."""
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    repo.add_comment(REPO, pr, "Nice", "outsider")  # the thread has comments: read through GraphQL
    assert check(bot_cli, pr).exit_code == 0
    [first] = bot_comments(repo, pr)
    assert first["id"] > 2**31 and first["user"]["type"] == "Bot"
    repo.repo(REPO).issues[1]["state"] = "closed"
    repo.requests.clear()
    assert check(bot_cli, pr).exit_code == 1
    [now] = bot_comments(repo, pr)
    assert now["id"] == first["id"] and "**Result:** 1 problem(s)" in now["body"]
    assert repo.count("POST", r"/comments$") == 0 and repo.count("DELETE") == 0
    assert repo.count("PATCH", rf"/comments/{first['id']}$") == 1
    repo.requests.clear()
    assert check(bot_cli, pr).exit_code == 1
    assert repo.writes() == []  # unchanged: no write at all


@pytest.mark.parametrize("configured", [False, True], ids=["login-learnt", "login-configured"])
def test_personal_access_token_identity(repo, bot_cli, configured):
    """With a PAT the bot is an ordinary user, whose login GET /user answers."""
    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    repo.add_comment(REPO, pr, PR_MARKER + "\npasted by someone", "outsider")
    env = {"BOT_LOGIN": repo.pat_login} if configured else {}
    assert check(bot_cli, pr, token=repo.pat_token, env=env).exit_code == 0
    assert check(bot_cli, pr, token=repo.pat_token, env=env).exit_code == 0
    assert len([c for c in repo.comments_by(REPO, pr, repo.pat_login) if c["body"].startswith(PR_MARKER)]) == 1
    assert repo.count("GET", r"^/user$") == (0 if configured else 1)


def test_a_flooded_thread_is_read_within_a_page_cap(repo, bot_cli):
    """Anyone can fill a thread with comments: a run reads a bounded number of pages of it."""
    from policy_checks.bot.comments import MAX_COMMENT_PAGES

    pr = repo.add_pull(REPO, BODY, [EXPERIMENTAL_FILE])
    for i in range(MAX_COMMENT_PAGES * 100 + 250):
        repo.add_comment(REPO, pr, f"spam {i}", "outsider")
    for _ in range(2):
        repo.requests.clear()
        result = check(bot_cli, pr)
        assert result.exit_code == 0
        assert repo.count("GET", rf"/issues/{pr}/comments$") == MAX_COMMENT_PAGES + 1  # 100 a page, one more to tell
        assert "its comment is left alone" in result.output
    assert bot_comments(repo, pr) == []  # never a comment per run that the next run cannot find
    assert status_of(repo, pr)["state"] == "success"


def test_experimental_paths_are_the_checkers_definition():
    from policy_checks.model import config
    from policy_checks.bot import pr_check

    assert pr_check.is_experimental_path is config.is_experimental_path  # FlashInfer's default layout
    assert pr_check.is_experimental_path("flashinfer/experimental/splitk/kernel.py")
    assert pr_check.is_experimental_path("tests/experimental/splitk/test_splitk.py")
    assert not pr_check.is_experimental_path("flashinfer/experimental_utils.py")
    assert not pr_check.is_experimental_path("flashinfer/gemm.py")


# ----- the baseline (policy-check-baseline.json) ------------------------------------------

BASELINE = "policy-check-baseline.json"
MOE = ("EXP001", "flashinfer.mega_moe_v3", "<module>", "flashinfer.experimental.mega_moe_v3.runtime")
B12X = ("EXP009", "flashinfer/experimental/b12x/__init__.py", "", "b12x: FEATURE.toml")
DEBT_HEADING = "**Baseline debt added: a maintainer must approve**"
POLICY_HEADING = "**Policy weakened: a maintainer must approve**"


def entry(rule: str, module: str, scope: str, subject: str, count: int = 1) -> str:
    return json.dumps({"rule": rule, "module": module, "scope": scope, "subject": subject, "count": count})


def baseline_text(counts: dict | None) -> str | None:
    """The file as ``policy-check baseline`` writes it (None: no file)."""
    if counts is None:
        return None
    from policy_checks.engine.baseline import Fingerprint, dumps

    return dumps({Fingerprint(*key): n for key, n in counts.items()})


def baseline_change(g, base: dict | None, head: dict | None, status: str | None = None) -> tuple:
    """The listing entry of the baseline changed from ``base`` to ``head``: its real unified diff."""
    import difflib

    old, new = (baseline_text(c) or "" for c in (base, head))
    patch = "\n".join(list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=3))[2:])
    return BASELINE, patch, status or ("added" if base is None else "removed" if head is None else "modified")


def set_baseline(g, pr: int, base: dict | None, head: dict | None) -> None:
    g.set_contents(REPO, pr, base={BASELINE: baseline_text(base)} if base is not None else {},
                   head={BASELINE: baseline_text(head)})


def digest(base: dict | None, head: dict | None, exists=lambda module: True) -> str:
    """What a maintainer names to approve the debt of a baseline change (as the bot's comment shows it)."""
    change = baseline_texts_change(baseline_text(base), baseline_text(head), exists)
    return pw.set_digest(pw.approval_keys(pw.baseline_weakenings(change, "")))


def baseline_pull(g, body, base, head, *others, status=None) -> int:
    pr = g.add_pull(REPO, body, [*others, baseline_change(g, base, head, status)])
    set_baseline(g, pr, base, head)
    return pr


def test_baseline_debt_added_fails_until_a_maintainer_approves(repo, bot_cli):
    pr = baseline_pull(repo, BODY, {B12X: 1}, {B12X: 1, MOE: 1, (*B12X[:3], "x"): 3}, EXPERIMENTAL_FILE)
    assert check(bot_cli, pr).exit_code == 1  # debt is a weakening: the status waits for a maintainer
    assert status_of(repo, pr)["state"] == "failure"
    assert "this PR weakens the policy (2 changes not approved)" in status_of(repo, pr)["description"]
    body = bot_comments(repo, pr)[0]["body"]
    assert DEBT_HEADING in body and POLICY_HEADING in body
    assert "- the baseline changes below (2 items)" in body
    assert ("- `EXP001` in `flashinfer.mega_moe_v3`, scope `<module>`: `flashinfer.experimental.mega_moe_v3.runtime`"
            in body)
    assert "- `EXP009` in `flashinfer/experimental/b12x/__init__.py`: `x` (3 findings)" in body
    assert "pays off" not in body
    repo.add_comment(REPO, pr, f"/experimental-track approve-policy {digest({B12X: 1}, {B12X: 1, MOE: 1, (*B12X[:3], 'x'): 3})}",
                     "maintainer")
    assert check(bot_cli, pr).exit_code == 0
    assert status_of(repo, pr)["state"] == "success"
    assert "**Policy weakened: approved by `@\u200dmaintainer`**" in bot_comments(repo, pr)[0]["body"]


def test_a_plain_pr_that_changes_the_baseline_gets_a_comment(repo, bot_cli):
    pr = baseline_pull(repo, "Refactor.", {B12X: 1}, {B12X: 1, MOE: 1}, ("flashinfer/gemm.py", "+x"))
    assert check(bot_cli, pr).exit_code == 1
    assert status_of(repo, pr)["description"].startswith("this PR weakens the policy (1 change not approved)")
    [comment] = bot_comments(repo, pr)
    assert DEBT_HEADING in comment["body"] and "`flashinfer.mega_moe_v3`" in comment["body"]
    assert "Experimental files" not in comment["body"]
    repo.requests.clear()
    assert check(bot_cli, pr).exit_code == 1
    assert repo.writes() == []  # unchanged: nothing written again


def test_paying_off_baseline_debt_is_thanked_in_one_line(repo, bot_cli):
    pr = baseline_pull(repo, "Fix the MoE imports.", {MOE: 1, (*B12X[:3], "x"): 3, B12X: 1},
                       {(*B12X[:3], "x"): 1, B12X: 1}, ("flashinfer/moe.py", "-x"))
    assert check(bot_cli, pr).exit_code == 0
    assert status_of(repo, pr)["state"] == "success"
    body = bot_comments(repo, pr)[0]["body"]
    assert "\nThis PR pays off 2 baseline entries (3 findings): thank you.\n" in body
    assert DEBT_HEADING not in body and POLICY_HEADING not in body and "`EXP001`" not in body


def test_debt_added_and_paid_in_one_pr(repo, bot_cli):
    pr = baseline_pull(repo, None, {B12X: 1}, {MOE: 1})
    assert check(bot_cli, pr).exit_code == 1
    body = bot_comments(repo, pr)[0]["body"]
    assert DEBT_HEADING in body and "It also pays off 1 baseline entry." in body and "thank you" not in body


def test_a_renamed_module_is_no_debt(repo, bot_cli):
    moved = (MOE[0], "flashinfer.mega_moe_v4", *MOE[2:])
    pr = baseline_pull(repo, "Rename.", {MOE: 1, B12X: 1}, {moved: 1, B12X: 1},
                       ("flashinfer/mega_moe_v4.py", "+x", "renamed", "flashinfer/mega_moe_v3.py"))
    assert check(bot_cli, pr).exit_code == 0
    assert bot_comments(repo, pr) == []  # nothing worth a comment: only the status
    pr = baseline_pull(repo, BODY, {MOE: 1, B12X: 1}, {moved: 1, B12X: 1}, EXPERIMENTAL_FILE,
                       ("flashinfer/mega_moe_v4.py", "+x", "renamed", "flashinfer/mega_moe_v3.py"))
    assert check(bot_cli, pr).exit_code == 0
    body = bot_comments(repo, pr)[0]["body"]
    assert "1 baseline entry moved to another module (a rename): neither added nor paid off." in body
    assert DEBT_HEADING not in body and "pays off" not in body and POLICY_HEADING not in body


def test_a_new_baseline_file_is_the_initial_adoption(repo, bot_cli):
    entries = {MOE: 1, B12X: 1, **{("EXP002", f"flashinfer.m{i}", "", "s"): 1 for i in range(40)}}
    pr = baseline_pull(repo, "Adopt the baseline.", None, entries)
    assert check(bot_cli, pr).exit_code == 1
    body = bot_comments(repo, pr)[0]["body"]
    assert DEBT_HEADING in body
    assert f"This PR adds `{BASELINE}` (initial adoption): 42 baseline entries accepted as debt." in body
    assert "- `EXP001` in `flashinfer.mega_moe_v3`" in body and "- … and 12 more" in body  # bounded
    assert "cannot read" not in body  # the file's frame is not an entry
    repo.add_comment(REPO, pr, f"/experimental-track approve-policy {digest(None, entries)}", "maintainer")
    assert check(bot_cli, pr).exit_code == 0  # a maintainer accepts the initial debt


def test_a_baseline_too_large_to_read_fails_closed(repo, bot_cli):
    """GitHub sends a blob's text cut short above 512,000 bytes: the bot cannot judge what it does not read."""
    entries = {("EXP002", f"flashinfer.m{i}", "", "s" * 100): 1 for i in range(4000)}
    pr = baseline_pull(repo, "Regenerate.", {MOE: 1}, entries)
    assert len(baseline_text(entries)) > 512_000
    assert check(bot_cli, pr).exit_code == 1
    assert status_of(repo, pr)["state"] == "failure"  # fail closed
    body = bot_comments(repo, pr)[0]["body"]
    assert f"This PR changes `{BASELINE}`, but the bot could not read it whole" in body
    assert "too large for GitHub to send whole" in body
    assert DEBT_HEADING not in body


def test_a_baseline_line_the_bot_cannot_read(repo, bot_cli):
    bad = '{"rule": "EXP001", "module": "@everyone", "scope": "", "subject": "s", "count": 0}'
    pr = baseline_pull(repo, None, {B12X: 1}, {B12X: 1, MOE: 1}, ("docs/x.rst", "+x"))
    head = baseline_text({B12X: 1, MOE: 1}).replace("  ]", f"    {bad}\n    not json at all\n  ]")
    repo.set_contents(REPO, pr, head={BASELINE: head})
    assert check(bot_cli, pr).exit_code == 1
    body = bot_comments(repo, pr)[0]["body"]
    assert DEBT_HEADING in body and "- `EXP001` in `flashinfer.mega_moe_v3`" in body
    assert "- a baseline line the bot cannot read: `not json at all`" in body
    assert '- a baseline line the bot cannot read: `{"rule": "EXP001", "module": "@\u200deveryone"' in body
    assert "- the checker would refuse the file at the head commit: `it is not JSON" in body


def test_only_the_baseline_at_the_root_counts(repo, bot_cli):
    pr = repo.add_pull(REPO, None, [(f"examples/{BASELINE}", "+x")])
    repo.set_contents(REPO, pr, head={f"examples/{BASELINE}": baseline_text({MOE: 1})})
    assert check(bot_cli, pr).exit_code == 0
    assert bot_comments(repo, pr) == []


# ----- routes 6 and 7 of the policy-integrity threat model, end to end -----------------------

CORE_BEFORE = "from .api_logging import flashinfer_api\n\n\n@flashinfer_api\ndef rmsnorm(x):\n    return x\n"


@pytest.mark.parametrize("spelling", [
    "from . import api_logging\n\n\n@api_logging.flashinfer_experimental_api\ndef fancy(x):\n    return x\n",
    "from .api_logging import flashinfer_experimental_api\n\n\n@ flashinfer_experimental_api\ndef fancy(x):\n    return x\n",
    "from .api_logging import flashinfer_experimental_api\n\n\n@(flashinfer_experimental_api)\ndef fancy(x):\n    return x\n",
    "from .api_logging import flashinfer_experimental_api as fx\n\n\n@fx(trace=None)\ndef fancy(x):\n    return x\n",
])
def test_an_undeclared_experimental_api_fails_however_its_decorator_is_spelt(repo, bot_cli, spelling):
    """Route 7: the bot reads the head's code, so no spelling of the marker passes unseen."""
    head = CORE_BEFORE + "\n\n" + spelling
    pr = repo.add_pull(REPO, "Add fancy.", [("flashinfer/norm.py", "@@ -6,0 +7,9 @@\n+" + "\n+".join(spelling.splitlines()))])
    repo.set_contents(REPO, pr, base={"flashinfer/norm.py": CORE_BEFORE}, head={"flashinfer/norm.py": head})
    assert check(bot_cli, pr).exit_code == 1
    assert status_of(repo, pr)["state"] == "failure"
    assert "does not declare it" in status_of(repo, pr)["description"]


def test_a_faked_graduation_is_no_graduation_and_its_new_backend_needs_a_declaration(repo, bot_cli):
    """Route 6: the record deleted, a shim marker bound beside a brand-new backend, and a
    decorator of another feature 're-spelt' with a docstring line that looks like a swap."""
    directory = "flashinfer/experimental/splitk_gemm"
    record = 'kind = "backend"\nowner = "octocat"\ntracking_issue = 1\nadmitted = 2026-09-28\n'
    shim = '__graduated_to__ = "flashinfer.splitk"\nfrom flashinfer.splitk import *  # noqa: F401,F403\n'
    backend = ("from flashinfer.utils import experimental_backend\n\n\n"
               "@experimental_backend\ndef sneaky_check(a, b, backend=\"auto\"):\n    return True\n")
    swap_before = ("from .api_logging import flashinfer_experimental_api\n\n\n"
                   "@flashinfer_experimental_api(feature=\"gated_rmsnorm\")\ndef gated_rmsnorm(x):\n    return x\n")
    swap_after = ("from .api_logging import flashinfer_experimental_api\n\n\n"
                  "@(flashinfer_experimental_api)(feature=\"gated_rmsnorm\")\ndef gated_rmsnorm(x):\n"
                  "    \"\"\"Gated RMSNorm.\n\n    @flashinfer_api\n    \"\"\"\n    return x\n")
    files = [(f"{directory}/FEATURE.toml", "@@ -1,4 +0,0 @@\n-" + "\n-".join(record.splitlines()), "removed"),
             (f"{directory}/__init__.py", "@@ -0,0 +1,2 @@\n+" + "\n+".join(shim.splitlines()), "modified"),
             (f"{directory}/sneaky.py", "@@ -0,0 +1,6 @@\n+" + "\n+".join(backend.splitlines()), "added"),
             ("flashinfer/norm.py", "@@ -4 +4,5 @@\n-@flashinfer_experimental_api(feature=\"gated_rmsnorm\")\n"
                                    "+@(flashinfer_experimental_api)(feature=\"gated_rmsnorm\")\n+    \"\"\"Gated RMSNorm.\n"
                                    "+\n+    @flashinfer_api\n+    \"\"\"", "modified")]
    pr = repo.add_pull(REPO, "Graduate splitk_gemm.", files)
    repo.set_contents(REPO, pr,
                      base={f"{directory}/FEATURE.toml": record, f"{directory}/__init__.py": "",
                            f"{directory}/kernel.py": "def run():\n    pass\n", "flashinfer/norm.py": swap_before},
                      head={f"{directory}/FEATURE.toml": None, f"{directory}/__init__.py": shim,
                            f"{directory}/sneaky.py": backend, "flashinfer/norm.py": swap_after})
    assert check(bot_cli, pr).exit_code == 1
    status = status_of(repo, pr)
    assert status["state"] == "failure" and "does not declare it" in status["description"]
    assert "Graduation PR" not in status["description"]
    body = bot_comments(repo, pr)[0]["body"]
    assert "Graduation checklist" not in body and "sneaky.py" in body  # the new backend is named
