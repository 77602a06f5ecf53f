"""``policy-check bot review``: the scheduled lifecycle review of every experimental feature.

It reads every ``flashinfer/experimental/*/FEATURE.toml`` at the default branch. It matches
each with its tracking issue, and classifies it.

Reads: one GraphQL request brings every record, the collaborators and up to 100 issues
labelled ``experimental`` with their comments. One more request brings each further 100
issues. Only some tracking issues are read through REST: one outside that label, or one with
more than 100 comments.

Writes: at most one review comment per tracking issue per weekly cycle (ISO week), and the
``graduation-overdue`` label. So a review costs at worst about two requests per feature:
comment and label. In a usual week it costs one.

A feature that is simply on track gets no comment; the run summary lists it. So owners hear
from the bot when something needs them. The bot never closes an issue.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from urllib.parse import quote, unquote


from ..lifecycle.board import BoardRow, render_markdown
from ..lifecycle.board import rows as board_rows
from ..model.config import DEFAULT
from ..model.records import FeatureRecord, TrackingRef, is_feature_name
from ..model.markers import RECORD
from . import deadlines, graphql
from .client import BotError
from .comments import BotIdentity, keep_comment, list_comments, own_comments
from .deadlines import DUE_SOON, ON_TRACK, OVERDUE
from .extensions import Extension, Permissions, extended_weeks, read_extensions
from .markdown import bullet_list, code, table_row
from .parsers import parse_feature_toml, parse_tracking_issue
from .pr_check import BOT_MARKER_PREFIX, EXPERIMENTAL_LABEL, admitted_ref
from .writes import Writes

FEATURES_DIR = DEFAULT.experimental_dir  # the bot reads FlashInfer's own layout: the default settings
OVERDUE_LABEL = "graduation-overdue"
REVIEW_MARKER_PREFIX = BOT_MARKER_PREFIX + "review feature="

# A feature's states: the deadline's (ON_TRACK, DUE_SOON, OVERDUE, from deadlines.status), and these.
EXTENDED = "extended"
ORPHANED = "orphaned"
ISSUE_CLOSED = "tracking issue closed, code still there"
CODE_REMOVED = "code removed, tracking issue still open"
DISAGREE = "record and issue disagree"
INCOMPLETE = "record or issue incomplete"


def review_marker(feature: str, cycle: str) -> str:
    """The hidden marker of a review comment.

    The name is percent-encoded, so no ``-->`` in a directory name can end the HTML comment
    early."""
    return f"{REVIEW_MARKER_PREFIX}{quote(feature, safe='')} cycle={cycle} -->"


@dataclass
class FeatureReview:
    name: str
    tracking: str = ""
    owner: str | None = None
    deadline: dt.date | None = None
    states: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    extensions: list[Extension] = field(default_factory=list)
    comment: str = ""  # "created", "updated", "unchanged", or "" when there is no issue to write to

    def as_json(self, today: dt.date) -> dict:
        return {
            "feature": self.name,
            "tracking_issue": self.tracking,
            "owner": self.owner,
            "deadline": self.deadline.isoformat() if self.deadline else None,
            "days_left": deadlines.days_left(self.deadline, today) if self.deadline else None,
            "states": self.states,
            "problems": self.problems,
            "extensions": [
                {"author": e.author, "date": e.date.isoformat(), "weeks": e.weeks, "reason": e.reason,
                 "accepted": e.accepted, "note": e.note}
                for e in self.extensions
            ],
        }


@dataclass
class ReviewResult:
    repo: str
    today: dt.date
    cycle: str
    features: list[FeatureReview]
    writes: Writes
    notes: list[str] = field(default_factory=list)  # run-level limits, e.g. permissions unreadable
    board: list[BoardRow] = field(default_factory=list)  # the records, as `policy-check features` shows them

    def as_json(self) -> dict:
        return {
            "repo": self.repo,
            "today": self.today.isoformat(),
            "cycle": self.cycle,
            "notes": self.notes,
            "features": [f.as_json(self.today) for f in self.features],
            "writes": [{"write": r.description, "outcome": r.outcome} for r in self.writes.records],
        }

    def markdown(self) -> str:
        lines = [f"## Experimental Track lifecycle review, {self.today.isoformat()} ({self.cycle})", ""]
        if not self.features:
            lines.append("No experimental features found.")
        else:
            lines += ["| feature | tracking issue | owner | due | status |", "|---|---|---|---|---|"]
            for f in self.features:
                due = deadlines.describe(f.deadline, self.today) if f.deadline else "unknown"
                owner = code(f.owner) if f.owner else "unknown"
                tracking = code(f.tracking) if f.tracking else "none"
                lines.append(table_row([code(f.name), tracking, owner, due, ", ".join(f.states)]))
            problems = [(f.name, p) for f in self.features for p in f.problems]
            if problems:
                lines += ["", "**Problems**", ""] + bullet_list([f"{code(n)}: {p}" for n, p in problems], 100)
        if self.notes:
            lines += ["", "**Notes**", ""] + bullet_list(self.notes)
        extra = self.writes.summary_lines()
        if extra:
            lines += [""] + extra
        if self.board:  # the feature board, with each tracking issue's state (docs/features.rst)
            lines += ["", "### Feature records", "", render_markdown(self.board).rstrip("\n")]
        return "\n".join(lines) + "\n"


@dataclass
class ReviewReads:
    """Everything the review reads in bulk.

    That is records, labelled issues with their comments, and collaborators."""

    records: list[FeatureRecord]
    labelled: dict[int, graphql.IssueData]
    collaborators: graphql.Collaborators


def read_in_bulk(gh, repo_name: str) -> ReviewReads:
    """One GraphQL request per 100 labelled issues.

    The records and collaborators come with the first."""
    owner, name = repo_name.split("/")
    variables = {"owner": owner, "name": name, "records": f"HEAD:{FEATURES_DIR}", "labels": [EXPERIMENTAL_LABEL],
                 "firstPage": True, "after": None}
    labelled: dict[int, graphql.IssueData] = {}
    while True:
        data, errors = graphql.query(gh, graphql.LIFECYCLE_REVIEW, variables, f"read the records and issues of {repo_name}")
        repository = data.get("repository")
        if repository is None:
            raise BotError(f"read {repo_name}: not found, or not visible to the token")
        if variables["firstPage"]:
            records = _records_from_tree(repository.get("records"))
            collaborators = graphql.collaborators(repository, errors, "repository")
        for node in repository["issues"]["nodes"]:
            labelled[node["number"]] = graphql.issue_object(gh, repo_name, node)
        page = repository["issues"]["pageInfo"]
        if not page["hasNextPage"]:
            return ReviewReads(records, labelled, collaborators)
        variables.update(firstPage=False, after=page["endCursor"])


def _records_from_tree(tree: dict | None) -> list[FeatureRecord]:
    """Every feature directory's record.

    A missing or unreadable one is a problem of that feature."""
    records = []
    for entry in sorted((tree or {}).get("entries") or [], key=lambda e: e["name"]):
        if entry["type"] != "tree" or not is_feature_name(entry["name"]):
            continue
        path = f"{FEATURES_DIR}/{entry['name']}/{RECORD}"
        blob = next((e.get("object") or {} for e in (entry.get("object") or {}).get("entries") or []
                     if e["name"] == RECORD and e["type"] == "blob"), None)
        if blob is None:
            records.append(FeatureRecord(name=entry["name"], problems=[f"{code(path)} is missing"]))
        elif blob.get("text") is None:  # GitHub gives no text for binary (or very large) blobs
            records.append(FeatureRecord(name=entry["name"], problems=[f"{code(path)} is not UTF-8 text"]))
        else:
            records.append(parse_feature_toml(entry["name"], blob["text"]))
    return records


class _Issues:
    """Tracking issues: the labelled ones from the bulk read, the others in one more request.

    That other request is a GraphQL one."""

    def __init__(self, gh, repo_name: str, labelled: dict[int, graphql.IssueData]):
        self._gh, self._repo_name = gh, repo_name
        self.labelled = labelled
        self._others: dict[tuple[str, int], graphql.IssueData | None] = {}

    def _key(self, ref: TrackingRef) -> tuple[str, int]:
        return ((ref.repo or self._repo_name).lower(), ref.number)

    def _is_labelled(self, ref: TrackingRef) -> bool:
        here = ref.repo is None or ref.repo.lower() == self._repo_name.lower()
        return here and ref.number in self.labelled

    def read_others(self, refs: list[TrackingRef]) -> None:
        """Read every referenced issue outside the labelled list: 50 per request."""
        wanted = sorted({self._key(r): r for r in refs if not self._is_labelled(r)}.values(), key=self._key)
        for start in range(0, len(wanted), 50):
            chunk = wanted[start : start + 50]
            variables = {}
            for k, ref in enumerate(chunk):
                owner, name = (ref.repo or self._repo_name).split("/")
                variables.update({f"o{k}": owner, f"n{k}": name, f"i{k}": ref.number})
            data, errors = graphql.query(self._gh, graphql.tracking_issues_query(len(chunk)), variables,
                                         "read the tracking issues outside the experimental label")
            for k, ref in enumerate(chunk):
                node = (data.get(f"t{k}") or {}).get("issueOrPullRequest")
                error = graphql.error_at(errors, f"t{k}", "issueOrPullRequest")
                if node is None and error is not None and error.get("type") != "NOT_FOUND":
                    raise BotError(f"read the tracking issue {ref.render(self._repo_name)}: {error.get('message', '')}")
                repo_name = ref.repo or self._repo_name
                self._others[self._key(ref)] = graphql.issue_object(self._gh, repo_name, node) if node else None

    def get(self, ref: TrackingRef) -> graphql.IssueData | None:
        """The issue, or ``None`` when it does not exist or is not visible.

        ``read_others`` came first."""
        if self._is_labelled(ref):
            return self.labelled[ref.number]
        return self._others.get(self._key(ref))


def _classify(record: FeatureRecord, issue, comments: list, permissions: Permissions,
              today: dt.date, review: FeatureReview) -> None:
    review.problems.extend(record.problems)
    review.owner = record.owner
    if issue is None:
        review.states.append(INCOMPLETE)
        if record.tracking is not None:
            review.problems.append("the tracking issue does not exist or is not visible to the bot")
    elif issue.pull_request is not None:
        review.states.append(INCOMPLETE)
        review.problems.append("the tracking reference is a pull request, not an issue")
        issue = None
    if issue is not None:
        if issue.state != "open":
            review.states.append(ISSUE_CLOSED)
        body = parse_tracking_issue(issue.body)
        review.problems.extend(body.problems)
        review.owner = review.owner or body.owner
        mismatches = []
        if record.owner and body.owner and record.owner.lower() != body.owner.lower():
            mismatches.append(f"owner {code(record.owner)} in the record, {code(body.owner)} in the issue")
        if record.target_release and body.target_release and record.target_release != body.target_release:
            mismatches.append(f"target release {code(record.target_release)} in the record, "
                              f"{code(body.target_release)} in the issue")
        if record.target_date and body.target_date and record.target_date != body.target_date:
            mismatches.append(f"target date {record.target_date} in the record, {body.target_date} in the issue")
        if mismatches:
            review.states.append(DISAGREE)
            review.problems.extend(mismatches)
        review.extensions = read_extensions(comments, permissions, BOT_MARKER_PREFIX)
    if review.owner and not permissions.is_collaborator(review.owner):
        review.states.append(ORPHANED)
        review.problems.append(f"the owner {code(review.owner)} is not a collaborator of the repository")
    # (A target date outside the admission window is among the record's problems.)
    base = record.deadline
    if base is None:
        if INCOMPLETE not in review.states:
            review.states.append(INCOMPLETE)
        return
    weeks = extended_weeks(review.extensions)
    review.deadline = base + dt.timedelta(weeks=weeks)
    if weeks:
        review.states.append(EXTENDED)
    review.states.append(deadlines.status(review.deadline, today))
    # Order: what needs a person first.
    order = [ISSUE_CLOSED, CODE_REMOVED, ORPHANED, OVERDUE, DISAGREE, INCOMPLETE, DUE_SOON, EXTENDED, ON_TRACK]
    review.states.sort(key=order.index)


def _render(review: FeatureReview, marker: str, today: dt.date, cycle: str, target_release: str | None) -> str:
    lines = [marker, f"### Experimental Track review {cycle}: {code(review.name)}", "",
             f"**Status:** {', '.join(review.states)}"]
    if review.deadline:
        release = f", target release {code(target_release)}" if target_release else ""
        lines.append(f"**Graduation due:** {deadlines.describe(review.deadline, today)}{release}")
    if review.owner:
        lines.append(f"**Owner:** {code(review.owner)}")
    if review.problems:
        lines += ["", "**Needs attention**", ""] + bullet_list(review.problems)
    if review.extensions:
        lines += ["", "**Extensions**", ""] + bullet_list([
            f"{e.date} by {code(e.author)}: {e.weeks} week(s), {code(e.reason)}"
            + ("" if e.accepted else " (not counted)") + (f": {e.note}" if e.note else "")
            for e in review.extensions
        ])
    if CODE_REMOVED in review.states:
        lines += ["", "The feature's directory is gone from the default branch. If it graduated or was dropped, "
                      "please close this issue (the bot never closes issues)."]
    elif ISSUE_CLOSED in review.states:
        lines += ["", "This issue is closed but the feature's code is still on the default branch: "
                      "graduate or remove it, or reopen this issue."]
    lines += ["", "A maintainer can extend the deadline with a comment `/experimental extend <weeks> <reason>`."]
    return "\n".join(lines) + "\n"


def _write_to_issue(issue, review: FeatureReview, comments: list, identity: BotIdentity, writes: Writes,
                    today: dt.date, cycle: str, target_release: str | None) -> None:
    where = f"#{issue.number}"
    marker = review_marker(review.name, cycle)
    body = _render(review, marker, today, cycle, target_release)
    # The workflow's concurrency group keeps reviews from overlapping: no re-listing after a create.
    review.comment = keep_comment(issue, marker, body, identity, writes, where, comments=comments, recheck=False)
    _fix_overdue_label(issue, review, writes)


def _has_cycle_comment(comments: list, marker: str, identity: BotIdentity) -> bool:
    """Whether the bot already wrote this cycle's comment.

    A copied marker in anyone else's comment does not count."""
    return bool(own_comments(comments, marker, identity))


