"""What in core reaches the feature, decided first.

That is the core modules importing it and the shape of each import. Both are read
from the checker's facts. The imports no edit removes refuse here, before any edit
is planned. One answer names them all. The others become libcst edits of their
modules (`entry_points`).
"""

from __future__ import annotations

import ast
from typing import Iterator, List, NamedTuple, Optional, Tuple

from ...model.config import module_under
from ...model.facts import FUNCTION, MODULE, TYPE_CHECKING, FileFacts
from ...editing.cst_tools import Unfixable, import_at
from ...editing.target import FixTarget, Refused
from ...model import entry_points, exports
from ...model.entry_points import arm_goes_alone, branch_around, entry_point, parent_map
from ..helpers import CallGraph, Reached, follow
from .entry_points import EXPERIMENTAL_API, branch_with_else, not_an_entry_point, remove_checker_import
from .entry_points import drop_imported_names, remove_function_import, remove_named_definition
from ..texts import Spelling, Texts
from ..plan import Plan
from .model import At, CoreEdits, Feature


class Hit(NamedTuple):
    """A core module that imports the feature, and those imports."""

    rel: str
    facts: FileFacts
    imports: list
    going: dict = {}  # an import's line -> the definition that goes whole around it (None: none does)


def core_files(project, texts: Texts, removal: Plan, words=(), spelling: Optional[Spelling] = None,
               also=()) -> Iterator[tuple]:
    """``(rel, source, facts)`` of the parsable core modules that may reach what goes.

    These are the modules the removal keeps whose text holds one of `words` or
    matches `spelling`, and those in `also`. No file can import or name what it
    does not spell.
    """
    settings = project.settings
    for rel in sorted(project.files):
        source = project.files[rel]
        if removal.gone(rel) or not settings.is_core(source.module):
            continue
        if not (rel in also or texts.mentions(rel, words) or texts.matches(rel, spelling)):
            continue
        facts = project.facts(rel)
        if facts.syntax_error is None:
            yield rel, source, facts


def find_reach(project, texts: Texts, removal: Plan, feature: Feature,
               spelling: Spelling) -> Tuple[List[Hit], Reached]:
    """The core modules importing the feature. Their text has its `spelling`.

    Refuses an import that no edit removes. Such an import sits under
    ``TYPE_CHECKING``, calls ``import_module``, or is a module-level ``import a.b``.
    It may also be in a helper that stays. Every such import is read first, and
    the answer names them all. The typed face of a lazy table
    (`exports.typed_face`) is no reach: it goes with its entries.
    """
    hits, starts, refusals = [], [], []
    for rel, _, facts in core_files(project, texts, removal, spelling=spelling):
        imports = [imp for imp in facts.imports if any(module_under(t, feature.module) for t in project.import_targets(imp))]
        face = {id(r.imp) for r in exports.typed_face(facts).values()}  # the exports step's: it goes with its entry
        typed = [imp for imp in imports if id(imp) in face]
        imports = [imp for imp in imports if id(imp) not in face]
        going = {}
        for imp in imports:
            try:
                _refuse_unremovable(f"{rel}:{imp.line}", imp)
                if imp.scope == FUNCTION:
                    going[imp.line] = _going_with(project, facts, imp, feature.module, texts.tree(rel))
                if imp.scope != FUNCTION or going[imp.line] is not None or _outer(imp) == "__getattr__":
                    continue
                found = entry_point(project, facts, imp.functions)
                if not _in_a_branch(texts.tree(rel), f"{rel}:{imp.line}", imp, texts.read(rel)):
                    if found is not None:  # a public API: only a branch of it is the feature's
                        raise not_an_entry_point(f"{rel}:{imp.line}", _outer(imp))
                    starts.append((rel, _outer(imp), imp.line))
            except Refused as why:
                refusals.append(str(why))
        if imports or typed:  # a typed face alone: the module is edited, and read after the edits
            hits.append(Hit(rel, facts, imports, going))
    if len(refusals) == 1:
        raise Refused(refusals[0])
    if refusals:
        raise Refused("core imports the feature where no edit removes it:\n" + "\n".join(f"  {r}" for r in refusals))
    return hits, _follow_helpers(project, texts, removal, hits, starts)


def _going_with(project, facts: FileFacts, imp, feature: str, tree: Optional[ast.Module]) -> Optional[str]:
    """The definition around a function-level import that goes whole with the feature.

    It is an ``@flashinfer_experimental_api`` function or an experimental API class.
    An experimental API that also hands off to another experimental feature keeps
    serving it. Then only the feature's ``if backend == "<name>":`` branch goes.
    """
    found = entry_point(project, facts, imp.functions)
    if found is None or found.kind not in (entry_points.EXPERIMENTAL, entry_points.CLASS):
        return None
    if found.kind == entry_points.EXPERIMENTAL and _serves_another(project, facts, found.qualname, feature):
        try:
            in_branch = _in_a_branch(tree, "", imp)
        except Refused:
            in_branch = False
        if not in_branch:
            raise Refused(f"{project.rel_of(facts.module)}:{imp.line}: {found.qualname} also hands off to another experimental "
                          "feature, so only this feature's part of it may go, but this import is not alone in an "
                          '`if backend == "<name>":` branch without an else part (or an `elif` arm): move it '
                          "into such a branch, "
                          "or split the API")
        return None
    return found.qualname


def _serves_another(project, facts: FileFacts, qualname: str, feature: str) -> bool:
    """Does `qualname` import another experimental feature too?"""
    settings = project.settings
    return any(
        imp.functions and imp.functions[0] == qualname and any(
            settings.is_experimental_module(t) and not module_under(t, feature) and t != settings.experimental_package
            for t in project.import_targets(imp))
        for imp in facts.imports)


