"""The feature record: ``flashinfer/experimental/<feature>/FEATURE.toml``, read and
validated in one place.

Every experimental feature carries a record. It says who answers for the feature, where
it is tracked and when it must graduate (docs/experimental.rst, "Admission"). Several
readers use it. The checker's EXP009 fails a tree whose record is incomplete. The bot's
weekly review compares the record with its tracking issue. Any later command that lists,
graduates or removes features reads it too. All of them read it through `parse` or
`read`. So a record one of them accepts, the others accept too. GitHub's own rules for
the names in a record are defined here once: logins, repository names, issue references.
The bot's parsers of PR bodies reuse the pieces.

Nothing here raises on odd input. The result holds what could be read plus a list of
problems. Each problem is worded for a contributor: what is wrong and what to write
instead. Text from the file appears in a problem only through the caller's ``quote``
function. The bot passes an inert Markdown code span. The checker passes `repr`, which is
printable on a terminal. Every regex runs in time linear in its input. The bot reads
records at the default branch as untrusted text. Nothing here imports the bot or
PyGithub.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from . import markers, walk
from .markdown_lines import atx_heading, fenced
from .window import WINDOW_IN_WORDS, default_deadline

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

KINDS = ("api", "backend", "both")

# A GitHub login (user or organisation): ASCII letters, digits and single hyphens, at most
# 39 characters, neither starting nor ending with a hyphen. Use with match().
LOGIN_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}\Z")
LOGIN_RULE = "letters, digits and single hyphens, at most 39 characters, not starting or ending with a hyphen"

# The pieces of a tracking reference, for full matches here and for searches in PR bodies
# (policy_checks.bot.parsers adds what a search needs around them). Owners are logins, so
# no "_" or "."; repository names may hold both. An issue number is at most nine ASCII
# digits, not followed by a tenth (int() refuses strings of more than 4,300 digits, and
# GitHub links only ASCII digits).
OWNER_CHARS = r"[A-Za-z0-9-]+"
NAME_CHARS = r"[A-Za-z0-9._-]+"
ISSUE_NUMBER = r"([0-9]{1,9})(?![0-9])"
CROSS_REPO_REF = rf"({OWNER_CHARS})/({NAME_CHARS})#{ISSUE_NUMBER}"  # groups: owner, name, number
MAX_ISSUE = 999_999_999
MAX_REPO_NAME = 100

_NAME_RE = re.compile(NAME_CHARS)
# "X.Y.Z" and an optional suffix (0.8.0rc1, 0.8.0.post1, 0.8.0+cu124). The suffix starts
# with a non-digit, so the last number and the suffix cannot split a run of digits two ways.
_VERSION_RE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+(?:[A-Za-z.+-][A-Za-z0-9.+-]*)?")
_DOTTED_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # \w excludes ".": one way to split
_PAIR_RE = re.compile(r"[A-Za-z_][\w.]*:[\w.-]+")  # "api:backend"; [\w.] excludes ":"


@dataclass(frozen=True)
class TrackingRef:
    """A tracking issue: its number and, for another repository, ``owner/name``."""

    number: int
    repo: str | None = None

    def render(self, this_repo: str) -> str:
        if self.repo is None or self.repo.lower() == this_repo.lower():
            return f"#{self.number}"
        return f"{self.repo}#{self.number}"


def is_login(text: str) -> bool:
    return bool(LOGIN_RE.match(text))


def issue_number(digits: str) -> int | None:
    """The issue that digits matched by `ISSUE_NUMBER` name; None for 0, which no issue has."""
    number = int(digits)
    return number if number >= 1 else None


def number_problem(number: int) -> str | None:
    """Why ``number`` cannot be an issue number; None when it can."""
    if number < 1:
        return "issue numbers start at 1"
    return "issue numbers have at most nine digits" if number > MAX_ISSUE else None


def repository_problem(owner: str, name: str) -> str | None:
    """Why ``owner/name`` cannot be a GitHub repository, worded without echoing it; None when it can."""
    if not is_login(owner):
        return f"the owner is not a GitHub user or organisation ({LOGIN_RULE}; no `_`)"
    if not _NAME_RE.fullmatch(name) or name in (".", "..") or len(name) > MAX_REPO_NAME:
        return (f"the repository name is not one GitHub allows (letters, digits, `.`, `_` and `-`, "
                f"at most {MAX_REPO_NAME} characters)")
    return None


def parse_cross_repo_ref(text: str) -> tuple[TrackingRef | None, str | None]:
    """Read exactly ``owner/name#N``: ``(ref, None)``, or ``(None, why)`` worded without
    echoing the text.

    It accepts what `CROSS_REPO_REF` matches, when the owner is a login and the number is
    an issue's. String code takes the parts apart. So the reason can name the part that
    is wrong.
    """
    owner, slash, rest = text.partition("/")
    name, sharp, digits = rest.rpartition("#")
    if not (slash and sharp):
        return None, 'it is not of the form "owner/repo#N"'
    why = repository_problem(owner, name)
    if why is None and not (digits.isascii() and digits.isdigit()):
        why = "the issue number is not a number"
    if why is None:
        why = number_problem(int(digits)) if len(digits) <= 9 else "issue numbers have at most nine digits"
    return (None, why) if why else (TrackingRef(int(digits), f"{owner}/{name}"), None)


class Problem(str):
    """One problem of a record, worded for a contributor; also the field it concerns and that field's line."""

    key: str | None  # the field; None for the file as a whole
    line: int  # 1-based line of the field in the file; 1 when it is missing or unknown

    def __new__(cls, text: str, key: str | None = None, line: int = 1) -> Problem:
        problem = super().__new__(cls, text)
        problem.key, problem.line = key, line
        return problem


