"""What the plan leaves reaching experimental code, read from the planned bytes.

A module-level import of experimental code in the moved code refuses the plan.
That is a safety net: `refusals.check_module_level_reach` decided it before the
move was planned.

Some things are listed for a person under step 3, which then stays unticked. They
are reach at call time, gate calls, and experimental warnings left in the moved
code or the entry points. The moved tests' imports of experimental code are listed
under step 6. EXP008 reports them in the stable lane.
"""

from __future__ import annotations

import ast
from typing import List, Set

from ...model import parsed
from ...model import entry_points, markers
from ...model.config import module_under, under
from ...model.entry_points import entry_point
from ...analysis.import_time import runs_on_call
from ...editing.target import Refused
from ...model.project import Project
from ..plan import Plan
from . import reach
from .core import CoreFound
from .refusals import module_level_refusal


def check_planned(graduation: Plan, project: Project, core: CoreFound) -> None:
    """Refuse if the planned stable code would import experimental code when imported.

    List what it reaches at call time.
    """
    found: List[reach.Reach] = []
    for rel, data in sorted(graduation.creations.items()):
        module, is_package = _module(graduation, rel)
        if module is None:
            continue
        facts = reach.planned_facts(module, is_package, data)
        if facts.syntax_error is not None:
            continue
        if module_under(module, graduation.home):
            found += reach.module_level(project, rel, facts)
            _list_moved_code(graduation, project, rel, facts, data)
        else:
            _list_moved_tests(graduation, project, rel, facts)
    if found:
        settings = graduation.target.settings
        raise Refused(module_level_refusal(found, graduation.home, settings.experimental_package, graduation.old))
    for rel, functions in sorted(core.entry_points.items()):
        _list_entry_points(graduation, project, rel, functions)
    for rel in sorted(set(core.entry_points) | set(core.feature_entry_points)):
        _list_marks_left(graduation, project, rel, core.feature_entry_points.get(rel, ()))
    _list_gates_left(graduation, project, core.gate_names)


def _list_gates_left(graduation: Plan, project: Project, gate_names: Set[str]) -> None:
    """List gate calls anywhere in core that name the feature or one of its backends.

    Such a call still guards what is now stable. It is listed under step 3, with
    its place.
    """
    names = gate_names | {graduation.feature}
    settings = graduation.target.settings
    for rel in sorted(project.files):
        if not settings.is_core(project.files[rel].module) or rel in graduation.creations:
            continue
        data = graduation.planned(rel)
        if not any(g.encode() in data for g in markers.GATE_FUNCTIONS) or not any(n.encode() in data for n in names):
            continue
        try:
            tree = parsed.tree(data)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and markers.is_gate_name(markers.dotted_name(node.func) or "")
                    and any(isinstance(a, ast.Constant) and a.value in names for a in node.args)
                    and not any(f"{rel}:{node.lineno}" in item for item in graduation.asked_in(3))):
                graduation.ask(3, f"{rel}:{node.lineno} still calls {markers.dotted_name(node.func)} for "
                                  f"{graduation.feature}, which is stable now; drop the call")


def _list_marks_left(graduation: Plan, project: Project, rel: str, owned_before) -> None:
    """The scan after the edit, on the planned bytes.

    Every mark of the track left on an entry point of the feature is listed under
    step 3, with its place. Entry points are found again there, by the definition
    EXP007 uses. That is around an import of the feature's new home, or named by
    the plan. A mark on a marker naming the feature is listed too.
    """
    data = graduation.planned(rel)
    module, is_package = graduation.target.module_of(rel)
    facts = reach.planned_facts(module, is_package, data)
    if facts.syntax_error is not None:
        return
    owned = set(owned_before)
    for imp in facts.imports:
        if runs_on_call(imp) and any(
                module_under(t, graduation.home) or module_under(t, graduation.old) for t in project.import_targets(imp)):
            found = entry_point(project, facts, imp.functions)
            if found is not None and found.kind in (entry_points.EXPERIMENTAL, entry_points.CLASS):
                owned.add(found.qualname)
    for marked, node in markers.marked_nodes(data) or ():
        if marked.kind == markers.KIND_EXPERIMENTAL_API and (
                any(_within(marked.qualname, q) for q in owned) or _names_feature(node, graduation.feature)):
            graduation.ask(3, f"{rel}:{marked.line}: {marked.qualname} is still marked @{markers.EXPERIMENTAL_API}; "
                              f"make it @{markers.STABLE_API}")
    for qualname in sorted(owned):
        definition = facts.definitions.get(qualname)
        if definition is not None and definition.kind == "class" and definition.flagged:
            graduation.ask(3, f"{rel}:{definition.line}: class {qualname} still sets "
                              f"`{markers.EXPERIMENTAL_FLAG} = True`; drop it")


