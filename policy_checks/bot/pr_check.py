"""``policy-check bot pr``: check one pull request against the Experimental Track contract.

It also flags every change that weakens the policy, until a maintainer approves it.

Request budget: at most 8 + ⌈P/50⌉ for a PR of up to 100 files. P is the number of its
files the bot reads at both commits. Those are its Python files, docs pages and feature
records, and the policy files it touches. A PR of 100 Python files costs 10 requests.

Reads:

- the PR, and its files (100 per page);
- the texts of those files at the base and head commits (`revisions`). That is one GraphQL
  request per 50 paths, and none for a PR that touches none;
- one GraphQL request for the PR's comments, the collaborators of this repository, the
  tracking issue and the issue's comments. It also brings the issue's rendered body. Its
  user-mention links prove that an @-mentioned Owner exists.

One more request only when needed. It reads the files of a graduating feature's directory
that the PR does not list. It also reads the unchanged modules its decorators are imported
from (`aliases`), and the modules a baseline entry is moved to. The Owner's user record is
read only when nothing already read proves the login.

Writes, only when something changed:

- the ``experimental`` label;
- the ``experimental-track`` commit status. Its answer names the bot, so ``GET /user`` is
  rarely needed;
- the one bot comment.

Every PR, experimental or not, is judged for policy weakenings (`policy_weakening`). The
judgement reads the texts of:

- ``[tool.policy-check]`` and suppression comments;
- pytest's configuration and the root ``conftest.py``;
- the workflows that run the checker or the bot;
- ``CODEOWNERS``;
- the baseline, however it arrives.

A weakening fails the status until a maintainer approves it. The maintainer is a user with
write access to this repository, other than the PR's author. They comment
``/experimental-track approve-policy <digest>``, naming the set the bot's comment shows.
The bot's own comment records the approval in hidden lines. Those lines are trusted only in
a comment the bot wrote. A later push that brings a weakening outside the approved set needs
a new approval. What the bot cannot read fails closed the same way. Examples: a listing
GitHub cut short, a file it would not send whole, more files than the bot reads.

A graduation PR (``graduation_pr``) is recognised from the same texts. It also uses the
listing of the feature's directory at the head. In such a PR:

- a feature's FEATURE.toml is removed;
- its directory is left a re-export shim;
- its entry points are no longer experimental.

The comment shows the graduation checklist with each step's state. Its changes under the
graduating feature's directories need no Experimental Track declaration. A tracking issue it
links is not held to the admission rules: the feature is leaving the track, not entering it.

Whose word counts (see the threat model in docs/bot.rst):

- Permissions are read on the repository the bot serves. They are never read on the tracking
  issue's repository, which the PR's author chooses.
- A tracking issue in another repository counts only when the workflow lists that repository.
- The Owner must be the issue's author, an assignee or the PR's author. The exception is an
  Owner a maintainer confirms on the tracking issue.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from itertools import islice

import github
import requests

from ..model.config import DEFAULT, is_experimental_path, under  # FlashInfer's default layout: the PR is of a FlashInfer checkout
from ..model.records import TrackingRef
from ..model.window import WINDOW_IN_WORDS
from . import aliases, deadlines, graduation_pr, graphql, policy_weakening as pw
from .baseline_diff import (BASELINE_FILE, BaselineChange, BaselineEntry, baseline_texts_change, module_paths,
                            parse_baseline_patch, texts_delta)
from .client import BotError, call, describe_failure, fetched
from .comments import BotIdentity, is_edited, keep_comment, list_comments, own_comments
from .extensions import Permissions, confirmed_owners, extended_weeks, read_extensions
from .markdown import bullet_list, code
from .parsers import mentioned_users, parse_policy_approvals, parse_pr_body, parse_tracking_issue
from .revisions import PATHS_PER_REQUEST, FileAtRevisions, read_revisions
from .writes import FORBIDDEN, Writes

PR_MARKER = "<!-- experimental-track-bot:pr -->"
BOT_MARKER_PREFIX = "<!-- experimental-track-bot:"
STATUS_CONTEXT = "experimental-track"
EXPERIMENTAL_LABEL = "experimental"
DECORATOR = "@flashinfer_experimental_api"
MAX_FILE_PAGES = 30  # 3,000 files: all GitHub lists for a pull request
MAX_CODE_READS = 300  # listed files read at both commits (6 requests); beyond, the check fails closed
MAX_PRESENCE_LOOKUPS = 100  # paths looked up for the modules baseline entries are moved to
APPROVE_COMMAND = "/experimental-track approve-policy"


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
    weakenings: list[pw.Weakening] = field(default_factory=list)  # what the PR lets through that its base did not
    decision: pw.Decision | None = None  # which weakenings a maintainer approved, and by whom
    author: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def touches_experimental(self) -> bool:
        return bool(self.experimental_files or self.decorator_files)

    @property
    def needs_declaration(self) -> bool:
        """Whether the PR must declare itself.

        It must when it touches experimental paths other than those of the features it
        graduates. It must also when it adds the experimental decorator."""
        if self.decorator_files:
            return True
        graduating = {g.feature for g in self.graduations}
        if not graduating:
            return bool(self.experimental_files)
        return any(_graduating_feature(path) not in graduating for path in self.experimental_files)

    @property
    def pure_graduation(self) -> bool:
        """A graduation PR that touches nothing else experimental.

        Admission rules do not apply to it."""
        return bool(self.graduations) and not self.needs_declaration

    @property
    def wants_comment(self) -> bool:
        """Which PRs get a comment; the others get only the status.

        Experimental PRs, PRs that weaken the policy and PRs whose baseline change is worth a
        word get one."""
        return (self.declared or self.touches_experimental or bool(self.graduations) or bool(self.weakenings)
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
        elif self.weakenings:
            text = "Not an Experimental Track PR; its policy changes are approved"
        else:
            text = "Not an Experimental Track PR"
        return text if len(text) <= 140 else text[:139] + "…"


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

    ``ref`` is a tracking issue the caller has already admitted. It is in this repository, or
    in one the workflow lists.
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


@dataclass
class Texts:
    """What the bot read of the PR's files at base and head, and what it judged of them."""

    files: dict[str, FileAtRevisions] = field(default_factory=dict)  # by path at the head
    trees: dict[str, list[str] | None] = field(default_factory=dict)  # graduating features' directories at head
    baseline: BaselineChange | None = None
    weakenings: list[pw.Weakening] = field(default_factory=list)
    links: set[str] = field(default_factory=set)  # listed paths that are symbolic links at the head