@dataclass
class FeatureRecord:
    """A parsed ``FEATURE.toml``; a field that is missing or malformed is ``None``.

    ``target_release`` is the exception. A string that is not a version is kept, and is a
    problem. The review compares it with the tracking issue's.
    """

    name: str
    kind: str | None = None
    owner: str | None = None  # the login, without "@"
    tracking: TrackingRef | None = None
    admitted: dt.date | None = None
    target_release: str | None = None
    target_date: dt.date | None = None
    apis: tuple[str, ...] | None = None
    backends: tuple[str, ...] | None = None
    auto_routing: bool | None = None
    problems: list[str] = field(default_factory=list)
    # The fields the file does not set at all (a missing field, rather than a wrong value):
    # `record_lacks` reports those where the record's absence would be reported too.
    absent: tuple[str, ...] = ()

    @property
    def deadline(self) -> dt.date | None:
        """The graduation deadline before extensions: the target date, else the end of the admission window."""
        if self.target_date is not None:
            return self.target_date
        return default_deadline(self.admitted) if self.admitted is not None else None


# What to write for each field, told to a contributor who left it out.
_MISSING = {
    "kind": 'add `kind = "api"`, `"backend"` or `"both"`: what the feature adds',
    "owner": 'add `owner = "login"`: the GitHub login of the person who answers for the feature',
    "tracking_issue": 'add `tracking_issue = N` (an issue of this repository) or `"owner/repo#N"`',
    "admitted": "add `admitted = YYYY-MM-DD` (a TOML date, no quotes): the day the feature was admitted",
    "target_release": 'add `target_release = "X.Y.Z"`: the release the feature should graduate in',
    "target_date": f"add `target_date = YYYY-MM-DD` (a TOML date, no quotes), at most {WINDOW_IN_WORDS} "
                   "after `admitted`",
    "apis": 'add `apis = ["flashinfer.name"]`: the experimental APIs (`[]` when there are none)',
    "backends": 'add `backends = ["api:backend"]`: the experimental backends (`[]` when there are none)',
    "auto_routing": 'add `auto_routing = true` or `false`: whether `backend="auto"` may choose the feature',
}
_DATE = "a TOML date such as 2026-11-02 (no quotes, no time)"


