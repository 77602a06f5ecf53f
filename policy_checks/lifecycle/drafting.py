"""``policy-check features init``: a ``FEATURE.toml`` for every feature that lacks one.

Each record is filled from what the tree knows, and only from that:

- ``owner`` and ``tracking_issue``: what the feature's ``README.md`` states in its
  prose, outside code blocks, after a label. Accepted forms are ``Owner: @login``,
  a link to ``https://github.com/login``, ``Tracking issue: #123``,
  ``Tracking: [#123](...)``, a link to
  ``https://github.com/owner/repo/issues/123``, and ``owner/repo#123``. They are
  read with string code and patterns that run in linear time. A value is kept only
  when `policy_checks.model.records` accepts it, by GitHub's rules for logins and
  references. Several different values are no answer.
- ``admitted``: the day (UTC) of the first commit that added a file to the
  directory. It comes from ``git log --no-renames --diff-filter=A --reverse``. One
  process serves every feature, and git runs with a list of arguments. In a
  shallow clone that commit is not the first one, so no date is taken. Without
  git, or outside a repository, there are no dates.
- ``owner``, when the README names none and the first commit's author e-mail is
  GitHub's no-reply address. That address holds the login
  (``12345+login@users.noreply.github.com``). Git knows any other author by name
  and e-mail only, not by login. The owner is then left for a person.

Some fields the tree does not say: ``kind``, ``target_release``, ``target_date``,
``apis``, ``backends``, ``auto_routing``, and any of the above it did not find.
Each is written as a commented-out line with a TODO. So the record parses, and
EXP009 keeps asking for each until a person fills it in.

Values are written with TOML's escaping. Every record is parsed back with
`policy_checks.model.records.parse` before it is written. A value the record would
not accept is left out instead. Text from the tree, such as an author's name,
appears only in comments. Every character that is not printable is replaced.

A file is created exclusively (``open(..., "x")``). An existing ``FEATURE.toml``,
or anything by that name, is never overwritten. So a second run writes nothing.
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..model import records as features
from ..model.records import FIELDS, RECORD, TrackingRef, is_login, number_problem, parse_cross_repo_ref, repository_problem
from ..model.window import WINDOW_IN_WORDS, default_deadline
from ..model.markers import README

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

GIT = "git"  # the program run for dates (tests point it elsewhere to run "without git")
_GIT_TIMEOUT = 120  # seconds: one log of the experimental package's history

# A label, then a colon: "Owner:", "**Owners**:", "Tracking issue:", "tracking-issue:".
# Literal words anchor every match, and the runs after them are of distinct characters:
# linear in the line.
_OWNER_LABEL = re.compile(r"(?<![A-Za-z0-9_-])owners?(?![A-Za-z0-9_-])[*_]*[ \t]*:", re.I)
_TRACKING_LABEL = re.compile(r"(?<![A-Za-z0-9_-])tracking(?:[ _-]issues?)?(?![A-Za-z0-9_-])[*_]*[ \t]*:", re.I)
_GITHUB = "https://github.com/"
_NOREPLY = re.compile(r"(?:[0-9]{1,20}\+)?([A-Za-z0-9-]{1,39})@users\.noreply\.github\.com", re.I)
_HEX = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
_REMOTES = ("https://github.com/", "git@github.com:", "ssh://git@github.com/")  # how a GitHub remote starts
MAX_COMMENT = 60  # characters of text from the tree shown in a comment

TODO = {
    "kind": ('kind = "api"', '"api", "backend" or "both": what the feature adds'),
    "owner": ('owner = ""', "the GitHub login of the person who answers for the feature"),
    "tracking_issue": ("tracking_issue = 0", 'the tracking issue: its number, or "owner/repo#N"'),
    "admitted": ("admitted = YYYY-MM-DD", "the day the feature was admitted (a TOML date, no quotes)"),
    "target_release": ('target_release = "X.Y.Z"', "the release the feature should graduate in"),
    "target_date": ("target_date = YYYY-MM-DD", f"the graduation date, at most {WINDOW_IN_WORDS} after `admitted`"),
    "apis": ("apis = []", 'the experimental APIs, such as ["flashinfer.name"] ([] when there are none)'),
    "backends": ("backends = []", 'the experimental backends, such as ["mm_bf16:splitk"] ([] when there are none)'),
    "auto_routing": ("auto_routing = false", 'whether backend="auto" may choose the feature'),
}


@dataclass(frozen=True)
class FirstCommit:
    """The first commit that added a file to a feature's directory."""

    commit: str
    day: dt.date  # the author date, in UTC
    name: str
    email: str


