"""The one libcst editor of what a package publishes: ``__all__`` and lazy tables.

A lazy-export table is a module-level dict of name strings to module strings.
``__getattr__`` serves it (PEP 562). Its typed face is the ``if TYPE_CHECKING:``
block of imports that lets type checkers see each lazy name. Entries join and
leave both together. The facts side of the same model is
`policy_checks.model.exports`.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from .cst_tools import (
    PythonFile, add_edit, bound_name, dotted_name, module_small_statements, with_aliases,
)

GUARD = "TYPE_CHECKING"


# reading ---------------------------------------------------------------------------------


def all_assignments(file: PythonFile) -> Iterator[cst.BaseSmallStatement]:
    """The module-level assignments to ``__all__`` that have a value: plain, annotated or augmented."""
    for small in module_small_statements(file):
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [getattr(small, "target", None)]
        if any(isinstance(t, cst.Name) and t.value == "__all__" for t in targets) and getattr(small, "value", None) is not None:
            yield small


def all_names(file: PythonFile) -> set:
    """The string entries of the module-level ``__all__`` assignments."""
    return {s.evaluated_value for small in all_assignments(file) for s in _strings(small.value)}


def _strings(node: cst.CSTNode) -> List[cst.SimpleString]:
    found: List[cst.SimpleString] = []

    class Strings(cst.CSTVisitor):
        def visit_SimpleString(self, string: cst.SimpleString) -> None:
            found.append(string)

    node.visit(Strings())
    return found


def lazy_table(file: PythonFile) -> Optional[cst.Dict]:
    """The first module-level dict display of string keys to string values."""
    return next((small.value for small in module_small_statements(file)
                 if isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(small.value, cst.Dict)
                 and _is_lazy_table(small.value)), None)


def _is_lazy_table(mapping: cst.Dict) -> bool:
    return bool(mapping.elements) and all(
        isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) and isinstance(e.value, cst.SimpleString)
        for e in mapping.elements
    )


def served_modules(file: PythonFile, table: Optional[cst.Dict]) -> Set[str]:
    """Modules, relative to the package, whose names the package ``__init__`` exports.

    They are the table's values, else those of its ``from .module import ...``
    statements.
    """
    if table is not None:
        return {e.value.evaluated_value.lstrip(".") for e in table.elements}
    return {dotted_name(small.module) for small in module_small_statements(file)
            if isinstance(small, cst.ImportFrom) and len(small.relative) == 1 and small.module is not None}


def table_elements(file: PythonFile, keys: Set[str]) -> List[cst.DictElement]:
    """The entries of module-level dict displays keyed by one of `keys`."""
    return [element for element in _keyed_entries(file) if element.key.evaluated_value in keys] if keys else []


def _keyed_entries(file: PythonFile) -> Iterator[cst.DictElement]:
    """The string-keyed entries of the module-level dict displays."""
    for small in module_small_statements(file):
        value = getattr(small, "value", None)
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(value, cst.Dict):
            yield from (element for element in value.elements
                        if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString))


def all_elements(file: PythonFile, names: Set[str]) -> List[cst.Element]:
    """The strings of ``__all__`` lists and tuples naming one of `names`."""
    found = []
    for small in all_assignments(file) if names else ():
        if isinstance(small.value, (cst.List, cst.Tuple)):
            found += [element for element in small.value.elements
                      if isinstance(element.value, cst.SimpleString) and element.value.evaluated_value in names]
    return found


def retarget_table_values(file: PythonFile, values: Dict[str, str], edits: dict) -> List[str]:
    """Give module strings of lazy tables their new text, quoted as before.

    `values` maps old text to new. Returns the keys of the entries changed.
    """
    changed = []
    for element in _keyed_entries(file):
        value = element.value
        if isinstance(value, cst.SimpleString) and value.evaluated_value in values:
            text = f"{value.prefix}{value.quote}{values[value.evaluated_value]}{value.quote}"
            add_edit(edits, value, lambda updated, text=text: updated.with_changes(value=text))
            changed.append(element.key.evaluated_value)
    return changed


# a lazy branch of __getattr__ ---------------------------------------------------------------


def lazy_branch(file: PythonFile, statement: cst.CSTNode, function: Optional[cst.FunctionDef]):
    """The lazy branch around `statement` in a module's PEP 562 ``__getattr__(name)``.

    The branch is ``if name in TABLE:`` or ``if name == "x":``. Returns it with the
    names it serves and TABLE's module-level assignment. The ``==`` form has no
    assignment (None). Any other shape gives None.
    """
    if function is None or not isinstance(file.parents.get(function), cst.Module) or not function.params.params:
        return None
    parameter = function.params.params[0].name.value
    parent = file.parents.get(statement)
    while parent is not None and parent is not function:
        found = _lazy_test(file, parent, parameter)
        if found is not None:
            return (parent, *found)
        parent = file.parents.get(parent)
    return None


def _lazy_test(file: PythonFile, node: cst.CSTNode, parameter: str):
    """``(names served, table assignment or None)`` for a lazy test, else None.

    A lazy test is ``if <parameter> == "x":`` or ``if <parameter> in TABLE:``.
    """
    if not (isinstance(node, cst.If) and isinstance(node.test, cst.Comparison) and len(node.test.comparisons) == 1):
        return None
    test = node.test
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if not (isinstance(test.left, cst.Name) and test.left.value == parameter):
        return None
    if isinstance(operator, cst.Equal) and isinstance(right, cst.SimpleString):
        return {right.evaluated_value}, None
    if isinstance(operator, cst.In) and isinstance(right, cst.Name):
        table = _table_assignment(file, right.value)
        if table is not None:
            return _table_names(table.value), table
    return None


def _table_assignment(file: PythonFile, name: str):
    """The one module-level ``name = ...`` assignment, or None."""
    found = [
        small
        for small in module_small_statements(file)
        if isinstance(small, cst.Assign) and [dotted_name(t.target) for t in small.targets] == [name]
    ]
    return found[0] if len(found) == 1 else None


def _table_names(value: cst.CSTNode) -> Set[str]:
    """The names a lazy-export table lists: its strings, a dict's keys only."""
    found: Set[str] = set()

    class Strings(cst.CSTVisitor):
        def visit_DictElement(self, node: cst.DictElement) -> bool:
            if isinstance(node.key, cst.SimpleString):
                found.add(node.key.evaluated_value)
            return False

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            found.add(node.evaluated_value)

    value.visit(Strings())
    return found


