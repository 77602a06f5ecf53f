"""The objects a removal is planned with: the feature, each core module's edits, and
the `Removal` the command shows or applies."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set

from ...model.config import under
from ...editing.changes import ChangeSet, Rewrite
from ...editing.cst_tools import PythonFile, Unfixable, parse
from ...editing.target import FixTarget, Refused


@dataclass(frozen=True)
class Feature:
    """The feature a removal deletes, as names and paths of the tree."""

    name: str  # "feat"
    directory: str  # "pkg/experimental/feat"
    module: str  # "pkg.experimental.feat": every module under it goes
    tests: Optional[str]  # "tests/experimental/feat", when there is one
    experimental_dir: str  # "pkg/experimental"

    @property
    def path_segments(self) -> tuple:
        """``("experimental", "feat")``: a path through the feature's directory (or its
        tests directory) holds these two names in a row."""
        return (self.experimental_dir.rpartition("/")[2], self.name)


@dataclass
class Removal:
    """What removing one feature does: new bytes per rewritten file, paths to delete."""

    target: FixTarget
    feature: str
    changes: ChangeSet
    rewrites: List[Rewrite] = field(default_factory=list)
    deletions: List[str] = field(default_factory=list)  # root-relative files and directories
    removed: List[str] = field(default_factory=list)  # what went, for the report
    notes: List[str] = field(default_factory=list)  # "file:line: text" left for a person
    closing_note: Optional[str] = None  # for the tracking issue (`closing.closing_note`)
    closing_how: str = "post it when the change lands"  # how (`closing.how_to_post`)

    def gone(self, rel: str) -> bool:
        """Does the file `rel` go (deleted, or below a deleted directory)?"""
        return any(under(rel, d) for d in self.deletions)

    def report(self, applied: bool) -> List[str]:
        verb = "removed" if applied else "would remove"
        lines = [f"{verb}: {item}" for item in self.removed]
        lines += [f"{verb}: {rel}" for rel in self.deletions]
        lines += [f"{'rewrote' if applied else 'would rewrite'}: {path}" for path, _, _ in self.rewrites]
        lines += [f"left for a person: {note}" for note in self.notes]
        if self.closing_note:
            lines += [f"closing note for the tracking issue ({self.closing_how}):", self.closing_note]
        return lines


@dataclass
class ModuleEdits:
    """One core module's planned edits: libcst edits by node, the nodes they remove
    (so that a use inside them is no use), and the names the module loses."""

    file: PythonFile
    edits: dict = field(default_factory=dict)
    removed_nodes: list = field(default_factory=list)
    names: Set[str] = field(default_factory=set)  # "fn", "Class", "Class.method", lazy keys, tables


@dataclass
class CoreEdits:
    """Every core module the removal edits, and what the feature's backends were."""

    modules: Dict[str, ModuleEdits] = field(default_factory=dict)  # rel -> its edits
    backends: Dict[str, Set[str]] = field(default_factory=dict)  # removed backend -> APIs ("module.qualname")

    def of(self, target: FixTarget, rel: str) -> ModuleEdits:
        """The edits of `rel`, parsed on first use."""
        if rel not in self.modules:
            self.modules[rel] = ModuleEdits(parse_module(target, rel))
        return self.modules[rel]

    @property
    def names_by_module(self) -> Dict[str, Set[str]]:
        """module -> the names it loses."""
        return {edits.file.module_name: edits.names for edits in self.modules.values() if edits.names}

    def removed_names(self) -> Set[str]:
        """``module.name`` of every removed definition (methods as ``Class.method``)."""
        return {f"{m}.{n}" for m, names in self.names_by_module.items() for n in names}


@dataclass(frozen=True)
class At:
    """A position, as `cst_tools.import_at` reads it from a finding."""

    line: int
    column: int


def parse_module(target: FixTarget, rel: str) -> PythonFile:
    try:
        return parse((target.root / rel).read_bytes(), *target.module_of(rel))
    except Unfixable as reason:
        raise Refused(f"{rel}: {reason}") from None