@dataclass
class History:
    """What git says about the features' directories: their first commits.

    When git cannot say, ``why`` holds the reason.
    """

    first: dict[str, FirstCommit] = field(default_factory=dict)
    this_repo: str | None = None  # "owner/name" of the ``origin`` remote on GitHub
    why: str | None = None
    # The commit, when every feature's first commit is one root commit: the whole tree
    # imported at once (an unpacked release, a squashed history), whose date says when
    # the tree was imported, not when each feature was admitted.
    imported: FirstCommit | None = None


@dataclass
class Draft:
    """The record `policy-check features init` writes for one feature."""

    feature: str
    rel: str  # the FEATURE.toml's path from the root
    text: str
    filled: list[str]  # the fields it states, in FIELDS order
    notes: list[str] = field(default_factory=list)

    @property
    def unfilled(self) -> list[str]:
        return [name for name in FIELDS if name not in self.filled]

    def diff(self) -> str:
        """A unified diff creating the file from /dev/null, as ``git diff`` shows a new file."""
        lines = difflib.unified_diff([], self.text.splitlines(keepends=True), "/dev/null", f"b/{self.rel}")
        return "".join(lines)


# --- what the README states ----------------------------------------------------------------

def _ends_token(text: str, end: int, url: bool = False) -> bool:
    """Whether a login or number ends at ``text[end]``.

    It ends when no character follows that would continue it. Such characters are
    ``_``, ``-``, a letter or digit, ``.`` before one, and ``/`` in a URL.
    """
    after = text[end:end + 1]
    if not after:
        return True
    if after.isalnum() or after in "_-" or (url and after == "/"):
        return False
    if after == ".":
        following = text[end + 1:end + 2]
        return not following or not (following.isalnum() or following in "_-")
    return True


def _run(text: str, start: int, allowed, limit: int) -> int:
    """The end of the run of ``allowed`` ASCII characters at ``start``, at most ``limit`` long."""
    end = start
    while end < len(text) and end - start < limit and text[end].isascii() and allowed(text[end]):
        end += 1
    return end


def _value_start(line: str, end: int) -> str:
    """What follows a label: emphasis, spaces and a link's opening bracket left out."""
    return line[end:].lstrip(" \t*_[")


def owner_in(value: str) -> str | None:
    """The login that ``value``, the text after an owner label, starts with.

    It accepts ``@login`` or ``https://github.com/login``. Anything else, such as a
    name or a team, gives None.
    """
    url = value[:len(_GITHUB)].lower() == _GITHUB
    if url:
        value = value[len(_GITHUB):]
    elif value.startswith("@"):
        value = value[1:]
    else:
        return None
    end = _run(value, 0, lambda c: c.isalnum() or c == "-", 40)
    login = value[:end]
    return login if is_login(login) and _ends_token(value, end, url) else None


def tracking_in(value: str, this_repo: str | None) -> int | str | None:
    """The tracking reference that ``value``, the text after a tracking label, starts with.

    It is given as FEATURE.toml writes it. ``#N``, or a link to an issue of
    ``this_repo``, gives ``N``. An issue of another repository gives
    ``"owner/repo#N"``. Anything else gives None.
    """
    if value.startswith("#"):
        end = _run(value, 1, str.isdigit, 10)
        digits = value[1:end]
        if 1 <= len(digits) <= 9 and _ends_token(value, end) and number_problem(int(digits)) is None:
            return int(digits)
        return None
    if value[:len(_GITHUB)].lower() == _GITHUB:
        path = value[len(_GITHUB):]
        owner, _, rest = path.partition("/")
        name, _, rest = rest.partition("/")
        if not rest.startswith("issues/"):
            return None  # a pull request, a repository, a file: not an issue
        end = _run(rest, len("issues/"), str.isdigit, 10)
        digits = rest[len("issues/"):end]
        if not (1 <= len(digits) <= 9 and _ends_token(rest, end, url=True)):
            return None
        if repository_problem(owner, name) is not None or number_problem(int(digits)) is not None:
            return None
        if this_repo is not None and f"{owner}/{name}".lower() == this_repo.lower():
            return int(digits)
        return f"{owner}/{name}#{digits}"
    end = _run(value, 0, lambda c: c.isalnum() or c in "-._/#", 160)
    token = value[:end].rstrip(".")
    if "#" not in token or not _ends_token(value, end):
        return None
    ref, why = parse_cross_repo_ref(token)
    if ref is None:
        return None
    return ref.number if this_repo is not None and ref.repo.lower() == this_repo.lower() else token