def _type_name(value: object) -> str:
    """How TOML calls the type of a value, for "must be X, not Y"."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, dt.datetime):
        return "a date with a time"
    for kind, name in ((str, "a string"), (int, "a number"), (float, "a number"), (dt.date, "a date"),
                       (dt.time, "a time"), (list, "a list"), (dict, "a table")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _is(value: object, kind: type) -> bool:
    """isinstance, with TOML's distinctions: a bool is no number, a date with a time no date."""
    if isinstance(value, bool) and kind is not bool:
        return False
    if kind is dt.date and isinstance(value, dt.datetime):
        return False
    return isinstance(value, kind)


def _key_lines(text: str) -> dict[str, int]:
    """The line of each ``key =`` that starts a line (first occurrence), read with string code."""
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        key, equals, _ = line.partition("=")
        if equals:
            lines.setdefault(key.strip(), number)
    return lines


class _Reader:
    """Fills a record from the TOML table, collecting problems."""

    def __init__(self, record: FeatureRecord, data: dict, text: str, quote: Callable[[str], str]):
        self.record, self.data, self.text, self.quote = record, data, text, quote
        self._lines: dict[str, int] | None = None

    def problem(self, key: str | None, message: str) -> None:
        line = 1
        if key is not None and key in self.data:
            if self._lines is None:
                self._lines = _key_lines(self.text)
            line = self._lines.get(key, 1)
        self.record.problems.append(Problem(message, key, line))

    def missing(self, key: str) -> None:
        self.record.absent += (key,)
        self.problem(key, f"FEATURE.toml has no `{key}`: {_MISSING[key]}")

    def typed(self, key: str, kind: type, what: str):
        """The value of ``key`` if it has the type ``kind``, else None and a problem."""
        if key not in self.data:
            self.missing(key)
            return None
        value = self.data[key]
        if not _is(value, kind):
            self.problem(key, f"FEATURE.toml `{key}` must be {what}, not {_type_name(value)}")
            return None
        return value

    def strings(self, key: str, pattern: re.Pattern, what: str, example: str) -> tuple[str, ...] | None:
        values = self.typed(key, list, f'a list of strings such as ["{example}"]')
        if values is None:
            return None
        for value in values:
            if not isinstance(value, str):
                self.problem(key, f"FEATURE.toml `{key}` must hold strings, not {_type_name(value)}")
                return None
            if not pattern.fullmatch(value):
                self.problem(key, f"FEATURE.toml `{key}` entry {self.quote(value)} is not {what} such as `{example}`")
                return None
        return tuple(values)

    def read(self) -> None:
        record, quote = self.record, self.quote
        kind = self.typed("kind", str, '"api", "backend" or "both"')
        if kind is not None:
            if kind in KINDS:
                record.kind = kind
            else:
                self.problem("kind", f'FEATURE.toml `kind` must be "api", "backend" or "both", not {quote(kind)}')
        owner = self.typed("owner", str, 'a GitHub login in quotes, such as "octocat"')
        if owner is not None:
            login = owner[1:] if owner.startswith("@") else owner
            if is_login(login):
                record.owner = login
            else:
                self.problem("owner", f"FEATURE.toml `owner` is not a GitHub login: {quote(owner)} ({LOGIN_RULE})")
        self.read_tracking()
        record.admitted = self.typed("admitted", dt.date, _DATE)
        release = self.typed("target_release", str, 'a version in quotes, such as "0.8.0"')
        if release is not None:
            record.target_release = release  # kept even when malformed: see FeatureRecord
            if not _VERSION_RE.fullmatch(release):
                self.problem("target_release", "FEATURE.toml `target_release` must be a version X.Y.Z such as "
                                               f"`0.8.0` or `0.8.0rc1`, not {quote(release)}")
        record.target_date = self.typed("target_date", dt.date, _DATE)
        record.apis = self.strings("apis", _DOTTED_RE, "a dotted path", "flashinfer.gated_rmsnorm")
        record.backends = self.strings("backends", _PAIR_RE, 'an "api:backend" pair', "mm_bf16:splitk")
        record.auto_routing = self.typed("auto_routing", bool, "true or false")
        self.read_consistency()

    def read_tracking(self) -> None:
        value = self.data.get("tracking_issue")
        wanted = 'an issue number such as 12 (an issue of this repository) or "owner/repo#12"'
        if "tracking_issue" not in self.data:
            self.missing("tracking_issue")
        elif _is(value, int):
            why = number_problem(value)
            if why is None:
                self.record.tracking = TrackingRef(value)
            else:
                self.problem("tracking_issue", f"FEATURE.toml `tracking_issue` is not an issue number: {why}")
        elif isinstance(value, str):
            self.record.tracking, why = parse_cross_repo_ref(value)
            if why:
                self.problem("tracking_issue", f"FEATURE.toml `tracking_issue` {self.quote(value)} is not a tracking "
                                               f"reference: {why}; write {wanted}")
        else:
            self.problem("tracking_issue", f"FEATURE.toml `tracking_issue` must be {wanted}, not {_type_name(value)}")

    def read_consistency(self) -> None:
        """The rules between fields: the admission window, and what each kind needs."""
        record = self.record
        admitted, target = record.admitted, record.target_date
        if admitted is not None and target is not None:
            if target < admitted:
                self.problem("target_date", f"FEATURE.toml `target_date` {target} is before `admitted` {admitted}")
            elif target > default_deadline(admitted):
                self.problem("target_date", f"FEATURE.toml `target_date` {target} is more than {WINDOW_IN_WORDS} "
                                            f"after `admitted` {admitted}: at the latest {default_deadline(admitted)}")
        if record.kind in ("api", "both") and record.apis == ():
            self.problem("apis", f'FEATURE.toml: a feature of kind "{record.kind}" needs at least one entry in `apis`')
        if record.kind in ("backend", "both") and record.backends == ():
            self.problem("backends",
                         f'FEATURE.toml: a feature of kind "{record.kind}" needs at least one entry in `backends`')


