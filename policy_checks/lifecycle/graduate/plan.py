"""The plan of one graduation, and the checklist it prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Set

from ...editing.changes import ChangeSet, Rewrite
from ...editing.target import FixTarget
from ...model.window import GRADUATION_STEPS


@dataclass
class Graduation:
    """What graduating one feature does, computed before anything is written."""

    target: FixTarget
    feature: str
    home: str  # the stable package, e.g. "flashinfer.gated_norm"
    changes: ChangeSet
    rewrites: List[Rewrite] = field(default_factory=list)  # existing files, new bytes
    creations: Dict[str, bytes] = field(default_factory=dict)  # new files
    modes: Dict[str, int] = field(default_factory=dict)  # a moved file's permission bits
    deletions: List[str] = field(default_factory=list)
    done: Dict[int, List[str]] = field(default_factory=dict)  # checklist step -> what this run did
    for_a_person: Dict[int, List[str]] = field(default_factory=dict)
    # core file -> qualnames of its functions that hand off to the feature or were swapped
    entry_points: Dict[str, Set[str]] = field(default_factory=dict)
    # core file -> qualnames of the feature's experimental API functions and classes (step 3 swaps their marks)
    feature_entry_points: Dict[str, Set[str]] = field(default_factory=dict)
    # the feature and its backends: a gate call naming one guarded it (step 3 drops it)
    gate_names: Set[str] = field(default_factory=set)

    @property
    def old(self) -> str:
        """The feature's experimental module path."""
        return f"{self.target.settings.experimental_package}.{self.feature}"

    def did(self, step: int, text: str) -> None:
        self.done.setdefault(step, []).append(text)

    def ask(self, step: int, text: str) -> None:
        self.for_a_person.setdefault(step, []).append(text)

    def rewrite(self, rel: str, after: bytes) -> None:
        """Plan new bytes for an existing file; a later step rewrites what an earlier one
        planned (`planned`), so the last rewrite holds them all."""
        before = self.changes.read(rel)
        self.rewrites = [fix for fix in self.rewrites if fix.path != rel]
        if after != before:
            self.rewrites.append(Rewrite(rel, before, after))

    def planned(self, rel: str) -> bytes:
        """The bytes `rel` will hold: planned, or as it is on disk."""
        if rel in self.creations:
            return self.creations[rel]
        for fix in self.rewrites:
            if fix.path == rel:
                return fix.after
        return self.changes.read(rel)

    def report(self, applied: bool) -> List[str]:
        return [f"Graduation checklist for {self.feature} -> {self.home}:", *checklist(self, applied)]


def checklist(graduation: Graduation, applied: bool) -> List[str]:
    """The seven steps, each with what this run did and what is left for a person;
    a step is ticked only when this run did it whole."""
    lines = []
    for step in GRADUATION_STEPS:
        done = graduation.done.get(step.number, [])
        left = graduation.for_a_person.get(step.number, [])
        mark = "x" if done and not left and applied else " "
        lines.append(f"[{mark}] {step.number}. {step.text}")
        verb = "" if applied else "would: "
        lines += [f"      {verb}{item}" for item in done]
        lines += [f"      for a person: {item}" for item in left]
    return lines
