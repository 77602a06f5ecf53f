"""``policy-check remove FEATURE``: delete an experimental feature, and prove the
containment rules made that a matter of deleting one directory.

What goes: the feature's directory; its tests (``<experimental-tests>/<feature>/``);
its examples (files under the examples directory named after it or importing it);
and, in core, exactly what reaches it: an ``@flashinfer_experimental_api`` function
whose body imports the feature (a class left without methods goes too), the
``backend_checks`` entries whose checker is imported from the feature together with
that import, ``if backend == "<name>":`` branches and ``"<name>"`` items of tuple,
list and set displays for a removed backend, the entries of a package ``__init__``'s
lazy-export table and of ``__all__`` that name a removed function or class. A core
module left holding nothing goes. In the docs: the feature's own pages and the
toctree lines naming them; other prose that mentions the feature is listed for a
person.

The plan is computed in full before anything is written. Anything it cannot remove
cleanly (an import of the feature of another shape, a removed name or backend still
used by a kept file: core, tests or examples) refuses the whole removal with its
reason: nothing is half done. Where
the feature's modules are imported is read from the checker's facts
(`policy_checks.project.Project`), and rewrites use `cst_tools`, so every byte not
removed stays as it was.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Dict, List, Optional, Set

import click
import libcst as cst

from .. import markers
from ..config import module_under, under
from ..facts import FUNCTION, MODULE, FileFacts, StrRef, extract, resolve_relative
from ..markers import dotted_name as ast_dotted_name
from ..facts import docstring_ids
from ..facts import package_of as facts_package_of
from ..project import DefTarget, DictBinding, ModuleTarget
from ..editing.changes import ChangeSet, Rewrite
from ..editing.shell import run_plan
from ..editing.cst_tools import (
    PythonFile,
    Unfixable,
    add_edit,
    all_assignments,
    backend_branch,
    backend_test,
    apply_edits,
    bound_name,
    dotted_name,
    drop_small_statement,
    enclosing_function,
    import_at,
    inside,
    module_small_statements,
    parse,
    with_aliases,
)
from ..editing import docs_tree
from ..editing.target import FixTarget, Refused, project_model

EXPERIMENTAL_API = markers.EXPERIMENTAL_API
BACKEND_REQUIREMENT = markers.BACKEND_REQUIREMENT
IMPORT_CALLS = markers.IMPORT_FUNCTIONS  # importorskip too: one list, the checker's


@dataclass
class Removal:
    """What removing one feature does: new bytes per rewritten file, paths to delete."""

    target: FixTarget
    feature: str
    changes: ChangeSet
    rewrites: List[Rewrite] = field(default_factory=list)
    deletions: List[str] = field(default_factory=list)  # root-relative files and directories
    removed: List[str] = field(default_factory=list)  # what went, for the report
    notes: List[str] = field(default_factory=list)  # "file:line: text" left for a person

    def report(self, applied: bool) -> List[str]:
        verb = "removed" if applied else "would remove"
        lines = [f"{verb}: {item}" for item in self.removed]
        lines += [f"{verb}: {rel}" for rel in self.deletions]
        lines += [f"{'rewrote' if applied else 'would rewrite'}: {path}" for path, _, _ in self.rewrites]
        return lines + [f"left for a person: {note}" for note in self.notes]


@dataclass(frozen=True)
class _At:
    """A position, as `cst_tools.import_at` reads it from a finding."""

    line: int
    column: int


def plan_removal(target: FixTarget, feature: str) -> Removal:
    """The whole removal, or `Refused`; reads the tree, writes nothing."""
    settings = target.settings
    if not feature.isidentifier():
        raise Refused(f"{feature!r} is not a feature name")
    feature_dir = f"{settings.experimental_dir}/{feature}"
    if not os.path.lexists(target.root / feature_dir):
        raise Refused(f"no feature directory {feature_dir}")
    prefix = f"{settings.experimental_package}.{feature}"
    removal = Removal(target, feature, ChangeSet(target.root))
    removal.changes.files_under(feature_dir)  # a link or a FIFO in it refuses now, before any planning
    removal.deletions.append(feature_dir)
    tests_dir = f"{settings.experimental_tests}/{feature}"
    if os.path.lexists(target.root / tests_dir):
        removal.changes.files_under(tests_dir)
        removal.deletions.append(tests_dir)

    project = project_model(target)
    texts = _Texts(target.root)

    def gone(rel: str) -> bool:
        return any(under(rel, d) for d in removal.deletions)

    def reaches(facts: FileFacts, imp) -> bool:
        return any(module_under(t, prefix) for t in project.import_targets(imp))

    def core_files(words=(), pattern=None, also=()):
        """(rel, source, facts) of every parsable core module the removal keeps whose
        text holds one of `words` or matches `pattern`, and of those in `also` (no file
        can import or name what it does not spell)."""
        for rel in sorted(project.files):
            source = project.files[rel]
            if gone(rel) or not settings.is_core(source.module):
                continue
            if not (rel in also or texts.mentions(rel, words) or texts.matches(rel, pattern)):
                continue
            facts = project.facts(rel)
            if facts.syntax_error is None:
                yield rel, source, facts

    # core modules that import the feature, and what each loses
    names_by_module: Dict[str, Set[str]] = {}
    backends: Dict[str, Set[str]] = {}  # removed backend -> the APIs ("module.qualname") that lose it
    files: Dict[str, tuple] = {}  # rel -> (PythonFile, edits, removed nodes, names)
    for rel, source, facts in core_files([feature]):
        hits = [imp for imp in facts.imports if reaches(facts, imp)]
        if not hits:
            continue
        file = _parse(target, rel)
        edits: dict = {}
        removed_nodes: list = []
        names = names_by_module.setdefault(source.module, set())
        for imp in hits:
            where = f"{rel}:{imp.line}"
            try:
                statement = import_at(file, _At(imp.line, imp.column))
            except Unfixable as reason:
                raise Refused(f"{where}: {reason}") from None
            if imp.scope == FUNCTION:
                _remove_entry_point(project, file, facts, imp, statement, edits, removed_nodes, names, backends, where)
            elif imp.scope == MODULE:
                _remove_checker_import(file, statement, edits, removed_nodes, backends, where, prefix)
            else:
                raise Refused(f"{where}: an import of the feature under `if TYPE_CHECKING:`; remove it by hand")
        files[rel] = (file, edits, removed_nodes, names)
        removal.removed += [f"{source.module}.{n}" for n in sorted(names)]

    # backend names: branches and listed names in the modules that declared them
    for rel, (file, edits, removed_nodes, _) in files.items():
        if backends:
            _remove_backend_mentions(file, backends, edits, removed_nodes)
    removal.removed += [f"backend {b!r}" for b in sorted(backends)]

    # lazy-export tables and __all__ naming the removed functions and classes
    removed_names = sorted({n.partition(".")[0] for names in names_by_module.values() for n in names})
    public = {f"{m}.{n}" for m, names in names_by_module.items() for n in names}  # for the docs
    served: Set[str] = set()  # names a package serves lazily from a module that loses them
    # a module that lists a removed name quotes it (``__all__``, a lazy table) or imports it
    for rel, source, facts in core_files(pattern=_uses_pattern(removed_names, quoted=True), also=set(files)):
        lazy = _lazy_entries(project, facts, names_by_module)
        reexports = _reexports(facts, names_by_module) if source.is_package else []
        public.update(f"{source.module}.{key}" for key, _ in lazy)
        served.update(key for key, _ in lazy)
        listed = names_by_module.get(source.module, set())
        if source.is_package:
            listed = listed | {key for key, _ in lazy} | {bound for _, _, bound in reexports}
        if not lazy and not listed:
            continue
        if rel not in files:
            files[rel] = (_parse(target, rel), {}, [], set())
        file, edits, removed_nodes, _ = files[rel]
        _remove_dict_keys(file, {key for key, _ in lazy}, edits, removed_nodes)
        _remove_reexports(file, reexports, edits, removed_nodes, rel)
        _remove_all_entries(file, listed, edits, removed_nodes)

    after_of: Dict[str, bytes] = {}  # rel -> the kept core module's bytes after the removal
    emptied: List[str] = []
    for rel, (file, edits, removed_nodes, names) in sorted(files.items()):
        before = (target.root / rel).read_bytes()
        after = apply_edits(file, edits) if edits else before
        try:
            tree = ast.parse(after)
        except SyntaxError as error:  # a safety net, as in `fix`
            raise Refused(f"internal error: the rewrite of {rel} does not parse ({error.msg})") from None
        if _holds_nothing(tree) and not project.files[rel].is_package:  # a package's __init__ stays
            emptied.append(rel)
            removal.deletions.append(rel)
        else:
            for name in sorted(names):  # nothing removed may still be used in its own module
                _check_unused_in_module(file, name, removed_nodes, rel)
            after_of[rel] = after
            if after != before:
                removal.rewrites.append(Rewrite(rel, before, after))

    removal.deletions += _examples(target, project, feature, prefix)
    gone_modules = {project.files[rel].module for rel in project.files if gone(rel)}
    removed_defs = {(m, n) for m, names in names_by_module.items() for n in names}
    retired = _retired_backends(project, texts, backends, after_of, gone)
    # a file that uses what goes spells the feature, a backend, a lazy key or the
    # removed name itself (a method: its own name)
    plain = {feature, *backends, *served, *(project.files[rel].module.rpartition(".")[2] for rel in emptied)}
    names = {n.rpartition(".")[2] for names in names_by_module.values() for n in names} - plain
    lost = _Lost(removed_defs, gone_modules, backends, retired, plain | names, _uses_pattern(names))
    _check_kept_files(project, texts, removal, gone, after_of, lost, plain)
    for rel in emptied:  # what the scan cannot see: importlib.import_module("...")
        users = _importers(project, texts, project.files[rel].module, rel, gone)
        if users:
            raise Refused(f"{rel} would hold nothing, but {', '.join(users)} import(s) it")
    _plan_docs(target, project, removal, [feature, *retired, *public])
    removal.changes.add_planned(removal.rewrites, deletions=removal.deletions)
    return removal


def _parse(target: FixTarget, rel: str) -> PythonFile:
    try:
        return parse((target.root / rel).read_bytes(), *target.module_of(rel))
    except Unfixable as reason:
        raise Refused(f"{rel}: {reason}") from None


def _remove_entry_point(project, file, facts, imp, statement, edits, removed_nodes, names, backends, where):
    """A function-level import: the whole experimental API, or its ``if backend ==`` branch."""
    outer = imp.functions[0]
    definition = facts.definitions.get(outer)
    function = enclosing_function(file, statement)
    if definition is not None and function is not None and project.decorated_with(facts.module, definition, EXPERIMENTAL_API):
        _remove_definition(file, function, edits, removed_nodes, names)
        return
    lazy = _lazy_branch(file, statement, function) if outer == "__getattr__" else None
    if lazy is not None:
        node, served, table = lazy
        if node.orelse is not None:
            raise Refused(f"{where}: the lazy-export branch of __getattr__ has an else part; remove it by hand")
        names.update(served)
        _remove_statement(file, node, edits, removed_nodes)
        if table is not None:  # the table goes too; a use left elsewhere refuses (unless the module goes)
            names.add(_table_name(table))
            drop_small_statement(file, table, None, edits)
            removed_nodes.append(table)
        return
    branch = backend_branch(file, statement)
    if branch is None:
        raise Refused(
            f"{where}: imports the feature inside {outer}, which is neither an @{EXPERIMENTAL_API} function "
            'nor an `if backend == "<name>":` branch'
        )
    node, name = branch
    if node.orelse is not None:
        raise Refused(f"{where}: the `if backend == {name!r}:` branch has an else part; remove it by hand")
    backends.setdefault(name, set()).add(f"{facts.module}.{outer}")
    _remove_statement(file, node, edits, removed_nodes)


def _lazy_branch(file, statement, function):
    """In a module's PEP 562 ``__getattr__(name)``: the ``if name in TABLE:`` (or
    ``if name == "x":``) branch around `statement`, the names it serves and TABLE's
    module-level assignment (None for the ``==`` form); None for any other shape."""
    if function is None or not isinstance(file.parents.get(function), cst.Module) or not function.params.params:
        return None
    parameter = function.params.params[0].name.value
    parent = file.parents.get(statement)
    while parent is not None and parent is not function:
        if isinstance(parent, cst.If) and isinstance(parent.test, cst.Comparison) and len(parent.test.comparisons) == 1:
            test = parent.test
            operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
            if isinstance(test.left, cst.Name) and test.left.value == parameter:
                if isinstance(operator, cst.Equal) and isinstance(right, cst.SimpleString):
                    return parent, {right.evaluated_value}, None
                if isinstance(operator, cst.In) and isinstance(right, cst.Name):
                    table = _table_assignment(file, right.value)
                    if table is not None:
                        return parent, _table_names(table.value), table
        parent = file.parents.get(parent)
    return None


def _table_assignment(file, name: str):
    """The one module-level ``name = ...`` assignment, or None."""
    found = [
        small
        for small in module_small_statements(file)
        if isinstance(small, cst.Assign) and [dotted_name(t.target) for t in small.targets] == [name]
    ]
    return found[0] if len(found) == 1 else None


def _table_name(assignment) -> str:
    return assignment.targets[0].target.value


def _table_names(value) -> Set[str]:
    """The names a lazy-export table lists: its strings (a dict's keys only)."""
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


def _remove_definition(file, function, edits, removed_nodes, names) -> None:
    parent = file.parents[function]
    if isinstance(parent, cst.IndentedBlock):  # a method: IndentedBlock -> ClassDef
        parent = file.parents[parent]
    if isinstance(parent, cst.ClassDef):
        methods = [s for s in parent.body.body if isinstance(s, cst.FunctionDef)]
        if all(m is function for m in methods):
            _remove_definition(file, parent, edits, removed_nodes, names)
            return
        names.add(f"{parent.name.value}.{function.name.value}")
    elif not isinstance(parent, cst.Module):
        raise Refused(f"line {file.line_of(function)}: {function.name.value} is nested in a function; remove it by hand")
    else:
        names.add(function.name.value)
    _remove_statement(file, function, edits, removed_nodes)


def _remove_statement(file, node, edits, removed_nodes) -> None:
    """Remove a whole statement with the blank and comment lines above it."""
    removed_nodes.append(node)
    add_edit(edits, node, lambda updated: cst.RemovalSentinel.REMOVE)


def _remove_checker_import(file, statement, edits, removed_nodes, backends, where, prefix) -> None:
    """A module-level import of checkers: each name may be used only as a
    ``backend_checks`` value; the entries and the import go."""
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
                _remove_element(file, element, edits, removed_nodes)
    drop_small_statement(file, statement, None, edits)
    removed_nodes.append(statement)


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
    """``["module.qualname"]`` of the function whose ``@backend_requirement(...)``
    holds the checks entry `element`; [] for a plain call."""
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


def _remove_element(file, element, edits, removed_nodes) -> None:
    """Drop one element of a dict, tuple, list or set display (or of ``Literal[...]``),
    keeping the others' commas."""
    container = file.parents[element]
    first = not any(id(file.parents.get(n)) == id(container) for n in removed_nodes)
    removed_nodes.append(element)
    if not first:  # the container's one edit drops every removed element
        return

    def edit(updated):
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
                # comment lines after the removed entry stay, after the one before it
                lines = [*before.empty_lines, *space.empty_lines]
                kept[-1] = kept[-1].with_changes(
                    comma=kept[-1].comma.with_changes(whitespace_after=before.with_changes(empty_lines=lines))
                )
        if kept and kept[-1] is not pairs[-1][1]:  # the new last one takes the old last comma
            kept[-1] = kept[-1].with_changes(comma=pairs[-1][1].comma)
        if isinstance(updated, cst.Tuple) and len(kept) == 1 and not isinstance(kept[0].comma, cst.Comma):
            kept[0] = kept[0].with_changes(comma=cst.Comma())
        if isinstance(updated, cst.Subscript):
            return updated.with_changes(slice=kept)
        return updated.with_changes(elements=kept)

    add_edit(edits, container, edit)


def _items(container) -> tuple:
    """The elements of a display, the subscript elements of ``Literal[...]``."""
    return container.slice if isinstance(container, cst.Subscript) else container.elements


def _remove_backend_mentions(file, backends, edits, removed_nodes) -> None:
    """``if backend == "<name>":`` branches and ``"<name>"`` items of displays and of
    ``Literal[...]`` annotations."""
    done = {id(n) for n in removed_nodes}

    class Finder(cst.CSTVisitor):
        def visit_If(self, node: cst.If) -> None:
            if id(node) not in done and backend_test(node.test) in backends and node.orelse is None:
                done.add(id(node))
                _remove_statement(file, node, edits, removed_nodes)

        def visit_Element(self, node: cst.Element) -> None:
            value = node.value
            if isinstance(value, cst.SimpleString) and value.evaluated_value in backends and id(node) not in done:
                container = file.parents[node]
                if isinstance(container, (cst.Tuple, cst.List, cst.Set)) and len(container.elements) > 1:
                    done.add(id(node))
                    _remove_element(file, node, edits, removed_nodes)

        def visit_SubscriptElement(self, node: cst.SubscriptElement) -> None:
            value = getattr(node.slice, "value", None)
            if isinstance(value, cst.SimpleString) and value.evaluated_value in backends and id(node) not in done:
                container = file.parents[node]
                if dotted_name(container.value).rpartition(".")[2] == "Literal" and len(container.slice) > 1:
                    done.add(id(node))
                    _remove_element(file, node, edits, removed_nodes)

    file.tree.visit(Finder())


def _lazy_entries(project, facts, names_by_module) -> list:
    """``(key, module)`` of lazy-export table entries of this package ``__init__`` that
    serve a removed name from the module that loses it."""
    if not facts.is_package or "__getattr__" not in facts.definitions:
        return []
    found = []
    for binding in facts.bindings.values():
        if not isinstance(binding, DictBinding):
            continue
        for key, ref in binding.value.entries:
            if not isinstance(ref, StrRef):
                continue
            for module in (f"{facts.module}.{ref.text.lstrip('.')}", ref.text):
                if key in names_by_module.get(module, ()):
                    found.append((key, module))
    return found


def _reexports(facts, names_by_module) -> list:
    """``(import, name, bound)`` of a package ``__init__``'s module-level ``from .module
    import name [as bound]`` of a name its module loses (FlashInfer's top-level exports)."""
    found = []
    for imp in facts.imports:
        if imp.scope != MODULE or imp.module is None:
            continue
        for name, bound in imp.names:
            if name in names_by_module.get(imp.module, ()):
                found.append((imp, name, bound))
    return found


def _remove_reexports(file, reexports, edits, removed_nodes, rel) -> None:
    """Drop the re-exported names from their import statements (a statement left
    importing nothing goes)."""
    by_statement: Dict[int, tuple] = {}
    for imp, name, bound in reexports:
        try:
            statement = import_at(file, _At(imp.line, imp.column))
        except Unfixable as reason:
            raise Refused(f"{rel}:{imp.line}: {reason}") from None
        by_statement.setdefault(id(statement), (statement, set()))[1].add(bound)
    for statement, bounds in by_statement.values():
        kept = [a for a in statement.names if bound_name(a, statement) not in bounds]
        if kept:
            keep = {bound_name(a, statement) for a in kept}
            add_edit(edits, statement, lambda updated, keep=keep: with_aliases(
                updated, [a for a in updated.names if bound_name(a, updated) in keep]))
        else:
            drop_small_statement(file, statement, None, edits)
            removed_nodes.append(statement)


def _remove_dict_keys(file, keys, edits, removed_nodes) -> None:
    if not keys:
        return
    for small in module_small_statements(file):
        value = getattr(small, "value", None)
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(value, cst.Dict):
            for element in value.elements:
                if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                    if element.key.evaluated_value in keys:
                        _remove_element(file, element, edits, removed_nodes)


def _remove_all_entries(file, names, edits, removed_nodes) -> None:
    if not names:
        return
    for small in all_assignments(file):
        if isinstance(small.value, (cst.List, cst.Tuple)):
            for element in small.value.elements:
                if isinstance(element.value, cst.SimpleString) and element.value.evaluated_value in names:
                    _remove_element(file, element, edits, removed_nodes)


def _check_unused_in_module(file, name, removed_nodes, rel) -> None:
    top = name.partition(".")[0]
    if "." in name:  # a method: its uses are attribute accesses, not checked
        return
    for assignment in file.scopes[file.tree].assignments[top]:
        for reference in assignment.references:
            if not inside(file, reference.node, removed_nodes):
                raise Refused(f"{rel}:{file.line_of(reference.node)}: {name} is still used after the removal")


def _holds_nothing(tree: ast.Module) -> bool:
    """Only a docstring, imports, ``__all__``, ``pass``, private constants and PEP 562
    hooks (``__getattr__`` and ``__dir__``) that import nothing any more."""
    for index, node in enumerate(tree.body):
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Pass)):
            continue
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            continue
        if isinstance(node, ast.Assign) and _private_constant(node):
            continue
        if isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__dir__") and not _imports_anything(node):
            continue
        return False
    return True