def _listed_presence(listed: list[pw.Changed]) -> dict[str, bool]:
    """What the listing already says about paths at the head.

    A listed file is there unless removed. The previous path of a rename is gone unless listed
    again."""
    known = {c.previous: False for c in listed if c.status == "renamed" and c.previous}
    known.update({c.path: c.status != "removed" for c in listed})
    return known


def read_texts(gh, repo_name: str, pull, files: list) -> Texts:
    """Read what the judgement needs at the PR's base and head commits; judge the weakenings.

    One request per 50 paths reads:

    - the policy files the PR touches, each at the same path on both sides;
    - its Python files, docs pages and feature records. A renamed one is read at its previous
      path at the base;
    - the directories of features whose record it removes;
    - the modules that its baseline patch seems to move entries to.

    One more request only when needed. It reads files of such a directory that the PR does not
    list. It also reads modules the texts move entries to that were not looked up. At most
    `MAX_CODE_READS` files are read. Beyond that, the check fails closed. It also fails closed
    when GitHub lists fewer files than the PR changes.
    """
    listed = [pw.Changed.of(f) for f in files]
    head_sha, base_sha = pull.head.sha, pull.base.sha
    out = Texts()
    extra: list[pw.Weakening] = []
    changed_files = getattr(pull, "changed_files", None) or 0
    if changed_files > len(files):
        extra.append(pw.Weakening(
            pw.UNREAD, f"GitHub lists {len(files):,} of this PR's {changed_files:,} changed files (it lists at most "
                       "3,000): the bot cannot see the rest, so it cannot tell what they change",
            pw.key_of(pw.UNREAD, "listing", head_sha)))
    by_path = {c.path: c for c in listed}

    def pair(path: str) -> tuple[str, str]:
        changed = by_path.get(path)
        return path, changed.previous if changed and changed.status == "renamed" and changed.previous else path

    policy = pw.policy_paths(listed)
    code_reads = list(dict.fromkeys([*pw.code_paths(listed), *map(pair, graduation_pr.paths_needed(files))]))
    code_reads = [(path, base) for path, base in code_reads if path not in policy]
    if len(code_reads) > MAX_CODE_READS:
        extra.append(pw.Weakening(
            pw.UNREAD, f"this PR changes {len(code_reads):,} files the bot reads (Python files, docs pages, feature "
                       f"records); it reads at most {MAX_CODE_READS}: the others are not judged",
            pw.key_of(pw.UNREAD, "too many", head_sha)))
        code_reads = code_reads[:MAX_CODE_READS]
    known = _listed_presence(listed)
    hint = []  # the baseline patch's moves: looked up now, in case the texts say the same
    for changed in files:
        if changed.filename == BASELINE_FILE:
            for entry in parse_baseline_patch(changed.patch).moved:
                hint += [path for path in module_paths(entry.module) if path not in known]
    directories = graduation_pr.directories_to_list(files)
    checked = [c.path for c in listed if c.status != "removed" and _in_checked_tree(c.path)][:MAX_CODE_READS]
    read = read_revisions(gh, repo_name, base_sha, head_sha, [*policy, *code_reads],
                          list(dict.fromkeys(hint))[:MAX_PRESENCE_LOOKUPS], directories, modes_at_head=checked)
    out.files, out.trees, out.links = read.files, read.trees, read.links
    known.update({path: present for path, present in read.present.items() if present is not None})

    # Files of a graduating feature's directory at the head that the PR does not list: part of its shim.
    missing = [path for path in graduation_pr.paths_needed(files, out.trees) if path not in out.files]
    room = MAX_CODE_READS - len(code_reads)
    missing = missing[:max(room, 0)]
    # Unchanged modules the PR's decorators are imported from: an alias bound there is followed (same request).
    sources = [module for path, f in sorted(out.files.items()) if f.complete and f.head and path.endswith(".py")
               for module in aliases.decorator_sources(path, f.head, DEFAULT.package)]
    unread = [path for module in dict.fromkeys(sources) for path in aliases.module_paths(module)
              if path not in out.files and path not in known]
    missing += unread[:max(0, min(2 * aliases.MAX_SOURCES, PATHS_PER_REQUEST - len(missing) % PATHS_PER_REQUEST))]
    if missing:
        out.files.update(read_revisions(gh, repo_name, base_sha, head_sha, missing).files)

    if BASELINE_FILE in pw.touched(listed):
        out.baseline = _baseline(gh, repo_name, base_sha, head_sha, out.files.get(BASELINE_FILE), known)
    out.weakenings = extra + pw.weakenings(listed, out.files, out.baseline, head_sha)
    code_paths = {path for path, _ in pw.code_paths(listed)}
    out.weakenings += [
        pw.Weakening(pw.UNREAD, f"the bot cannot tell what {code(path, 200)} marks experimental: {code(why, 200)}",
                     pw.key_of(pw.UNREAD, "unjudged", path, head_sha))
        for path, why in graduation_pr.unjudged(out.files)
        if path in code_paths and out.files[path].complete]
    return out


