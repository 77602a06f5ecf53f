"""Issue 25's routes past the bot (12 to 14), through the fake GitHub: each hostile PR or comment below
used to end green, and each sits beside a harmless twin that stays green.

* 12a: a marker aliased in one module of the PR and imported under that alias in another is the marker.
* 12b: a symbolic link is a link: never read as the Python it points to, and inside the package or the
  tests it fails the check.
* 12c: a workflow that can post a commit status (under a name built at run time too) is a policy edit.
* 13: approvals are read as GitHub's CommonMark renders them, the digest is the whole token, and an
  approval holds only while its comment is there unedited and its author may still write.
* 14: removing a live feature's record while its code stays fails, declared or not.
"""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_checks.bot.aliases import AliasTable
from policy_checks.bot.parsers import parse_policy_approvals


def _fake_graphql():
    return sys.modules["bot_fake_graphql"]  # loaded by conftest.py under this name

from . import test_bot_policy_weakening as helpers  # its PR helpers and the `repo` fixture

REPO, IGNORE, pull, check, status_of, comment_of = (helpers.REPO, helpers.IGNORE, helpers.pull, helpers.check,
                                                   helpers.status_of, helpers.comment_of)
assert_flagged, approve_command = helpers.assert_flagged, helpers.approve_command
repo = helpers.repo  # the fixture: a repository with a maintainer, a reader and a writer
DIGEST = "0123456789abcdef"
COMMAND = f"/experimental-track approve-policy {DIGEST}"


# ----- 13: the command as CommonMark reads it -------------------------------------------------------

@pytest.mark.parametrize("text", [
    f"Looks fine.\n\n    {COMMAND}\n",  # an indented code block
    f"- ```\n  {COMMAND}\n  ```\n",  # a fence opened on a list item's line
    f"> the bot said\n{COMMAND}\n",  # a lazy continuation line of the quote
    f"<pre>\n\n{COMMAND}\n</pre>\n",  # an HTML block, blank line and all
    f"<!--\n\n{COMMAND}\n-->\n",  # a comment
    f"{COMMAND}\nand more words\n",  # the paragraph is more than the command
    f"- {COMMAND}\n",  # a list item
], ids=["indented", "fence-in-list", "lazy-quote", "pre", "html-comment", "not-alone", "list-item"])
def test_a_command_github_shows_as_something_else_is_none(text):
    assert parse_policy_approvals(text) == []


@pytest.mark.parametrize("text", [COMMAND, f"Reviewed.\n\n{COMMAND}\n\nThanks!", f"  {COMMAND}  \n",
                                  f"## Approved\n{COMMAND}\n"], ids=["alone", "own-paragraph", "blanks", "heading"])
def test_a_command_in_a_paragraph_of_its_own_counts(text):
    assert parse_policy_approvals(text) == [DIGEST]


COMMENT_PIECES = [COMMAND, "\n", "\n\n", "> ", "    ", "- ", "1. ", "```", "~~~", "<pre>", "</pre>", "<!--", "-->",
                  "<div>", "</div>", "text", "\t", "#", "===", "---", "`", "[a]: b", "*", "approve-policy", DIGEST, " "]
comment_text = st.one_of(st.text(max_size=300), st.lists(st.sampled_from(COMMENT_PIECES), max_size=40).map("".join))


@settings(max_examples=300, deadline=None)
@given(comment_text)
def test_any_comment_is_read_without_an_exception_and_quoted_or_code_text_never_counts(text):
    for digest in parse_policy_approvals(text):
        assert digest == digest.lower() and not any(c.isspace() for c in digest)
    quoted = "\n".join("> " + line for line in text.split("\n"))
    assert parse_policy_approvals(quoted) == []
    fenced = "~~~~~~~~~~\n" + text.replace("~", "") + "\n~~~~~~~~~~\n"
    assert parse_policy_approvals(fenced) == []


def test_the_digest_is_the_whole_token():
    assert parse_policy_approvals(COMMAND + "0") == [DIGEST + "0"]
    assert parse_policy_approvals(COMMAND + "xyz") == [DIGEST + "xyz"]
    assert parse_policy_approvals(COMMAND + " and more") == []
    assert parse_policy_approvals("/experimental-track approve-policy") == [""]


def test_a_digest_followed_by_more_text_does_not_approve(repo, bot_cli):
    pr = pull(repo, {"pyproject.toml": IGNORE})
    command = approve_command(assert_flagged(repo, bot_cli, pr))
    repo.add_comment(REPO, pr, command + "-but-not-really", "maintainer")  # read up to the first non-hex: approved
    assert_flagged(repo, bot_cli, pr, "which is not the set of policy changes shown")
    repo.add_comment(REPO, pr, command, "maintainer")  # the twin: the command as shown
    assert check(bot_cli, pr).exit_code == 0


