"""A pull request's change to ``policy-check-baseline.json``.

The change is judged from the file's texts at the PR's base and head commits
(`baseline_texts_change`). Its unified diff (`parse_baseline_patch`) is only a hint of which
modules to look up early.

``policy-check baseline`` writes the baseline at a project's root. It holds one entry a
line, sorted. Each is a JSON object with the keys ``rule``, ``module``, ``scope``,
``subject`` and ``count``.

The diff GitHub lists with the PR's files would say which entries came and went, if it were
the baseline's own. It may not be. A look-alike file ``git mv``-ed onto the name is listed as
a rename, and its patch is against the look-alike. A diff too large to show is left out. So
the bot reads both texts whole.

An entry is known by its fingerprint: rule, module, scope, subject. Counts are compared per
fingerprint. What they grew by is debt added; what they fell by is paid off.

The same rule, scope and subject may be removed under one module and added under another.
That is a rename, neither added nor paid off, when the new module exists at the head commit.
When it does not, the entry names nothing the checker can match: ``baseline.match`` keys on
the module. The bot then lists it apart (``anywhere``). It is debt for a person to look at,
not a rename the bot can vouch for.

A line that is neither an entry nor part of the file's frame is reported as unreadable. A
maintainer must look at it, since the checker may read it differently.

The texts are read as the checker reads the file (`policy_checks.engine.baseline.read`).
That means one JSON document, exactly its keys and version, each entry well formed, none
repeated. A text the checker would refuse is still read a line at a time, as a patch is. So
the comment can name what it holds. The refusal itself is reported as a problem. Everything
runs in time linear in the text.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass, field, replace

from ..engine.baseline import FILE_NAME, KEY, MAX_COUNT, VERSION

BASELINE_FILE = FILE_NAME  # the baseline's path at a project's root (no other path is the baseline)

# The file's format is policy_checks/engine/baseline.py's (``dumps`` writes it, ``read`` holds entries to this
# shape); read a line at a time (a diff, or a text the checker would refuse), each line is checked on its own.
_FIELDS = ("rule", "module", "scope", "subject")
# The lines of the file around the entries: braces, brackets, the version and the list's key.
_FRAME_RE = re.compile(r'[{}\[\]],?|"' + re.escape(KEY) + r'"\s*:\s*\d{1,9}\s*,?|"entries"\s*:\s*\[\s*\]?\s*,?')


@dataclass(frozen=True)
class BaselineEntry:
    """One fingerprint of the baseline.

    In a delta, ``count`` is how many findings changed."""

    rule: str
    module: str
    scope: str
    subject: str
    count: int = 1

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.rule, self.module, self.scope, self.subject

    @property
    def place(self) -> tuple[str, str, str]:
        """The fingerprint without the module: what a rename keeps."""
        return self.rule, self.scope, self.subject


@dataclass
class BaselineDelta:
    """What a patch of the baseline changes."""

    added: list[BaselineEntry] = field(default_factory=list)  # debt added (count: by how much)
    paid: list[BaselineEntry] = field(default_factory=list)  # debt paid off (count: by how much)
    moved: list[BaselineEntry] = field(default_factory=list)  # renamed: the entry under its new module
    unreadable: list[str] = field(default_factory=list)  # added lines that are neither an entry nor the frame


@dataclass
class BaselineChange:
    """A PR's change to the baseline file.

    ``delta`` is None when it could not be read, being too large."""

    adopted: bool  # the PR adds the file: every entry is new debt
    delta: BaselineDelta | None
    # Entries the PR moves under a module that does not exist at the head commit: no rename
    # the bot can vouch for (the checker matches such an entry to nothing), listed as debt.
    anywhere: list[BaselineEntry] = field(default_factory=list)
    problem: str | None = None  # why the checker would refuse the file at the head commit
    unread: str | None = None  # why the bot could not read it (``delta`` is None then)

    @property
    def worth_saying(self) -> bool:
        d = self.delta
        return d is None or bool(d.added or d.paid or d.unreadable or self.anywhere or self.problem)


@dataclass
class BaselineText:
    """One side's baseline.

    It holds entries by fingerprint, lines that are no entry, and the checker's verdict."""

    counts: dict[tuple[str, str, str, str], int]
    unreadable: list[str]  # lines that are neither an entry nor the frame
    problem: str | None = None  # why the checker would refuse the file; None: it reads it


