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
module left holding nothing goes.

The plan is computed in full before anything is written. Anything it cannot remove
cleanly (an import of the feature of another shape, a removed name still used
elsewhere) refuses the whole removal with its reason: nothing is half done. Where
the feature's modules are imported is read from the checker's facts
(`policy_checks.project.Project`), and rewrites use `cst_tools`, so every byte not
removed stays as it was.
"""

from __future__ import annotations

import ast
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set

import click
import libcst as cst

from ..facts import FUNCTION, MODULE, FileFacts, StrRef, extract
from ..project import DictBinding, Project, SourceFile
from .apply import FileFix, write
from .cst_tools import (
    PythonFile,
    Unfixable,
    add_edit,
    all_assignments,
    apply_edits,
    bound_name,
    dotted_name,
    drop_small_statement,
    enclosing_function,
    import_at,
    module_small_statements,
    parse,
)
from .findings import FixError, FixTarget, load_project

EXPERIMENTAL_API = "flashinfer_experimental_api"
BACKEND_REQUIREMENT = "backend_requirement"


class Refused(Exception):
    """The removal cannot be done cleanly; the message says why."""


@dataclass
class Removal:
    """What removing one feature does: new bytes per rewritten file, paths to delete."""

    target: FixTarget
    feature: str
    rewrites: List[FileFix] = field(default_factory=list)
    deletions: List[str] = field(default_factory=list)  # root-relative files and directories
    removed: List[str] = field(default_factory=list)  # what went, for the report


@dataclass(frozen=True)
class _At:
    """A position, as `cst_tools.import_at` reads it from a finding."""

    line: int
    column: int


def _load_facts(root: Path):
    def load(source: SourceFile) -> FileFacts:
        return extract((root / source.rel).read_bytes(), source.module, source.is_package)

    return load


def plan_removal(target: FixTarget, feature: str) -> Removal:
    """The whole removal, or `Refused`; reads the tree, writes nothing."""
    settings = target.settings
    if not feature.isidentifier():
        raise Refused(f"{feature!r} is not a feature name")
    feature_dir = f"{settings.experimental_dir}/{feature}"
    if not (target.root / feature_dir).is_dir():
        raise Refused(f"no feature directory {feature_dir}")
    prefix = f"{settings.experimental_package}.{feature}"
    removal = Removal(target, feature)
    removal.deletions.append(feature_dir)
    tests_dir = f"{settings.experimental_tests}/{feature}"
    if (target.root / tests_dir).is_dir():
        removal.deletions.append(tests_dir)

    project = Project(target.root, settings, _load_facts(target.root))

    def gone(rel: str) -> bool:
        return any(rel == d or rel.startswith(d + "/") for d in removal.deletions)

    def reaches(facts: FileFacts, imp) -> bool:
        return any(t == prefix or t.startswith(prefix + ".") for t in project.import_targets(imp))

    def core_files():
        """(rel, source, facts) of every parsable core module the removal keeps."""
        for rel in sorted(project.files):
            source = project.files[rel]
            if gone(rel) or not settings.is_core(source.module):
                continue
            facts = project.facts(rel)
            if facts.syntax_error is None:
                yield rel, source, facts

    # core modules that import the feature, and what each loses
    names_by_module: Dict[str, Set[str]] = {}
    backends: Set[str] = set()
    files: Dict[str, tuple] = {}  # rel -> (PythonFile, edits)
    for rel, source, facts in core_files():
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
    for rel, source, facts in core_files():
        lazy = _lazy_entries(project, facts, names_by_module)
        listed = names_by_module.get(source.module, set())
        if source.is_package:
            listed = listed | {key for key, _ in lazy}
        if not lazy and not listed:
            continue
        if rel not in files:
            files[rel] = (_parse(target, rel), {}, [], set())
        file, edits, removed_nodes, _ = files[rel]
        _remove_dict_keys(file, {key for key, _ in lazy}, edits, removed_nodes)
        _remove_all_entries(file, listed, edits, removed_nodes)

    # nothing removed may still be used
    for module, names in names_by_module.items():
        rel = project.rel_of(module)
        file, _, removed_nodes, _ = files[rel]
        for name in names:
            _check_unused_in_module(file, name, removed_nodes, rel)
        for other in sorted(project.files):
            if gone(other) or other == rel:
                continue
            facts = project.facts(other)
            for imp in facts.imports:
                used = [n for n, _ in imp.names if n in names] if imp.module == module else []
                if used:
                    raise Refused(f"{other}:{imp.line}: imports {', '.join(used)} from {module}, which the removal deletes")

    for rel, (file, edits, _, _) in sorted(files.items()):
        before = (target.root / rel).read_bytes()
        after = apply_edits(file, edits) if edits else before
        try:
            tree = ast.parse(after)
        except SyntaxError as error:  # a safety net, as in `fix`
            raise Refused(f"internal error: the rewrite of {rel} does not parse ({error.msg})") from None
        if _holds_nothing(tree):
            module = project.files[rel].module
            users = _importers(project, module, rel, gone)
            if users:
                raise Refused(f"{rel} would hold nothing, but {', '.join(users)} import(s) it")
            removal.deletions.append(rel)
        elif after != before:
            removal.rewrites.append(FileFix(rel, before, after))

    removal.deletions += _examples(target, project, feature, prefix)
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
    branch = _backend_branch(file, statement)
    if branch is None:
        raise Refused(
            f"{where}: imports the feature inside {outer}, which is neither an @{EXPERIMENTAL_API} function "
            'nor an `if backend == "<name>":` branch'
        )
    node, name = branch
    if node.orelse is not None:
        raise Refused(f"{where}: the `if backend == {name!r}:` branch has an else part; remove it by hand")
    backends.add(name)
    _remove_statement(file, node, edits, removed_nodes)


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


def _backend_branch(file, node):
    """The innermost ``if <name> == "<literal>":`` around `node`, with the literal."""
    parent = file.parents.get(node)
    while parent is not None and not isinstance(parent, cst.FunctionDef):
        if isinstance(parent, cst.If):
            name = _backend_test(parent.test)
            if name is not None:
                return parent, name
        parent = file.parents.get(parent)
    return None


def _backend_test(test) -> Optional[str]:
    if (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Equal)
        and isinstance(test.comparisons[0].comparator, cst.SimpleString)
    ):
        return test.comparisons[0].comparator.evaluated_value
    return None


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
                backends.add(element.key.evaluated_value)
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
        and dotted_name(call.func).rpartition(".")[2] == BACKEND_REQUIREMENT
        and (argument is call.args[0] or (argument.keyword is not None and argument.keyword.value == "backend_checks"))
    ):
        return element
    return None


def _remove_element(file, element, edits, removed_nodes) -> None:
    """Drop one element of a dict, tuple, list or set display, keeping the others' commas."""
    container = file.parents[element]
    first = not any(id(file.parents.get(n)) == id(container) for n in removed_nodes)
    removed_nodes.append(element)
    if not first:  # the container's one edit drops every removed element
        return

    def edit(updated):
        gone = {id(n) for n in removed_nodes}
        pairs = list(zip(container.elements, updated.elements))
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
        return updated.with_changes(elements=kept)

    add_edit(edits, container, edit)


