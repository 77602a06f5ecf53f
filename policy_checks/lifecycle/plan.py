"""The plan both lifecycle commands build, and the table of steps that builds it.

A `Plan` is the change set of ``--diff`` plus what the run did. It also holds
what a person must do, and closing notes. It owns the command's one reader of
sources (`Texts`). So every step, and the project model, read a file once.

Each command is an ordered table of named `Step` s. A step takes the plan and
the command's project and returns its `Edits`. `run_steps` adds them to the
plan in order. Blocking uses go to `Plan.block`, not straight into a refusal.
The run then answers once, naming every use found before it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Hashable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ..editing.changes import ChangeSet, Rewrite
from ..editing.target import FixTarget, Refused
from ..model.config import under
from .texts import Texts


class Edits(NamedTuple):
    """What one step changes: new bytes of existing files, new files, deletions."""

    rewrites: Sequence[Rewrite] = ()
    creations: Mapping[str, bytes] = {}
    modes: Mapping[str, int] = {}  # a created file's permission bits, where not the default
    deletions: Sequence[str] = ()  # root-relative files and directories


NO_EDITS = Edits()


class Step(NamedTuple):
    """A named step of a command: ``run(plan, project)`` returns its edits, or None.

    A step without `run` is a gate. The uses blocked so far refuse the run there.
    """

    name: str
    run: Optional[Callable[["Plan", Any], Optional[Edits]]] = None


@dataclass
class Plan:
    """What one command does to the tree, computed before anything is written."""

    target: FixTarget
    feature: str
    changes: ChangeSet
    render: Callable[["Plan", bool], List[str]]  # the command's report of the plan
    texts: Texts  # the command's one reader of the tree's files, shared with its project model
    home: Optional[str] = None  # where the feature goes; None for a removal
    rewrites: List[Rewrite] = field(default_factory=list)
    creations: Dict[str, bytes] = field(default_factory=dict)
    modes: Dict[str, int] = field(default_factory=dict)
    deletions: List[str] = field(default_factory=list)
    done: List[Tuple[Hashable, str]] = field(default_factory=list)  # (step, what this run did)
    asked: List[Tuple[Hashable, str]] = field(default_factory=list)  # (step, what a person must do)
    notes: List[str] = field(default_factory=list)  # closing lines of the report
    blocking: List[Any] = field(default_factory=list)  # uses that refuse the run, named together

    @property
    def old(self) -> str:
        """The feature's experimental module path."""
        return f"{self.target.settings.experimental_package}.{self.feature}"

    def did(self, step: Hashable, text: str) -> None:
        self.done.append((step, text))

    def ask(self, step: Hashable, text: str) -> None:
        self.asked.append((step, text))

    def did_in(self, step: Hashable) -> List[str]:
        return [text for key, text in self.done if key == step]

    def asked_in(self, step: Hashable) -> List[str]:
        return [text for key, text in self.asked if key == step]

    def block(self, uses: Sequence[Any]) -> None:
        """Add uses that refuse the run. They are gathered so one answer names them all."""
        self.blocking += uses

    def gone(self, rel: str) -> bool:
        """Does the file `rel` go (deleted, or below a deleted directory)?"""
        return any(under(rel, d) for d in self.deletions)

    def rewrite(self, rel: str, after: bytes, before: Optional[bytes] = None) -> None:
        """Plan new bytes for an existing file.

        A later rewrite of the same file replaces the earlier one in place. So
        the last one holds every edit.
        """
        first = next((fix.before for fix in self.rewrites if fix.path == rel), None)
        before = first if first is not None else before if before is not None else self.changes.read(rel)
        kept = [fix for fix in self.rewrites if fix.path != rel]
        if after == before:
            self.rewrites = kept
            return
        for index, fix in enumerate(self.rewrites):
            if fix.path == rel:
                self.rewrites[index] = Rewrite(rel, before, after)
                return
        self.rewrites.append(Rewrite(rel, before, after))

    def planned(self, rel: str) -> bytes:
        """The bytes `rel` will hold: planned, or as it is on disk."""
        if rel in self.creations:
            return self.creations[rel]
        for fix in self.rewrites:
            if fix.path == rel:
                return fix.after
        return self.changes.read(rel)

    def take(self, edits: Optional[Edits]) -> None:
        """Add one step's edits to the plan."""
        if not edits:
            return
        for rel, before, after in edits.rewrites:
            self.rewrite(rel, after, before)
        self.creations.update(edits.creations)
        self.modes.update(edits.modes)
        self.deletions += edits.deletions

    def finish(self) -> "Plan":
        """Hand every planned edit to the change set, which checks each path."""
        self.changes.add_planned(self.rewrites, self.creations, self.deletions, self.modes)
        return self

    def report(self, applied: bool) -> List[str]:
        return self.render(self, applied)


def run_steps(steps: Sequence[Step], plan: Plan, project: Any,
              refusal: Callable[[List[Any], Optional[Refused]], Refused]) -> Plan:
    """Run `steps` in order, adding each one's edits to `plan`.

    A step that refuses stops the run. `refusal` words the answer, naming every
    use blocked so far.
    """
    for step in steps:
        if step.run is None:
            if plan.blocking:
                raise refusal(plan.blocking, None)
            continue
        try:
            plan.take(step.run(plan, project))
        except Refused as why:
            if plan.blocking:
                raise refusal(plan.blocking, why) from None
            raise
    if plan.blocking:
        raise refusal(plan.blocking, None)
    return plan