@pytest.mark.parametrize("wrap", [lambda c: f"    {c}", lambda c: f"- ```\n  {c}\n  ```",
                                  lambda c: f"> quoted\n{c}", lambda c: f"<pre>\n{c}\n</pre>"],
                         ids=["indented", "fence-in-list", "lazy-quote", "pre"])
def test_a_command_shown_as_code_or_quote_does_not_approve(repo, bot_cli, wrap):
    pr = pull(repo, {"pyproject.toml": IGNORE})
    command = approve_command(assert_flagged(repo, bot_cli, pr))
    repo.add_comment(REPO, pr, wrap(command), "maintainer")
    assert_flagged(repo, bot_cli, pr)


# ----- 13: an approval holds while its comment and its author's access do ---------------------------

def _approved(repo, bot_cli):
    pr = pull(repo, {"pyproject.toml": IGNORE})
    command = approve_command(assert_flagged(repo, bot_cli, pr))
    comment = repo.add_comment(REPO, pr, command, "maintainer")
    assert check(bot_cli, pr).exit_code == 0 and status_of(repo, pr)["state"] == "success"
    return pr, comment


def test_an_approver_who_lost_write_access_and_deleted_the_comment_approves_nothing(repo, bot_cli):
    pr, comment = _approved(repo, bot_cli)
    repo.repo(REPO).collaborators["maintainer"] = "read"
    repo.delete_comment_as_user(REPO, comment)
    assert_flagged(repo, bot_cli, pr, "the approval by `@\u200dmaintainer` no longer counts")


def test_a_deleted_approval_approves_nothing(repo, bot_cli):
    pr, comment = _approved(repo, bot_cli)
    repo.delete_comment_as_user(REPO, comment)
    assert_flagged(repo, bot_cli, pr, "no longer counts: the comment that approved it was deleted or edited")


def test_an_approver_who_lost_write_access_approves_nothing(repo, bot_cli):
    pr, _ = _approved(repo, bot_cli)
    repo.repo(REPO).collaborators["maintainer"] = "read"
    assert_flagged(repo, bot_cli, pr, "no longer counts: they no longer have write access")


def test_an_edited_approval_approves_nothing(repo, bot_cli):
    pr, comment = _approved(repo, bot_cli)
    repo.edit_comment_as_user(comment, comment["body"] + "\n\nactually, wait")
    assert_flagged(repo, bot_cli, pr, "its comment was edited after it was posted")


def test_an_edited_approval_in_a_long_thread_read_through_rest_approves_nothing(repo, bot_cli):
    """Past 100 comments the thread is read through REST, where an edit shows as ``updated_at``."""
    pr, comment = _approved(repo, bot_cli)
    for n in range(100):
        repo.add_comment(REPO, pr, f"chatter {n}", "reader")
    assert check(bot_cli, pr).exit_code == 0  # untouched, the approval holds on the REST path too
    repo.edit_comment_as_user(comment, comment["body"] + " ")
    assert check(bot_cli, pr).exit_code == 1
    assert status_of(repo, pr)["state"] == "failure"


def test_an_approval_left_alone_keeps_holding_across_runs_and_pushes(repo, bot_cli):
    pr, _ = _approved(repo, bot_cli)
    repo.add_comment(REPO, pr, "unrelated chatter", "reader")
    repo.repo(REPO).pulls[pr]["head"]["sha"] = "beef" * 10
    assert check(bot_cli, pr).exit_code == 0
    assert status_of(repo, pr)["state"] == "success"
    assert "approved by `@\u200dmaintainer`" in comment_of(repo, pr)


# ----- 12c: a workflow that can post statuses is a policy edit, whatever it names them ----------------

STATUS_STEP = """      - run: |
          NAME="experimental-$(echo track)"
          gh api "repos/$GITHUB_REPOSITORY/statuses/$SHA" -f state=success -f context="$NAME"
"""
QUIET_JOB = """jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: ruff check .
"""