def _private_constant(node: ast.Assign) -> bool:
    """``_NAME = <literal>`` (``frozenset({...})`` and friends included)."""
    if not all(isinstance(t, ast.Name) and t.id.startswith("_") and not t.id.startswith("__") for t in node.targets):
        return False
    value = node.value
    if isinstance(value, ast.Call) and _last_name(value.func) in ("frozenset", "set", "tuple", "list", "dict") and not value.keywords:
        return all(_is_literal(a) for a in value.args)
    return _is_literal(value)


def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _imports_anything(function: ast.FunctionDef) -> bool:
    return any(
        isinstance(n, (ast.Import, ast.ImportFrom)) or (isinstance(n, ast.Call) and _last_name(n.func) in IMPORT_CALLS)
        for n in ast.walk(function)
    )


def _importers(project, texts, module, rel, gone) -> list:
    users = []
    for other in sorted(project.files):
        if other == rel or gone(other) or not texts.mentions(other, [module.rpartition(".")[2]]):
            continue
        if any(module in project.import_targets(imp) for imp in project.facts(other).imports):
            users.append(other)
    return users


def _examples(target, project, feature, prefix) -> list:
    """Example files named after the feature or importing it."""
    found = []
    for rel, text in sorted(project.example_texts().items()):
        name = rel.rpartition("/")[2]
        if name.startswith(feature):
            found.append(rel)
            continue
        facts = extract(text.encode("utf-8"), rel[:-3].replace("/", "."), False)
        if any(module_under(imp.module, prefix) for imp in facts.imports):
            found.append(rel)
    return found