def parse(name: str, text: str, quote: Callable[[str], str] = repr) -> FeatureRecord:
    """Read the record of feature ``name`` from the text of its FEATURE.toml.

    Every field that is missing or malformed is ``None`` in the result and a `Problem` in
    its ``problems``; ``quote`` renders the text from the file that a problem shows.
    """
    record = FeatureRecord(name=name)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # The message can quote the file ("Cannot declare ('<key>',) twice"): quoted.
        record.problems.append(Problem(f"FEATURE.toml is not valid TOML: {quote(str(exc))}"))
        return record
    except ValueError:  # an integer of more than 4,300 digits
        record.problems.append(Problem("FEATURE.toml is not valid TOML: a number is too long"))
        return record
    except RecursionError:  # arrays or inline tables nested a thousand deep
        record.problems.append(Problem("FEATURE.toml is not valid TOML: values are nested too deeply"))
        return record
    _Reader(record, data, text, quote).read()
    return record


def read(path: Path, quote: Callable[[str], str] = repr) -> FeatureRecord:
    """Read the FEATURE.toml at ``path``; the feature is its directory. A file that
    cannot be read is a problem."""
    name = path.parent.name
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return FeatureRecord(name=name, problems=[Problem("FEATURE.toml cannot be read: it is not UTF-8 text")])
    except OSError as error:
        return FeatureRecord(name=name, problems=[Problem(f"FEATURE.toml cannot be read: {error.strerror or error}")])
    return parse(name, text, quote)


def is_feature_name(name: str) -> bool:
    """Whether a directory of the experimental package by this name is a feature. One
    whose name starts with ``_`` or ``.`` holds shared code (or a tool's state)."""
    return not name.startswith(("_", "."))


