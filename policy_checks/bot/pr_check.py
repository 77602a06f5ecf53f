"""``policy-check bot pr``: check one pull request against the Experimental Track contract.

Request budget: at most 8 for a PR of up to 100 files. Reads: the PR, its files (100 per
page), and one GraphQL request for the PR's comments, the collaborators of this repository,
the tracking issue (its rendered body too, whose user-mention links prove that an
@-mentioned Owner exists) and the issue's comments. The Owner's user record is asked for
only when nothing already read proves the login. Writes, only when something changed: the
``experimental`` label, the ``experimental-track`` commit status (whose answer names the
bot, so ``GET /user`` is rarely needed), and the one bot comment.

Every PR's change to ``policy-check-baseline.json`` is read from the diff that comes with
the file listing (``baseline_diff``, no request): debt it adds is named in the comment for
a maintainer to approve, debt it pays off is thanked for. Neither changes the status.

A graduation PR (``graduation_pr``: a feature's FEATURE.toml removed and an
``@flashinfer_experimental_api`` swapped for ``@flashinfer_api`` in core code) is recognised
from the same listing, again with no request, and the comment shows the graduation
checklist with each step's state. Its changes under the graduating feature's directories
need no Experimental Track declaration, and a tracking issue it links is not held to the
admission rules (the feature is leaving the track, not entering it).

Whose word counts (see the threat model in docs/bot.rst): permissions are read on the
repository the bot serves, never on the tracking issue's repository, which the PR's
author chooses; a tracking issue in another repository counts only when the workflow
lists that repository; the Owner must be the issue's author, an assignee or the PR's
author, unless a maintainer confirms them on the tracking issue.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from itertools import islice

import github
import requests

from ..config import DEFAULT, is_experimental_path  # FlashInfer's default layout: the PR is of a FlashInfer checkout
from ..features import TrackingRef
from ..graduation import WINDOW_IN_WORDS
from . import deadlines, graduation_pr, graphql
from .baseline_diff import BASELINE_FILE, BaselineChange, BaselineEntry, baseline_change
from .client import BotError, call, describe_failure, fetched
from .comments import BotIdentity, keep_comment, list_comments, own_comments
from .extensions import Permissions, confirmed_owners, extended_weeks, read_extensions
from .markdown import bullet_list, code
from .parsers import mentioned_users, parse_pr_body, parse_tracking_issue
from .writes import FORBIDDEN, Writes

PR_MARKER = "<!-- experimental-track-bot:pr -->"
BOT_MARKER_PREFIX = "<!-- experimental-track-bot:"
STATUS_CONTEXT = "experimental-track"
EXPERIMENTAL_LABEL = "experimental"
DECORATOR = "@flashinfer_experimental_api"
MAX_FILE_PAGES = 30  # 3,000 files: all GitHub lists for a pull request


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
    baseline: BaselineChange | None = None  # the PR's change to policy-check-baseline.json, if any
    graduations: list[graduation_pr.Graduation] = field(default_factory=list)  # features this PR graduates
    checklist: list[str] = field(default_factory=list)  # the rendered "Graduation checklist" section

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def touches_experimental(self) -> bool:
        return bool(self.experimental_files or self.decorator_files)

    @property
    def needs_declaration(self) -> bool:
        """Whether the PR must declare itself: it touches experimental paths other than those of the features
        it graduates, or adds the experimental decorator."""
        if self.decorator_files:
            return True
        graduating = {g.feature for g in self.graduations}
        if not graduating:
            return bool(self.experimental_files)
        return any(_graduating_feature(path) not in graduating for path in self.experimental_files)

    @property
    def pure_graduation(self) -> bool:
        """A graduation PR that touches nothing else experimental: admission rules do not apply to it."""
        return bool(self.graduations) and not self.needs_declaration

    @property
    def wants_comment(self) -> bool:
        """Experimental PRs and PRs whose baseline change is worth a word get a comment; others only the status."""
        return (self.declared or self.touches_experimental or bool(self.graduations)
                or bool(self.baseline and self.baseline.worth_saying))

    def status_description(self) -> str:
        """One line for the commit status (GitHub keeps at most 140 characters)."""
        if self.problems:
            text = self.problems[0].replace("`", "")
            if len(self.problems) > 1:
                text += f" (+{len(self.problems) - 1} more)"
        elif self.graduations:
            text = "Graduation PR: the graduation checklist is in the bot's comment"
        elif self.declared:
            text = "Experimental Track PR: declaration and tracking issue are complete"
        else:
            text = "Not an Experimental Track PR"
        return text if len(text) <= 140 else text[:139] + "…"


def adds_decorator(patch: str | None) -> bool:
    """Whether a unified diff adds a line using the experimental-API decorator (linear in the patch)."""
    return any(sign == "+" and DECORATOR in text for sign, text in graduation_pr.changed_lines(patch))


def _graduating_feature(path: str) -> str | None:
    """The feature whose code or test directory ``path`` lies in."""
    return (graduation_pr.feature_under(path, DEFAULT.experimental_dir)
            or graduation_pr.feature_under(path, DEFAULT.experimental_tests))


@dataclass
class PrContext:
    """What one GraphQL request brings: the PR's comments, the tracking issue, collaborators."""

    comments: list
    issue: object | None = None  # None: no tracking reference, or the issue does not exist
    issue_comments: list | None = None  # None: more than one page, read through REST when needed
    collaborators: graphql.Collaborators = field(default_factory=graphql.Collaborators)  # of this repository