def _in_checked_tree(path: str) -> bool:
    """A path of the checked package or of the test lanes (FlashInfer's default layout)."""
    return any(under(path, top) for top in (DEFAULT.package.replace(".", "/"), DEFAULT.stable_tests,
                                           DEFAULT.experimental_tests))


def _link_problems(links: set[str]) -> list[str]:
    """A symbolic link inside the checked package or the test lanes fails the check.

    What it imports or collects is whatever it points to. Its own text does not say that."""
    inside = sorted(path for path in links if _in_checked_tree(path))
    if not inside:
        return []
    more = f" (and {len(inside) - 1} more)" if len(inside) > 1 else ""
    return [f"{code(inside[0], 200)}{more} is a symbolic link (git mode 120000) inside the checked package or the "
            "test lanes: the checker and the bot read no link as the file it points to; commit the file itself"]


def _baseline(gh, repo_name: str, base_sha: str, head_sha: str, f: FileAtRevisions | None,
              known: dict[str, bool]) -> BaselineChange:
    """The baseline's change from its texts.

    The modules its entries move to are looked up at the head."""
    if f is None or not f.complete:
        adopted = f is not None and f.base is None and f.head is not None
        return BaselineChange(adopted=adopted, delta=None, unread=(f.problem if f is not None else "it was not read"))
    delta, _ = texts_delta(f.base, f.head)
    need = [path for entry in delta.moved for path in module_paths(entry.module) if path not in known]
    need = list(dict.fromkeys(need))[:MAX_PRESENCE_LOOKUPS]
    if need:
        looked = read_revisions(gh, repo_name, base_sha, head_sha, present_at_head=need).present
        known.update({path: present for path, present in looked.items() if present is not None})

    def exists(module: str) -> bool | None:
        states = [known.get(path) for path in module_paths(module)]
        if any(state is True for state in states):
            return True
        return False if states and all(state is False for state in states) else None

    return baseline_texts_change(f.base, f.head, exists)


