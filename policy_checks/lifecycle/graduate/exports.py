"""What a package serves as attributes, so that a new subpackage never replaces one.

Importing ``a.b.c`` binds ``c`` on ``a.b``: if ``a.b`` already served a function ``c``
(bound in its ``__init__``, brought in by a star import, or served lazily by its
``__getattr__``), ``a.b.c`` becomes the module and every call of it fails. The names
are read from the package's source with ``ast`` (the checker's facts keep only the
bindings its rules follow), following star imports through the project model.
"""

from __future__ import annotations

import ast
import os
from typing import Dict, Iterator, List, Optional, Set

from ...model import markers
from ...model.facts import package_of, resolve_relative
from ...model.project import Project

_BLOCKS = (ast.If, ast.Try, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ())
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def exported_names(project: Project, package: str) -> Dict[str, str]:
    """name -> how `package` serves it (its ``__init__`` binds it, a star import brings
    it, its ``__getattr__`` serves it lazily, its ``__all__`` declares it)."""
    tree = _module_tree(project, package)
    if tree is None:
        return {}
    found: Dict[str, str] = {}
    for name in sorted(_declared_all(tree) or ()):
        found.setdefault(name, "declared in its __all__")
    for name in sorted(_lazy_names(tree)):
        found.setdefault(name, "served lazily by its __getattr__")
    for source, names in _star_imports(project, package, tree, {package}):
        for name in sorted(names):
            found.setdefault(name, f"bound through `from {source} import *`")
    for name in sorted(_bound(tree)):
        found[name] = "bound in its __init__"
    return found


def _module_tree(project: Project, module: str) -> Optional[ast.Module]:
    rel = project.rel_of(module)
    if rel is None:
        return None
    try:
        return markers.parse((project.root / rel).read_bytes())
    except OSError:
        return None