def _within(qualname: str, outer: str) -> bool:
    return qualname == outer or qualname.startswith(outer + ".")


def _names_feature(node, feature: str) -> bool:
    """Does a call in `node` pass ``feature="<feature>"``?

    `node` is a decorated definition, or ``x = marker(...)(f)``.
    """
    calls = [d for d in getattr(node, "decorator_list", ())]
    value = getattr(node, "value", None)
    while isinstance(value, ast.Call):
        calls.append(value)
        value = value.func
    return any(isinstance(c, ast.Call) and any(
        k.arg == "feature" and isinstance(k.value, ast.Constant) and k.value.value == feature for k in c.keywords)
        for c in calls)


def _module(graduation: Plan, rel: str):
    if not rel.endswith(".py"):
        return None, False
    return graduation.target.module_of(rel)


def _other(graduation: Plan, module: str) -> str:
    """The feature an experimental module belongs to. For the package itself, it is the module."""
    package = graduation.target.settings.experimental_package
    return module[len(package) + 1:].partition(".")[0] or module


def _list_moved_code(graduation: Plan, project: Project, rel: str, facts, data: bytes) -> None:
    """The moved code is stable now. List what in it still reaches experimental code, under step 3."""
    for found in reach.at_call_time(project, rel, facts):
        if _names_the_old_path(graduation, found):
            continue
        graduation.ask(3, f"{found.where()} still reaches {found.module} (experimental) when called; stable code "
                          f"may not: graduate {_other(graduation, found.module)} first, or move that call out")
    for scope, line in reach.gate_calls(data):
        graduation.ask(3, f"{rel}:{line}" + (f" ({scope})" if scope else "") +
                       " still calls an experimental gate or warning; drop it, or keep it where it guards a route "
                       "that is still experimental")
    for marked in markers.marked_definitions(data) or ():
        if marked.kind == markers.KIND_EXPERIMENTAL_API:
            graduation.ask(3, f"{rel}:{marked.line}: {marked.qualname} is still marked @{markers.EXPERIMENTAL_API}")
        elif marked.kind == markers.KIND_EXPERIMENTAL_BACKEND:
            graduation.ask(3, f"{rel}:{marked.line}: {marked.qualname} is still marked @{markers.EXPERIMENTAL_BACKEND}")
    for definition in facts.definitions.values():
        if definition.kind == "class" and definition.flagged:
            graduation.ask(3, f"{rel}:{definition.line}: class {definition.qualname} still sets "
                              f"`{markers.EXPERIMENTAL_FLAG} = True`")


def _list_entry_points(graduation: Plan, project: Project, rel: str, functions) -> None:
    """List an entry point's routes to experimental code, and its gates, under step 3.

    The entry point is stable now.
    """
    data = graduation.planned(rel)
    module, is_package = graduation.target.module_of(rel)
    facts = reach.planned_facts(module, is_package, data)
    if facts.syntax_error is not None:
        return
    for found in reach.at_call_time(project, rel, facts, functions):
        if _names_the_old_path(graduation, found):
            continue
        graduation.ask(3, f"{found.where()}: a stable entry point still routes to {found.module} (experimental) "
                          f"without telling the user; gate that route or graduate "
                          f"{_other(graduation, found.module)} first")
    for scope, line in reach.gate_calls(data, functions):
        graduation.ask(3, f"{rel}:{line} ({scope}) still calls an experimental gate or warning; drop it if it "
                          f"guarded {graduation.feature}, keep it where it guards a route that is still experimental")


def _names_the_old_path(graduation: Plan, found: reach.Reach) -> bool:
    """List a dynamic import of the old path under step 2, once, with the string that spells it.

    The shim serves it for one release.
    """
    if not module_under(found.module, graduation.old):
        return False
    place = f"{found.rel}:{found.line}:"
    if not any(place in item for item in graduation.asked_in(2)):
        graduation.ask(2, f"{found.where()} still imports {found.module}, the old path (a shim for one release); "
                          f"point it at {graduation.home}")
    return True


def _list_moved_tests(graduation: Plan, project: Project, rel: str, facts) -> None:
    """A stable test may not import experimental code (EXP008). Step 6 is not done while one does."""
    s = graduation.target.settings
    if not under(rel, s.stable_tests) or under(rel, s.experimental_tests):
        return
    for imp, targets in reach.experimental_imports(project, facts):
        found = reach.Reach(rel, imp.line, imp.functions[-1] if imp.functions else "", targets[-1])
        if not _names_the_old_path(graduation, found):
            graduation.ask(6, f"{rel}:{imp.line} still imports {found.module}; a stable test may not (EXP008): "
                              "keep that test in the experimental lane, or drop the import")
