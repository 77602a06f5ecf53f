"""The libcst edits of a core module that reaches the feature.

They remove an experimental API's definition, an ``if backend == "<name>":``
branch, or a PEP 562 lazy branch. They remove a checker import with its
``backend_checks`` entries, and the removed backends' other mentions.

Each edit keeps every byte it does not remove (`cst_tools.apply_edits`). A shape
these edits do not know refuses, naming the line.
"""

from __future__ import annotations

from typing import List, Optional, Set

import libcst as cst

from ...model import markers
from ...editing.cst_tools import (
    add_edit,
    backend_branch,
    backend_test,
    bound_name,
    decorator_name,
    dotted_name,
    drop_small_statement,
    enclosing_function,
    import_at,
    Unfixable,
    with_aliases,
)
from ...editing.exports import lazy_branch
from ...editing.target import Refused
from .model import At, ModuleEdits

EXPERIMENTAL_API = markers.EXPERIMENTAL_API
BACKEND_REQUIREMENT = markers.BACKEND_REQUIREMENT


def drop_imported_names(mod: ModuleEdits, rel: str, places) -> None:
    """Drop the aliases binding the names at `places` from their import statements.

    Each place is ``(line, column, bound name)``. A statement left importing nothing
    goes whole. Debris, re-exports and removed helpers all leave their imports
    through here.
    """
    by_statement: dict = {}
    for line, column, bound in places:
        try:
            statement = import_at(mod.file, At(line, column))
        except Unfixable as reason:
            raise Refused(f"{rel}:{line}: {reason}") from None
        by_statement.setdefault(id(statement), (statement, set()))[1].add(bound)
    for statement, bounds in by_statement.values():
        kept = [a for a in statement.names if bound_name(a, statement) not in bounds]
        if kept:
            keep = {bound_name(a, statement) for a in kept}
            add_edit(mod.edits, statement, lambda updated, keep=keep: with_aliases(
                updated, [a for a in updated.names if bound_name(a, updated) in keep]))
        else:
            drop_small_statement(mod.file, statement, None, mod.edits)
            mod.removed_nodes.append(statement)


def remove_function_import(mod: ModuleEdits, outer: str, statement, backends, where) -> None:
    """Remove a function-level import in what stays.

    Its ``if backend ==`` branch goes, or the lazy branch of a module's
    ``__getattr__``. An experimental API that goes whole is
    `remove_named_definition`'s.
    """
    file = mod.file
    function = enclosing_function(file, statement)
    lazy = lazy_branch(file, statement, function) if outer == "__getattr__" else None
    if lazy is not None:
        _remove_lazy_branch(mod, lazy, where)
        return
    branch = backend_branch(file, statement)
    if branch is None:
        raise not_an_entry_point(where, outer)
    node, name = branch
    if not arm_goes_alone(file, node):
        raise branch_with_else(where, file.tree.code_for_node(node.test).strip())
    backends.setdefault(name, set()).add(f"{file.module_name}.{outer}")
    remove_arm(mod, node)


def arm_goes_alone(file, node: cst.If) -> bool:
    """`policy_checks.model.entry_points.arm_goes_alone`, read on libcst's tree.

    An arm goes alone when it has no else part, an ``elif`` follows it, or it is an
    ``elif`` itself.
    """
    return node.orelse is None or isinstance(node.orelse, cst.If) or _is_elif(file, node)


def _is_elif(file, node: cst.If) -> bool:
    parent = file.parents.get(node)
    return isinstance(parent, cst.If) and parent.orelse is node


def remove_arm(mod: ModuleEdits, node: cst.If) -> None:
    """Remove a backend's ``if``/``elif`` arm, and only it.

    An ``elif`` hands its place in the chain to what follows it. A first arm
    followed by an ``elif`` hands it the ``if``. An arm alone goes as a statement,
    with the comment lines above it.
    """
    file = mod.file
    if any(removed is node or removed is node.test for removed in mod.removed_nodes):
        return  # planned already (an import in it, then the backend's other mentions)
    if not _is_elif(file, node) and node.orelse is None:
        remove_statement(mod, node)
        return
    mod.removed_nodes += [node.test, node.body]
    if _is_elif(file, node):
        add_edit(mod.edits, node, lambda updated: cst.RemovalSentinel.REMOVE if updated.orelse is None else updated.orelse)
    else:
        add_edit(mod.edits, node, _promote_next_arm)