def read_baseline_text(text: str) -> BaselineText:
    """The entries of a baseline file's text.

    They are read as the checker reads them when it can, else a line at a time."""
    problem = _document_problem(text)
    if problem is None:
        counts = {}
        for item in json.loads(text)["entries"]:
            entry = BaselineEntry(*(item[name] for name in _FIELDS), item["count"])
            counts[entry.key] = entry.count
        return BaselineText(counts, [])
    counts, unreadable = {}, []
    for line in text.split("\n"):
        entry = parse_entry(line)
        if entry is None:
            line = line.strip()
            if line and not _FRAME_RE.fullmatch(line):
                unreadable.append(line)
            continue
        counts[entry.key] = counts.get(entry.key, 0) + entry.count
    return BaselineText(counts, unreadable, problem)


def _document_problem(text: str) -> str | None:
    """Why `policy_checks.engine.baseline.read` would refuse this text, or None.

    The checks are the same, run on a string."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        return f"it is not JSON ({type(error).__name__})"
    if not isinstance(document, dict) or set(document) != {KEY, "entries"}:
        return f"it is not a baseline (it must hold exactly the keys {KEY!r} and 'entries')"
    if type(document[KEY]) is not int or document[KEY] != VERSION:
        return f"its format version is not {VERSION}"
    if not isinstance(document["entries"], list):
        return "its 'entries' is not a list"
    seen = set()
    for number, item in enumerate(document["entries"], 1):
        if not isinstance(item, dict) or set(item) != {*_FIELDS, "count"}:
            return f"entry {number} is not an object with exactly the keys rule, module, scope, subject, count"
        if not all(isinstance(item[name], str) for name in _FIELDS) or not item["rule"] or not item["module"]:
            return f"entry {number}: rule, module, scope and subject must be strings (rule and module non-empty)"
        if type(item["count"]) is not int or not 1 <= item["count"] <= MAX_COUNT:
            return f"entry {number}: count must be an integer from 1 to {MAX_COUNT}"
        key = tuple(item[name] for name in _FIELDS)
        if key in seen:
            return f"entry {number} repeats an earlier entry"
        seen.add(key)
    return None


def texts_delta(base: str | None, head: str | None) -> tuple[BaselineDelta, str | None]:
    """What the head's baseline changes from the base's.

    It returns what the head accepts beyond the base's (added, moved). It returns what the head
    stops accepting (paid), and its lines that are no entry (new since the base). It also says
    why the checker would refuse the head's file."""
    old = read_baseline_text(base) if base is not None else BaselineText({}, [])
    new = read_baseline_text(head) if head is not None else BaselineText({}, [])
    grown = [BaselineEntry(*key, n - old.counts.get(key, 0)) for key, n in new.counts.items()
             if n > old.counts.get(key, 0)]
    fallen = [BaselineEntry(*key, n - new.counts.get(key, 0)) for key, n in old.counts.items()
              if n > new.counts.get(key, 0)]
    delta = BaselineDelta()
    delta.added, delta.paid, delta.moved = _pair_moves(grown, fallen)
    known = set(old.unreadable)
    delta.unreadable = [line for line in new.unreadable if line not in known]
    return delta, (new.problem if head is not None else None)


def module_paths(module: str) -> list[str]:
    """The paths whose presence makes an entry's module exist for the checker.

    This follows ``baseline.locator``. They are the dotted module's file or package, else the
    module taken as a path. The answer is empty for a name no file can have."""
    if not module or module.startswith("/") or "\0" in module or ".." in module.split("/"):
        return []
    paths = [module]
    if _DOTTED_RE.fullmatch(module):
        stem = module.replace(".", "/")
        paths = [f"{stem}.py", f"{stem}/__init__.py", module]
    return paths