class _Texts:
    """Each file's bytes, read once: a file that does not spell a name can neither
    import nor use it, so most of a large tree is never parsed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._bytes: Dict[str, bytes] = {}

    def read(self, rel: str) -> bytes:
        data = self._bytes.get(rel)
        if data is None:
            try:
                data = (self.root / rel).read_bytes()
            except OSError:
                data = b""
            self._bytes[rel] = data
        return data

    def mentions(self, rel: str, words) -> bool:
        data = self.read(rel)
        return any(word.encode("utf-8") in data for word in words)

    def matches(self, rel: str, pattern: Optional["re.Pattern"]) -> bool:
        return pattern is not None and pattern.search(self.read(rel)) is not None


def _uses_pattern(names, quoted: bool = False) -> Optional["re.Pattern"]:
    """Where a file that uses a removed function or class must spell its name: after
    a dot, or in an import (one line, or a parenthesized list); with `quoted`, also
    as a string (``__all__``, a lazy-export table). A common name (``prepare``) then
    costs a regex search, not a parse, in the files that merely spell it."""
    if not names:
        return None
    alternatives = b"|".join(re.escape(n.encode("utf-8")) for n in sorted(names, key=len, reverse=True))
    name = rb"\b(?:" + alternatives + rb")\b"
    pattern = rb"\.[ \t]*" + name + rb"|\bimport\b[^\n]*" + name + rb"|\bimport[ \t]*\([^)]*" + name
    if quoted:
        pattern += rb"|[\"'](?:" + alternatives + rb")[\"']"
    return re.compile(pattern)


# what the kept files may no longer use --------------------------------------------


@dataclass(frozen=True)
class _Lost:
    """What the removal takes away, for the scan of the files it keeps."""

    defs: Set[tuple]  # (module, qualname) of the removed functions, classes and methods
    modules: Set[str]  # modules whose files go
    backends: Dict[str, Set[str]]  # removed backend -> the APIs ("module.qualname") that lose it
    retired: Set[str]  # removed backends that no kept core module declares any more
    words: Set[str]  # identifiers a file must spell to use any of it
    name_uses: Optional["re.Pattern"] = None  # where a use of a removed function or class spells it

    @cached_property
    def dotted(self) -> Set[str]:
        return {f"{module}.{name}" for module, name in self.defs}


def _retired_backends(project, texts, backends, after_of, gone) -> Set[str]:
    """The removed backends that no kept core module still declares (a
    ``backend_checks`` key, a comparison with a ``backend`` name): a name
    another API still dispatches on is checked per API only."""
    retired = set(backends)
    for rel in sorted(project.files):
        source = project.files[rel]
        if not retired or gone(rel) or not project.settings.is_core(source.module):
            continue
        if rel not in after_of and not texts.mentions(rel, retired):
            continue
        try:
            tree = ast.parse(after_of.get(rel) or texts.read(rel))
        except (SyntaxError, ValueError):
            continue
        retired -= _declared_backends(tree, retired)
    return retired


def _declared_backends(tree: ast.Module, names) -> Set[str]:
    found = set()
    assigned = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and markers.is_marker(_last_name(node.func), BACKEND_REQUIREMENT):
            checks = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "backend_checks"), None)
            checks = assigned.get(checks.id) if isinstance(checks, ast.Name) else checks
            if isinstance(checks, ast.Dict):
                found |= {k.value for k in checks.keys if isinstance(k, ast.Constant) and k.value in names}
        elif isinstance(node, ast.Compare) and _names_a_backend(node.left):
            found |= {s.value for c in node.comparators for s in _literals(c) if s.value in names}
    return found


def _last_name(node: ast.AST) -> str:
    dotted = ast_dotted_name(node) or ""
    return dotted.rpartition(".")[2]


def _names_a_backend(node: ast.AST) -> bool:
    return "backend" in _last_name(node).lower()


def _literals(node: ast.AST) -> List[ast.Constant]:
    """The string constant `node` is, or those of a (nested) tuple, list or set display."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for element in node.elts for s in _literals(element)]
    return []