def _follow_helpers(project, texts: Texts, removal: Plan, hits: List[Hit], starts) -> Reached:
    """The helpers that import the feature, followed to what uses them.

    A use the removal keeps refuses, naming the line and the edit that settles it.
    """
    if not starts:
        return Reached(set(), set(), [])
    going = {(hit.rel, q) for hit in hits for q in hit.going.values() if q is not None}
    graph = CallGraph(project, texts.tree, texts.read,
                      lambda rel: not removal.gone(rel))
    reached = follow(graph, starts, going, first_block=True)
    if reached.blocked:
        raise Refused(_blocked_reason(reached.blocked[0]))
    return reached


def _blocked_reason(blocked) -> str:
    """What a person must decide about a helper that stays reachable."""
    where, name, use = f"{blocked.rel}:{blocked.line}", blocked.qualname, blocked.use
    mark = f"@{EXPERIMENTAL_API}(feature=...)"
    if blocked.why == "public":
        return (f"{where}: `{name}` imports the feature but is a public function and no entry point: mark it {mark} "
                "if it is part of the feature's API (it then goes with it), or move the import into an entry point")
    user = f"`{use.functions[0]}`" if use.functions else "module-level code"
    return (f"{where}: helper `{name}` leads to the feature and is also used by {user} ({use.rel}:{use.line}), "
            "which the removal keeps: move that use into an entry point of the feature (an `if backend == "
            f"\"<name>\":` branch, or an {mark} function or class), or mark "
            + (f"`{use.functions[0]}` {mark} if it belongs to the feature" if use.functions else "it by hand"))


def _refuse_unremovable(where: str, imp) -> None:
    """What the facts alone say no edit removes."""
    if imp.dynamic:
        raise Refused(f"{where}: loads the feature with importlib.import_module or __import__, which is not "
                      "rewritten; remove it by hand")
    if imp.scope not in (FUNCTION, MODULE):
        guard = "if TYPE_CHECKING:" if imp.scope == TYPE_CHECKING else "if __name__ == \"__main__\":"
        raise Refused(f"{where}: an import of the feature under `{guard}`; remove it by hand")
    if imp.scope == MODULE and not imp.names:
        raise Refused(f"{where}: a module-level import of the feature that is not `from ... import checker`")


def _in_a_branch(tree: Optional[ast.Module], where: str, imp, source: bytes = b"") -> bool:
    """Does an import in a plain function sit in a backend branch?

    A backend branch is ``if backend == "<name>":`` or
    ``if list(backends) == ["<name>"]:`` (`entry_points.branch_backend`). This is
    `cst_tools.backend_branch`, read here with ``ast``. On a 10,000-line module that
    costs a fraction of libcst. A branch whose ``else:`` would have to take its
    place refuses (`entry_points.arm_goes_alone`).
    """
    parents = parent_map(tree) if tree is not None else {}
    arm = branch_around(parents, imp.line)
    if arm is None:
        return False
    if not arm_goes_alone(arm, parents.get(arm)):
        text = ast.get_source_segment(source.decode("utf-8", "replace"), arm.test) if source else None
        raise branch_with_else(where, " ".join((text or ast.unparse(arm.test)).split()))
    return True


def _outer(imp) -> str:
    return imp.functions[0] if imp.functions else "<module>"


def plan_entry_points(target: FixTarget, project, hits: List[Hit], core: CoreEdits, reached: Reached) -> None:
    """Edit each import of the feature away with what it serves.

    It serves an experimental API (a function, or a class whole), a backend's branch
    or checks entry, or a lazy branch. Then the helpers only those reach go, and the
    entry points reached through them.
    """
    for rel, facts, imports, going in hits:
        mod = core.of(target, rel)
        for imp in imports:
            where = f"{rel}:{imp.line}"
            if imp.scope == FUNCTION and (going.get(imp.line) is not None or (rel, _outer(imp)) in reached.helpers):
                continue  # the whole definition goes, below
            try:
                statement = import_at(mod.file, At(imp.line, imp.column))
            except Unfixable as reason:
                raise Refused(f"{where}: {reason}") from None
            if imp.scope == MODULE:
                remove_checker_import(mod, statement, core.backends, where)
                continue
            # what goes whole was skipped above: here a branch of an API, or a lazy branch
            remove_function_import(mod, _outer(imp), statement, core.backends, where)
    whole = {(hit.rel, q) for hit in hits for q in hit.going.values() if q is not None}
    for rel, qualname in sorted(whole | reached.entry_points | reached.helpers):
        remove_named_definition(core.of(target, rel), qualname)
    _drop_helper_imports(target, project, core, reached)


def _drop_helper_imports(target: FixTarget, project, core: CoreEdits, reached: Reached) -> None:
    """Remove a module-level ``from m import _helper`` of a removed helper.

    Its uses all went with the feature, or the helper would not go.
    """
    gone = {(project.files[rel].module, q) for rel, q in reached.helpers if "." not in q}
    if not gone:
        return
    names = {q for _, q in gone}
    for rel, source in sorted(project.files.items()):
        if not project.settings.is_core(source.module):
            continue
        data = (target.root / rel).read_bytes()
        if not any(n.encode() in data for n in names):
            continue
        facts = project.facts(rel)
        for imp in facts.imports:
            dropped = {bound for name, bound in imp.names if (imp.module, name) in gone}
            if imp.scope != MODULE or not dropped:
                continue
            drop_imported_names(core.of(target, rel), rel, [(imp.line, imp.column, bound) for bound in dropped])