@dataclass(frozen=True)
class Stated:
    """What a README states for one field: the value, or why there is none (``note``)."""

    value: object = None
    line: int | None = None
    note: str | None = None


def _stated(found: list[tuple[object, int]], labelled: list[int], what: str) -> Stated:
    """One value from the candidates ``found``, each a (value, line) pair.

    ``labelled`` holds the lines with the label.
    """
    values = {value for value, _ in found}
    if len(values) == 1:
        return Stated(found[0][0], found[0][1])
    if len(values) > 1:
        lines = ", ".join(str(line) for _, line in found[:5])
        return Stated(note=f"{README} states several {what}s (lines {lines}): which one is for a person to say")
    if labelled:
        how = "by a GitHub @login" if what == "owner" else "as #N, owner/repo#N or a link to the issue"
        return Stated(note=f"{README} line {labelled[0]} names the {what}, but not {how}")
    return Stated()


def readme_statements(text: str, this_repo: str | None = None) -> tuple[Stated, Stated]:
    """``(owner, tracking issue)`` as the README ``text`` states them in its prose."""
    owners: list[tuple[object, int]] = []
    trackings: list[tuple[object, int]] = []
    owner_lines: list[int] = []
    tracking_lines: list[int] = []
    for number, line in features.prose_lines(text):
        for match in _OWNER_LABEL.finditer(line):
            owner_lines.append(number)
            login = owner_in(_value_start(line, match.end()))
            if login is not None:
                owners.append((login, number))
        for match in _TRACKING_LABEL.finditer(line):
            tracking_lines.append(number)
            ref = tracking_in(_value_start(line, match.end()), this_repo)
            if ref is not None:
                trackings.append((ref, number))
    return _stated(owners, owner_lines, "owner"), _stated(trackings, tracking_lines, "tracking issue")


# --- what git says ---------------------------------------------------------------------------

def _git(root: Path, *arguments: str) -> bytes | None:
    """git's output, or None when git is missing, fails or hangs.

    It runs git with a list of arguments, never through a shell.
    """
    command = [GIT, "-C", str(root), "-c", "log.showSignature=false", *arguments]
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=_GIT_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _this_repo(root: Path) -> str | None:
    """``owner/name`` of the ``origin`` remote when it is a GitHub repository."""
    out = _git(root, "remote", "get-url", "origin")
    url = out.decode("utf-8", "replace").strip() if out else ""
    start = next((prefix for prefix in _REMOTES if url.startswith(prefix)), None)
    if start is None:
        return None
    path = url[len(start):].rstrip("/")
    path = path[:-len(".git")] if path.endswith(".git") else path
    owner, _, name = path.partition("/")
    return f"{owner}/{name}" if repository_problem(owner, name) is None else None


def noreply_login(email: str) -> str | None:
    """The login in GitHub's no-reply address, or None.

    The address looks like ``[id+]login@users.noreply.github.com``.
    """
    match = _NOREPLY.fullmatch(email)
    return match.group(1) if match and is_login(match.group(1)) else None