def _check_kept_files(project, texts, removal, gone, after_of, lost: _Lost, plain) -> None:
    """Refuse when a kept Python file (core, tests, other features, examples) would
    still import or use a removed name or module, or name a removed backend where a
    backend is meant; list its other mentions of a retired backend for a person."""
    kept = [(rel, project.files[rel].module, project.files[rel].is_package) for rel in sorted(project.files)]
    kept += [(rel, rel[:-3].replace("/", "."), False) for rel in sorted(project.example_texts())]
    problems: List[str] = []
    for rel, module, is_package in kept:
        if gone(rel) or not (rel in after_of or texts.mentions(rel, plain) or texts.matches(rel, lost.name_uses)):
            continue
        data = after_of.get(rel) or texts.read(rel)
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        scan = _KeptFile(project, rel, module, is_package, tree, lost)
        problems += scan.problems
        lines = data.decode("utf-8", "replace").splitlines()
        removal.notes += [f"{rel}:{n}: {lines[n - 1].strip()}" for n in sorted(scan.mentions) if n <= len(lines)]
    if problems:
        raise Refused("kept files would use what the removal deletes:\n" + "\n".join(f"  {p}" for p in problems))


class _KeptFile:
    """One kept file's uses of what the removal deletes: `problems` (it would break,
    or test what is gone) and `mentions` (lines naming a retired backend otherwise)."""

    def __init__(self, project, rel, module, is_package, tree, lost: _Lost) -> None:
        self.project, self.rel, self.module, self.lost = project, rel, module, lost
        self.package = facts_package_of(module, is_package)
        nodes = list(ast.walk(tree))  # walked once; every pass below reads this list
        self.bound = self._bindings(nodes)
        self.toplevel = _toplevel_names(tree)
        self._problems: List[tuple] = []  # (line, reason)
        self.judged: Set[int] = set()  # string constants already reported
        self.mentions: List[int] = []
        skip: Set[int] = set()
        for node in nodes:
            if isinstance(node, ast.Import):
                self._import(node)
            elif isinstance(node, ast.ImportFrom):
                self._import_from(node)
            elif isinstance(node, ast.Attribute) and id(node) not in skip and self._attribute(node):
                skip |= {id(n) for n in ast.walk(node)}
            elif isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Compare):
                self._compare(node)
            elif isinstance(node, ast.Subscript):
                literal = _last_name(node.value) == "Literal"
                self._judge(node, _literals(node.slice), "lists {} in Literal[...]" if literal else "looks up {}")
        if not lost.retired:
            return
        docstrings = docstring_ids(nodes)
        for node in nodes:
            if _literals(node) == [node] and node.value in lost.retired and id(node) not in self.judged | docstrings:
                if node.lineno not in self.mentions:
                    self.mentions.append(node.lineno)

    @property
    def problems(self) -> List[str]:
        return [f"{self.rel}:{line}: {text}" for line, text in sorted(self._problems)]

    def _report(self, node, text: str) -> None:
        self._problems.append((node.lineno, text))

    def _bindings(self, nodes) -> Dict[str, str]:
        """Local name -> the absolute dotted name an import binds it to (any scope)."""
        bound = {}
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = resolve_relative(self.package, node.level, node.module)
                for alias in node.names:
                    if base and alias.name != "*":
                        bound[alias.asname or alias.name] = f"{base}.{alias.name}"
        return bound

    def _absolute(self, dotted: Optional[str]) -> Optional[str]:
        if not dotted:
            return None
        first, dot, rest = dotted.partition(".")
        if first in self.bound:
            return self.bound[first] + dot + rest
        if first not in self.toplevel:  # a local, a parameter, ``self``: nothing the removal deletes
            return None
        return f"{self.module}.{dotted}" if self.project.is_module(self.module) else None

    def _gone_module(self, name: str) -> bool:
        return any(module_under(name, m) for m in self.lost.modules)

    def _gone(self, absolute: str) -> bool:
        """Does `absolute` name a module or definition the removal deletes?"""
        if self._gone_module(absolute) or any(module_under(absolute, d) for d in self.lost.dotted):
            return True
        target = self.project.resolve_absolute(absolute)
        if isinstance(target, ModuleTarget):
            return self._gone_module(target.name)
        if isinstance(target, DefTarget):
            parts = target.definition.qualname.split(".")
            return self._gone_module(target.module) or any(
                (target.module, ".".join(parts[:i])) in self.lost.defs for i in range(1, len(parts) + 1)
            )
        return False

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            if self._gone_module(alias.name):
                self._report(node, f"imports {alias.name}, which the removal deletes")

    def _import_from(self, node: ast.ImportFrom) -> None:
        base = resolve_relative(self.package, node.level, node.module)
        if base is None:
            return
        # a name the removal deletes is spelt here, or by the module it is imported from
        # (which is then a kept file that refuses itself, or goes)
        spelt = bool(set(base.split(".")) & self.lost.words)
        used = [a.name for a in node.names
                if a.name != "*" and (spelt or a.name in self.lost.words) and self._gone(f"{base}.{a.name}")]
        if used:
            self._report(node, f"imports {', '.join(used)} from {base}, which the removal deletes")
        elif self._gone_module(base):
            self._report(node, f"imports from {base}, which the removal deletes")

    def _attribute(self, node: ast.Attribute) -> bool:
        dotted = ast_dotted_name(node)
        absolute = self._absolute(dotted)
        if absolute is None or not set(absolute.split(".")) & self.lost.words or not self._gone(absolute):
            return False
        self._report(node, f"uses {dotted}, which the removal deletes")
        return True

    def _call(self, node: ast.Call) -> None:
        for keyword in node.keywords:
            if keyword.arg is None or "backend" not in keyword.arg.lower():
                continue
            for string in _literals(keyword.value):
                apis = self.lost.backends.get(string.value)
                if apis is None or string.value in self.lost.retired:
                    continue
                api = self._api(node.func)
                if api in apis:
                    self.judged.add(id(string))
                    self._report(string, f"calls {api} with {keyword.arg}={string.value!r}, a backend the removal deletes")
            self._judge(keyword.value, _literals(keyword.value), f"passes {keyword.arg}={{}}")
        if _last_name(node.func) == "parametrize" and len(node.args) > 1:
            names = _literals(node.args[0])
            if any("backend" in n.value.lower() for n in names):
                self._judge(node, _literals(node.args[1]), "parametrizes a backend with {}")

    def _api(self, func) -> Optional[str]:
        absolute = self._absolute(ast_dotted_name(func))
        target = self.project.resolve_absolute(absolute) if absolute else None
        return f"{target.module}.{target.definition.qualname}" if isinstance(target, DefTarget) else None

    def _compare(self, node: ast.Compare) -> None:
        if any(isinstance(op, (ast.Eq, ast.In, ast.Is)) for op in node.ops):
            for operand in (node.left, *node.comparators):
                self._judge(node, _literals(operand), "compares with {}")

    def _judge(self, node, strings, what: str) -> None:
        """Report the retired backends among `strings`, named where a backend is meant
        (`what` says how, ``{}`` standing for the name)."""
        for string in strings:
            if string.value in self.lost.retired and id(string) not in self.judged:
                self.judged.add(id(string))
                self._report(string, f"{what.format(repr(string.value))}, a backend the removal deletes")