# A graduated feature leaves a shim package at its old path for one release; its
# ``__init__`` binds this name to the stable home (``policy-check graduate`` writes it).
SHIM_MARKER = markers.SHIM_MARKER
MAX_SHIM_FILE_BYTES = 1024 * 1024  # a shim module is a few hundred bytes; a larger file is read as code


def directory_sources(feature_dir: Path) -> dict[str, str | None]:
    """Every file under ``feature_dir`` (``__pycache__`` left out), by its path relative to the
    directory, with its text; None for a file that cannot be read (or is too large to be a shim)."""
    sources: dict[str, str | None] = {}
    problems: walk.Problems = []
    for entry in walk.walk(feature_dir, enter=lambda entry: entry.name != "__pycache__", problems=problems):
        if entry.kind == walk.DIRECTORY or entry.name == "__pycache__":
            continue
        data = None
        if entry.kind == walk.FILE:  # a link is no re-export module, whatever it points at
            try:
                data = _read_bounded(entry.path, MAX_SHIM_FILE_BYTES)
            except OSError:
                pass
        sources[entry.rel] = data.decode("utf-8", "replace") if data is not None else None
    return {"": None} if problems else sources


def _read_bounded(path: str, limit: int) -> bytes | None:
    """The bytes of `path`, or None when it holds more than `limit`."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def binds_shim_marker(feature_dir: Path) -> bool:
    """Whether the directory's ``__init__.py`` binds ``__graduated_to__`` (a shim, pure or not)."""
    try:
        return markers.shim_home((feature_dir / "__init__.py").read_bytes()) is not None
    except OSError:
        return False


def shim_problem(feature_dir: Path, experimental_package: str | None = None) -> str | None:
    """Why a directory whose ``__init__`` binds ``__graduated_to__`` is not a pure
    re-export shim. None when it is one. See `policy_checks.model.markers.shim_problem`."""
    return markers.shim_problem(directory_sources(feature_dir), experimental_package)


def graduated_to(feature_dir: Path, experimental_package: str | None = None) -> str | None:
    """The stable home a graduated feature's shim package names, or None for a feature.

    Only a pure re-export shim is graduated (`policy_checks.model.markers.is_pure_shim`).
    A directory may bind ``__graduated_to__`` but hold anything else: a record, a new
    module, code beside the re-exports. Such a directory is still a feature.
    """
    if not binds_shim_marker(feature_dir):
        return None
    sources = directory_sources(feature_dir)
    if not markers.is_pure_shim(sources, experimental_package):
        return None
    return markers.shim_home(sources["__init__.py"] or "")


# --- what a feature lacks ------------------------------------------------------------------
#
# EXP009, the board (`policy-check features`) and `policy-check features init` ask this code
# which directories are features and what each lacks, so that they cannot disagree. Each
# missing thing is one `Lack`: the record, each of its fields, the README, each of the
# README's four parts, the tests and the example. EXP009 reports one finding per `Lack`,
# whose fingerprint's subject is ``<feature>: <item>``: paying any one item off removes
# exactly its finding and leaves every other finding's fingerprint alone.

# The record's fields, in FEATURE.toml's order.
FIELDS = ("kind", "owner", "tracking_issue", "admitted", "target_release", "target_date", "apis", "backends",
          "auto_routing")
_ATTRIBUTES = {"tracking_issue": "tracking"}  # field -> FeatureRecord attribute, where they differ
RECORD = markers.RECORD  # "FEATURE.toml"
TESTS_ITEM = "tests"
EXAMPLE_ITEM = "example"


def field_value(record: FeatureRecord, name: str) -> object:
    """The record's value of the field ``name`` (None when missing or malformed)."""
    return getattr(record, _ATTRIBUTES.get(name, name))