def _promote_next_arm(updated: cst.If):
    """Give the first arm's place to what follows it.

    That is the ``elif``, which becomes the ``if``. Or it is the statements of an
    ``else:`` left by removed arms, or nothing.
    """
    following = updated.orelse
    if following is None:
        return cst.RemovalSentinel.REMOVE
    if isinstance(following, cst.Else):
        return cst.FlattenSentinel(following.body.body)
    return following.with_changes(leading_lines=updated.leading_lines)


def not_an_entry_point(where: str, outer: str) -> Refused:
    return Refused(f"{where}: imports the feature inside {outer}, a public API, outside an `if backend == "
                   '"<name>":` branch (or `if list(backends) == ["<name>"]:`; the only part of a public API that is '
                   "the feature's): move the import into such a branch without an else part, "
                   f"or mark {outer} @{EXPERIMENTAL_API} if the whole API is the feature's")


def branch_with_else(where: str, test: str) -> Refused:
    """The refusal of a backend branch with an else part. `test` is the branch test's source."""
    return Refused(f"{where}: the `if {test}:` branch has an else part that would take its place; "
                   "remove it by hand")


def _remove_lazy_branch(mod: ModuleEdits, lazy, where: str) -> None:
    """Remove the branch, and its table too.

    A use of the table left elsewhere refuses, unless the module goes.
    """
    node, served, table = lazy
    if node.orelse is not None:
        raise Refused(f"{where}: the lazy-export branch of __getattr__ has an else part; remove it by hand")
    mod.names.update(served)
    remove_statement(mod, node)
    if table is not None:
        mod.names.add(table.targets[0].target.value)
        drop_small_statement(mod.file, table, None, mod.edits)
        mod.removed_nodes.append(table)


def remove_definition(mod: ModuleEdits, function) -> None:
    """Remove a function or method. A class left without methods goes whole."""
    file = mod.file
    parent = file.parents[function]
    if isinstance(parent, cst.IndentedBlock):  # a method: IndentedBlock -> ClassDef
        parent = file.parents[parent]
    if isinstance(parent, cst.ClassDef):
        methods = [s for s in parent.body.body if isinstance(s, cst.FunctionDef)]
        if all(m is function for m in methods):
            remove_definition(mod, parent)
            return
        mod.names.add(f"{parent.name.value}.{function.name.value}")
    elif not isinstance(parent, cst.Module):
        raise Refused(f"line {file.line_of(function)}: {function.name.value} is nested in a function; remove it by hand")
    else:
        mod.names.add(function.name.value)
    remove_statement(mod, function)


def remove_named_definition(mod: ModuleEdits, qualname: str) -> None:
    """Remove the function, method or class `qualname`.

    It may be an experimental API class, which goes whole. It may be a helper only
    the feature's entry points reached.
    """
    node = _definition_node(mod.file, qualname)
    if node is None:
        raise Refused(f"{mod.file.module_name}: cannot find {qualname} to remove it")
    if isinstance(node, cst.ClassDef):
        if not isinstance(mod.file.parents.get(node), cst.Module):
            raise Refused(f"line {mod.file.line_of(node)}: {qualname} is nested; remove it by hand")
        mod.names.add(qualname)
        remove_statement(mod, node)
        return
    remove_definition(mod, node)


def _definition_node(file, qualname: str):
    """The ``def`` or ``class`` statement of `qualname`: the last one, as Python binds it."""
    body, node = file.tree.body, None
    for part in qualname.split("."):
        found = [s for s in body if isinstance(s, (cst.FunctionDef, cst.ClassDef)) and s.name.value == part]
        if not found:
            return None
        node = found[-1]
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else []
    return node


def remove_statement(mod: ModuleEdits, node) -> None:
    """Remove a whole statement with the blank and comment lines above it."""
    mod.removed_nodes.append(node)
    add_edit(mod.edits, node, lambda updated: cst.RemovalSentinel.REMOVE)


