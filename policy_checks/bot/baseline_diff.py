"""A pull request's change to ``policy-check-baseline.json``, read from its unified diff.

``policy-check baseline`` writes the baseline at a project's root: one entry a line,
sorted, each a JSON object with the keys ``rule``, ``module``, ``scope``, ``subject`` and
``count``. So the diff GitHub sends with the PR's file listing (the ``patch`` of the file)
already says which entries came and went: the bot reads it and asks for nothing more.

An entry is known by its fingerprint (rule, module, scope, subject). Added and removed
lines with the same fingerprint are netted: what the counts grew by is debt added, what
they fell by is paid off. The same rule, scope and subject removed under one module and
added under another is a rename: moved, neither added nor paid off. An added line that
is neither an entry nor part of the file's frame is reported as unreadable (a maintainer
must look at it: the checker may read it differently); removed lines that are not
entries are ignored. Everything runs in time linear in the patch.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass, field, replace

from ..baseline import FILE_NAME as BASELINE_FILE, KEY, MAX_COUNT

# The file's format is policy_checks/baseline.py's (``dumps`` writes it, ``read`` holds entries to this
# shape); the bot reads single lines of a diff, not the file, so it checks each line on its own.
_FIELDS = ("rule", "module", "scope", "subject")
# The lines of the file around the entries: braces, brackets, the version and the list's key.
_FRAME_RE = re.compile(r'[{}\[\]],?|"' + re.escape(KEY) + r'"\s*:\s*\d{1,9}\s*,?|"entries"\s*:\s*\[\s*\]?\s*,?')


@dataclass(frozen=True)
class BaselineEntry:
    """One fingerprint of the baseline; in a delta, ``count`` is how many findings changed."""

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
    """A PR's change to the baseline file; ``delta`` is None when GitHub sent no diff (too large)."""

    adopted: bool  # the PR adds the file: every entry is new debt
    delta: BaselineDelta | None

    @property
    def worth_saying(self) -> bool:
        d = self.delta
        return d is None or bool(d.added or d.paid or d.unreadable)


def parse_entry(text: str) -> BaselineEntry | None:
    """One entry line (indent and trailing comma allowed), or None when it is not exactly an entry."""
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
        return None  # as policy_checks/baseline.py reads an entry: rule and module non-empty
    count = data["count"]
    if type(count) is not int or not 1 <= count <= MAX_COUNT:  # bool is an int subclass: not a count
        return None
    return BaselineEntry(*(data[name] for name in _FIELDS), count)


def parse_baseline_patch(patch: str | None) -> BaselineDelta:
    """The entries a unified diff of the baseline adds, pays off and moves, and its unreadable added lines."""
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
    """Split off renames: debt that fell under one module and grew under another at the same place.

    Returns (added, paid, moved); each unit of count is matched at most once, in patch order.
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


def baseline_change(files) -> BaselineChange | None:
    """The PR's change to the baseline at the root, from its listed files (``filename``, ``status``, ``patch``)."""
    for changed in files:
        if changed.filename == BASELINE_FILE:
            patch = changed.patch
            return BaselineChange(adopted=changed.status == "added",
                                  delta=None if patch is None else parse_baseline_patch(patch))
    return None
