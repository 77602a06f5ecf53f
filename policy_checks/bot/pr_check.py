"""``policy-check bot pr``: check one pull request against the Experimental Track contract.

Request budget (at most 8 for a PR of up to 100 files). Reads: the PR, its files (100 per
page), the tracking issue (with its rendered HTML, whose user-mention links prove that an
@-mentioned Owner exists), the PR's comments only when it has any, and the tracking issue's
comments only when a late target date needs an extension. The Owner's user record is asked
for only when nothing already read proves the login. Writes, only when something changed:
the ``experimental`` label, the ``experimental-track`` commit status (whose answer names the
bot, so ``GET /user`` is rarely needed), and the one bot comment.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

import github
import github.Issue
import requests

from . import deadlines
from .client import BotError, call, describe_failure, fetched
from .comments import BotIdentity, keep_comment, list_comments, own_comments
from .extensions import Permissions, extended_weeks, read_extensions
from .markdown import bullet_list, code
from .parsers import TrackingRef, parse_pr_body, parse_tracking_issue
from .writes import FORBIDDEN, Writes

PR_MARKER = "<!-- experimental-track-bot:pr -->"
BOT_MARKER_PREFIX = "<!-- experimental-track-bot:"
STATUS_CONTEXT = "experimental-track"
EXPERIMENTAL_LABEL = "experimental"
EXPERIMENTAL_PREFIXES = ("flashinfer/experimental/", "tests/experimental/")
DECORATOR = "@flashinfer_experimental_api"
FULL_JSON = "application/vnd.github.full+json"  # the issue with ``body_html`` beside ``body``
# GitHub renders ``@login`` as this link only when the user exists.
_USER_MENTION_RE = re.compile(r'<a\b[^>]*\bclass="[^"]*\buser-mention\b[^"]*"[^>]*>@([A-Za-z0-9-]+)</a>')


@dataclass
class PrVerdict:
    """What the check found; ``problems`` non-empty means the status is a failure."""

    number: int
    head_sha: str
    declared: bool
    experimental_files: list[str] = field(default_factory=list)
    core_files: list[str] = field(default_factory=list)
    decorator_files: list[str] = field(default_factory=list)
    tracking_lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    label_requested: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def touches_experimental(self) -> bool:
        return bool(self.experimental_files or self.decorator_files)

    def status_description(self) -> str:
        """One line for the commit status (GitHub keeps at most 140 characters)."""
        if self.problems:
            text = self.problems[0].replace("`", "")
            if len(self.problems) > 1:
                text += f" (+{len(self.problems) - 1} more)"
        elif self.declared:
            text = "Experimental Track PR: declaration and tracking issue are complete"
        else:
            text = "Not an Experimental Track PR"
        return text if len(text) <= 140 else text[:139] + "…"


def is_experimental_path(path: str) -> bool:
    return path.startswith(EXPERIMENTAL_PREFIXES)


def adds_decorator(patch: str | None) -> bool:
    """Whether a unified diff adds a line using the experimental-API decorator."""
    return any(
        line.startswith("+") and not line.startswith("+++") and DECORATOR in line
        for line in (patch or "").splitlines()
    )


def _read_issue(gh, issue_repo, number: int):
    """The issue with its rendered HTML too: one request either way."""
    headers, data = gh.requester.requestJsonAndCheck(
        "GET", f"{issue_repo.url}/issues/{number}", headers={"Accept": FULL_JSON})
    return github.Issue.Issue(gh.requester, headers, data, completed=True)


def mentioned_users(body_html: str | None) -> set[str]:
    """Logins GitHub rendered as user-mention links, lower-cased: users that exist."""
    return {login.lower() for login in _USER_MENTION_RE.findall(body_html or "")}


def _examine_tracking_issue(gh, repo, repo_name: str, ref: TrackingRef, admission: dt.date,
                            known_users: set[str], verdict: PrVerdict) -> None:
    where = ref.render(repo_name)
    here = ref.repo is None or ref.repo.lower() == repo_name.lower()
    issue_repo = repo if here else gh.get_repo(ref.repo)
    try:
        issue = _read_issue(gh, issue_repo, ref.number)
    except github.UnknownObjectException:
        verdict.problems.append(f"the tracking issue {where} does not exist (or the bot cannot see it)")
        return
    except (github.GithubException, requests.RequestException) as exc:
        raise BotError(describe_failure(exc, f"read the tracking issue {where}")) from None
    if issue.pull_request is not None:
        verdict.problems.append(f"the tracking reference {where} is a pull request, not an issue")
        return
    if issue.state != "open":
        verdict.problems.append(f"the tracking issue {where} is closed")
    body = parse_tracking_issue(issue.body)
    verdict.problems.extend(body.problems)
    known_users |= {issue.user.login.lower()} | {a.login.lower() for a in issue.assignees}
    known_users |= mentioned_users(issue.raw_data.get("body_html"))
    extensions_weeks = 0
    if body.target_date is not None and body.target_date > deadlines.default_deadline(admission) and issue.comments:
        # Only now is the thread worth reading: a maintainer may have extended the deadline.
        comments = list_comments(issue, where)
        known_users |= {c.user.login.lower() for c in comments if c.user is not None}
        extensions_weeks = extended_weeks(read_extensions(comments, Permissions(issue_repo), BOT_MARKER_PREFIX))
    if body.owner is not None:
        if body.owner.lower() not in known_users and not _user_exists(gh, body.owner):
            verdict.problems.append(f"the tracking issue's Owner {code(body.owner)} is not a GitHub user")
        verdict.tracking_lines.append(f"Owner: {code(body.owner)}")
    if body.target_release:
        verdict.tracking_lines.append(f"Target release: {code(body.target_release)}")
    if body.target_date is not None:
        allowed = deadlines.default_deadline(admission) + dt.timedelta(weeks=extensions_weeks)
        if body.target_date > allowed:
            verdict.problems.append(
                f"the target date {body.target_date.isoformat()} is more than four weeks after admission "
                f"({admission.isoformat()}, the day the PR was opened) and no maintainer extension covers it"
            )
        if body.target_date < admission:
            verdict.problems.append(f"the target date {body.target_date.isoformat()} is before admission")
        after = (body.target_date - admission).days
        verdict.tracking_lines.append(f"Target date: {body.target_date.isoformat()} ({after} days after admission)")
    verdict.tracking_lines.insert(0, f"Tracking issue: {where} ({issue.state})")


def _user_exists(gh, login: str) -> bool:
    try:
        fetched(gh.get_user(login))
        return True
    except github.UnknownObjectException:
        return False
    except (github.GithubException, requests.RequestException) as exc:
        raise BotError(describe_failure(exc, f"look up the user {login}")) from None


def examine(gh, repo_name: str, number: int) -> tuple[PrVerdict, object, list]:
    """Read the PR and everything it points at; return the verdict, the PR and its comments."""
    repo = gh.get_repo(repo_name)
    pull = repo.get_pull(number)
    call(f"read pull request #{number} of {repo_name}", fetched, pull)
    files = call(f"list the files of #{number}", lambda: list(pull.get_files()))
    # The PR's comment count is free; an empty thread needs no listing.
    thread = repo.get_issue(number)  # lazy: no request
    comments = list_comments(thread, f"#{number}") if pull.comments else []
    declaration = parse_pr_body(pull.body)
    verdict = PrVerdict(number=number, head_sha=pull.head.sha, declared=declaration.ticked)
    for changed in files:
        (verdict.experimental_files if is_experimental_path(changed.filename) else verdict.core_files).append(changed.filename)
        if adds_decorator(changed.patch):
            verdict.decorator_files.append(changed.filename)
    if not declaration.ticked:
        if verdict.touches_experimental:
            verdict.problems.append(
                "this PR touches experimental code but does not declare it: tick the box in the "
                "`## Experimental Track` section and link the tracking issue"
            )
        return verdict, pull, comments
    verdict.problems.extend(declaration.problems)
    if declaration.tracking is None and not declaration.problems:
        verdict.problems.append(
            "the box is ticked but there is no `Tracking issue:` reference (#N, owner/repo#N or an issue URL)"
        )
    elif declaration.tracking is not None:
        admission = deadlines.utc_date(pull.created_at)
        # Logins proven to exist by what was already read: no user lookup for them.
        known = {pull.user.login.lower()} | {a.login.lower() for a in pull.assignees}
        known |= {c.user.login.lower() for c in comments if c.user is not None}
        _examine_tracking_issue(gh, repo, repo_name, declaration.tracking, admission, known, verdict)
    if not verdict.touches_experimental:
        verdict.notes.append(
            "the box is ticked, but this PR touches no experimental path and adds no "
            f"`{DECORATOR}`: untick it if the PR is not experimental"
        )
    return verdict, pull, comments


def render(verdict: PrVerdict) -> str:
    mark = "passed" if verdict.ok else f"{len(verdict.problems)} problem(s)"
    lines = [PR_MARKER, f"<!-- head: {verdict.head_sha} -->", "### Experimental Track check", "",
             f"**Result:** {mark}", ""]
    if verdict.tracking_lines:
        lines += bullet_list(verdict.tracking_lines) + [""]
    if verdict.problems:
        lines += ["**Problems**", ""] + bullet_list(verdict.problems) + [""]
    if verdict.notes:
        lines += ["**Notes**", ""] + bullet_list(verdict.notes) + [""]
    if verdict.declared or verdict.touches_experimental:
        lines += [f"**Experimental files** ({len(verdict.experimental_files)})", ""]
        lines += bullet_list([code(p, 200) for p in verdict.experimental_files]) + [""]
        if verdict.core_files:
            lines += [f"**Core files: these get normal core review** ({len(verdict.core_files)})", ""]
            lines += bullet_list([code(p, 200) for p in verdict.core_files]) + [""]
    if verdict.label_requested:
        lines += [f"The bot may not add labels here: a maintainer, please add the `{EXPERIMENTAL_LABEL}` label.", ""]
    return "\n".join(lines).rstrip() + "\n"


def run_pr_check(gh, repo_name: str, number: int, writes: Writes, identity: BotIdentity) -> PrVerdict:
    verdict, pull, comments = examine(gh, repo_name, number)
    where = f"#{number}"
    thread = gh.get_repo(repo_name).get_issue(number)  # lazy: no request

    labels = {label.name for label in pull.labels}
    needs_label = verdict.declared and verdict.touches_experimental and EXPERIMENTAL_LABEL not in labels
    if needs_label:
        writes.perform(f"add the label `{EXPERIMENTAL_LABEL}` to {where}", lambda: pull.add_to_labels(EXPERIMENTAL_LABEL))
        verdict.label_requested = writes.records[-1].outcome == FORBIDDEN

    body = render(verdict)
    marked = [c for c in comments if (c.body or "").startswith(PR_MARKER)]
    if not (verdict.declared or verdict.touches_experimental) and not own_comments(marked, PR_MARKER, identity):
        # No comment wanted and none to keep up to date: only the status, read before it is written.
        if not _status_is(gh, repo_name, verdict):
            _set_status(gh, repo_name, verdict, writes, identity)
        return verdict
    # The comment is written last: an unchanged comment means the status was set too. Only a
    # marked comment that already reads ``body`` needs the bot's login to tell whose it is.
    same = [c for c in marked if (c.body or "").rstrip() == body.rstrip()]
    if same and own_comments(same, PR_MARKER, identity):
        return verdict
    _set_status(gh, repo_name, verdict, writes, identity)
    keep_comment(thread, PR_MARKER, body, identity, writes, where, comments=comments)
    return verdict


def _status_payload(verdict: PrVerdict) -> dict:
    return {"state": "success" if verdict.ok else "failure", "context": STATUS_CONTEXT,
            "description": verdict.status_description()}


def _status_is(gh, repo_name: str, verdict: PrVerdict) -> bool:
    """Whether the head commit already carries this exact status (one read instead of a write)."""
    wanted = _status_payload(verdict)

    def latest():
        _, data = gh.requester.requestJsonAndCheck("GET", f"/repos/{repo_name}/commits/{verdict.head_sha}/statuses")
        for status in data:  # newest first
            if status.get("context") == STATUS_CONTEXT:
                return status
        return None

    current = call(f"read the statuses of {verdict.head_sha[:12]}", latest)
    return current is not None and all(current.get(k) == v for k, v in wanted.items())


def _set_status(gh, repo_name: str, verdict: PrVerdict, writes: Writes, identity: BotIdentity) -> None:
    """Write the status; its answer names the bot (``creator``), which saves asking ``GET /user``."""
    payload = _status_payload(verdict)
    answer = writes.perform(
        f"set the commit status `{STATUS_CONTEXT}` of {verdict.head_sha[:12]} to {payload['state']}: {payload['description']}",
        lambda: gh.requester.requestJsonAndCheck("POST", f"/repos/{repo_name}/statuses/{verdict.head_sha}", input=payload),
    )
    creator = answer[1].get("creator") if answer is not None and isinstance(answer[1], dict) else None
    if isinstance(creator, dict) and creator.get("login"):
        identity.learn(creator["login"])