def remove_checker_import(mod: ModuleEdits, statement, backends, where: str) -> None:
    """Remove a module-level import of checkers, with its entries.

    Each name may be used only as a ``backend_checks`` value.
    """
    file = mod.file
    if isinstance(statement, cst.Import) or isinstance(statement.names, cst.ImportStar):
        raise Refused(f"{where}: a module-level import of the feature that is not `from ... import checker`")
    for alias in statement.names:
        name = bound_name(alias, statement)
        for assignment in file.scopes[file.tree].assignments[name]:
            if assignment.node is not statement:
                raise Refused(f"{where}: {name!r} is also bound at line {file.line_of(assignment.node)}")
            for reference in assignment.references:
                element = _checks_entry(file, reference.node)
                if element is None:
                    raise Refused(
                        f"{where}: {name!r} is used at line {file.line_of(reference.node)} other than as a "
                        f"{BACKEND_REQUIREMENT} checker"
                    )
                backends.setdefault(element.key.evaluated_value, set()).update(_decorated_api(file, element))
                remove_element(mod, element)
    drop_small_statement(file, statement, None, mod.edits)
    mod.removed_nodes.append(statement)


def _checks_entry(file, node) -> Optional[cst.DictElement]:
    """The ``"name": checker`` entry of a backend_requirement(...) call's dict that `node` is the value of."""
    element = file.parents.get(node)
    if not (isinstance(element, cst.DictElement) and element.value is node and isinstance(element.key, cst.SimpleString)):
        return None
    mapping = file.parents.get(element)
    argument = file.parents.get(mapping)
    call = file.parents.get(argument)
    if (
        isinstance(mapping, cst.Dict)
        and isinstance(argument, cst.Arg)
        and isinstance(call, cst.Call)
        and markers.is_marker(dotted_name(call.func), BACKEND_REQUIREMENT)
        and (argument is call.args[0] or (argument.keyword is not None and argument.keyword.value == "backend_checks"))
    ):
        return element
    return None


def _decorated_api(file, element) -> List[str]:
    """``["module.qualname"]`` of the function whose ``@backend_requirement(...)`` holds `element`.

    `element` is a checks entry. A plain call gives [].
    """
    call = file.parents[file.parents[file.parents[element]]]
    decorator = file.parents.get(call)
    function = file.parents.get(decorator) if isinstance(decorator, cst.Decorator) else None
    if not isinstance(function, cst.FunctionDef):
        return []
    return [f"{file.module_name}.{_qualname(file, function)}"]


def _qualname(file, node) -> str:
    names = []
    while node is not None:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            names.append(node.name.value)
        node = file.parents.get(node)
    return ".".join(reversed(names))


def remove_element(mod: ModuleEdits, element) -> None:
    """Drop one element of a dict, tuple, list or set display, or of ``Literal[...]``.

    The other elements keep their commas.
    """
    file, removed_nodes = mod.file, mod.removed_nodes
    container = file.parents[element]
    first = not any(id(file.parents.get(n)) == id(container) for n in removed_nodes)
    removed_nodes.append(element)
    if first:  # the container's one edit drops every removed element
        add_edit(mod.edits, container, lambda updated: _without_removed(container, updated, removed_nodes))


def _without_removed(container, updated, removed_nodes):
    """`updated`, the edited `container`, without the removed elements.

    Comment lines after a removed entry stay, after the entry before it. The last
    comma stays last.
    """
    gone = {id(n) for n in removed_nodes}
    pairs = list(zip(_items(container), _items(updated)))
    kept = []
    for old, new in pairs:
        if id(old) not in gone:
            kept.append(new)
            continue
        space = getattr(new.comma, "whitespace_after", None)
        before = getattr(kept[-1].comma, "whitespace_after", None) if kept else None
        if isinstance(space, cst.ParenthesizedWhitespace) and isinstance(before, cst.ParenthesizedWhitespace):
            lines = [*before.empty_lines, *space.empty_lines]
            comma = kept[-1].comma.with_changes(whitespace_after=before.with_changes(empty_lines=lines))
            kept[-1] = kept[-1].with_changes(comma=comma)
    if kept and kept[-1] is not pairs[-1][1]:  # the new last one takes the old last comma
        kept[-1] = kept[-1].with_changes(comma=pairs[-1][1].comma)
    if isinstance(updated, cst.Tuple) and len(kept) == 1 and not isinstance(kept[0].comma, cst.Comma):
        kept[0] = kept[0].with_changes(comma=cst.Comma())
    if isinstance(updated, cst.Subscript):
        return updated.with_changes(slice=kept)
    return updated.with_changes(elements=kept)


