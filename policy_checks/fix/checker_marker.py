"""EXP004: mark an experimental backend checker with ``@experimental_backend``.

The marker goes outermost, above ``@supported_compute_capability``. It must see
that decorator to stack with it.

Its name comes from the module's own imports when it has one. That may be an alias,
or ``utils.experimental_backend`` after ``from flashinfer import utils``. Otherwise
it joins the module's import from ``<package>.utils`` or from the experimental
package. Failing that, a new import is added in the module's style. It is relative
when the module imports relatively.
"""

from __future__ import annotations

from typing import Dict, List, Optional

import libcst as cst

from ..model import markers
from ..editing.cst_tools import (
    Edit,
    PythonFile,
    Unfixable,
    add_edit,
    bound_name,
    decorator_kinds,
    dotted_name,
    imported_module,
    relative_form,
    with_aliases,
)
from .findings import Finding, FixTarget

MARKER = markers.EXPERIMENTAL_BACKEND


def rewrite(file: PythonFile, finding: Finding, target: FixTarget, edits: Dict[cst.CSTNode, Edit]) -> Optional[str]:
    """Add the edits that fix `finding` to `edits`."""
    function = _def_at(file, finding.line)
    if any(markers.KIND_EXPERIMENTAL_BACKEND in decorator_kinds(file, d) for d in function.decorators):
        raise Unfixable(f"{function.name.value}() already has @{MARKER}")
    marker = _existing_reference(file, target) or _add_import(file, target, edits)
    decorator = cst.Decorator(decorator=cst.parse_expression(marker))
    add_edit(edits, function, lambda updated: updated.with_changes(decorators=[decorator, *updated.decorators]))
    return None


def _def_at(file: PythonFile, line: int) -> cst.FunctionDef:
    """The function whose statement starts at `line`.

    The line is its ``def``. Where EXP004 points at a decorated checker, it is its
    first decorator.
    """
    for node, position in file.positions.items():
        if not isinstance(node, cst.FunctionDef):
            continue
        first = file.positions.get(node.decorators[0]) if node.decorators else None
        if position.start.line == line or (first is not None and first.start.line == line):
            return node
    raise Unfixable(f"no function definition at line {line}")


def _top_level_imports(file: PythonFile) -> List[cst.BaseSmallStatement]:
    return [
        small
        for line in file.tree.body
        if isinstance(line, cst.SimpleStatementLine)
        for small in line.body
        if isinstance(small, (cst.Import, cst.ImportFrom))
    ]


def _existing_reference(file: PythonFile, target: FixTarget) -> Optional[str]:
    """How the module can already name the marker.

    That is ``experimental_backend``, an alias, or ``u.experimental_backend``.
    """
    utils = f"{target.package}.utils"
    for statement in _top_level_imports(file):
        if isinstance(statement, cst.Import):
            for alias in statement.names:
                if dotted_name(alias.name) == utils:
                    return f"{bound_name(alias, statement) if alias.asname else utils}.{MARKER}"
            continue
        if isinstance(statement.names, cst.ImportStar):
            continue
        source = imported_module(file, statement)
        for alias in statement.names:
            name = dotted_name(alias.name)
            if name == MARKER:
                return bound_name(alias, statement)
            if f"{source}.{name}" == utils:
                return f"{bound_name(alias, statement)}.{MARKER}"
    return None


def _add_import(file: PythonFile, target: FixTarget, edits: Dict[cst.CSTNode, Edit]) -> str:
    utils = f"{target.package}.utils"
    imports = _top_level_imports(file)
    sources = (utils, target.experimental_package)
    joinable = [
        s
        for s in imports
        if isinstance(s, cst.ImportFrom) and not isinstance(s.names, cst.ImportStar) and imported_module(file, s) in sources
    ]
    if joinable:
        statement = min(joinable, key=lambda s: sources.index(imported_module(file, s)))
        add_edit(edits, statement, _join_marker)
        return MARKER
    relative = any(isinstance(s, cst.ImportFrom) and s.relative for s in imports)
    source = relative_form(file, utils) if relative else utils
    new_line = cst.parse_statement(f"from {source} import {MARKER}\n")
    add_edit(edits, file.tree, lambda module: _insert_import(module, new_line))
    return MARKER


def _join_marker(statement: cst.ImportFrom) -> cst.ImportFrom:
    """``from x import a, c`` -> ``from x import a, experimental_backend, c``, sorted when it was."""
    names = [dotted_name(a.name) for a in statement.names]
    if MARKER in names:  # an earlier finding's edit added it
        return statement
    at = len(names)
    if names == sorted(names, key=str.lower):
        at = sum(1 for n in names if n.lower() < MARKER)
    aliases = list(statement.names)
    aliases.insert(at, cst.ImportAlias(name=cst.Name(MARKER)))
    return with_aliases(statement, aliases)


def _insert_import(module: cst.Module, line: cst.SimpleStatementLine) -> cst.Module:
    """`module` with `line` after its leading imports, or after the docstring when it has none."""
    body = list(module.body)
    code = cst.Module([]).code_for_node
    wanted = code(line.body[0])
    if any(isinstance(s, cst.SimpleStatementLine) and code(s.body[0]) == wanted for s in body):
        return module  # an earlier finding's edit added it
    at = 0
    for index, statement in enumerate(body):
        smalls = statement.body if isinstance(statement, cst.SimpleStatementLine) else []
        if smalls and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in smalls):
            at = index + 1
        elif index == 0 and len(smalls) == 1 and isinstance(smalls[0], cst.Expr) and isinstance(smalls[0].value, cst.SimpleString):
            at = 1
        else:
            break
    body.insert(at, line)
    return module.with_changes(body=body)
