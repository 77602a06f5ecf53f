"""What in core reaches the feature, decided first: the core modules importing it and
the shape of each import, read from the checker's facts. An import no edit removes
refuses here, before anything else is planned; the others become libcst edits of
their modules (`entry_points`)."""

from __future__ import annotations

import ast
from typing import Dict, Iterator, List, NamedTuple, Optional

from ...config import module_under
from ...facts import FUNCTION, MODULE, FileFacts
from ...editing.cst_tools import Unfixable, import_at
from ...editing.target import FixTarget, Refused
from .entry_points import EXPERIMENTAL_API, branch_with_else, not_an_entry_point, remove_checker_import
from .entry_points import remove_function_import
from .model import At, CoreEdits, Feature, Removal
from .texts import Spelling, Texts


class Hit(NamedTuple):
    """A core module that imports the feature, and those imports."""

    rel: str
    facts: FileFacts
    imports: list


def core_files(project, texts: Texts, removal: Removal, words=(), spelling: Optional[Spelling] = None,
               also=()) -> Iterator[tuple]:
    """``(rel, source, facts)`` of every parsable core module the removal keeps whose
    text holds one of `words` or matches `spelling`, and of those in `also` (no file
    can import or name what it does not spell)."""
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


def find_reach(project, texts: Texts, removal: Removal, feature: Feature, spelling: Spelling) -> List[Hit]:
    """The core modules importing the feature (their text has its `spelling`);
    refuses at once an import that no edit removes (under ``TYPE_CHECKING``,
    ``import_module``, a module-level ``import a.b``)."""
    hits = []
    for rel, _, facts in core_files(project, texts, removal, spelling=spelling):
        imports = [imp for imp in facts.imports if any(module_under(t, feature.module) for t in project.import_targets(imp))]
        for imp in imports:
            _refuse_unremovable(f"{rel}:{imp.line}", imp)
            if imp.scope == FUNCTION and not in_experimental_api(project, facts, imp) and _outer(imp) != "__getattr__":
                _refuse_outside_a_branch(texts.tree(rel), f"{rel}:{imp.line}", imp)
        if imports:
            hits.append(Hit(rel, facts, imports))
    return hits


def _refuse_unremovable(where: str, imp) -> None:
    """What the facts alone say no edit removes."""
    if imp.dynamic:
        raise Refused(f"{where}: loads the feature with importlib.import_module or __import__, which is not "
                      "rewritten; remove it by hand")
    if imp.scope not in (FUNCTION, MODULE):
        raise Refused(f"{where}: an import of the feature under `if TYPE_CHECKING:`; remove it by hand")
    if imp.scope == MODULE and not imp.names:
        raise Refused(f"{where}: a module-level import of the feature that is not `from ... import checker`")


def _refuse_outside_a_branch(tree: Optional[ast.Module], where: str, imp) -> None:
    """An import in a plain function must sit in an ``if <name> == "<literal>":``
    branch without an else part (`cst_tools.backend_branch`, read here with ``ast``,
    which costs a fraction of libcst on a 10,000-line module)."""
    parents = _parents(tree) if tree is not None else {}
    node = next((n for n in parents if isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno == imp.line), None)
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(node, ast.If) and _backend_test(node.test) is not None:
            if node.orelse:
                raise branch_with_else(where, _backend_test(node.test))
            return
        node = parents.get(node)
    raise not_an_entry_point(where, _outer(imp))


def _parents(tree: ast.Module) -> Dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _backend_test(test: ast.AST) -> Optional[str]:
    """``"x"`` for ``name == "x"``, else None."""
    if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq) and isinstance(test.comparators[0], ast.Constant)
            and isinstance(test.comparators[0].value, str)):
        return test.comparators[0].value
    return None


def _outer(imp) -> str:
    return imp.functions[0] if imp.functions else "<module>"


def in_experimental_api(project, facts: FileFacts, imp) -> bool:
    """Is the import in the body of an ``@flashinfer_experimental_api`` function?"""
    definition = facts.definitions.get(_outer(imp))
    return definition is not None and project.decorated_with(facts.module, definition, EXPERIMENTAL_API)


def plan_entry_points(target: FixTarget, project, hits: List[Hit], core: CoreEdits) -> None:
    """Edit each import of the feature away with what it serves: an experimental API,
    a backend's branch or checks entry, a lazy branch."""
    for rel, facts, imports in hits:
        mod = core.of(target, rel)
        for imp in imports:
            where = f"{rel}:{imp.line}"
            try:
                statement = import_at(mod.file, At(imp.line, imp.column))
            except Unfixable as reason:
                raise Refused(f"{where}: {reason}") from None
            if imp.scope == MODULE:
                remove_checker_import(mod, statement, core.backends, where)
                continue
            remove_function_import(mod, in_experimental_api(project, facts, imp), _outer(imp), statement, core.backends, where)