@dataclass(frozen=True)
class Lack:
    """One thing a feature lacks.

    ``item`` names it: ``FEATURE.toml``, a field, ``README.md``, ``README.md: gates``,
    ``tests``, ``example``. The board lists it. EXP009's fingerprint subject is
    ``<feature>: <item>``. ``message`` says what to do.

    ``in_record`` means a value (or the file) FEATURE.toml holds is wrong. It is reported
    at that file's ``line``. Otherwise the item is missing. It is then reported at the
    feature's `Feature.anchor`, a file that stays put while the items are added.
    """

    item: str
    message: str
    in_record: bool = False
    line: int = 1


def usable(record: FeatureRecord) -> bool:
    """Whether the record says anything: False for a missing, unreadable or non-TOML file
    (every field unknown and a problem of the file as a whole)."""
    if not record.problems or any(field_value(record, name) is not None for name in FIELDS):
        return True
    return all(getattr(problem, "key", None) is not None for problem in record.problems)


def record_lacks(record: FeatureRecord, exists: bool = True) -> list[Lack]:
    """What the record lacks, in `FIELDS` order. With no usable record, that is the
    record itself and every field. So a record added with some fields only removes items.
    Otherwise it is each field that is missing or gets a problem. ``exists`` means the
    file is there; its problems are then reported in it."""
    if not usable(record):
        lacks = [Lack(RECORD, str(problem), exists, getattr(problem, "line", 1)) for problem in record.problems
                 if getattr(problem, "key", None) is None]
        why = "cannot be read" if exists else "is missing"
        return lacks + [Lack(name, f"{RECORD} {why}, so nothing states `{name}`: {_MISSING[name]}")
                        for name in FIELDS]
    lacks = []
    for name in FIELDS:
        problems = [p for p in record.problems if getattr(p, "key", None) == name]
        for problem in problems:
            lacks.append(Lack(name, str(problem), name not in record.absent, getattr(problem, "line", 1)))
        if not problems and field_value(record, name) is None:
            lacks.append(Lack(name, f"{RECORD} has no usable `{name}`: {_MISSING[name]}"))
    return lacks


# The four parts of the user contract every feature's README.md states (docs/experimental.rst,
# "What each experimental feature documents"): part -> (the words a heading names it by, in
# lower case, whole words; what the message lists). "opt-in" is the words "opt" "in".
README_PARTS = {
    "what is experimental": (frozenset({"what", "experimental", "scope"}), "what, experimental or scope"),
    "supported cases and limits": (
        frozenset({"support", "supports", "supported", "unsupported", "limit", "limits", "limitation",
                   "limitations"}),
        "support, supported, unsupported, limits or limitations"),
    "gates": (frozenset({"gate", "gates", "gating", "optin", "opt in"}), "gate, gates, gating or opt-in"),
    "automatic routing": (
        frozenset({"auto", "automatic", "automatically", "autotune", "autotuner", "autotuning"}),
        "auto, automatic or autotuning"),
}
_WORD_RE = re.compile(r"[a-z0-9]+")


def readme_item(part: str) -> str:
    """The item (`Lack.item`) of one of `README_PARTS`: ``README.md: gates``."""
    return f"{markers.README}: {part}"


def _underline(line: str) -> bool:
    """Whether ``line`` is a setext heading's underline (``===`` or ``---``)."""
    stripped = line.strip(" \t")
    return len(line) - len(line.lstrip(" ")) <= 3 and bool(stripped) and stripped in (
        "=" * len(stripped), "-" * len(stripped))


def _lead_in(line: str) -> str | None:
    """The bold text that starts a paragraph (``**Gates.** ...``), or None."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3 or not stripped.startswith("**"):
        return None
    end = stripped.find("**", 2)
    return stripped[2:end] if end > 2 else None


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(number, line)`` of each line of a Markdown text outside fenced code blocks. A
    fence itself is left out. Lines are numbered from 1."""
    lines = (line.expandtabs(4) for line in text.splitlines())
    for number, (line, in_code) in enumerate(fenced(lines), 1):
        if not in_code:
            yield number, line