def _fix_overdue_label(issue, review: FeatureReview, writes: Writes) -> None:
    where = f"#{issue.number}"
    labels = {label.name for label in issue.labels}
    if OVERDUE in review.states and OVERDUE_LABEL not in labels:
        writes.perform(f"add the label `{OVERDUE_LABEL}` to {where}", lambda: issue.add_to_labels(OVERDUE_LABEL))
    elif OVERDUE not in review.states and OVERDUE_LABEL in labels and issue.state == "open":
        writes.perform(f"remove the label `{OVERDUE_LABEL}` from {where}", lambda: issue.remove_from_labels(OVERDUE_LABEL))


def _comments_of(read: graphql.IssueData, where: str) -> list:
    """The comments read in bulk, else through REST, only when the issue has any."""
    if read.comments is not None:
        return read.comments
    return list_comments(read.issue, where) if read.issue.comments else []


def _permissions(repo, collaborators: graphql.Collaborators) -> Permissions:
    """Permissions from the bulk read.

    A listing longer than a page is read again through REST."""
    if collaborators.levels is not None and collaborators.complete:
        return Permissions(repo, collaborators.levels)
    permissions = Permissions(repo, unavailable=collaborators.unavailable)
    if not collaborators.unavailable:
        permissions.preload()
    return permissions


