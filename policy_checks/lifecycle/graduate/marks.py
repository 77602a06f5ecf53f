"""The track's marks in code that is becoming stable (step 3).

``@flashinfer_experimental_api`` is swapped for ``@flashinfer_api``. Its
``@experimental_notice(...)`` for type checkers is dropped with it.
``@experimental_backend`` and ``experimental=True`` are dropped. This holds in the
entry points and in the moved code alike.
"""

from __future__ import annotations

from typing import Callable, List, Tuple

import libcst as cst

from ...model import markers
from ...editing.cst_tools import (PythonFile, add_edit, bound_name, decorator_kinds, decorator_name, dotted_name,
                                  inside, with_aliases)
from ...editing.target import Refused
from .rewrite import drop_unused_import, without_keyword

STABLE_API = markers.STABLE_API
EXPERIMENTAL_API = markers.EXPERIMENTAL_API
NOTICE = markers.EXPERIMENTAL_NOTICE


class Qualnames(cst.CSTVisitor):
    """A visitor that knows the qualnames around it.

    It knows the innermost def or class, and every function around it.
    """

    def __init__(self) -> None:
        self.stack: List[Tuple[str, bool]] = []

    def qualname(self, name: str) -> str:
        return ".".join([*(n for n, _ in self.stack), name])

    def functions(self) -> List[str]:
        return [".".join(n for n, _ in self.stack[:i + 1]) for i, (_, is_function) in enumerate(self.stack)
                if is_function]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.stack.append((node.name.value, False))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append((node.name.value, True))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.pop()


def swap_decorators(file: PythonFile, wanted: Callable[[str, cst.Decorator], bool], edits: dict) -> List[str]:
    """Swap ``@flashinfer_experimental_api(...)`` for ``@flashinfer_api``.

    Only functions for which ``wanted(qualname, decorator)`` holds are swapped.
    Returns their qualnames.
    """
    swapped: List[str] = []
    decorators: list = []
    notices: list = []

    class Finder(Qualnames):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            qualname = self.qualname(node.name.value)
            count = len(swapped)
            for decorator in node.decorators:
                if markers.KIND_EXPERIMENTAL_API not in decorator_kinds(file, decorator):
                    continue
                if wanted(qualname, decorator):
                    swapped.append(qualname)
                    decorators.append(decorator)
                    add_edit(edits, decorator, _stable_decorator)
            marks = [decorator_name(d) == NOTICE for d in node.decorators]
            if len(swapped) > count and any(marks):  # a stable API is no longer reported by type checkers
                notices.extend(d for d, mark in zip(node.decorators, marks) if mark)
                add_edit(edits, node, lambda updated, marks=marks: updated.with_changes(
                    decorators=[d for d, mark in zip(updated.decorators, marks) if not mark]))
            super().visit_FunctionDef(node)

    file.tree.visit(Finder())
    if swapped:
        _ensure_stable_api_imported(file, edits, decorators, notices)
    return swapped


def names_feature(decorator: cst.Decorator, feature: str) -> bool:
    """``@flashinfer_experimental_api(feature="<feature>")``."""
    call = decorator.decorator
    return isinstance(call, cst.Call) and any(
        a.keyword is not None and a.keyword.value == "feature" and isinstance(a.value, cst.SimpleString)
        and a.value.evaluated_value == feature for a in call.args
    )


def _stable_decorator(updated: cst.Decorator) -> cst.Decorator:
    """``@flashinfer_experimental_api(feature=..., trace=t)`` -> ``@flashinfer_api(trace=t)``."""
    expression = updated.decorator
    if isinstance(expression, cst.Call):
        expression = without_keyword("feature")(expression)
        if expression.args:
            return updated.with_changes(decorator=expression.with_changes(func=_renamed(expression.func)))
        expression = expression.func
    return updated.with_changes(decorator=_renamed(expression))


def _renamed(expression):
    if isinstance(expression, cst.Attribute):
        return expression.with_changes(attr=cst.Name(STABLE_API))
    return cst.Name(STABLE_API)