def markdown_headings(text: str) -> list[str]:
    """The headings of a Markdown text, as the README check reads them. ATX headings are
    ``#`` to ``######`` and a space, up to three spaces in. Setext headings are a
    paragraph underlined with ``===`` or ``---``. ``**bold**`` lead-ins count too. All
    must lie outside fenced code blocks: a ``# comment`` in a shell or Python block is no
    heading. The reading goes line by line, with string code only. It is linear in the
    text."""
    headings: list[str] = []
    paragraph: list[str] = []
    previous = 0
    for number, line in prose_lines(text):
        if number != previous + 1:
            paragraph = []  # a fenced block came between: it ends the paragraph
        previous = number
        if not line.strip():
            paragraph = []
            continue
        if paragraph and _underline(line):
            headings.append(" ".join(paragraph))
            paragraph = []
            continue
        atx = atx_heading(line)
        if atx is not None:
            headings.append(atx[1])
            paragraph = []
            continue
        lead = _lead_in(line)
        if lead is not None:
            headings.append(lead)
        if len(line) - len(line.lstrip(" ")) >= 4 and not paragraph:
            continue  # an indented code block
        paragraph.append(line.strip())
    return headings


def heading_names(heading: str, part: str) -> bool:
    """Whether a heading names one of `README_PARTS` by one of its words (whole words,
    any case: "gated attention" names no gate)."""
    words = _WORD_RE.findall(heading.lower())
    names = README_PARTS[part][0]
    return any(word in names for word in words) or any(
        f"{a} {b}" in names for a, b in zip(words, words[1:]))


def missing_readme_parts(text: str) -> list[str]:
    """The `README_PARTS` no heading of the README ``text`` names, in order."""
    headings = markdown_headings(text)
    return [part for part in README_PARTS if not any(heading_names(h, part) for h in headings)]


MAX_README_BYTES = 4 * 1024 * 1024  # read at most this much of a README


def readme_lacks(feature_dir: Path, rel_dir: str) -> list[Lack]:
    """What the feature's README.md lacks. That is the file (and then each of its parts),
    or the parts no heading names."""
    path = feature_dir / markers.README
    where = f"{rel_dir}/{markers.README}"
    text = None
    if path.is_file():
        try:
            with open(path, "rb") as handle:
                text = handle.read(MAX_README_BYTES).decode("utf-8", "replace")
        except OSError:
            text = None
    if text is None:
        lacks = [Lack(markers.README, f"{where} is missing: add it, with a heading on each of the four parts of "
                                      "docs/experimental.rst, \"What each experimental feature documents\"")]
        return lacks + [Lack(readme_item(part), f"{where} is missing, so nothing states {part}")
                        for part in README_PARTS]
    return [Lack(readme_item(part), f"{where} has no heading on {part} (a heading naming "
                                    f"{README_PARTS[part][1]}; or a **bold** lead-in)")
            for part in missing_readme_parts(text)]


def checkout_lacks(name: str, root: Path, settings, example_texts: Callable[[], Iterable[str]]) -> list[Lack]:
    """What a source checkout lacks; the stable tests are there. It needs the tests under
    ``<experimental tests>/<feature>/`` and an example that mentions the feature."""
    if not (root / settings.stable_tests).is_dir():
        return []  # an unpacked wheel ships neither
    lacks = []
    tests = root / settings.experimental_tests / name
    if not (tests.is_dir() and any(tests.rglob("test_*.py"))):
        lacks.append(Lack(TESTS_ITEM, f"tests under {settings.experimental_tests}/{name}/ are missing: add at least "
                                      "one test_*.py"))
    if not any(name in text for text in example_texts()):
        lacks.append(Lack(EXAMPLE_ITEM, f"a runnable example under {settings.examples}/ that mentions {name} is "
                                        "missing"))
    return lacks


