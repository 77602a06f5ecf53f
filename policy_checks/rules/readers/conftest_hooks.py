"""conftest.py hooks that can put experimental tests back into the stable lane (EXP008).

pytest asks its hooks in turn. For ``pytest_ignore_collect``, ``pytest_collect_directory``
and ``pytest_collection``, it stops at the first answer that is not None. A conftest's hook
is asked before pytest's own. So:

- ``pytest_ignore_collect`` may answer anything but True or None (``return False``,
  ``return path.name == "x"``). That tells pytest *not* to ignore a path. It happens before
  pytest's own hook applies ``norecursedirs``, so it re-admits ``tests/experimental``.
  Answering True (ignore more) or None (no opinion) is harmless.
- ``pytest_collect_directory`` or ``pytest_collection`` returning a value replaces pytest's
  own collection of a directory or of the whole session.
- ``pytest_collection_modifyitems`` may skip, reorder or deselect; that is harmless.
  Deselecting looks like ``items[:] = [i for i in items if ...]``, ``items.remove`` or
  ``del items[i]``. Adding items brings tests from elsewhere. Adding means
  ``items.append/extend/insert``, ``items += ...``, or ``items[:] =`` anything not drawn
  from ``items``. Building collectors with ``from_parent``/``perform_collect``/``genitems``
  adds items too.
- Anywhere in the file, these count: writing ``norecursedirs``, pytest's ini cache or
  override options, or the session's arguments (``config.args``). Adding to
  ``norecursedirs`` with ``config.addinivalue_line`` is fine.

Read with ``ast`` only.
"""

from __future__ import annotations

import ast
from typing import Iterator, List, NamedTuple

from ...model import markers

_FIRST_ANSWER = ("pytest_collect_directory", "pytest_collection")
_ADDS = frozenset({"append", "extend", "insert", "__setitem__", "__iadd__"})
_COLLECTS = frozenset({"from_parent", "perform_collect", "genitems", "_collectfile", "_collect_one_node"})
_CONFIG_INTERNALS = frozenset({"_inicache", "inicfg", "_inicfg", "override_ini", "_override_ini"})
_DRAWN_FROM = frozenset({"filter", "sorted", "list", "reversed", "tuple"})


class Readmission(NamedTuple):
    line: int
    column: int
    key: str  # stable across edits: the hook and what it does
    message: str


def readmissions(text: str) -> List[Readmission]:
    """What in a conftest's source can make the stable lane collect excluded tests."""
    tree = markers.parse(text)
    if tree is None:  # not Python, or deeper than the parser takes: EXP000 reports it
        return []
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.extend(_hook(node))
    found.extend(_config_writes(tree))
    one_a_line = {}
    for item in sorted(set(found)):
        one_a_line.setdefault(item.line, item)  # one statement that adds and collects is one finding
    return list(one_a_line.values())


def _returns(function) -> Iterator[ast.Return]:
    """The function's own return statements, not those of nested functions."""
    stack = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _ignores_only(value) -> bool:
    """Is every value `value` can take True or None?"""
    if value is None:
        return True
    if isinstance(value, ast.Constant):
        return value.value is True or value.value is None
    if isinstance(value, ast.IfExp):
        return _ignores_only(value.body) and _ignores_only(value.orelse)
    return False


def _hook(function) -> Iterator[Readmission]:
    name = function.name
    if name == "pytest_ignore_collect":
        for ret in _returns(function):
            if not _ignores_only(ret.value):
                yield Readmission(ret.lineno, ret.col_offset + 1, f"{name} answers not-ignored",
                                  f"{name} can answer a false value, which tells pytest not to ignore a path "
                                  "before norecursedirs is applied (return True or None only)")
    elif name in _FIRST_ANSWER:
        for ret in _returns(function):
            if ret.value is not None and not (isinstance(ret.value, ast.Constant) and ret.value.value is None):
                yield Readmission(ret.lineno, ret.col_offset + 1, f"{name} collects",
                                  f"{name} returns a value, which replaces pytest's own collection "
                                  "(and its norecursedirs)")
    elif name == "pytest_collection_modifyitems":
        yield from _adds_items(function)


def _adds_items(function) -> Iterator[Readmission]:
    name = function.name
    message = f"{name} adds tests to the session (it may only skip, reorder or deselect)"
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            if node.func.attr in _ADDS and isinstance(target, ast.Name) and target.id == "items":
                yield Readmission(node.lineno, node.col_offset + 1, f"{name} adds items", message)
            elif node.func.attr in _COLLECTS:
                yield Readmission(node.lineno, node.col_offset + 1, f"{name} collects", message)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "items":
            if not isinstance(node.op, (ast.Sub,)):
                yield Readmission(node.lineno, node.col_offset + 1, f"{name} adds items", message)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                        and target.value.id == "items" and not _drawn_from_items(node.value)):
                    yield Readmission(node.lineno, node.col_offset + 1, f"{name} adds items", message)


def _drawn_from_items(value) -> bool:
    """Is `value` a selection of ``items``?

    That is a comprehension over it, ``filter``/``sorted`` of it, or ``items`` itself."""
    if isinstance(value, ast.Name):
        return value.id == "items"
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
        first = value.generators[0].iter
        return len(value.generators) == 1 and _drawn_from_items(first) and isinstance(value.elt, ast.Name) and (
            isinstance(value.generators[0].target, ast.Name) and value.elt.id == value.generators[0].target.id
        )
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _DRAWN_FROM:
        return bool(value.args) and _drawn_from_items(value.args[-1])
    if isinstance(value, ast.Subscript):
        return _drawn_from_items(value.value)
    return False


def _config_writes(tree) -> Iterator[Readmission]:
    adding = _addinivalue_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == "norecursedirs" and (node.lineno, node.col_offset) not in adding:
            yield Readmission(node.lineno, node.col_offset + 1, "norecursedirs",
                              "the conftest names norecursedirs (it may only add to it, with "
                              "config.addinivalue_line)")
        elif isinstance(node, ast.Attribute) and node.attr in _CONFIG_INTERNALS:
            yield Readmission(node.lineno, node.col_offset + 1, f"config.{node.attr}",
                              f"the conftest reaches pytest's configuration internals ({node.attr})")
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript):
                    target = target.value
                if isinstance(target, ast.Attribute) and target.attr == "args":
                    yield Readmission(node.lineno, node.col_offset + 1, "config.args",
                                      "the conftest rewrites the session's arguments (config.args)")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _ADDS
              and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "args"):
            yield Readmission(node.lineno, node.col_offset + 1, "config.args",
                              "the conftest rewrites the session's arguments (config.args)")


def _addinivalue_names(tree) -> set:
    """Positions of ``"norecursedirs"`` passed to ``addinivalue_line``; adding is fine."""
    return {
        (arg.lineno, arg.col_offset)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "addinivalue_line"
        for arg in node.args[:1]
        if isinstance(arg, ast.Constant)
    }
