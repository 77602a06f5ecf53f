"""Imports a tree edit made unused, read with ``ast`` (standard library only): the
judge that ``benchmarks/lifecycle_release.py`` and the lifecycle tests' invariants
share, independent of the code that makes the edits (``policy_checks/lifecycle/remove/debris.py``).

- module level: a name the module read before (in code, or as a word of a string:
  ``__all__``, annotations) that it reads nowhere after, unless another file imports
  it from the module; package ``__init__`` files aside, whose imports are what they
  publish;
- in a function body (its own scope): a name the function read before and no longer
  reads, nested functions, lambdas and strings included; an import alone in an
  ``if``/``for``/``with``/``try`` block aside (removing it would leave the block empty).
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, List, Set, Tuple


def made_unused(rel: str, before: bytes, after: bytes, imported_elsewhere: Callable[[str], bool]) -> List[str]:
    """``path: name`` (module level) and ``path: function: name`` of each import of the
    edited module `rel` that the edit made unused; `imported_elsewhere(name)`: does
    another file import `name` from this module?"""
    left = local_imports_made_unused(rel, before, after)
    if rel.endswith("__init__.py"):
        return left
    used_before, used_after = used_names(before), used_names(after)
    return left + [f"{rel}: {name}" for name in sorted(module_imports(after))
                   if name in used_before and name not in used_after and not imported_elsewhere(name)]


def used_names(data: bytes) -> Set[str]:
    """Every name the module reads (a Name, the root of an attribute chain) and every
    identifier inside a string constant (``__all__``, string annotations, tables)."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return set()
    return _reads(ast.walk(tree))


def module_imports(data: bytes) -> Set[str]:
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return set()
    bound = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {a.asname or a.name.partition(".")[0] for a in node.names if a.name != "*"}
    return bound


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def local_imports_made_unused(rel: str, before: bytes, after: bytes) -> List[str]:
    functions_before, functions_after = _functions(before), _functions(after)
    left = []
    for qualname, new in functions_after.items():
        old = functions_before.get(qualname)
        if old is None:
            continue
        imports = _own_imports(new)
        used_before, used_after = _used_in(old), _used_in(new)
        for node, alone in imports:
            if alone:
                continue
            for alias in node.names:
                name = alias.asname or alias.name.partition(".")[0]
                if alias.name != "*" and name in used_before and name not in used_after:
                    left.append(f"{rel}: {qualname}: {name}")
    return left


def _functions(data: bytes) -> Dict[str, ast.AST]:
    """qualname -> the function or method (qualnames bound once only)."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return {}
    found, twice = {}, set()

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    (twice.add(name) if name in found else found.__setitem__(name, child))
                visit(child, name + ".")
            elif not isinstance(child, ast.Lambda):
                visit(child, prefix)

    visit(tree, "")
    return {name: node for name, node in found.items() if name not in twice}


def _own_imports(function) -> List[Tuple[ast.AST, bool]]:
    """``(import, alone in a block that is not the function body)`` of the imports in
    `function`'s own scope."""
    found = []

    def block(statements, is_body):
        alone = not is_body and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in statements)
        for statement in statements:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                found.append((statement, alone))
            elif not isinstance(statement, _SCOPES):
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(statement, field, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                        block(inner, False)
                for part in (*getattr(statement, "handlers", ()), *getattr(statement, "cases", ())):
                    block(part.body, False)

    block(function.body, True)
    return found


def _used_in(function) -> Set[str]:
    """The names `function`'s body reads, nested functions and lambdas included, and
    the words of its strings."""
    return _reads(node for statement in function.body for node in ast.walk(statement))


def _reads(nodes) -> Set[str]:
    """The names `nodes` read, and the words of their strings."""
    used = set()
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            used.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used.update(re.findall(r"[A-Za-z_]\w*", node.value))
    return used


def module_of(rel: str) -> str:
    return rel[:-3].replace("/", ".").removesuffix(".__init__")
