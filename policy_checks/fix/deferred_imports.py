"""EXP001: a module-level import of experimental code becomes function-local imports.

A name is moved only when three things hold. Every use of it runs inside a function
body. That function is an entry point, where EXP007 allows a deferred import.
Nothing outside the module imports the name from it.

Any other name stays put, with the reason, for a person. The import statement is
split when only some of its names can move.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

import libcst as cst

from ..model import markers
from ..editing.exports import all_names
from ..editing.cst_tools import (
    Edit,
    ImportStatement,
    PythonFile,
    Unfixable,
    add_edit,
    bound_name,
    decorator_kinds,
    decorator_names,
    dotted_name,
    drop_small_statement,
    enclosing_function,
    experimental_aliases,
    fresh_import,
    import_at,
    in_module_scope,
    imported_module,
    prepend_statements,
    resolve_from,
    with_aliases,
)
from .findings import Finding, FixTarget

# Decorators of the functions EXP007 lets import experimental code in their body.
ENTRY_POINT_DECORATORS = markers.ENTRY_POINT_DECORATORS


def rewrite(file: PythonFile, finding: Finding, target: FixTarget, edits: Dict[cst.CSTNode, Edit]) -> Optional[str]:
    """Add the edits that fix `finding` to `edits`. Returns what is left for a person."""
    statement = import_at(file, finding)
    if not in_module_scope(file, statement):
        raise Unfixable("the import is in a class or function body")
    aliases = experimental_aliases(file, statement, target)
    if not aliases:
        raise Unfixable(f"imports nothing from {target.experimental_package}")
    users: Dict[int, Tuple[cst.ImportAlias, List[cst.FunctionDef]]] = {}
    left: List[str] = []
    for alias in aliases:
        name = bound_name(alias, statement)
        try:
            users[id(alias)] = (alias, _functions_using(file, statement, alias, name, target))
        except Unfixable as reason:
            if not _may_stay(file, statement, alias, target):
                left.append(f"'{name}' {reason}")
    if not users:
        raise Unfixable("; ".join(left) or "every name is an @experimental_backend checker")

    kept = [a for a in statement.names if id(a) not in users]
    drop_small_statement(file, statement, with_aliases(statement, kept) if kept else None, edits)
    by_function: Dict[int, Tuple[cst.FunctionDef, List[cst.ImportAlias]]] = {}
    for alias, functions in users.values():
        for function in functions:
            by_function.setdefault(id(function), (function, []))[1].append(alias)
    for function, moved in by_function.values():
        line = fresh_import(statement, moved)
        add_edit(edits, function, lambda updated, line=line: prepend_statements(updated, [line]))
    return "; ".join(left) or None


def _functions_using(file: PythonFile, statement: ImportStatement, alias: cst.ImportAlias, name: str, target: FixTarget) -> List[cst.FunctionDef]:
    """The functions that must import `name` themselves. Raises `Unfixable` when it cannot move."""
    scope = file.scopes[file.tree]
    full = dotted_name(alias.name)
    if isinstance(statement, cst.Import) and alias.asname is None:
        prefixes = {".".join(full.split(".")[:n]) for n in range(1, full.count(".") + 2)}
    else:
        prefixes = {name}
    # `import a.b` binds the package `a`; another `import a.x` binds the same object
    binds_package = isinstance(statement, cst.Import) and alias.asname is None
    references = []
    for assignment in scope.assignments:
        if assignment.node is statement and assignment.name in prefixes:
            references += assignment.references
        elif assignment.name == name and not (binds_package and isinstance(assignment.node, cst.Import)):
            raise Unfixable(f"is also bound at line {file.line_of(assignment.node)}")
    if name in all_names(file):
        raise Unfixable("is listed in __all__ (a re-export)")
    if not references:
        raise Unfixable("is not used in this module (a re-export, or imported for its side effects)")
    functions: Dict[int, cst.FunctionDef] = {}
    for reference in sorted(references, key=lambda r: file.line_of(r.node)):
        function = enclosing_function(file, reference.node)
        if function is None:
            raise Unfixable(f"is used at module level (line {file.line_of(reference.node)})")
        functions[id(function)] = function
    for function in functions.values():
        if not _is_entry_point(file, function):
            raise Unfixable(
                f"is used in {function.name.value}() (line {file.line_of(function)}), which is not an "
                "entry point: a deferred import there would be EXP007"
            )
    importer = _importer_elsewhere(target, file, name)
    if importer:
        raise Unfixable(f"is imported from this module by {importer}")
    return list(functions.values())


def _may_stay(file: PythonFile, statement: ImportStatement, alias: cst.ImportAlias, target: FixTarget) -> bool:
    """A checker imported from a support module may stay, once the rest has moved."""
    return isinstance(statement, cst.ImportFrom) and target.is_marked_checker(
        imported_module(file, statement), dotted_name(alias.name)
    )


def _is_entry_point(file: PythonFile, function: cst.FunctionDef) -> bool:
    if function.name.value == "__getattr__" and file.is_package and file.parents.get(function) is file.tree:
        return True
    if ENTRY_POINT_DECORATORS & set(decorator_names(function)):
        return True
    return any(decorator_kinds(file, d) & _API_KINDS for d in function.decorators)  # through the file's aliases


_API_KINDS = frozenset({markers.KIND_EXPERIMENTAL_API, markers.KIND_STABLE_API})


def _importer_elsewhere(target: FixTarget, file: PythonFile, name: str) -> Optional[str]:
    """``path:line`` of another module that does ``from <this module> import name``.

    ``import <this module>`` followed by attribute access is not looked for.
    """
    for relative in target.package_files():
        try:
            text = (target.root / relative).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if name not in text:
            continue
        module, is_package = target.module_of(relative)
        if module == file.module_name:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
                if resolve_from(module, is_package, node.level, node.module or "") == file.module_name:
                    return f"{relative}:{node.lineno}"
    return None