def history(root: Path, experimental_dir: str, wanted: set[str]) -> History:
    """The first commit that added a file below each ``experimental_dir/<feature>`` of ``wanted``."""
    inside = _git(root, "rev-parse", "--is-inside-work-tree")
    if inside is None or inside.strip() != b"true":
        return History(why="no git history here (not a work tree, or no git)")
    if (_git(root, "rev-parse", "--is-shallow-repository") or b"").strip() == b"true":
        return History(this_repo=_this_repo(root),
                       why="a shallow clone, whose first commit dates nothing (`git fetch --unshallow` first)")
    out = _git(root, "log", "--no-renames", "--diff-filter=A", "--reverse", "-z", "--name-only", "--relative",
               "--format=%x01%H%x00%aI%x00%an%x00%ae", "--", experimental_dir)
    if out is None:
        return History(this_repo=_this_repo(root), why="`git log` failed")
    found = History(this_repo=_this_repo(root))
    prefix = experimental_dir.rstrip("/") + "/"
    tokens = out.split(b"\0")
    current, first_file, index = None, False, 0
    while index < len(tokens):
        token = tokens[index]
        head = token.lstrip(b"\n")
        if head[:1] == b"\x01" and _HEX.fullmatch(head[1:]) and index + 3 < len(tokens):
            when = _utc_day(tokens[index + 1])
            if when is not None:
                name, email = (tokens[index + k].decode("utf-8", "replace") for k in (2, 3))
                current = FirstCommit(head[1:].decode("ascii"), when, name, email)
                first_file, index = True, index + 4
                continue
        if current is not None and token:
            path = os.fsdecode(token[1:] if first_file and token[:1] == b"\n" else token)
            first_file = False
            if path.startswith(prefix):
                feature = path[len(prefix):].split("/", 1)[0]
                if feature in wanted and feature not in found.first:
                    found.first[feature] = current
        index += 1
    firsts = {c.commit: c for c in found.first.values()}
    if len(firsts) == 1:
        [only] = firsts.values()
        parents = _git(root, "rev-list", "--parents", "-n", "1", only.commit)
        if parents is not None and len(parents.split()) == 1:  # no parent: the repository's first commit
            found.imported = only
    return found


def _utc_day(stamp: bytes) -> dt.date | None:
    try:
        moment = dt.datetime.fromisoformat(stamp.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    if moment.tzinfo is None:
        return moment.date()
    return moment.astimezone(dt.timezone.utc).date()


# --- the record ------------------------------------------------------------------------------

def toml_string(text: str) -> str:
    """``text`` as a TOML basic string.

    Quotes, backslashes, control and non-ASCII characters are escaped.
    """
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\uFFFD")  # a lone surrogate is no character TOML can hold
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04X}")
        else:
            out.append(f"\\U{code:08X}")
    out.append('"')
    return "".join(out)


def comment_text(text: str) -> str:
    """Text from the tree, fit for a TOML comment.

    It keeps printable characters only, at most `MAX_COMMENT` of them. Control,
    format and line-separating characters go.
    """
    shown = "".join(c if c.isprintable() else "?" for c in text)
    return shown if len(shown) <= MAX_COMMENT else shown[:MAX_COMMENT - 3] + "..."