def _admit_tracking(record: FeatureRecord, repo_name: str, tracking_repos: frozenset[str]) -> None:
    """Drop a tracking reference to a repository the workflow does not list.

    It becomes a problem of the record."""
    record.tracking, refused = admitted_ref(record.tracking, repo_name, tracking_repos)
    if refused:
        record.problems.append(refused)


def run_review(gh, repo_name: str, today: dt.date, writes: Writes, identity: BotIdentity,
               tracking_repos: frozenset[str] = frozenset()) -> ReviewResult:
    repo = gh.get_repo(repo_name)  # lazy: no request
    cycle = deadlines.review_cycle(today)
    reads = read_in_bulk(gh, repo_name)
    for record in reads.records:
        _admit_tracking(record, repo_name, tracking_repos)
    issues = _Issues(gh, repo_name, reads.labelled)
    issues.read_others([r.tracking for r in reads.records if r.tracking is not None])
    permissions = _permissions(repo, reads.collaborators)
    reviews: list[FeatureReview] = []
    referenced: set[int] = set()
    issue_states: dict[str, str] = {}
    for record in reads.records:
        review = FeatureReview(name=record.name)
        reviews.append(review)
        read = issues.get(record.tracking) if record.tracking else None
        issue = read.issue if read is not None else None
        if record.tracking:
            review.tracking = record.tracking.render(repo_name)
            if record.tracking.repo is None or record.tracking.repo.lower() == repo_name.lower():
                referenced.add(record.tracking.number)
        issue_states[record.name] = _issue_state(record, issue)
        comments = _comments_of(read, review.tracking) if issue is not None and issue.pull_request is None else []
        _classify(record, issue, comments, permissions, today, review)
        if issue is not None and issue.pull_request is None:
            quiet = review.states == [ON_TRACK] and not review.problems
            if quiet and not _has_cycle_comment(comments, review_marker(record.name, cycle), identity):
                _fix_overdue_label(issue, review, writes)  # nothing to say: the summary lists it
            else:
                _write_to_issue(issue, review, comments, identity, writes, today, cycle, record.target_release)

    for number, read in sorted(issues.labelled.items()):
        issue = read.issue
        if number in referenced or issue.state != "open" or not issue.comments:
            continue
        if "graduation plan" not in (issue.body or "").lower():
            continue  # a labelled issue that is not a tracking issue
        comments = _comments_of(read, f"#{number}")
        names = _reviewed_features(comments, identity)
        if not names:
            continue  # never admitted yet (its PR may still be open): nothing to say
        review = FeatureReview(name=names[-1], tracking=f"#{number}", states=[CODE_REMOVED],
                               owner=parse_tracking_issue(issue.body).owner)
        reviews.append(review)
        _write_to_issue(issue, review, comments, identity, writes, today, cycle, None)
    notes = []
    if permissions.unavailable:
        notes.append(f"{permissions.unavailable}: orphan checks were skipped and extensions not counted")
    return ReviewResult(repo_name, today, cycle, reviews, writes, notes,
                        board_rows(reads.records, today, repo_name, issue_states))


def _issue_state(record: FeatureRecord, issue) -> str:
    """The tracking issue's state for the board.

    One of ``open``, ``closed``, ``not found``, ``pull request`` or ``none``."""
    if record.tracking is None:
        return "none"
    if issue is None:
        return "not found"
    return "pull request" if issue.pull_request is not None else issue.state


_REVIEWED_RE = re.compile(re.escape(REVIEW_MARKER_PREFIX) + r"(\S+) cycle=")


def _reviewed_features(comments: list, identity: BotIdentity) -> list[str]:
    """Feature names of the bot's earlier review comments on a thread, oldest first."""
    ours = own_comments(comments, REVIEW_MARKER_PREFIX, identity)
    return [unquote(m.group(1)) for m in (_REVIEWED_RE.match(c.body) for c in ours) if m]