def read_context(gh, repo_name: str, pull, ref: TrackingRef | None) -> PrContext:
    """One request for everything the PR points at; none when there is nothing to read.

    ``ref`` is a tracking issue the caller has already admitted (this repository, or one
    the workflow lists).
    """
    if ref is None and not pull.comments:
        return PrContext(comments=[], collaborators=graphql.Collaborators(unavailable="not read: nothing needed them"))
    issue_repo = ref.repo if ref is not None and ref.repo else repo_name
    owner, name = repo_name.split("/")
    issue_owner, issue_name = issue_repo.split("/")
    data, errors = graphql.query(gh, graphql.PR_CONTEXT, {
        "owner": owner, "name": name, "pr": pull.number, "withIssue": ref is not None,
        "issueOwner": issue_owner, "issueName": issue_name, "issue": ref.number if ref else 0,
    }, f"read the comments and tracking issue of #{pull.number}")
    thread = (((data.get("thread") or {}).get("pullRequest") or {}).get("comments")) or {"totalCount": 0, "nodes": []}
    if len(thread["nodes"]) < thread["totalCount"]:  # more than a page: the REST listing pages through
        comments = list_comments(gh.get_repo(repo_name).get_issue(pull.number), f"#{pull.number}")
    else:
        comments = graphql.comment_objects(gh, repo_name, thread["nodes"])
    context = PrContext(comments=comments, collaborators=graphql.collaborators(data.get("thread"), errors, "thread"))
    if ref is None:
        return context
    tracking = data.get("tracking")
    node = (tracking or {}).get("issueOrPullRequest")
    if node is None:
        error = graphql.error_at(errors, "tracking", "issueOrPullRequest")
        if error is None or error.get("type") != "NOT_FOUND":
            why = (error or {}).get("message", "no answer")
            raise BotError(f"read the tracking issue {ref.render(repo_name)}: {why}")
        return context
    read = graphql.issue_object(gh, issue_repo, node)
    context.issue, context.issue_comments = read.issue, read.comments
    return context