def _ensure_stable_api_imported(file: PythonFile, edits: dict, decorators: list, notices: list) -> None:
    """Import ``flashinfer_api`` beside ``flashinfer_experimental_api``.

    ``flashinfer_experimental_api`` goes when nothing else uses it.
    ``@module.flashinfer_api`` needs no import. ``experimental_notice`` goes too when
    only the dropped `notices` used it.
    """
    scope = file.scopes[file.tree]
    notice_unused = bool(notices) and all(
        not any(not inside(file, r.node, notices) for r in assignment.references)
        for assignment in scope.assignments[NOTICE])
    shared = set()  # import statements this function rewrites whole
    has_stable = bool(scope.assignments[STABLE_API]) or all(
        isinstance(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator, cst.Attribute)
        for d in decorators)
    for assignment in scope.assignments[EXPERIMENTAL_API]:
        statement = assignment.node
        if not isinstance(statement, cst.ImportFrom) or isinstance(statement.names, cst.ImportStar):
            continue
        still_used = any(not inside(file, r.node, decorators) for r in assignment.references)
        names = [bound_name(a, statement) for a in statement.names]
        wanted = [n for n in names if (n != EXPERIMENTAL_API or still_used) and (n != NOTICE or not notice_unused)]
        shared.add(statement)
        if not has_stable:
            wanted.append(STABLE_API)
        wanted = sorted(set(wanted), key=lambda n: (n not in names, names.index(n) if n in names else 0))
        if wanted:
            add_edit(edits, statement, _import_exactly(wanted))
        if notice_unused and not any(a.node in shared for a in scope.assignments[NOTICE]):
            drop_unused_import(file, NOTICE, edits, ignore=notices)
        return
    if not has_stable:
        raise Refused(f"{file.module_name}: cannot tell how to import {STABLE_API} (no `from ... import "
                      f"{EXPERIMENTAL_API}` at module level)")


def _import_exactly(wanted: List[str]):
    """An edit that makes a ``from ... import`` bind exactly `wanted`, keeping existing aliases."""
    def edit(updated: cst.ImportFrom) -> cst.ImportFrom:
        by_name = {bound_name(a, updated): a for a in updated.names}
        aliases = [by_name.get(n) or cst.ImportAlias(name=cst.Name(n)) for n in wanted]
        if updated.names and len(aliases) > 1:
            aliases = _sorted_like(updated, aliases)
        return with_aliases(updated, aliases)

    return edit


def _sorted_like(statement: cst.ImportFrom, aliases: list) -> list:
    """Keep alphabetical order when the statement had it."""
    names = [bound_name(a, statement) for a in statement.names]
    if names == sorted(names):
        return sorted(aliases, key=lambda a: bound_name(a, statement))
    return aliases


def drop_experimental_marks(file: PythonFile, edits: dict) -> None:
    """Drop ``@experimental_backend`` decorators and ``experimental=True`` arguments.

    An import of ``experimental_backend`` left unused goes too.
    """
    dropped = []

    class Finder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            marks = [markers.KIND_EXPERIMENTAL_BACKEND in decorator_kinds(file, d) for d in node.decorators]
            if any(marks):
                dropped.extend(d for d, mark in zip(node.decorators, marks) if mark)
                add_edit(edits, node, lambda updated, marks=marks: updated.with_changes(
                    decorators=[d for d, mark in zip(updated.decorators, marks) if not mark]))

        def visit_Call(self, node: cst.Call) -> None:
            if dotted_name(node.func).rpartition(".")[2] == "JitSpec" and any(
                a.keyword is not None and a.keyword.value == "experimental" for a in node.args
            ):
                add_edit(edits, node, without_keyword("experimental"))

    file.tree.visit(Finder())
    if dropped:
        drop_unused_import(file, markers.EXPERIMENTAL_BACKEND, edits, ignore=dropped)


def drop_experimental_flags(file: PythonFile, classes, edits: dict) -> List[str]:
    """Drop ``is_experimental = True`` from the body of each class in `classes` (qualnames).

    The comment lines above it go too. Returns the classes changed.
    """
    dropped: List[str] = []

    class Finder(Qualnames):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            owner = ".".join(n for n, _ in self.stack)
            if not self.stack or self.stack[-1][1] or owner not in classes or len(node.body) != 1:
                return
            small = node.body[0]
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else (
                [small.target] if isinstance(small, cst.AnnAssign) else [])
            value = getattr(small, "value", None)
            if (isinstance(value, cst.Name) and value.value == "True"
                    and len(targets) == 1 and isinstance(targets[0], cst.Name)
                    and targets[0].value == markers.EXPERIMENTAL_FLAG):
                dropped.append(owner)
                add_edit(edits, node, lambda updated: cst.RemovalSentinel.REMOVE)

    file.tree.visit(Finder())
    return dropped