def _judge_approvals(gh, repo_name: str, verdict: PrVerdict, context: PrContext, identity: BotIdentity) -> None:
    """Which of the PR's weakenings a maintainer approved.

    Approvals are commands in the thread, and the record in the bot's own comment. That comment
    is found by its author: a pasted record is no record."""
    record = pw.Record()
    marked = [c for c in context.comments if (c.body or "").startswith(PR_MARKER)]
    ours = own_comments(marked, PR_MARKER, identity)
    if ours:
        record = pw.read_record(ours[0].body)
    commands = []
    for comment in sorted(context.comments, key=lambda c: (c.created_at, c.id)):
        body = comment.body or ""
        if body.startswith(BOT_MARKER_PREFIX) or comment.user is None:
            continue
        for digest in parse_policy_approvals(body):
            commands.append(pw.Command(comment.user.login, getattr(comment, "author_association", None), digest,
                                       comment.id, is_edited(comment)))
    levels = context.collaborators.levels
    complete = levels if levels is not None and context.collaborators.complete else None
    permissions = Permissions(gh.get_repo(repo_name), complete)  # lazy: asks per commander only when needed
    verdict.decision = pw.decide(verdict.weakenings, record, commands, permissions.level, verdict.author)
    verdict.notes += verdict.decision.notes


def _weakening_problem(verdict: PrVerdict) -> None:
    """The status fails while a weakening waits for approval.

    This problem comes after the declaration's own problems."""
    if verdict.decision is not None and verdict.decision.pending:
        pending = len([w for w in verdict.weakenings if not _approved(w, verdict.decision)])
        verdict.problems.append(
            f"this PR weakens the policy ({pending} change{'' if pending == 1 else 's'} not approved): a user with "
            "write access must approve, see the bot's comment")


def _approved(weakening: pw.Weakening, decision: pw.Decision | None) -> bool:
    if decision is None:
        return False
    if weakening.key in decision.approved:
        return True
    collective = len(decision.keys) == 1 and decision.keys[0] not in {weakening.key}
    return collective and not decision.pending and bool(decision.approved)