@dataclass
class Feature:
    """One feature directory, its record and what it lacks.

    ``anchor`` is where EXP009 reports what the feature lacks. It is a file that exists
    and stays put while the items are added. That is the ``__init__.py``. Else it is the
    first Python file of the directory at any depth (`python_below`). A directory with no
    Python file uses its ``FEATURE.toml``.

    ``shim_problem`` says why the directory is not a pure shim, though it binds
    ``__graduated_to__``. Otherwise it is None.
    """

    name: str
    path: Path
    rel: str
    anchor: str
    record: FeatureRecord
    lacks: list[Lack]
    shim_problem: str | None = None


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


MAX_FEATURE_ENTRIES = 100_000  # entries looked at while searching a directory for Python


def python_below(directory: Path) -> str | None:
    """The first Python file at any depth below ``directory``, or None. The path is
    relative to ``directory``. The directory's own files come first, then each
    subdirectory in name order. Links are not followed and ``__pycache__`` is not
    entered. The search is bounded."""
    seen = 0
    for entry in walk.walk(directory, enter=lambda entry: entry.name != "__pycache__"):
        seen += 1
        if seen > MAX_FEATURE_ENTRIES:
            return None
        if entry.kind == walk.FILE and entry.name.endswith(".py") and _utf8(entry.name):
            return entry.rel
    return None


def feature_directories(root: Path, settings,
                        excluded: Callable[[str], bool]) -> Iterator[tuple[Path, str, str | None]]:
    """``(directory, rel, shim problem)`` of every feature, sorted by name.

    A feature is a direct subdirectory of the experimental package. Its name starts with
    neither ``_`` nor ``.``. ``excluded`` (a relative path -> bool) keeps it. It holds a
    Python file at any depth, or a ``FEATURE.toml``. ``<feature>/impl/kernel.py`` alone
    makes a feature (`python_below`). It is not the pure re-export shim a graduated
    feature leaves for one release.

    Raises OSError when the package's directory cannot be listed."""
    base = root / settings.experimental_dir
    if not base.is_dir():
        return
    for directory in sorted(base.iterdir(), key=lambda p: p.name):
        rel = f"{settings.experimental_dir}/{directory.name}"
        if not is_feature_name(directory.name) or not directory.is_dir() or excluded(rel):
            continue
        if not ((directory / RECORD).is_file() or python_below(directory) is not None):
            continue
        shim = None
        if binds_shim_marker(directory):
            shim = shim_problem(directory, settings.experimental_package)
            if shim is None:
                continue  # the pure re-export shim a graduated feature leaves for one release
        yield directory, rel, shim


def anchor_of(directory: Path, rel: str) -> str:
    """`Feature.anchor` of the feature directory ``directory`` (``rel`` from the root)."""
    if (directory / "__init__.py").is_file():
        return f"{rel}/__init__.py"
    python = python_below(directory)
    return f"{rel}/{python}" if python is not None else f"{rel}/{RECORD}"


def survey(root: Path, settings, excluded: Callable[[str], bool],
           example_texts: Callable[[], Iterable[str]]) -> list[Feature]:
    """Every feature of the tree at ``root``, with its record and what it lacks. That
    covers the record and its fields (`record_lacks`), and the README and its parts
    (`readme_lacks`). In a source checkout it also covers the tests and an example
    (`checkout_lacks`). ``excluded`` and ``example_texts`` come from the checker's
    project (`policy_checks.model.project.Project`)."""
    found = []
    for directory, rel, shim in feature_directories(root, settings, excluded):
        path = directory / RECORD
        exists = path.is_file()
        if exists:
            record = read(path)
        else:
            record = FeatureRecord(name=directory.name, problems=[Problem(
                f"{RECORD} is missing: add {rel}/{RECORD} (docs/experimental.rst, \"Admission\"; "
                "`policy-check features init` writes it from what the tree knows)")])
        lacks = record_lacks(record, exists) + readme_lacks(directory, rel)
        lacks += checkout_lacks(directory.name, root, settings, example_texts)
        found.append(Feature(directory.name, directory, rel, anchor_of(directory, rel), record, lacks, shim))
    return found