# adding exports -----------------------------------------------------------------------------


def add_lazy_entries(file: PythonFile, table: cst.Dict, missing: Sequence[Tuple[str, str]], edits: dict) -> None:
    """Add ``(name, relative module)`` entries to the table and its typed face."""
    add_edit(edits, table, _with_entries(missing))
    add_typed_imports(file, missing, edits)


def _with_entries(missing: Sequence[Tuple[str, str]]):
    def edit(updated: cst.Dict) -> cst.Dict:
        """Add new entries at the end, separated as the others are.

        A table written one per line gets one per line. The old last entry's
        trailing comma ends the new last.
        """
        elements = list(updated.elements)
        last_comma = elements[-1].comma
        earlier = elements[-2].comma if len(elements) > 1 else None
        separator = earlier if isinstance(earlier, cst.Comma) else cst.Comma(whitespace_after=updated.lbrace.whitespace_after)
        elements[-1] = elements[-1].with_changes(comma=separator)
        for index, (name, relative) in enumerate(missing):
            comma = last_comma if index == len(missing) - 1 else separator
            elements.append(cst.DictElement(cst.SimpleString(f'"{name}"'), cst.SimpleString(f'"{relative}"'), comma=comma))
        return updated.with_changes(elements=elements)

    return edit


def typed_block(file: PythonFile) -> Optional[cst.If]:
    """The module-level ``if TYPE_CHECKING:`` block that holds relative imports, or None."""
    for statement in file.tree.body:
        if (isinstance(statement, cst.If) and dotted_name(statement.test).rpartition(".")[2] == GUARD
                and any(
                    isinstance(s, cst.ImportFrom) and s.relative for s in _small_statements(statement.body))):
            return statement
    return None


def _small_statements(block: cst.BaseSuite) -> Iterator[cst.BaseSmallStatement]:
    for line in getattr(block, "body", ()):
        if isinstance(line, cst.SimpleStatementLine):
            yield from line.body


def add_typed_imports(file: PythonFile, missing: Sequence[Tuple[str, str]], edits: dict) -> None:
    """Add each ``(name, relative module)`` to the typed face, one import a line.

    A package without a typed face is left without.
    """
    block = typed_block(file)
    if block is None or not missing:
        return
    lines = [cst.parse_statement(typed_import(name, relative)) for name, relative in missing]
    add_edit(edits, block.body, lambda updated: updated.with_changes(body=[*updated.body, *lines]))


def typed_import(name: str, relative: str) -> str:
    """One line of a typed face. The redundant ``as`` marks an explicit re-export."""
    return f"from .{relative.lstrip('.')} import {name} as {name}\n"


def typed_face_text(entries: Sequence[Tuple[str, str]]) -> str:
    """The ``if TYPE_CHECKING:`` block for a lazy table's ``(name, module)`` entries."""
    return f"if {GUARD}:\n" + "".join("    " + typed_import(name, module) for name, module in entries)


def export_by_import(file: PythonFile, missing: Sequence[Tuple[str, str]], edits: dict) -> None:
    """Export a name from a package ``__init__`` that imports its exports.

    Such a package writes ``from .decode import f as f``. The name joins the import
    from its module, or a new line after the last relative import. It is spelt as
    the others are, with the redundant ``as`` when most use it.
    """
    relative_imports = [small for small in module_small_statements(file)
                        if isinstance(small, cst.ImportFrom) and small.relative
                        and not isinstance(small.names, cst.ImportStar)]
    aliases = [a for small in relative_imports for a in small.names]
    redundant = sum(1 for a in aliases if a.asname is not None and bound_name(a, None) == dotted_name(a.name))
    spell_as = bool(aliases) and redundant * 2 > len(aliases)

    def alias(name: str) -> cst.ImportAlias:
        return cst.ImportAlias(cst.Name(name), asname=cst.AsName(cst.Name(name)) if spell_as else None)

    new_lines = []
    for name, relative in missing:
        same = next((s for s in relative_imports if len(s.relative) == 1 and s.module is not None
                     and dotted_name(s.module) == relative), None)
        if same is not None:
            add_edit(edits, same, lambda updated, name=name: with_aliases(updated, [*updated.names, alias(name)]))
        else:
            new_lines.append(cst.SimpleStatementLine([cst.ImportFrom(
                module=cst.parse_expression(relative), relative=[cst.Dot()], names=[alias(name)])]))
    if not new_lines:
        return
    lines = list(file.tree.body)
    anchor = max((i for i, line in enumerate(lines) if isinstance(line, cst.SimpleStatementLine)
                  and any(s in relative_imports for s in line.body)), default=None)
    if anchor is None:
        add_edit(edits, file.tree, lambda updated: updated.with_changes(body=[*updated.body, *new_lines]))
        return
    add_edit(edits, lines[anchor], lambda updated: cst.FlattenSentinel([updated, *new_lines]))