def _items(container) -> tuple:
    """The elements of a display, the subscript elements of ``Literal[...]``."""
    return container.slice if isinstance(container, cst.Subscript) else container.elements


def remove_backend_mentions(mod: ModuleEdits, backends) -> None:
    """Remove the mentions of a removed backend in a module that dispatched on it.

    These are backend branches (`arm_goes_alone`), and ``"<name>"`` items of name
    displays and ``Literal[...]`` annotations. Another public API of the module may
    still serve the backend name, by its own branch or ``backend_checks`` entry. Then
    the name is edited only inside the APIs that lose it. For example, FlashInfer
    0.7.4's ``bmm_bf16`` keeps its ``"cake"`` while ``mm_fp4`` loses its.

    Only a display whose items are all strings lists names. ``("cake", 10, 0)`` is a
    key, and stays whole.
    """
    file = mod.file
    done = {id(n) for n in mod.removed_nodes}
    prefix = file.module_name + "."
    losing = {name: {api[len(prefix):] for api in apis if api.startswith(prefix)} for name, apis in backends.items()}
    shared = {name for name in backends if _served_elsewhere(file, name, losing[name])}

    def removable(value, scope: Optional[str]) -> bool:
        if not isinstance(value, cst.SimpleString) or value.evaluated_value not in backends:
            return False
        name = value.evaluated_value
        return name not in shared or (scope is not None and scope in losing[name])

    class Finder(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.scopes: List[Optional[str]] = [None]  # the outermost def around a node, as a qualname

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.scopes.append(self.scopes[-1] or _qualname(file, node))

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.scopes.pop()

        def visit_If(self, node: cst.If) -> None:
            name = backend_test(node.test)
            if (id(node) not in done and name in backends and arm_goes_alone(file, node)
                    and (name not in shared or self.scopes[-1] in losing[name])):
                done.add(id(node))
                remove_arm(mod, node)

        def visit_Element(self, node: cst.Element) -> None:
            container = file.parents[node]
            if removable(node.value, self.scopes[-1]) and id(node) not in done and isinstance(container, (cst.Tuple, cst.List, cst.Set)):
                if len(container.elements) > 1 and all(isinstance(e.value, cst.SimpleString) for e in container.elements):
                    done.add(id(node))
                    remove_element(mod, node)

        def visit_SubscriptElement(self, node: cst.SubscriptElement) -> None:
            container = file.parents[node]
            if removable(getattr(node.slice, "value", None), self.scopes[-1]) and id(node) not in done:
                if dotted_name(container.value).rpartition(".")[2] == "Literal" and len(container.slice) > 1:
                    done.add(id(node))
                    remove_element(mod, node)

    file.tree.visit(Finder())


def _served_elsewhere(file, name: str, losing: Set[str]) -> bool:
    """Does a public API of the module, other than those in `losing`, still serve the backend `name`?

    `losing` holds qualnames. An API serves a backend by a ``backend_checks`` key of
    its ``@backend_requirement``, or by a backend branch for it in its body.
    """
    found = False

    class Finder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            nonlocal found
            kinds = {decorator_name(d) for d in node.decorators}
            if kinds & {markers.STABLE_API, BACKEND_REQUIREMENT} and _qualname(file, node) not in losing:
                found = found or _serves(node, name)
            return not found

    file.tree.visit(Finder())
    return found


def _serves(function: cst.FunctionDef, name: str) -> bool:
    served = False

    class Finder(cst.CSTVisitor):
        def visit_If(self, node: cst.If) -> None:
            nonlocal served
            served = served or backend_test(node.test) == name

        def visit_DictElement(self, node: cst.DictElement) -> None:
            nonlocal served
            served = served or (isinstance(node.key, cst.SimpleString) and node.key.evaluated_value == name)

    for decorator in function.decorators:
        if decorator_name(decorator) == BACKEND_REQUIREMENT:
            decorator.visit(Finder())
    function.body.visit(Finder())
    return served
