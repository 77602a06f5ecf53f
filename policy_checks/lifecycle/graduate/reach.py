"""Stable code reaching experimental code, before and after a graduation.

Once graduated, the feature's code is core. A module-level import of another
experimental module in it is what EXP001 reports (`policy_checks/rules/exp001.py`).
A graduation that would create one refuses.

The rules cannot be imported from here, since they import
`policy_checks.lifecycle`. So `module_level` reads the facts as EXP001 does, through
the import-time analysis (`policy_checks.analysis.import_time`). It finds an import
that runs at import time, of a module under the experimental package. An import
whose every name is an ``@experimental_backend`` checker of a support module is
exempt. It also finds a call run at import of a function that reaches one, however
many calls down. The same reading on the planned bytes checks the plan before
anything is written.

Reach at call time is allowed but listed for a person under step 3. That step then
stays unticked. Such reach is a function of the moved code, or an entry point,
that still imports another experimental module. Still calling a gate counts too.
"""

from __future__ import annotations

import ast
from typing import Iterator, List, NamedTuple, Optional, Set, Tuple

from ...analysis import import_time
from ...model import markers
from ...model.config import module_under
from ...model.facts import FileFacts, Import, extract
from ...model.project import Project

# What a feature may import from the experimental package only to mark its checkers: the
# plan drops that import with the marks (and checks the planned bytes again).
_DROPPED_WITH_THE_MARKS = frozenset({markers.EXPERIMENTAL_BACKEND})


class Reach(NamedTuple):
    """One import of experimental code from code that is, or will be, stable."""

    rel: str
    line: int
    function: str  # the innermost enclosing def's qualname, "" at module level
    module: str  # the experimental module it imports
    through: tuple = ()  # the functions a call run at import goes through to it

    def where(self) -> str:
        place = f"{self.rel}:{self.line}" + (f" ({self.function})" if self.function else "")
        return place + (f", calling {' -> '.join(self.through)}," if self.through else "")


def experimental_imports(project: Project, facts: FileFacts, moving: Optional[str] = None) -> Iterator[Tuple[Import, List[str]]]:
    """``(import, experimental modules it runs)`` pairs.

    With `moving`, the import statements of that module are left out, since the
    plan points them at the new home. An import named in a string is not pointed
    there, so it stays in.
    """
    settings = project.settings
    for imp in facts.imports:
        if moving is not None and not imp.dynamic and imp.module is not None and module_under(imp.module, moving):
            continue
        targets = [t for t in project.import_targets(imp) if settings.is_experimental_module(t)]
        if targets:
            yield imp, targets


def module_level(project: Project, rel: str, facts: FileFacts, moving: Optional[str] = None) -> List[Reach]:
    """What EXP001 would report in `facts` were the file core."""
    found = []
    analysis = import_time.of(project)
    for imp, targets in experimental_imports(project, facts, moving):
        if not analysis.runs_at_import(imp.scope) or analysis.is_checker_import(imp):
            continue
        if moving is not None and imp.names and all(name in _DROPPED_WITH_THE_MARKS for name, _ in imp.names):
            continue  # the marks go with the move; the planned bytes are checked again
        found.append(Reach(rel, imp.line, "", targets[-1]))
    for call in facts.calls:
        if not analysis.runs_at_import(call.scope):
            continue
        for reached in analysis.call_reach_in(facts, call):
            if reached.target and not (moving is not None and module_under(reached.target, moving)):
                found.append(Reach(rel, call.line, "", reached.target, reached.chain))
    return found


def at_call_time(project: Project, rel: str, facts: FileFacts, functions: Optional[Set[str]] = None) -> List[Reach]:
    """Imports of experimental code inside functions.

    When `functions` (qualnames) is given, only imports inside one of them count.
    """
    found = []
    for imp, targets in experimental_imports(project, facts):
        if not import_time.runs_on_call(imp):
            continue
        if functions is None or any(_within(f, functions) for f in imp.functions):
            found.append(Reach(rel, imp.line, imp.functions[-1], targets[-1]))
    return found


def planned_facts(module: str, is_package: bool, data: bytes) -> FileFacts:
    """The facts of bytes the plan writes, as the checker will read them."""
    return extract(data, module, is_package)


def gate_calls(data: bytes, functions: Optional[Set[str]] = None) -> List[Tuple[str, int]]:
    """``(qualname, line)`` of each gate call, or use of ``ExperimentalWarning``, in the text.

    When `functions` is given, only those inside one of them count.
    """
    calls = list(markers.gate_calls(data) or [])
    tree = markers.parse(data) if b"ExperimentalWarning" in data else None
    if tree is not None:
        calls += _warning_uses(tree)
    return sorted({(scope, line) for scope, line in calls if functions is None or _within(scope, functions)},
                  key=lambda item: (item[1], item[0]))


def _warning_uses(tree) -> List[Tuple[str, int]]:
    """Calls that pass ``ExperimentalWarning`` (``warnings.warn(..., ExperimentalWarning)``)."""
    found = []
    stack = [(tree, "")]
    while stack:
        node, scope = stack.pop()
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope else child.name
            if isinstance(child, ast.Call) and any(
                    (markers.dotted_name(a) or "").rpartition(".")[2] == "ExperimentalWarning"
                    for a in [*child.args, *(k.value for k in child.keywords)]):
                found.append((scope, child.lineno))
            stack.append((child, inner))
    return found


def _within(qualname: str, functions: Set[str]) -> bool:
    return any(qualname == f or qualname.startswith(f + ".") for f in functions)