def examine(gh, repo_name: str, number: int, tracking_repos: frozenset[str] = frozenset(),
            identity: BotIdentity | None = None) -> tuple[PrVerdict, object, list]:
    """Read the PR and everything it points at; return the verdict, the PR and its comments."""
    identity = identity if identity is not None else BotIdentity(gh)
    pull = gh.get_repo(repo_name).get_pull(number)
    call(f"read pull request #{number} of {repo_name}", fetched, pull)
    files = call(f"list the files of #{number}", lambda: list(islice(pull.get_files(), MAX_FILE_PAGES * 100)))
    declaration = parse_pr_body(pull.body)
    ref, refused = admitted_ref(declaration.tracking, repo_name, tracking_repos)
    verdict = PrVerdict(number=number, head_sha=pull.head.sha, declared=declaration.ticked,
                        author=pull.user.login if pull.user is not None else None)
    context = read_context(gh, repo_name, pull, ref if declaration.ticked else None)
    texts = read_texts(gh, repo_name, pull, files)
    for changed in files:
        (verdict.experimental_files if is_experimental_path(changed.filename) else verdict.core_files).append(changed.filename)
    # What the texts mark experimental at the head and did not at the base, however it is spelt.
    verdict.decorator_files = sorted({path for path, _ in graduation_pr.added_experimental(texts.files)})
    verdict.baseline = texts.baseline  # every PR: debt added matters whether or not it is experimental
    verdict.weakenings = texts.weakenings
    recognition = graduation_pr.recognise(files, ref, texts=texts.files, trees=texts.trees)
    verdict.graduations = list(recognition)
    verdict.notes += [f"not taken for a graduation: {reason}" for reason in recognition.reasons]
    always_failing = _live_records_removed(recognition, texts.trees)  # failed declared or not, after the rest
    always_failing += _link_problems(texts.links)
    if verdict.weakenings:
        _judge_approvals(gh, repo_name, verdict, context, identity)
    if not declaration.ticked:
        if verdict.needs_declaration:
            verdict.problems.append(
                "this PR touches experimental code but does not declare it: tick the box in the "
                "`## Experimental Track` section and link the tracking issue"
            )
        verdict.checklist = graduation_pr.checklist_lines(verdict.graduations, repo_name)
        verdict.problems += always_failing
        _weakening_problem(verdict)
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
        verdict.notes.insert(0, 
            "the box is ticked, but this PR touches no experimental path and adds no "
            f"`{DECORATOR}`: untick it if the PR is not experimental"
        )
    issue = context.issue  # read only for a ticked box: its state goes beside it in the checklist
    state = issue.state if ref is not None and issue is not None and issue.pull_request is None else None
    verdict.checklist = graduation_pr.checklist_lines(verdict.graduations, repo_name, state, ref)
    verdict.problems += always_failing
    _weakening_problem(verdict)
    return verdict, pull, context.comments


def _live_records_removed(recognition: graduation_pr.Recognition, trees: dict[str, list[str] | None]) -> list[str]:
    """Features whose record the PR removes while their code stays, outside a graduation.

    A feature counts when its directory keeps files at the head, or could not be listed. The
    feature would leave the board and its deadline while its code stays. So the check fails,
    declared or not. Removing the whole directory is a removal, not this."""
    problems = []
    for item in recognition.not_recognised:
        directory = f"{DEFAULT.experimental_dir}/{item.feature}"
        left = trees.get(directory)
        if left == []:
            continue  # the directory is gone: a removal
        what = "its code stays" if left else "the bot could not list what stays of it"
        problems.append(
            f"this PR removes the record {code(directory + '/FEATURE.toml', 200)} of a live feature while {what}: "
            "the feature would leave the board and its deadline; keep the record, graduate the feature "
            "(`policy-check graduate`) or remove it whole (`policy-check remove`)")
    return problems


def _examine_graduation_issue(repo_name: str, ref: TrackingRef, context: PrContext, verdict: PrVerdict) -> None:
    """The tracking issue a graduation PR links: it must be an issue that exists.

    The admission rules are for features entering the track, not for one leaving it. They ask
    for a complete form, a confirmed owner, a target date in the window and an open issue."""
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
    lines += policy_lines(verdict)
    lines += baseline_lines(verdict.baseline)
    if verdict.declared or verdict.touches_experimental:
        lines += [f"**Experimental files** ({len(verdict.experimental_files)})", ""]
        lines += bullet_list([code(p, 200) for p in verdict.experimental_files]) + [""]
        if verdict.core_files:
            lines += [f"**Core files: these get normal core review** ({len(verdict.core_files)})", ""]
            lines += bullet_list([code(p, 200) for p in verdict.core_files]) + [""]
    if verdict.label_requested:
        lines += [f"The bot may not add labels here: a maintainer, please add the `{EXPERIMENTAL_LABEL}` label.", ""]
    if verdict.decision is not None:  # hidden: the approval record, trusted only in the bot's own comment
        lines += pw.record_lines(verdict.decision.keys, verdict.decision.approved, verdict.decision.sources)
    return "\n".join(lines).rstrip() + "\n"


