"""Which moved files keep their bytes.

This is decided with ``ast``, which is fast, before ``libcst`` is asked to parse
them. ``libcst`` is slow: minutes for the megabyte modules some features hold.

A moved module is rewritten only for an import the move changes, or for a mark of
the track. Such an import names the feature by its absolute name. Or it is a
relative one whose text changes at the new depth. Every marker, gate and keyword
the graduation swaps or drops spells ``experimental`` in an identifier:
``flashinfer_experimental_api``, ``experimental_backend``, ``is_experimental``,
``require_experimental...``, ``experimental=``. A file with neither moves as it is.
Any doubt, such as a file ``ast`` cannot read, goes the slow way.
"""

from __future__ import annotations

import ast

from ...model import parsed
from ...model.config import module_under
from ...editing.cst_tools import relative_import
from ...model.facts import package_of, resolve_relative
from .rewrite import moved

_MARK_WORD = "experimental"


def keeps_its_bytes(data: bytes, old: str, home: str, module: str, new_module: str, is_package: bool) -> bool:
    """Does moving this file leave its bytes as they are?

    The module goes from `module` to `new_module`, and the feature from `old` to
    `home`.
    """
    try:
        tree = parsed.tree(data)
    except (SyntaxError, ValueError):
        return False
    old_package, new_package = package_of(module, is_package), package_of(new_module, is_package)
    parent, _, last = old.rpartition(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(module_under(alias.name, old) for alias in node.names):
                return False
        elif isinstance(node, ast.ImportFrom):
            source = resolve_relative(old_package, node.level, node.module) if node.level else node.module
            if source is None:
                return False
            if source == parent and any(alias.name == last for alias in node.names):
                return False
            target = moved(source, old, home)
            if node.level:
                if relative_import(new_package, target) != "." * node.level + (node.module or ""):
                    return False
            elif target != source:
                return False
        elif _spells_a_mark(node):
            return False
    return True


def _spells_a_mark(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return _MARK_WORD in node.id
    if isinstance(node, ast.Attribute):
        return _MARK_WORD in node.attr
    if isinstance(node, ast.keyword):
        return node.arg is not None and _MARK_WORD in node.arg
    if isinstance(node, ast.alias):
        return _MARK_WORD in node.name or _MARK_WORD in (node.asname or "")
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return _MARK_WORD in node.name
    if isinstance(node, ast.arg):
        return _MARK_WORD in node.arg
    return False
