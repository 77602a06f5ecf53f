"""Run the rewrites file by file, then show or write the results.

`plan` turns findings into new file contents without touching the disk. `write`
replaces one file atomically, and only when it still holds the bytes `plan` read.

libcst, and the rewrites built on it, are imported only when a Python file is to be
rewritten. So a ``fix`` with nothing to do, or only docs pages, does not pay for it.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..editing.changes import Change, ChangeSet
from . import docs_pages
from .findings import Finding, FixTarget


def _rewrite(module: str) -> Callable:
    """The ``rewrite`` function of ``policy_checks.fix.<module>``, imported when first called."""

    def rewrite(file, finding, target, edits):
        return importlib.import_module(f"{__package__}.{module}").rewrite(file, finding, target, edits)

    rewrite.__qualname__ = f"{module}.rewrite"
    return rewrite


# rule id -> rewrite(file, finding, target, edits) -> note for a person or None
PYTHON_REWRITES = {
    "EXP001": _rewrite("deferred_imports"),
    "EXP002": _rewrite("lazy_exports"),
    "EXP004": _rewrite("checker_marker"),
}
FIXABLE_RULES = (*PYTHON_REWRITES, "EXP006")


@dataclass
class FileFix:
    """What fixing one file's findings gives: new bytes, what was fixed, and what was not."""

    path: str
    before: bytes
    after: bytes
    fixed: List[Finding] = field(default_factory=list)
    left: List[Tuple[Finding, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.after != self.before

    def diff(self) -> str:
        return Change(self.path, self.before, self.after).diff()


def plan(target: FixTarget, findings: Sequence[Finding]) -> List[FileFix]:
    """One `FileFix` per file with fixable findings, in path order."""
    by_path: Dict[str, List[Finding]] = {}
    for finding in findings:
        if finding.rule in FIXABLE_RULES:
            by_path.setdefault(finding.path, []).append(finding)
    return [_fix_file(target, path, sorted(group, key=lambda f: (f.line, f.column))) for path, group in sorted(by_path.items())]


def _fix_file(target: FixTarget, path: str, findings: List[Finding]) -> FileFix:
    try:
        before = (target.root / path).read_bytes()
    except OSError as error:
        return FileFix(path, b"", b"", left=[(f, f"cannot read the file: {error.strerror}") for f in findings])
    outcome = FileFix(path, before, before)
    # Findings carry positions in the file as read; one rule's rewrite moves lines that
    # another's positions refer to, so a file gets one rule per run.
    rule = findings[0].rule
    for finding in findings:
        if finding.rule != rule:
            outcome.left.append((finding, f"the {rule} fix rewrites this file first; run fix again"))
    findings = [f for f in findings if f.rule == rule]
    if rule == "EXP006":
        outcome.after, fixed, left = docs_pages.rewrite(before, findings)
        outcome.fixed += fixed
        outcome.left += left
        return outcome
    from ..editing.cst_tools import Unfixable, apply_edits, parse  # libcst: only for a Python file to rewrite

    try:
        file = parse(before, *target.module_of(path))
    except Unfixable as reason:
        outcome.left += [(f, str(reason)) for f in findings]
        return outcome
    edits: dict = {}
    for finding in findings:
        try:
            note = PYTHON_REWRITES[rule](file, finding, target, edits)
        except Unfixable as reason:
            outcome.left.append((finding, str(reason)))
            continue
        if note:
            outcome.left.append((finding, f"partly fixed; {note}"))
        else:
            outcome.fixed.append(finding)
    if edits:
        outcome.after = apply_edits(file, edits)
        try:  # a safety net: never write Python that does not parse
            ast.parse(outcome.after)
        except SyntaxError as error:
            outcome.left += [(f, f"internal error, nothing written: the rewrite does not parse ({error.msg})") for f in outcome.fixed]
            outcome.fixed, outcome.after = [], before
    return outcome


def write(target: FixTarget, fix: FileFix, before_replace: Optional[Callable[[Path], None]] = None) -> bool:
    """Replace the file with `fix.after`.

    Raises `Refused`, writing nothing, when the file changed since `plan` read it. It
    does the same when the file is not a regular file inside the root. One file is
    one `ChangeSet`, as for every command that edits the tree. `before_replace` runs
    just before the last check. Tests use it to change the file under the run.
    """
    changes = ChangeSet(target.root)
    changes.rewrite(fix.path, fix.after, fix.before)
    if before_replace is not None:
        before_replace(target.root / fix.path)
    changes.apply()
    return True