def _examine_tracking_issue(gh, repo_name: str, pull, ref: TrackingRef, context: PrContext, admission: dt.date,
                            known_users: set[str], verdict: PrVerdict) -> None:
    where = code(ref.render(repo_name))
    issue = context.issue
    if issue is None:
        verdict.problems.append(f"the tracking issue {where} does not exist (or the bot cannot see it)")
        return
    if issue.pull_request is not None:
        verdict.problems.append(f"the tracking reference {where} is a pull request, not an issue")
        return
    if issue.state != "open":
        verdict.problems.append(f"the tracking issue {where} is closed")
    body = parse_tracking_issue(issue.body)
    verdict.problems.extend(body.problems)
    # Who may name the owner without a maintainer's word: the issue's author, its assignees
    # (assigning needs triage access) and the PR's author, naming themselves or each other.
    vouched = {a.login.lower() for a in issue.assignees} | {pull.user.login.lower()}
    if issue.user is not None:
        vouched.add(issue.user.login.lower())
    known_users |= vouched | mentioned_users(issue.raw_data.get("body_html"))
    levels = context.collaborators.levels
    known_users |= set(levels or ())
    complete = levels if levels is not None and context.collaborators.complete else None
    permissions = Permissions(gh.get_repo(repo_name), complete)  # lazy: no request
    comments: list | None = None

    def issue_comments() -> list:
        nonlocal comments
        if comments is None:
            comments = context.issue_comments
            if comments is None:
                comments = list_comments(issue, where) if issue.comments else []
            known_users.update(c.user.login.lower() for c in comments if c.user is not None)
        return comments

    extensions_weeks = 0
    if body.target_date is not None and body.target_date > deadlines.default_deadline(admission) and issue.comments:
        # A maintainer may have extended the deadline on the tracking issue.
        extensions_weeks = extended_weeks(read_extensions(issue_comments(), permissions, BOT_MARKER_PREFIX))
    if body.owner is not None:
        owner = body.owner.lower()
        confirmed = owner in vouched or (
            bool(issue.comments) and owner in confirmed_owners(issue_comments(), permissions, BOT_MARKER_PREFIX))
        if not confirmed:
            verdict.problems.append(
                f"the tracking issue's Owner {code(body.owner)} is unconfirmed: the owner must be the issue's "
                f"author, an assignee or the PR's author, or a maintainer confirms them with a comment "
                f"`/experimental owner @login` on the tracking issue")
        elif owner not in known_users and not _user_exists(gh, body.owner):
            verdict.problems.append(f"the tracking issue's Owner {code(body.owner)} is not a GitHub user")
        verdict.tracking_lines.append(f"Owner: {code(body.owner)}" + ("" if confirmed else " (unconfirmed)"))
    if body.target_release:
        verdict.tracking_lines.append(f"Target release: {code(body.target_release)}")
    if body.target_date is not None:
        allowed = deadlines.default_deadline(admission) + dt.timedelta(weeks=extensions_weeks)
        if body.target_date > allowed:
            verdict.problems.append(
                f"the target date {body.target_date.isoformat()} is more than {WINDOW_IN_WORDS} after admission "
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


def admitted_ref(ref: TrackingRef | None, repo_name: str, tracking_repos: frozenset[str]) -> tuple[TrackingRef | None, str]:
    """The tracking reference if its repository may hold tracking issues, else a problem.

    ``tracking_repos`` are other repositories (lower-cased ``owner/name``) the workflow lists.
    """
    if ref is None or ref.repo is None or ref.repo.lower() == repo_name.lower():
        return ref, ""
    if ref.repo.lower() in tracking_repos:
        return ref, ""
    return None, (f"the tracking issue {code(ref.render(repo_name))} is in another repository: only issues of "
                  f"{code(repo_name)} count, unless the workflow lists that repository (`--tracking-repo`)")


def examine(gh, repo_name: str, number: int,
            tracking_repos: frozenset[str] = frozenset()) -> tuple[PrVerdict, object, list]:
    """Read the PR and everything it points at; return the verdict, the PR and its comments."""
    pull = gh.get_repo(repo_name).get_pull(number)
    call(f"read pull request #{number} of {repo_name}", fetched, pull)
    files = call(f"list the files of #{number}", lambda: list(islice(pull.get_files(), MAX_FILE_PAGES * 100)))
    declaration = parse_pr_body(pull.body)
    ref, refused = admitted_ref(declaration.tracking, repo_name, tracking_repos)
    verdict = PrVerdict(number=number, head_sha=pull.head.sha, declared=declaration.ticked)
    for changed in files:
        (verdict.experimental_files if is_experimental_path(changed.filename) else verdict.core_files).append(changed.filename)
        if adds_decorator(changed.patch):
            verdict.decorator_files.append(changed.filename)
    verdict.baseline = baseline_change(files)  # every PR: debt added matters whether or not it is experimental
    verdict.graduations = graduation_pr.recognise(files, ref)  # from the same listing: no request
    context = read_context(gh, repo_name, pull, ref if declaration.ticked else None)
    if not declaration.ticked:
        if verdict.needs_declaration:
            verdict.problems.append(
                "this PR touches experimental code but does not declare it: tick the box in the "
                "`## Experimental Track` section and link the tracking issue"
            )
        verdict.checklist = graduation_pr.checklist_lines(verdict.graduations, repo_name)
        return verdict, pull, context.comments
    verdict.problems.extend(declaration.problems)
    if refused:
        verdict.problems.append(refused)
    elif declaration.tracking is None and not declaration.problems:
        if not verdict.pure_graduation:  # a graduation's tracking issue is named by its removed record, if at all
            verdict.problems.append(
                "the box is ticked but there is no `Tracking issue:` reference (#N, owner/repo#N or an issue URL)"
            )
    elif ref is not None and verdict.pure_graduation:
        _examine_graduation_issue(repo_name, ref, context, verdict)
    elif ref is not None:
        admission = deadlines.utc_date(pull.created_at)
        # Logins proven to exist by what was already read: no user lookup for them.
        known = {pull.user.login.lower()} | {a.login.lower() for a in pull.assignees}
        known |= {c.user.login.lower() for c in context.comments if c.user is not None}
        _examine_tracking_issue(gh, repo_name, pull, ref, context, admission, known, verdict)
    if not verdict.touches_experimental:
        verdict.notes.append(
            "the box is ticked, but this PR touches no experimental path and adds no "
            f"`{DECORATOR}`: untick it if the PR is not experimental"
        )
    issue = context.issue  # read only for a ticked box: its state goes beside it in the checklist
    state = issue.state if ref is not None and issue is not None and issue.pull_request is None else None
    verdict.checklist = graduation_pr.checklist_lines(verdict.graduations, repo_name, state, ref)
    return verdict, pull, context.comments


def _examine_graduation_issue(repo_name: str, ref: TrackingRef, context: PrContext, verdict: PrVerdict) -> None:
    """The tracking issue a graduation PR links: it must be an issue that exists. The admission rules
    (a complete form, a confirmed owner, a target date in the window, an open issue) are for features
    entering the track, not for one leaving it."""
    where = code(ref.render(repo_name))
    issue = context.issue
    if issue is None:
        verdict.problems.append(f"the tracking issue {where} does not exist (or the bot cannot see it)")
    elif issue.pull_request is not None:
        verdict.problems.append(f"the tracking reference {where} is a pull request, not an issue")
    else:
        verdict.tracking_lines.append(f"Tracking issue: {where} ({issue.state})")


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
    lines += verdict.checklist
    lines += baseline_lines(verdict.baseline)
    if verdict.declared or verdict.touches_experimental:
        lines += [f"**Experimental files** ({len(verdict.experimental_files)})", ""]
        lines += bullet_list([code(p, 200) for p in verdict.experimental_files]) + [""]
        if verdict.core_files:
            lines += [f"**Core files: these get normal core review** ({len(verdict.core_files)})", ""]
            lines += bullet_list([code(p, 200) for p in verdict.core_files]) + [""]
    if verdict.label_requested:
        lines += [f"The bot may not add labels here: a maintainer, please add the `{EXPERIMENTAL_LABEL}` label.", ""]
    return "\n".join(lines).rstrip() + "\n"


def _entries(entries: list[BaselineEntry]) -> str:
    """``3 baseline entries``, with the findings when counts make them more."""
    findings = sum(entry.count for entry in entries)
    text = f"{len(entries)} baseline {'entry' if len(entries) == 1 else 'entries'}"
    return text if findings == len(entries) else f"{text} ({findings} findings)"


def _entry_item(entry: BaselineEntry) -> str:
    """One entry, every field quoted inertly (they are the PR's text)."""
    scope = f", scope {code(entry.scope)}" if entry.scope else ""
    more = f" ({entry.count} findings)" if entry.count > 1 else ""
    return f"{code(entry.rule, 40)} in {code(entry.module, 200)}{scope}: {code(entry.subject)}{more}"


def baseline_lines(change: BaselineChange | None) -> list[str]:
    """The comment's words on the PR's baseline change: debt for a maintainer to approve, or thanks."""
    if change is None:
        return []
    where = code(BASELINE_FILE)
    delta = change.delta
    if delta is None:
        verb = "adds" if change.adopted else "changes"
        return [f"This PR {verb} {where}, but GitHub sent no diff of it (too large to show): "
                "a maintainer, please review the baseline change.", ""]
    lines = []
    if delta.added or delta.unreadable:
        lines += ["**Baseline debt added: a maintainer must approve**", ""]
        if change.adopted:
            lines += [f"This PR adds {where} (initial adoption): {_entries(delta.added)} accepted as debt.", ""]
        items = [_entry_item(entry) for entry in delta.added]
        items += [f"a baseline line the bot cannot read: {code(text)}" for text in delta.unreadable]
        lines += bullet_list(items) + [""]
        if delta.paid:
            lines += [f"It also pays off {_entries(delta.paid)}.", ""]
    elif delta.paid:
        lines += [f"This PR pays off {_entries(delta.paid)}: thank you.", ""]
    if delta.moved:
        lines += [f"{_entries(delta.moved)} moved to another module (a rename): neither added nor paid off.", ""]
    return lines


def run_pr_check(gh, repo_name: str, number: int, writes: Writes, identity: BotIdentity,
                 tracking_repos: frozenset[str] = frozenset()) -> PrVerdict:
    verdict, pull, comments = examine(gh, repo_name, number, tracking_repos)
    where = f"#{number}"
    thread = gh.get_repo(repo_name).get_issue(number)  # lazy: no request

    labels = {label.name for label in pull.labels}
    needs_label = verdict.declared and verdict.touches_experimental and EXPERIMENTAL_LABEL not in labels
    if needs_label:
        writes.perform(f"add the label `{EXPERIMENTAL_LABEL}` to {where}", lambda: pull.add_to_labels(EXPERIMENTAL_LABEL))
        verdict.label_requested = writes.records[-1].outcome == FORBIDDEN

    body = render(verdict)
    marked = [c for c in comments if (c.body or "").startswith(PR_MARKER)]
    if not verdict.wants_comment and not own_comments(marked, PR_MARKER, identity):
        # No comment wanted and none to keep up to date: only the status, read before it is written.
        if not _status_is(gh, repo_name, verdict):
            _set_status(gh, repo_name, verdict, writes, identity)
        return verdict
    # The comment is written last: an unchanged comment means the status was set too. Only a
    # marked comment that already reads ``body`` needs the bot's login to tell whose it is.
    same = [c for c in marked if (c.body or "").rstrip() == body.rstrip()]
    if same and own_comments(same, PR_MARKER, identity) and len(own_comments(marked, PR_MARKER, identity)) == 1:
        return verdict  # (a duplicate left by two overlapping runs goes on to the keeper below)
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