def _remove_backend_mentions(file, backends, edits, removed_nodes) -> None:
    """``if backend == "<name>":`` branches and ``"<name>"`` items of displays."""
    done = {id(n) for n in removed_nodes}

    class Finder(cst.CSTVisitor):
        def visit_If(self, node: cst.If) -> None:
            if id(node) not in done and _backend_test(node.test) in backends and node.orelse is None:
                done.add(id(node))
                _remove_statement(file, node, edits, removed_nodes)

        def visit_Element(self, node: cst.Element) -> None:
            value = node.value
            if isinstance(value, cst.SimpleString) and value.evaluated_value in backends and id(node) not in done:
                container = file.parents[node]
                if isinstance(container, (cst.Tuple, cst.List, cst.Set)) and len(container.elements) > 1:
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


def _inside(file, node, removed_nodes) -> bool:
    removed = {id(n) for n in removed_nodes}
    while node is not None:
        if id(node) in removed:
            return True
        node = file.parents.get(node)
    return False


def _check_unused_in_module(file, name, removed_nodes, rel) -> None:
    top = name.partition(".")[0]
    if "." in name:  # a method: its uses are attribute accesses, not checked
        return
    for assignment in file.scopes[file.tree].assignments[top]:
        for reference in assignment.references:
            if not _inside(file, reference.node, removed_nodes):
                raise Refused(f"{rel}:{file.line_of(reference.node)}: {name} is still used after the removal")


def _holds_nothing(tree: ast.Module) -> bool:
    """Only a docstring, imports, ``__all__`` and ``pass`` left."""
    for index, node in enumerate(tree.body):
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Pass)):
            continue
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            continue
        return False
    return True


def _importers(project, module, rel, gone) -> list:
    users = []
    for other in sorted(project.files):
        if other == rel or gone(other):
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
        if any(imp.module and (imp.module == prefix or imp.module.startswith(prefix + ".")) for imp in facts.imports):
            found.append(rel)
    return found


def _deletion_diff(target: FixTarget, rel: str) -> str:
    path = target.root / rel
    paths = sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts) if path.is_dir() else [path]
    return "".join(FileFix(p.relative_to(target.root).as_posix(), p.read_bytes(), b"").diff() for p in paths)


def apply_removal(removal: Removal) -> None:
    for file_fix in removal.rewrites:
        if not write(removal.target, file_fix):
            raise Refused(f"{file_fix.path} changed on disk during the run; nothing more written")
    for rel in removal.deletions:
        path = removal.target.root / rel
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


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
    try:
        target = load_project(Path(root) if root else None)
    except FixError as error:
        click.echo(f"policy-check remove: {error}", err=True)
        return 2
    try:
        removal = plan_removal(target, feature)
    except Refused as reason:
        click.echo(f"policy-check remove: refused, nothing written: {reason}", err=True)
        return 1
    if diff:
        for file_fix in removal.rewrites:
            click.echo(file_fix.diff(), nl=False)
        for rel in removal.deletions:
            click.echo(_deletion_diff(target, rel), nl=False)
    else:
        try:
            apply_removal(removal)
        except (Refused, OSError) as error:
            click.echo(f"policy-check remove: {error}", err=True)
            return 1
    verb = "would remove" if diff else "removed"
    for item in removal.removed:
        click.echo(f"{verb}: {item}", err=diff)
    for rel in removal.deletions:
        click.echo(f"{verb}: {rel}", err=diff)
    for file_fix in removal.rewrites:
        click.echo(f"{'would rewrite' if diff else 'rewrote'}: {file_fix.path}", err=diff)
    return 0