def _top_statements(body: List[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run when the module is imported, inside ``if``/``try``/``with``/
    loops too, not inside a ``def`` or ``class`` body."""
    for statement in body:
        yield statement
        if isinstance(statement, _BLOCKS):
            for part in ("body", "orelse", "finalbody"):
                yield from _top_statements(getattr(statement, part, []) or [])
            for handler in getattr(statement, "handlers", []) or []:
                yield from _top_statements(handler.body)
        elif hasattr(ast, "Match") and isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from _top_statements(case.body)


def _bound(tree: ast.Module) -> Set[str]:
    """Every name the module binds at top level."""
    names: Set[str] = set()
    for statement in _top_statements(tree.body):
        if isinstance(statement, _DEFS):
            names.add(statement.name)
        elif isinstance(statement, ast.Import):
            names |= {a.asname or a.name.partition(".")[0] for a in statement.names}
        elif isinstance(statement, ast.ImportFrom):
            names |= {a.asname or a.name for a in statement.names if a.name != "*"}
        elif isinstance(statement, ast.Assign):
            names |= {n for target in statement.targets for n in _target_names(target)}
        elif isinstance(statement, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            names |= _target_names(statement.target)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            names |= {n for item in statement.items if item.optional_vars for n in _target_names(item.optional_vars)}
    return names


def _target_names(target: ast.AST) -> Set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {n for element in target.elts for n in _target_names(element)}
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return set()


def _declared_all(tree: ast.Module) -> Optional[Set[str]]:
    """The strings of ``__all__`` when every binding of it is a literal list or tuple
    (``=`` or ``+=``); None when there is none or one we cannot read."""
    found: Optional[Set[str]] = None
    for statement in _top_statements(tree.body):
        targets = statement.targets if isinstance(statement, ast.Assign) else (
            [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else [])
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        value = getattr(statement, "value", None)
        if not isinstance(value, (ast.List, ast.Tuple)) or not all(_string(e) is not None for e in value.elts):
            return None
        found = (found or set()) | {_string(e) for e in value.elts}
    return found


def _star_imports(project: Project, module: str, tree: ast.Module, seen: Set[str]):
    """``(source, names)`` for each module-level ``from source import *`` of `module`."""
    rel = project.rel_of(module)
    is_package = rel is not None and rel.endswith("/__init__.py")
    for statement in _top_statements(tree.body):
        if not (isinstance(statement, ast.ImportFrom) and any(a.name == "*" for a in statement.names)):
            continue
        source = resolve_relative(package_of(module, is_package), statement.level, statement.module)
        if source is not None and source not in seen:
            seen.add(source)
            yield source, _star_names(project, source, seen)


def _star_names(project: Project, module: str, seen: Set[str]) -> Set[str]:
    """What ``from module import *`` binds: its ``__all__``, else its public top-level
    names (those it star-imports itself included). Unknown for a module outside the
    project: nothing."""
    tree = _module_tree(project, module)
    if tree is None:
        return set()
    declared = _declared_all(tree)
    if declared is not None:
        return declared
    names = _bound(tree)
    for _, more in _star_imports(project, module, tree, seen):
        names |= more
    return {name for name in names if not name.startswith("_")}


# lazy exports (PEP 562) -----------------------------------------------------------------


def _lazy_names(tree: ast.Module) -> Set[str]:
    """Names a module-level ``__getattr__`` may serve: the identifier strings of every
    module-level table it reads, directly or through the helpers and tables it names
    (a dict's keys; a set's, frozenset's, tuple's or list's items, however built), and
    the strings it compares ``name`` with."""
    values = _module_values(tree)
    if "__getattr__" not in values:
        return set()
    names: Set[str] = set()
    todo, seen = ["__getattr__"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in values.get(name, ()):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names |= _compared_strings(node)
                todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
            else:
                names |= _table_strings(node)
                todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    return names


def _module_values(tree: ast.Module) -> Dict[str, List[ast.AST]]:
    """name -> the values the module binds it to at top level (functions as their ``def``)."""
    values: Dict[str, List[ast.AST]] = {}
    for statement in _top_statements(tree.body):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            values.setdefault(statement.name, []).append(statement)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                for name in _target_names(target):
                    values.setdefault(name, []).append(statement.value)
    return values


def _table_strings(value: ast.AST) -> Set[str]:
    """Identifier strings in a table's value, except a dict's plain string values (the
    modules a name maps to)."""
    skipped = {id(v) for node in ast.walk(value) if isinstance(node, ast.Dict)
               for v in node.values if _string(v) is not None}
    found = {_string(node) for node in ast.walk(value) if id(node) not in skipped and _string(node) is not None}
    found |= {k.arg for node in ast.walk(value) if isinstance(node, ast.Call) for k in node.keywords if k.arg}
    return {name for name in found if name.isidentifier()}


def _compared_strings(function: ast.AST) -> Set[str]:
    """Identifier strings a function compares with (``name == "x"``, ``name in ("a", "b")``,
    ``case "x":``)."""
    found: Set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                found |= {_string(n) for n in ast.walk(side) if _string(n) is not None}
        elif hasattr(ast, "MatchValue") and isinstance(node, ast.MatchValue) and _string(node.value) is not None:
            found.add(_string(node.value))
    return {name for name in found if name.isidentifier()}


def _string(node: ast.AST) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def free_name(project: Project, parent: str, last: str, exported: Dict[str, str]) -> str:
    """A public name beside `last` that `parent` neither serves nor holds, to suggest
    instead: a graduated API lives in a public module, never one starting with ``_``."""
    folder = project.root.joinpath(*parent.split("."))
    base = last.lstrip("_") or "graduated"
    candidates = [f"{base}_api", f"{base}_impl", f"{base}_kernels", f"{base}_ops"]
    candidates += [f"{base}_api{n}" for n in range(2, 100)]
    for candidate in candidates:
        taken = os.path.lexists(folder / candidate) or os.path.lexists(folder / f"{candidate}.py")
        if candidate not in exported and not taken:
            return f"{parent}.{candidate}"
    return f"{parent}.{base}_graduated"