def policy_lines(verdict: PrVerdict) -> list[str]:
    """The comment's section on the PR's policy weakenings.

    It lists each one, and says how to approve them or who did."""
    if not verdict.weakenings:
        return []
    decision = verdict.decision
    approvers = ", ".join(code("@" + login, 60) for login in (decision.approvers if decision else []))
    pending = decision is None or bool(decision.pending)
    title = ("**Policy weakened: a maintainer must approve**" if pending
             else f"**Policy weakened: approved by {approvers}**")
    items = []
    for weakening in verdict.weakenings:
        if weakening.kind == pw.BASELINE:
            continue
        mark = " (approved)" if pending and _approved(weakening, decision) else ""
        items.append(weakening.text + mark)
    in_baseline = sum(1 for w in verdict.weakenings if w.kind == pw.BASELINE)
    if in_baseline:
        items.append(f"the baseline changes below ({in_baseline} item{'' if in_baseline == 1 else 's'})")
    lines = [title, ""] + bullet_list(items) + [""]
    digest = decision.digest if decision is not None else ""
    command = code(f"{APPROVE_COMMAND} {digest}")
    if pending:
        lines += [f"Each of these lets through what the base did not. A user with write access to this repository, "
                  f"other than the PR's author, approves them by commenting {command}; the status passes on the "
                  "check's next run (a push, an edit of the PR's description, or a re-run of the check). A later "
                  "push that weakens the policy further needs a new approval.", ""]
        if decision is not None and decision.approved:
            lines += [f"Approved before by {approvers}: the changes marked (approved).", ""]
    else:
        lines += [f"Approved with {command}. A later push that weakens the policy further needs a new approval.", ""]
    return lines


def _entries(entries: list[BaselineEntry]) -> str:
    """``3 baseline entries``, with the findings when counts make them more."""
    findings = sum(entry.count for entry in entries)
    text = f"{len(entries)} baseline {'entry' if len(entries) == 1 else 'entries'}"
    return text if findings == len(entries) else f"{text} ({findings} findings)"


_entry_item = pw.entry_text


def baseline_lines(change: BaselineChange | None) -> list[str]:
    """The comment's words on the PR's baseline change.

    They are debt for a maintainer to approve, or thanks."""
    if change is None:
        return []
    where = code(BASELINE_FILE)
    delta = change.delta
    if delta is None:
        verb = "adds" if change.adopted else "changes"
        why = f" ({code(change.unread, 200)})" if change.unread else ""
        return [f"This PR {verb} {where}, but the bot could not read it whole{why}: "
                "a maintainer, please review the baseline change.", ""]
    lines = []
    if delta.added or delta.unreadable or change.anywhere or change.problem:
        lines += ["**Baseline debt added: a maintainer must approve**", ""]
        if change.adopted:
            lines += [f"This PR adds {where} (initial adoption): {_entries(delta.added)} accepted as debt.", ""]
        items = [_entry_item(entry) for entry in delta.added]
        items += [f"moved under a module that does not exist at the head commit, so it accepts its finding in any "
                  f"module: {_entry_item(entry)}" for entry in change.anywhere]
        items += [f"a baseline line the bot cannot read: {code(text)}" for text in delta.unreadable]
        if change.problem:
            items.append(f"the checker would refuse the file at the head commit: {code(change.problem, 200)}")
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
    verdict, pull, comments = examine(gh, repo_name, number, tracking_repos, identity)
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
    """Whether the head commit already carries this exact status.

    One read saves a write."""
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
    """Write the status.

    Its answer names the bot (``creator``), which saves asking ``GET /user``."""
    payload = _status_payload(verdict)
    answer = writes.perform(
        f"set the commit status `{STATUS_CONTEXT}` of {verdict.head_sha[:12]} to {payload['state']}: {payload['description']}",
        lambda: gh.requester.requestJsonAndCheck("POST", f"/repos/{repo_name}/statuses/{verdict.head_sha}", input=payload),
    )
    creator = answer[1].get("creator") if answer is not None and isinstance(answer[1], dict) else None
    if isinstance(creator, dict) and creator.get("login"):
        identity.learn(creator["login"])
