"""EXP002: make an eager re-export from the experimental package lazy.

The re-export sits in the root ``__init__.py``. It becomes a lazy one, resolved by
the module's ``__getattr__`` (PEP 562).

Each name gets its own branch: ``if name == "x": from ... import x; return x``. It
goes at the top of the existing ``__getattr__``, or of a new one. ``__dir__`` lists
the names, and ``__all__`` is left as it was. So ``dir()``,
``from flashinfer import *`` and attribute access see the same names as before.

A name the module itself uses cannot be lazy. ``__getattr__`` serves attribute
access, not global lookups. Such a name is left for a person.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import libcst as cst

from ..editing.cst_tools import (
    Edit,
    PythonFile,
    Unfixable,
    add_edit,
    bound_name,
    dotted_name,
    drop_small_statement,
    experimental_aliases,
    fresh_import,
    import_at,
    in_module_scope,
    prepend_statements,
    with_aliases,
)
from .findings import Finding, FixTarget


def rewrite(file: PythonFile, finding: Finding, target: FixTarget, edits: Dict[cst.CSTNode, Edit]) -> Optional[str]:
    """Add the edits that fix `finding` to `edits`. Returns what is left for a person."""
    statement = import_at(file, finding)
    if not in_module_scope(file, statement):
        raise Unfixable("the import is in a class or function body")
    lazy, left = [], []
    for alias in experimental_aliases(file, statement, target):
        name = bound_name(alias, statement)
        try:
            _check_movable(file, statement, alias, name)
        except Unfixable as reason:
            left.append(f"'{name}' {reason}")
        else:
            lazy.append(alias)
    if not lazy:
        raise Unfixable("; ".join(left) or f"imports nothing from {target.experimental_package}")

    kept = [a for a in statement.names if all(a is not m for m in lazy)]
    drop_small_statement(file, statement, with_aliases(statement, kept) if kept else None, edits)
    branches = [_branch(statement, alias) for alias in lazy]
    names = [bound_name(alias, statement) for alias in lazy]
    add_edit(edits, file.tree, lambda module: _export_lazily(module, branches, names))
    return "; ".join(left) or None


def _check_movable(file: PythonFile, statement, alias: cst.ImportAlias, name: str) -> None:
    if isinstance(statement, cst.Import) and alias.asname is None:
        raise Unfixable(f"binds the package name '{name}'; import the module under a name instead")
    for assignment in file.scopes[file.tree].assignments[name]:
        if assignment.node is not statement:
            raise Unfixable(f"is also bound at line {file.line_of(assignment.node)}")
        for reference in assignment.references:
            raise Unfixable(
                f"is used in this module (line {file.line_of(reference.node)}); a lazy export is not a global"
            )


def _branch(statement, alias: cst.ImportAlias) -> str:
    name = bound_name(alias, statement)
    source = _code(fresh_import(statement, [alias])).strip()
    return f'if {{param}} == "{name}":\n    {source}\n\n    return {name}\n'


def _export_lazily(module: cst.Module, branches: Sequence[str], names: Sequence[str]) -> cst.Module:
    body = list(module.body)
    getattr_at = _top_level_def(body, "__getattr__")
    if getattr_at is None:
        body.append(_new_def('def __getattr__(name):\n    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")\n'))
        getattr_at = len(body) - 1
    function = body[getattr_at]
    param = function.params.params[0].name.value
    body[getattr_at] = prepend_statements(function, [cst.parse_statement(b.format(param=param)) for b in branches])

    listed = "{" + ", ".join(f'"{n}"' for n in names) + "}"
    dir_at = _top_level_def(body, "__dir__")
    if dir_at is None:
        body.append(_new_def(f"def __dir__():\n    return sorted(set(globals()) | {listed})\n"))
    else:
        body[dir_at] = body[dir_at].visit(_DirListing(listed))
    return module.with_changes(body=body)


def _top_level_def(body: List[cst.BaseStatement], name: str) -> Optional[int]:
    for index, statement in enumerate(body):
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return index
    return None


def _new_def(code: str) -> cst.FunctionDef:
    return cst.parse_statement(code).with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])


class _DirListing(cst.CSTTransformer):
    """Adds the lazy names to what ``__dir__`` returns, not in nested functions."""

    def __init__(self, listed: str) -> None:
        super().__init__()
        self.listed = listed
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return self.depth == 1

    def leave_FunctionDef(self, original_node, updated_node):
        self.depth -= 1
        return updated_node

    def leave_Return(self, original_node: cst.Return, updated_node: cst.Return) -> cst.Return:
        value = updated_node.value
        if value is None:
            return updated_node
        if isinstance(value, cst.Call) and dotted_name(value.func) == "sorted" and len(value.args) == 1:
            inner = value.args[0].value
            if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.BitOr) and isinstance(inner.right, cst.Set):
                # sorted(A | {"x"}) -> sorted(A | {"x", "y"})
                listed = _code(inner.right)[:-1] + ", " + self.listed[1:]
                code = f"sorted({_code(inner.left)} | {listed})"
            else:  # sorted(A | B) -> sorted(A | B | {"y"})
                code = f"sorted({_operand(inner)} | {self.listed})"
        else:
            code = f"sorted(set({_code(value)}) | {self.listed})"
        return updated_node.with_changes(value=cst.parse_expression(code))


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _operand(node: cst.BaseExpression) -> str:
    """`node` as the left operand of ``|``, parenthesized when it binds looser."""
    simple = isinstance(node, (cst.Name, cst.Call, cst.Attribute, cst.Set, cst.Subscript)) or (
        isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr)
    )
    return _code(node) if simple else f"({_code(node)})"