_DOTTED_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def baseline_texts_change(base: str | None, head: str | None, exists) -> BaselineChange:
    """The PR's change to the baseline, judged from its texts at the base and head commits.

    ``exists(module)`` says whether the module or path an entry names exists at the head
    commit; None means unknown. A moved entry has the same rule, scope and subject under another
    module. It is a rename only when its new module exists. Otherwise it goes to ``anywhere``,
    as debt for a person to look at: the checker matches it to nothing.
    """
    delta, problem = texts_delta(base, head)
    anywhere = [entry for entry in delta.moved if exists(entry.module) is not True]
    delta.moved = [entry for entry in delta.moved if exists(entry.module) is True]
    return BaselineChange(adopted=base is None and head is not None, delta=delta, anywhere=anywhere, problem=problem)


def parse_entry(text: str) -> BaselineEntry | None:
    """One entry line, or None when it is not exactly an entry.

    Indent and a trailing comma are allowed."""
    text = text.strip()
    if text.endswith(","):
        text = text[:-1].rstrip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # bad JSON, an over-long number, deep nesting
        return None
    if not isinstance(data, dict) or set(data) != {*_FIELDS, "count"}:
        return None
    if not all(isinstance(data[name], str) for name in _FIELDS) or not data["rule"] or not data["module"]:
        return None  # as policy_checks/engine/baseline.py reads an entry: rule and module non-empty
    count = data["count"]
    if type(count) is not int or not 1 <= count <= MAX_COUNT:  # bool is an int subclass: not a count
        return None
    return BaselineEntry(*(data[name] for name in _FIELDS), count)


def parse_baseline_patch(patch: str | None) -> BaselineDelta:
    """What a unified diff of the baseline changes.

    That is the entries it adds, pays off and moves, and its unreadable added lines."""
    sides: dict[str, dict[tuple, int]] = {"+": {}, "-": {}}
    delta = BaselineDelta()
    for line in (patch or "").split("\n"):  # a diff's lines end at "\n" only: not at U+2028 inside a string
        sign, text = line[:1], line[1:]
        if sign not in ("+", "-") or text.startswith(sign * 2):  # context, hunk header, ---/+++ header
            continue
        entry = parse_entry(text)
        if entry is None:
            text = text.strip()
            if sign == "+" and text and not _FRAME_RE.fullmatch(text):
                delta.unreadable.append(text)
            continue
        side = sides[sign]
        side[entry.key] = side.get(entry.key, 0) + entry.count
    added, removed = sides["+"], sides["-"]
    grown = [BaselineEntry(*key, n - removed.get(key, 0)) for key, n in added.items() if n > removed.get(key, 0)]
    fallen = [BaselineEntry(*key, n - added.get(key, 0)) for key, n in removed.items() if n > added.get(key, 0)]
    delta.added, delta.paid, delta.moved = _pair_moves(grown, fallen)
    return delta


def _pair_moves(grown: list[BaselineEntry], fallen: list[BaselineEntry]):
    """Split off renames: debt that fell under one module and grew under another at one place.

    Returns (added, paid, moved). Each unit of count is matched at most once, in patch order.
    """
    left = {entry.key: entry.count for entry in fallen}  # keys are unique on each side
    by_place: dict[tuple, deque[BaselineEntry]] = {}
    for entry in fallen:
        by_place.setdefault(entry.place, deque()).append(entry)
    added, moved = [], []
    for entry in grown:
        need = entry.count
        queue = by_place.get(entry.place)
        while need and queue:
            step = min(need, left[queue[0].key])
            need -= step
            left[queue[0].key] -= step
            if not left[queue[0].key]:
                queue.popleft()
            moved.append(replace(entry, count=step))
        if need:
            added.append(replace(entry, count=need))
    paid = [replace(entry, count=left[entry.key]) for entry in fallen if left[entry.key]]
    return added, paid, moved
