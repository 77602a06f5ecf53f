"""The libcst pieces every step shares.

They parse a file of the tree, point its imports at the new home, and drop an
import nothing uses any more.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from ...model import parsed
from ...model.config import module_under
from ...editing.cst_tools import (
    PythonFile, Unfixable, add_edit, bound_name, dotted_name, drop_small_statement, imported_module, inside, parse,
    relative_import, with_aliases,
)
from ...editing.target import FixTarget, Refused
from ...model.facts import package_of


def parse_file(target: FixTarget, rel: str, data: Optional[bytes] = None) -> PythonFile:
    """`rel` parsed from `data` when given, else from disk. Raises `Refused` when libcst cannot."""
    try:
        source = (target.root / rel).read_bytes() if data is None else data
        return parse(source, *target.module_of(rel))
    except Unfixable as reason:
        raise Refused(f"{rel}: {reason}") from None


def must_parse(rel: str, data: bytes) -> None:
    """A safety net, as in `fix`. A rewrite that does not parse refuses the whole plan."""
    if parsed.parses(data):
        return
    try:
        parsed.tree(data)
    except SyntaxError as error:
        raise Refused(f"internal error: the rewrite of {rel} does not parse ({error.msg})") from None


def moved(name: str, old: str, new: str) -> str:
    return new + name[len(old):] if module_under(name, old) else name


def dotted_node(name: str) -> cst.BaseExpression:
    return cst.parse_expression(name)


def retarget(file: PythonFile, old: str, new: str, new_module: str, edits: dict) -> Tuple[int, List[Tuple[int, str]]]:
    """Point imports of `old` and its submodules at `new`.

    The file's module is now `new_module`. Relative imports stay relative. Returns
    how many changed. Also returns ``(line, why)`` of the imports that rewriting the
    import alone cannot move.
    """
    changed, stuck = 0, []
    chains = None
    for node in _imports(file):
        if isinstance(node, cst.Import):
            aliases = [a for a in node.names if module_under(dotted_name(a.name), old)]
            if not aliases:
                continue
            if chains is None:
                chains = _spells_chain(file, old)
            if chains and any(a.asname is None for a in aliases):
                stuck.append((file.line_of(node), f"`import {old}...` binds the top package's name, and the file "
                                                  f"reaches {old} through it"))
                continue
            add_edit(edits, node, _renamed_aliases(old, new))
            changed += 1
            continue
        by_name = _retarget_feature_name(file, node, old, new, new_module, edits)
        if by_name is False:
            stuck.append((file.line_of(node), f"it imports {old.rpartition('.')[2]} beside other names of "
                                              f"{old.rpartition('.')[0]}"))
        elif by_name or _retarget_from(file, node, old, new, new_module, edits):
            changed += 1
    return changed, stuck


def _retarget_feature_name(file: PythonFile, node: cst.ImportFrom, old: str, new: str, new_module: str,
                           edits: dict) -> Optional[bool]:
    """Rewrite ``from <old's parent> import <feature> [as x]``.

    It becomes ``from <new's parent> import <new name> as <the name it bound>``.
    Returns None when the statement imports no such name. Returns False when it
    imports other names beside it, which stay where they are.
    """
    parent, _, last = old.rpartition(".")
    if isinstance(node.names, cst.ImportStar) or imported_module(file, node) != parent:
        return None
    if not any(dotted_name(a.name) == last for a in node.names):
        return None
    if not all(dotted_name(a.name) == last for a in node.names):
        return False
    new_parent, _, new_last = new.rpartition(".")
    text = new_parent
    if node.relative:
        text = relative_import(package_of(new_module, file.is_package), new_parent)
    dots = len(text) - len(text.lstrip("."))
    rest = text[dots:]

    def alias(updated: cst.ImportAlias) -> cst.ImportAlias:
        bound = updated.asname or (cst.AsName(name=cst.Name(last)) if new_last != last else None)
        return updated.with_changes(name=cst.Name(new_last), asname=bound)

    add_edit(edits, node, lambda updated: updated.with_changes(
        relative=[cst.Dot()] * dots, module=dotted_node(rest) if rest else None,
        names=[alias(a) for a in updated.names]))
    return True


def _spells_chain(file: PythonFile, old: str) -> bool:
    """Does an attribute chain outside the imports spell `old` or below it?"""
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            return False

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            nonlocal found
            found = found or module_under(dotted_name(node), old)
            return not found

    file.tree.visit(Finder())
    return found


def retarget_or_refuse(file: PythonFile, old: str, new: str, new_module: str, edits: dict) -> int:
    """`retarget` for code that must follow the feature: its own code, core, its tests."""
    changed, stuck = retarget(file, old, new, new_module, edits)
    if stuck:
        line, why = stuck[0]
        raise Refused(f"{file.module_name}:{line}: an import of {old} cannot be pointed at {new} ({why}); "
                      "rewrite it by hand first")
    return changed


def _renamed_aliases(old: str, new: str):
    def edit(updated: cst.Import) -> cst.Import:
        names = [a.with_changes(name=dotted_node(moved(dotted_name(a.name), old, new)))
                 if module_under(dotted_name(a.name), old) else a for a in updated.names]
        return updated.with_changes(names=names)

    return edit


def _retarget_from(file: PythonFile, node: cst.ImportFrom, old: str, new: str, new_module: str, edits: dict) -> bool:
    """Point one ``from ... import`` at the moved module. False when it needs no change."""
    source = imported_module(file, node)
    target = moved(source, old, new)
    if node.relative:
        package = package_of(new_module, file.is_package)
        text = relative_import(package, target)
        if text == "." * len(node.relative) + (dotted_name(node.module) if node.module else ""):
            return False
    elif target == source:
        return False
    else:
        text = target
    dots = len(text) - len(text.lstrip("."))
    rest = text[dots:]
    add_edit(edits, node, lambda updated: updated.with_changes(
        relative=[cst.Dot()] * dots, module=dotted_node(rest) if rest else None))
    return True


def _imports(file: PythonFile) -> list:
    """Every import statement of the file, at any depth."""
    found: list = []

    class Finder(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            found.append(node)

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            found.append(node)

    file.tree.visit(Finder())
    return found


def without_keyword(keyword: str):
    """An edit of a call that drops one keyword argument, keeping the last comma as it was."""
    def edit(updated: cst.Call) -> cst.Call:
        args = [a for a in updated.args if not (a.keyword is not None and a.keyword.value == keyword)]
        if args and updated.args and args[-1] is not updated.args[-1]:
            args[-1] = args[-1].with_changes(comma=updated.args[-1].comma)
        return updated.with_changes(args=args)

    return edit


def drop_unused_import(file: PythonFile, name: str, edits: dict, ignore=(), scope=None) -> None:
    """Remove the import binding `name` in `scope` when every use of it lies in `ignore`.

    `scope` defaults to the module's. `ignore` holds the statements this plan
    removes.
    """
    scope = file.scopes[file.tree] if scope is None else scope
    for assignment in scope.assignments[name]:
        statement = assignment.node
        if not isinstance(statement, (cst.Import, cst.ImportFrom)) or isinstance(statement.names, cst.ImportStar):
            return
        if any(not inside(file, reference.node, ignore) for reference in assignment.references):
            return
        kept = [bound_name(a, statement) for a in statement.names if bound_name(a, statement) != name]
        if kept:
            add_edit(edits, statement, lambda updated, kept=kept: with_aliases(
                updated, [a for a in updated.names if bound_name(a, updated) in kept]))
        else:
            drop_small_statement(file, statement, None, edits)
