"""Step 3: the core modules that reach the feature.

Their imports of it point at the new home.
``@flashinfer_experimental_api(...)`` on its entry points becomes
``@flashinfer_api``, keeping ``trace=``. The gate calls that guarded it go. Those
are the calls in an entry point or hand-off function that reaches no other
experimental code. They are also the calls naming the feature or one of its
backends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Set, Tuple

import libcst as cst

from ...model import markers
from ...editing.cst_tools import PythonFile, Unfixable, add_edit, apply_edits, backend_branch, dotted_name, import_at
from ...model.facts import Import
from ...analysis.import_time import runs_on_call
from ...model.project import Project
from ...model import entry_points
from ...model.entry_points import entry_point
from ..helpers import CallGraph, follow
from ..texts import Texts
from . import reach
from .marks import Qualnames, drop_experimental_flags, names_feature, swap_decorators
from ..plan import Plan
from .rewrite import drop_unused_import, parse_file, retarget_or_refuse
from .wrapped import unwrap_swapped


@dataclass
class CoreFound:
    """What step 3 found in core, for the checks of the planned bytes (`leftovers`)."""

    swapped: List[Tuple[str, str]] = field(default_factory=list)  # (module, qualname) of swapped entry points
    # core file -> qualnames of its functions that hand off to the feature or were swapped
    entry_points: Dict[str, Set[str]] = field(default_factory=dict)
    # core file -> qualnames of the feature's experimental API functions and classes
    feature_entry_points: Dict[str, Set[str]] = field(default_factory=dict)
    # the feature and its backends: a gate call naming one guarded it
    gate_names: Set[str] = field(default_factory=set)


def swap_core(graduation: Plan, project: Project, reaching: Dict[str, List[Import]],
              backends: Set[str]) -> CoreFound:
    """Rewrite the core files that reach the feature, through helpers too.

    `swapped` holds the swapped entry points as ``(module, qualname)``.
    """
    found = CoreFound()
    owned = feature_entry_points(graduation, project, reaching)
    found.feature_entry_points = {rel: set(names) for rel, names in owned.items()}
    for rel in sorted(set(reaching) | set(owned)):
        found.swapped += _swap_file(graduation, project, rel, reaching.get(rel, []), backends, owned.get(rel, set()),
                                    found)
    return found


def feature_entry_points(graduation: Plan, project: Project,
                         reaching: Dict[str, List[Import]]) -> Dict[str, Set[str]]:
    """rel -> qualnames of the feature's entry points (`policy_checks/model/entry_points.py`).

    They are the experimental API functions and classes around its imports. They
    are also those that reach it through helpers (`lifecycle/helpers.py`). The
    helpers stay in core, retargeted.
    """
    owned: Dict[str, Set[str]] = {}
    starts = []
    for rel, hits in reaching.items():
        facts = project.facts(rel)
        for imp in hits:
            if not runs_on_call(imp):
                continue
            found = entry_point(project, facts, imp.functions)
            if found is not None and found.kind in (entry_points.EXPERIMENTAL, entry_points.CLASS):
                owned.setdefault(rel, set()).add(found.qualname)
            elif found is None:
                starts.append((rel, imp.functions[0], imp.line))
    if starts:
        texts = Texts(graduation.target.root)
        graph = CallGraph(project, texts.tree, texts.read, lambda rel: True)
        for rel, qualname in follow(graph, starts, set()).entry_points:
            owned.setdefault(rel, set()).add(qualname)
    return owned


def _swap_file(graduation: Plan, project: Project, rel: str, hits: List[Import],
               backends: Set[str], owned: Set[str], found: CoreFound) -> List[Tuple[str, str]]:
    """Rewrite one core file.

    It retargets the file and swaps its entry points: functions, and every method
    of an experimental API class. It drops ``is_experimental = True`` and the gates
    that guarded the feature.
    """
    feature = graduation.feature
    module = project.files[rel].module
    data = graduation.planned(rel)
    file = parse_file(graduation.target, rel, data)
    edits: dict = {}
    retarget_or_refuse(file, graduation.old, graduation.home, module, edits)
    deferred = [imp for imp in hits if runs_on_call(imp)]
    outermost = {imp.functions[0] for imp in deferred}
    swapped = swap_decorators(file, lambda qualname, decorator: qualname in outermost
                              or any(_within(qualname, q) for q in owned)
                              or names_feature(decorator, feature), edits)
    flags = drop_experimental_flags(file, owned, edits)
    methods = {q for q in project.facts(rel).definitions if any(_within(q, o) for o in owned)}
    found.entry_points[rel] = set(swapped) | {f for imp in deferred for f in imp.functions} | methods
    removed = _drop_guarding_gates(graduation, project, rel, file, deferred, backends, edits, found)
    after = unwrap_swapped(graduation, rel, apply_edits(file, edits), swapped)
    if after != data:
        graduation.rewrite(rel, after)
        graduation.did(3, f"{rel}: imports point at {graduation.home}" + (
            f"; @{markers.STABLE_API} on {', '.join(swapped)}" if swapped else "") + (
            f"; `{markers.EXPERIMENTAL_FLAG} = True` dropped from {', '.join(flags)}" if flags else "") + (
            f"; {len(removed)} gate call(s) dropped" if removed else ""))
    return [(module, name) for name in swapped]


def _within(qualname: str, outer: str) -> bool:
    return qualname == outer or qualname.startswith(outer + ".")


def _drop_guarding_gates(graduation: Plan, project: Project, rel: str, file: PythonFile,
                         deferred: List[Import], backends: Set[str], edits: dict, found: CoreFound) -> list:
    """Drop the gate calls that guarded the feature, with their imports, and only those.

    A function that still routes to other experimental code keeps its gates.
    """
    elsewhere = {f for imp, _ in reach.experimental_imports(project, project.facts(rel), graduation.old)
                 if runs_on_call(imp) for f in imp.functions}
    names = backends | _branch_backends(file, deferred) | {graduation.feature}
    found.gate_names |= names
    removed = _drop_gate_calls(file, found.entry_points[rel], elsewhere, names, edits)
    _drop_unused_gate_imports(file, removed, edits)
    return removed


def _branch_backends(file: PythonFile, imports: List[Import]) -> Set[str]:
    """The backends whose ``if backend == "<name>":`` branch imports the feature."""
    found = set()
    for imp in imports:
        try:
            statement = import_at(file, imp)
        except Unfixable:  # importlib.import_module("..."): its string is listed for a person
            continue
        branch = backend_branch(file, statement)
        if branch is not None:
            found.add(branch[1])
    return found


def _drop_gate_calls(file: PythonFile, entry: Set[str], elsewhere: Set[str], names: Set[str], edits: dict) -> list:
    """Drop the statement-level gate calls that guarded the feature.

    A call guarded it when it sits inside an entry point or hand-off (`entry`) that
    reaches no other experimental code (`elsewhere`). A call naming the feature or
    one of its backends (`names`) guarded it too. Returns the statements removed.
    """
    removed: list = []

    class Finder(Qualnames):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            if len(node.body) != 1 or not isinstance(node.body[0], cst.Expr) or not isinstance(node.body[0].value, cst.Call):
                return
            call = node.body[0].value
            if not markers.is_gate_name(dotted_name(call.func)):
                return
            strings = {a.value.evaluated_value for a in call.args if isinstance(a.value, cst.SimpleString)}
            chain = set(self.functions())
            if strings & names or (chain & entry and not chain & elsewhere):
                removed.append(node)
                add_edit(edits, node, lambda updated: cst.RemovalSentinel.REMOVE)

    file.tree.visit(Finder())
    return removed


def _drop_unused_gate_imports(file: PythonFile, removed: list, edits: dict) -> None:
    """Drop the gate functions' imports that only the removed calls used.

    They may be at module level or in the function that imported them.
    """
    if not removed:
        return
    scopes = {id(file.scopes[file.tree]): file.scopes[file.tree]}
    for statement in removed:
        scope = file.scopes.get(statement)
        if scope is not None:
            scopes.setdefault(id(scope), scope)
    for scope in scopes.values():
        for name in markers.GATE_FUNCTIONS:
            drop_unused_import(file, name, edits, ignore=removed, scope=scope)
