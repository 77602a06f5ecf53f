"""The edited core modules after the removal.

Each one gets its new bytes. A module left holding nothing a user could call is
deleted instead, when nothing imports it.
"""

from __future__ import annotations

import ast
from typing import Dict, List, NamedTuple, Set

from ...model import parsed
from ...model import markers
from ...model.facts import extract
from ...editing.cst_tools import apply_edits, inside
from ...editing.target import FixTarget, Refused
from ..plan import Plan
from ..texts import Texts
from .model import CoreEdits, ModuleEdits

IMPORT_CALLS = markers.IMPORT_FUNCTIONS
_HOOKS = ("__getattr__", "__dir__")
_CONTAINERS = ("frozenset", "set", "tuple", "list", "dict")


class Edited(NamedTuple):
    """The core modules the plan edits: the bytes of each kept one, and the ones that go."""

    after_of: Dict[str, bytes]  # rel -> the kept module's bytes after the removal
    emptied: List[str]  # rels of the modules left holding nothing


def apply_core_edits(target: FixTarget, project, removal: Plan, core: CoreEdits) -> Edited:
    """Run each module's edits.

    A module left holding nothing goes, unless it is a package's ``__init__``. Any
    other is rewritten. Nothing it lost may still be used in it.
    """
    after_of: Dict[str, bytes] = {}
    emptied: List[str] = []
    for rel, mod in sorted(core.modules.items()):
        before = (target.root / rel).read_bytes()
        after = apply_edits(mod.file, mod.edits) if mod.edits else before
        try:
            tree = parsed.tree(after)
        except SyntaxError as error:  # a safety net, as in `fix`
            raise Refused(f"internal error: the rewrite of {rel} does not parse ({error.msg})") from None
        if holds_nothing(tree) and not project.files[rel].is_package:
            emptied.append(rel)
            removal.deletions.append(rel)
            continue
        for name in sorted(mod.names):
            _check_unused_in_module(mod, name, rel)
        after_of[rel] = after
        if after != before:
            removal.rewrite(rel, after, before)
    return Edited(after_of, emptied)


def _check_unused_in_module(mod: ModuleEdits, name: str, rel: str) -> None:
    """Nothing removed may still be used in its own module.

    A method's uses are attribute accesses, and are not checked.
    """
    if "." in name:
        return
    file = mod.file
    for assignment in file.scopes[file.tree].assignments[name]:
        for reference in assignment.references:
            if not inside(file, reference.node, mod.removed_nodes):
                raise Refused(f"{rel}:{file.line_of(reference.node)}: {name} is still used after the removal")


def holds_nothing(tree: ast.Module) -> bool:
    """Is the module left with nothing a user could call?

    It may still hold strings (docstrings or not) and ``pass``. It may hold imports
    nothing uses any more, ``from __future__`` too. It may hold an ``__all__``
    listing none of them, and private constants. It may hold PEP 562 hooks
    (``__getattr__``, ``__dir__``) that neither import nor use an imported name.
    """
    imported: Set[str] = set()
    used: Set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= _bound_by(node)
        elif isinstance(node, ast.Assign) and _is_all(node):
            listed = _listed(node.value)
            if listed is None:
                return False
            used |= listed
        elif isinstance(node, ast.FunctionDef) and node.name in _HOOKS and not _imports_anything(node):
            used |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        elif not (_is_string(node) or isinstance(node, ast.Pass) or _private_constant(node)):
            return False
    return not imported & used


def _bound_by(node) -> Set[str]:
    """The names an import statement binds. ``*`` and ``__future__`` bind none."""
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return set()
    if isinstance(node, ast.Import):
        return {alias.asname or alias.name.partition(".")[0] for alias in node.names}
    return {alias.asname or alias.name for alias in node.names if alias.name != "*"}


def _is_all(node: ast.Assign) -> bool:
    return all(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)


def _listed(value):
    """The strings of an ``__all__`` display, or None when it is computed."""
    if not isinstance(value, (ast.List, ast.Tuple)):
        return None
    strings = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return set(strings) if len(strings) == len(value.elts) else None


def _is_string(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _private_constant(node: ast.stmt) -> bool:
    """Is it ``_NAME = <literal>``? ``frozenset({...})`` and friends count as literals."""
    if not isinstance(node, ast.Assign) or not all(isinstance(t, ast.Name) and t.id.startswith("_") and not t.id.startswith("__") for t in node.targets):
        return False
    value = node.value
    if isinstance(value, ast.Call) and _last_name(value.func) in _CONTAINERS and not value.keywords:
        return all(_is_literal(a) for a in value.args)
    return _is_literal(value)


def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _imports_anything(function: ast.FunctionDef) -> bool:
    return any(
        isinstance(n, (ast.Import, ast.ImportFrom))
        or (isinstance(n, ast.Call) and _last_name(n.func) in IMPORT_CALLS)
        for n in ast.walk(function)
    )


def _last_name(node: ast.AST) -> str:
    return (markers.dotted_name(node) or "").rpartition(".")[2]


def refuse_imported_emptied(project, texts: Texts, removal: Plan, edited: Edited) -> None:
    """A module that goes must be imported by no kept module, as the plan leaves it.

    The scan of the kept files cannot see an ``importlib.import_module("...")`` of
    it. The facts hold that.
    """
    for rel in edited.emptied:
        module = project.files[rel].module
        users = [
            other
            for other in sorted(project.files)
            if other != rel and not removal.gone(other) and texts.mentions(other, [module.rpartition(".")[2]])
            and any(module in project.import_targets(imp) for imp in _facts_after(project, edited, other).imports)
        ]
        if users:
            raise Refused(f"{rel} would hold nothing, but {', '.join(users)} import(s) it")


def _facts_after(project, edited: Edited, rel: str):
    if rel not in edited.after_of:
        return project.facts(rel)
    source = project.files[rel]
    return extract(edited.after_of[rel], source.module, source.is_package)