def _toplevel_names(tree: ast.Module) -> Set[str]:
    """Names the module's top-level statements define or assign."""
    names: Set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


# the docs ---------------------------------------------------------------------------


def _plan_docs(target: FixTarget, project, removal: Removal, words) -> None:
    """The feature's pages go with their toctree lines; other lines that name the
    feature, a retired backend or a removed API are listed for a person."""
    pattern = docs_tree.word_pattern(words)
    for top in docs_tree.docs_dirs(target):
        files = docs_tree.docs_files(target, project, top)
        pages = [rel for rel in files if docs_tree.is_feature_page(rel, top, removal.feature)]
        removal.deletions += pages
        gone_pages = {rel.rpartition(".")[0] for rel in pages}
        for rel in files:
            if rel in pages:
                continue
            before = (target.root / rel).read_bytes()
            lines = before.splitlines(keepends=True)
            dropped = set()
            if rel.endswith(docs_tree.PAGE_SUFFIXES):
                dropped = docs_tree.toctree_lines(lines, rel, docs_tree.source_dir(target, rel, top), gone_pages)
            if dropped:
                removal.rewrites.append(Rewrite(rel, before, b"".join(l for i, l in enumerate(lines) if i not in dropped)))
            for index, line in enumerate(lines):
                text = line.decode("utf-8", "replace").strip()
                if index not in dropped and pattern.search(text):
                    removal.notes.append(f"{rel}:{index + 1}: {text}")


@click.command()
@click.argument("feature")
@click.option("--diff", is_flag=True, help="Print a unified diff of the removal and write nothing.")
@click.option("--root", type=click.Path(file_okay=False, exists=True), default=None, help="Project root (default: nearest pyproject.toml).")
def remove(feature: str, diff: bool, root: Optional[str]) -> None:
    """Remove the experimental FEATURE: its directory, tests, examples and the core
    entry points that reach it.

    Exit status: 0 removed (or, with --diff, removable), 1 refused (nothing written), 2 error.
    """
    raise SystemExit(run_remove(feature, diff=diff, root=root))


def run_remove(feature: str, *, diff: bool = False, root: Optional[str] = None) -> int:
    return run_plan("remove", feature, lambda target: plan_removal(target, feature), diff=diff, root=root)