@pytest.mark.parametrize("text, why", [
    ("on: pull_request_target\npermissions:\n  statuses: write\n" + QUIET_JOB + STATUS_STEP, "`statuses: write`"),
    ("on: pull_request_target\npermissions: write-all\n" + QUIET_JOB, "`write-all` permissions"),
    ("on: pull_request_target\n" + QUIET_JOB, "no top-level `permissions:`"),
    ("on: pull_request\npermissions: {}\n" + QUIET_JOB + STATUS_STEP, "it mentions `statuses`"),
    ("on: pull_request\npermissions: {}\n" + QUIET_JOB + "      - uses: x/post-check@v1\n        with:\n"
     "          token: ${{ secrets.BOT_PAT }}\n", "it mentions `secrets`"),
    ("on: pull_request\npermissions:\n  checks: write\n" + QUIET_JOB, "`checks: write`"),
], ids=["statuses-write", "write-all", "default-token", "statuses-api", "other-token", "checks-write"])
def test_a_new_workflow_that_can_post_statuses_is_flagged(repo, bot_cli, text, why):
    pr = pull(repo, {".github/workflows/lint.yml": text})
    assert_flagged(repo, bot_cli, pr, "`.github/workflows/lint.yml` is added: it can post commit statuses", why)


def test_a_new_read_only_workflow_is_not_flagged(repo, bot_cli):
    text = ("# Lint: no statuses, no secrets.\non: pull_request\npermissions:\n  contents: read\n" + QUIET_JOB
            + "      - run: echo ${{ secrets.GITHUB_TOKEN != '' }}\n")
    pr = pull(repo, {".github/workflows/lint.yml": text})
    helpers.assert_green(repo, bot_cli, pr)


# ----- 14: a live feature's record is not deleted while its code stays ---------------------------------

TRACKING = """### Owner

@octocat

### Use case

Split-K GEMM for skinny shapes.

### Why experimental

Numerics still being validated.

### Graduation plan

Target release: 0.8.0
Target date: 2026-11-20
"""
SPLITK = "flashinfer/experimental/splitk"
SPLITK_RECORD = """kind = "backend"
owner = "octocat"
tracking_issue = 1
admitted = 2026-11-02
target_release = "0.8.0"
target_date = 2026-11-20
apis = []
backends = ["mm_bf16:splitk"]
auto_routing = false
"""
FEATURES = {
    f"{SPLITK}/FEATURE.toml": SPLITK_RECORD,
    f"{SPLITK}/__init__.py": "",
    f"{SPLITK}/kernel.py": "from flashinfer.api_logging import experimental_backend\n\n\n"
                           "@experimental_backend\ndef splitk(a, b):\n    return a\n",
    "flashinfer/experimental/moe/kernel.py": "from flashinfer.api_logging import flashinfer_experimental_api\n\n\n"
                                             "@flashinfer_experimental_api\ndef moe(x):\n    return x\n",
}
BACKEND = ("from flashinfer.api_logging import experimental_backend\n\n\n"
           "@experimental_backend\ndef splitk_wide(a, b):\n    return b\n")
RESPELT = ("from flashinfer.api_logging import flashinfer_experimental_api as fx\n\n\n"
           "@(fx)\ndef moe(x):\n    return x\n")
DECLARED = "## Experimental Track\n\n- [x] This PR adds or changes experimental-track code\n- Tracking issue: #1\n"


@pytest.fixture
def track(repo):
    repo.repo(REPO).files.update(FEATURES)
    repo.add_issue(REPO, TRACKING, author="octocat", number=1)
    return repo


@pytest.mark.parametrize("body", [DECLARED, "A change."], ids=["declared", "undeclared"])
def test_deleting_a_live_features_record_fails(track, bot_cli, body):
    pr = pull(track, {f"{SPLITK}/FEATURE.toml": None, f"{SPLITK}/backend_wide.py": BACKEND,
                      "flashinfer/experimental/moe/kernel.py": RESPELT}, body=body, author="octocat")
    result = check(bot_cli, pr)
    assert result.exit_code == 1, result.output
    assert status_of(track, pr)["state"] == "failure"
    assert (f"this PR removes the record `{SPLITK}/FEATURE.toml` of a live feature while its code stays"
            in comment_of(track, pr))


def test_the_same_pr_keeping_the_record_is_green(track, bot_cli):
    pr = pull(track, {f"{SPLITK}/backend_wide.py": BACKEND, "flashinfer/experimental/moe/kernel.py": RESPELT},
              body=DECLARED, author="octocat")
    result = check(bot_cli, pr)
    assert result.exit_code == 0, result.output
    assert "of a live feature" not in comment_of(track, pr)


def test_removing_a_feature_whole_is_not_a_live_record_removed(track, bot_cli):
    pr = pull(track, {path: None for path in FEATURES if path.startswith(SPLITK)}, body=DECLARED, author="octocat")
    result = check(bot_cli, pr)
    assert result.exit_code == 0, result.output
    assert "of a live feature" not in comment_of(track, pr)


# ----- 12a: decorators followed across the PR's modules ------------------------------------------------

def _aliased(marker: str) -> dict:
    return {"flashinfer/norm_helpers.py": f"from flashinfer.api_logging import {marker} as mark\n",
            "flashinfer/norm.py": "from .norm_helpers import mark\n\n\n@mark\ndef fancy(x):\n    return x\n"}