def _value(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(toml_string(item) for item in value) + "]"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return toml_string(str(value))


def render(feature: str, values: dict[str, tuple[object, str]], todo_notes: dict[str, str]) -> str:
    """The FEATURE.toml text.

    ``values`` maps a field to (value, where it came from); each becomes a field.
    The other fields become commented-out lines with a TODO. ``todo_notes`` gives
    a TODO its reason.
    """
    lines = [
        f"# The record of the experimental feature {feature} (docs/experimental.rst, \"Admission\").",
        "# Written by `policy-check features init` from what the tree states. A commented-out field",
        "# is one the tree does not state: fill it in and uncomment it; `policy-check run` (EXP009)",
        "# asks for each until then.",
        "",
    ]
    for name in FIELDS:
        if name in values:
            value, source = values[name]
            lines.append(f"{name} = {_value(name, value)}  # {source}")
            continue
        example, what = TODO[name]
        if name == "target_date" and "admitted" in values:
            example = f"target_date = {default_deadline(values['admitted'][0]).isoformat()}"
            what += " (this date is the default deadline)"
        note = todo_notes.get(name)
        lines.append(f"# {example}  # TODO: {what}" + (f"; {note}" if note else ""))
    return "\n".join(lines) + "\n"


def _accepted(feature: str, text: str, values: dict[str, tuple[object, str]]) -> list[str]:
    """The fields of ``values`` that must be left out.

    These are the fields the record ``text`` does not give back as written. Fields
    the record reads with a problem count too.
    """
    try:
        tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return list(values)
    record = features.parse(feature, text)
    wrong = []
    for name, (value, _) in values.items():
        got = features.field_value(record, name)
        if isinstance(got, TrackingRef):
            got = got.number if got.repo is None else f"{got.repo}#{got.number}"
        problems = [p for p in record.problems if getattr(p, "key", None) == name and name not in record.absent]
        if got != value or problems:
            wrong.append(name)
    return wrong


def draft(feature: str, rel_dir: str, readme: str | None, first: FirstCommit | None, this_repo: str | None,
          why_no_date: str | None = None, inferred=None, imported: bool = False) -> Draft:
    """The record of one feature.

    It comes from the README's text, the first commit of the feature's directory,
    and what the code says. `imported` means that commit imported the whole tree.
    Its date is then no admission date. `inferred` is a
    `policy_checks.lifecycle.inference.Inferred`.
    """
    values: dict[str, tuple[object, str]] = {}
    notes: dict[str, str] = {}
    if inferred is not None:
        _from_code(values, notes, inferred)
    owner = tracking = Stated()
    if readme is not None:
        owner, tracking = readme_statements(readme, this_repo)
    if owner.value is not None:
        values["owner"] = (owner.value, f"{README} line {owner.line}")
    elif owner.note:
        notes["owner"] = owner.note
    if tracking.value is not None:
        values["tracking_issue"] = (tracking.value, f"{README} line {tracking.line}")
    elif tracking.note:
        notes["tracking_issue"] = tracking.note
    if first is not None and imported:
        notes["admitted"] = (f"{first.commit[:12]} ({first.day.isoformat()}) imported the whole tree in one commit: "
                             "its date is not when this feature was admitted")
    elif first is not None:
        values["admitted"] = (first.day, f"the first commit adding files here, {first.commit[:12]}")
        if "owner" not in values and "owner" not in notes:
            login = noreply_login(first.email)
            if login is not None:
                values["owner"] = (login, f"the author of {first.commit[:12]} (GitHub no-reply e-mail)")
            else:
                notes["owner"] = (f"the first commit's author, {comment_text(first.name)}, has no GitHub login "
                                  "git knows")
    elif why_no_date:
        notes["admitted"] = why_no_date
    text = render(feature, values, notes)
    for _ in range(len(FIELDS)):
        wrong = _accepted(feature, text, values)
        if not wrong:
            break
        for name in wrong:  # never write a value the record would not accept
            del values[name]
            notes[name] = "the value found could not be written as one"
        text = render(feature, values, notes)
    return Draft(feature, f"{rel_dir}/{RECORD}", text, [name for name in FIELDS if name in values],
                 [f"{name}: {note}" for name, note in notes.items()])


def _from_code(values: dict, notes: dict, inferred) -> None:
    """kind, apis, backends and auto_routing as the code states them (`inference`)."""
    kind = inferred.kind
    if kind is None:
        return
    values["kind"] = (kind, "the code: " + ("experimental APIs and backends" if kind == "both" else
                                            "experimental APIs only" if kind == "api" else "experimental backends only"))
    values["apis"] = (tuple(sorted(inferred.apis)), "@flashinfer_experimental_api functions and classes of the feature"
                      if inferred.apis else "the code marks no experimental API of the feature")
    values["backends"] = (tuple(sorted(inferred.backends)), "@experimental_backend checkers in backend_requirement"
                          if inferred.backends else "no @experimental_backend checker of the feature in a mapping")
    routing = inferred.auto_routing
    if routing is None:
        notes["auto_routing"] = "a backend's heuristic_func could not be read"
    else:
        values["auto_routing"] = (routing, "a heuristic (or none) that lets backend=\"auto\" choose a backend"
                                  if routing else ("an API is called by name" if not inferred.backends
                                                   else "the heuristic never names the backend"))


def _readme_text(directory: Path) -> str | None:
    path = directory / README
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read(features.MAX_README_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


def code_facts(root: Path, settings):
    """A function giving what the code says of each feature (`inference.infer`).

    It computes on the first call only. So nothing is parsed when no record or
    README is missing.
    """
    from . import inference

    known: list = []

    def get() -> dict:
        if not known:
            known.append(inference.infer(root, settings))
        return known[0]

    return get


def drafts(root: Path, settings, code=None) -> tuple[list[Draft], int, str | None]:
    """``(drafts, features that have a record, why there are no dates)``.

    It drafts a record for every feature whose directory holds no
    ``FEATURE.toml``. Features are found as EXP009 and the board see them. `code`
    is `code_facts`' function; by default it makes one of its own.
    """
    from ..model.project import Project  # which files count, as for the checker

    def no_facts(source):  # no Python file's facts are read
        raise AssertionError(source)

    project = Project(root, settings, no_facts)
    lacking, having = [], 0
    for directory, rel, _ in features.feature_directories(root, settings, project.excluded):
        if os.path.lexists(directory / RECORD):
            having += 1
        else:
            lacking.append((directory, rel))
    if not lacking:
        return [], having, None
    code = code or code_facts(root, settings)
    known = history(root, settings.experimental_dir, {directory.name for directory, _ in lacking})
    imported = known.imported is not None and len(known.first) > 1
    made = [draft(directory.name, rel, _readme_text(directory), known.first.get(directory.name), known.this_repo,
                  known.why or "no commit adds a file here yet", code().get(directory.name), imported)
            for directory, rel in lacking]
    why = known.why
    if imported:
        why = (f"every feature's first commit is {known.imported.commit[:12]} ({known.imported.day.isoformat()}), "
               "the repository's first: the history holds one commit for the whole tree, so it dates no admission; "
               "`admitted` is left for a person")
    return made, having, why


# The README a feature without one gets: a heading on each of the four parts of the user
# contract (docs/experimental.rst, "What each experimental feature documents"), which EXP009
# reads, each with a TODO for a person and what the code says where it says something.
SKELETON_HEADINGS = ("What is experimental", "Supported cases and limits", "Gates", "Automatic routing")


@dataclass
class Skeleton:
    """A README.md `policy-check features init` writes for a feature that has none."""

    feature: str
    rel: str
    text: str

    def diff(self) -> str:
        lines = difflib.unified_diff([], self.text.splitlines(keepends=True), "/dev/null", f"b/{self.rel}")
        return "".join(lines)


def skeleton(feature: str, rel_dir: str, inferred=None) -> Skeleton:
    """The README skeleton of one feature.

    `inferred` (`inference.Inferred`) fills in the APIs and backends the code
    marks. They are written as code spans.
    """
    apis = sorted(inferred.apis) if inferred is not None else []
    backends = sorted(inferred.backends) if inferred is not None else []
    named = [f"- experimental API `{comment_text(a)}`" for a in apis]
    named += [f"- experimental backend `{comment_text(b.split(':', 1)[1])}` of `{comment_text(b.split(':', 1)[0])}`"
              for b in backends]
    body = {
        "What is experimental": (named or ["- TODO: the experimental APIs and backends this feature adds."]) + [
            "", "TODO: what each does, and that it may change or disappear without deprecation."],
        "Supported cases and limits": ["TODO: the devices, dtypes and shapes it supports, and what it refuses."],
        "Gates": ["TODO: how a user opts in (calling the API, or naming the backend) and the warning it emits."],
        "Automatic routing": ["TODO: whether `backend=\"auto\"` may choose it, and behind which gate."],
    }
    lines = [f"# Experimental: {comment_text(feature)}", "",
             "Written by `policy-check features init`: fill in each TODO (docs/experimental.rst, "
             "\"What each experimental feature documents\").", ""]
    for heading in SKELETON_HEADINGS:
        lines += [f"## {heading}", "", *body[heading], ""]
    return Skeleton(feature, f"{rel_dir}/{README}", "\n".join(lines).rstrip("\n") + "\n")


def skeletons(root: Path, settings, code=None) -> list[Skeleton]:
    """A README skeleton for every feature whose directory holds no README.md."""
    from ..model.project import Project

    def no_facts(source):
        raise AssertionError(source)

    project = Project(root, settings, no_facts)
    lacking = [(directory, rel) for directory, rel, _ in features.feature_directories(root, settings, project.excluded)
               if not os.path.lexists(directory / README)]
    if not lacking:
        return []
    code = code or code_facts(root, settings)
    return [skeleton(directory.name, rel, code().get(directory.name)) for directory, rel in lacking]


def write(root: Path, made) -> bool:
    """Create the file of a `Draft` or a `Skeleton`.

    Returns False, writing nothing, when something by that name exists.
    """
    try:
        with open(root / made.rel, "x", encoding="utf-8", newline="\n") as handle:
            handle.write(made.text)
    except FileExistsError:
        return False
    return True
