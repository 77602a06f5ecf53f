"""The objects a removal is planned with: the feature, and each core module's edits.

The plan itself is the lifecycle's `Plan` (`policy_checks/lifecycle/plan.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Set

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
        """``("experimental", "feat")``.

        A path through the feature's directory, or its tests directory, holds these
        two names in a row.
        """
        return (self.experimental_dir.rpartition("/")[2], self.name)


@dataclass
class ModuleEdits:
    """One core module's planned edits.

    It holds libcst edits by node, and the nodes they remove. A use inside those
    nodes is no use. It also holds the names the module loses.
    """

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
        """``module.name`` of every removed definition. Methods are ``Class.method``."""
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