def test_an_experimental_decorator_aliased_in_another_module_needs_a_declaration(repo, bot_cli):
    pr = pull(repo, _aliased("flashinfer_experimental_api"))
    result = check(bot_cli, pr)
    assert result.exit_code == 1, result.output
    assert "does not declare it" in status_of(repo, pr)["description"]
    assert "`flashinfer/norm.py`" in comment_of(repo, pr)


def test_a_stable_decorator_aliased_in_another_module_is_no_experimental_code(repo, bot_cli):
    pr = pull(repo, _aliased("flashinfer_api"))
    result = check(bot_cli, pr)
    assert result.exit_code == 0, result.output
    assert status_of(repo, pr)["state"] == "success"


@pytest.mark.parametrize("marker, verdict", [("flashinfer_experimental_api", 1), ("flashinfer_api", 0)],
                         ids=["experimental", "stable-twin"])
def test_an_alias_in_a_module_the_pr_does_not_change_is_followed(repo, bot_cli, marker, verdict):
    """The alias was merged before (it marks nothing by itself); the PR only uses it."""
    aliased = _aliased(marker)
    repo.repo(REPO).files["flashinfer/norm_helpers.py"] = aliased.pop("flashinfer/norm_helpers.py")
    pr = pull(repo, aliased)
    repo.requests.clear()
    result = check(bot_cli, pr)
    assert result.exit_code == verdict, result.output
    assert len(repo.requests) <= 10  # the budget of docs/bot.rst: the module rides in one request more
    if verdict:
        assert "does not declare it" in status_of(repo, pr)["description"]


def test_aliases_pass_through_re_exports_packages_and_cycles():
    table = AliasTable({
        "pkg/__init__.py": "from .a import *\n",
        "pkg/a.py": "from flashinfer.api_logging import experimental_backend as eb\nfrom .b import x\n",
        "pkg/b.py": "from .a import eb as x\nfrom .a import x as eb\n",  # a cycle
        "pkg/c.py": "from pkg import eb\nimport pkg.b as bee\n",
        "other/d.py": "from ..pkg import eb\n",  # above the top: resolves to nothing
    })
    assert table.imported("pkg/c.py") == {"eb": frozenset({"experimental_backend"}),
                                          "x": frozenset({"experimental_backend"})}
    assert table.imported("pkg/b.py")["x"] == frozenset({"experimental_backend"})
    assert table.imported("other/d.py") == {}


def test_an_alias_chain_longer_than_the_bound_is_not_followed():
    chain = {f"p/m{i}.py": f"from .m{i - 1} import mark\n" for i in range(1, 30)}
    chain["p/m0.py"] = "from flashinfer.api_logging import flashinfer_experimental_api as mark\n"
    table = AliasTable(chain)
    assert "mark" in table.imported("p/m2.py") and "mark" not in table.imported("p/m29.py")


# ----- 12b: a link is a link ------------------------------------------------------------------------------

def test_a_symlinked_python_file_in_the_package_fails(repo, bot_cli):
    """``flashinfer/fast_norm.py -> experimental/moe/kernel.py``: the blob of a link is its target's path,
    which happens to parse as Python (a division) and marks nothing; the bot used to pass it."""
    link = _fake_graphql().Link("experimental/moe/kernel.py")
    pr = pull(repo, {"flashinfer/fast_norm.py": link})
    result = check(bot_cli, pr)
    assert result.exit_code == 1, result.output
    body = comment_of(repo, pr)
    assert "`flashinfer/fast_norm.py` is a symbolic link (git mode 120000) inside the checked package" in body
    assert "failure" == status_of(repo, pr)["state"]


def test_a_symlink_in_the_tests_fails_and_a_link_elsewhere_fails_closed(repo, bot_cli):
    Link = _fake_graphql().Link
    pr = pull(repo, {"tests/test_moe_again.py": Link("experimental/moe/test_moe.py")})
    assert check(bot_cli, pr).exit_code == 1
    assert "`tests/test_moe_again.py` is a symbolic link" in comment_of(repo, pr)
    pr = pull(repo, {"scripts/tool.py": Link("../flashinfer/gemm.py")})
    assert check(bot_cli, pr).exit_code == 1
    assert "symbolic link (git mode 120000), not a file" in comment_of(repo, pr)


def test_the_same_path_as_a_regular_file_is_green(repo, bot_cli):
    pr = pull(repo, {"flashinfer/fast_norm.py": "experimental/moe/kernel.py\n"})
    result = check(bot_cli, pr)
    assert result.exit_code == 0, result.output
    assert status_of(repo, pr)["state"] == "success"
