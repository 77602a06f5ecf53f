"""``policy-check graduate FEATURE --to MODULE``: the mechanical steps of graduation.

The graduation checklist (`policy_checks.lifecycle.window.GRADUATION_STEPS`) has seven
steps; this command carries out 2, 3, 5 and 6 and prints all seven with their state:

2. The feature's files move from ``<experimental package>/<feature>/`` to the package
   MODULE (imports inside them retargeted); at each old module path a shim re-exports
   the new one with a `DeprecationWarning` naming it, for one release. The shim
   package's ``__init__`` binds ``__graduated_to__``, which tells the checker (EXP009)
   and the board that the directory is a shim, not a feature. ``FEATURE.toml`` goes.
3. In core, ``@flashinfer_experimental_api(...)`` on the entry points becomes
   ``@flashinfer_api`` (its ``trace=`` kept), the deferred imports and the checker
   imports point at the new home, ``require_experimental_*`` and
   ``warn_experimental_backend_once`` calls in the code that reaches the feature go;
   in the moved code ``@experimental_backend`` and ``experimental=True`` go.
5. With ``--aot``, the moved module's spec factories (functions annotated to return
   ``JitSpec`` and callable without arguments) are registered in the AOT module.
6. ``<experimental tests>/<feature>/`` moves to the stable lane, imports retargeted;
   test functions that assert the experimental contract (the opt-in warning, the
   markers, JIT-only refusal, the record) are dropped and listed.

Step 4 is partly mechanical: the API is added to the ``docs/api`` page that lists its
stable neighbours and to the top-level lazy-export table; the rest (trace template and
example) is for a person, as are steps 1 and 7. The plan is computed in full before
anything is written, and anything it cannot do cleanly refuses the whole graduation
(exit 1, nothing written). Where the feature is imported is read from the checker's
facts (`policy_checks.project.Project`); rewrites use `cst_tools`.
"""

from __future__ import annotations

import ast
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import click
import libcst as cst

from . import records as feature_records
from .. import markers
from ..config import module_under, under
from ..facts import FUNCTION, docstring_ids
from .window import GRADUATION_STEPS
from ..project import DictBinding, Project
from ..editing import docs_tree
from ..editing.changes import ChangeSet, Rewrite
from ..editing.shell import run_plan
from ..editing.cst_tools import (
    PythonFile,
    Unfixable,
    add_edit,
    apply_edits,
    backend_branch,
    bound_name,
    decorator_kinds,
    dotted_name,
    drop_small_statement,
    import_at,
    imported_module,
    inside,
    module_small_statements,
    parse,
    relative_import,
    with_aliases,
)
from ..editing.target import FixTarget, Refused, project_model

EXPERIMENTAL_API = markers.EXPERIMENTAL_API
STABLE_API = markers.STABLE_API
EXPERIMENTAL_BACKEND = markers.EXPERIMENTAL_BACKEND
GATE_CALLS = markers.GATE_FUNCTIONS
SHIM_MARKER = markers.SHIM_MARKER
RECORD = markers.RECORD

# What a test asserting the experimental contract mentions; such tests do not hold for a
# stable API and are dropped (and listed) when the tests move.
_MARKER_ATTRIBUTES = {"is_experimental", "experimental_feature", "experimental"}
# Names that only a test of the experimental contract reads: the AOT refusal, the gate.
_CONTRACT_NAMES = {"AotRefusedError", "EXPERIMENTAL_AUTO_ENV_VAR", "experimental_auto_backends_allowed",
                   "dropped_experimental_backends", "gate_on"}
_CONTRACT_STRINGS = (RECORD, markers.AUTO_BACKENDS_ENV)


@dataclass
class Graduation:
    """What graduating one feature does, computed before anything is written."""

    target: FixTarget
    feature: str
    home: str  # the stable package, e.g. "flashinfer.gated_norm"
    changes: ChangeSet
    rewrites: List[Rewrite] = field(default_factory=list)  # existing files, new bytes
    creations: Dict[str, bytes] = field(default_factory=dict)  # new files
    modes: Dict[str, int] = field(default_factory=dict)  # a moved file's permission bits
    deletions: List[str] = field(default_factory=list)
    done: Dict[int, List[str]] = field(default_factory=dict)  # checklist step -> what this run did
    for_a_person: Dict[int, List[str]] = field(default_factory=dict)

    def did(self, step: int, text: str) -> None:
        self.done.setdefault(step, []).append(text)

    def ask(self, step: int, text: str) -> None:
        self.for_a_person.setdefault(step, []).append(text)

    def report(self, applied: bool) -> List[str]:
        return [f"Graduation checklist for {self.feature} -> {self.home}:", *checklist(self, applied)]


def _moved(name: str, old: str, new: str) -> str:
    return new + name[len(old):] if module_under(name, old) else name


def plan_graduation(target: FixTarget, feature: str, home: str, aot: bool = False) -> Graduation:
    """The whole graduation, or `Refused`; reads the tree, writes nothing."""
    s = target.settings
    if not feature.isidentifier():
        raise Refused(f"{feature!r} is not a feature name")
    feature_dir = target.root / s.experimental_dir / feature
    if not os.path.lexists(feature_dir):
        raise Refused(f"no feature directory {s.experimental_dir}/{feature}")
    changes = ChangeSet(target.root)
    changes.files_under(f"{s.experimental_dir}/{feature}")  # a link or a FIFO in it refuses now
    home_before = feature_records.graduated_to(feature_dir, s.experimental_package)
    if home_before is not None:
        raise Refused(f"{feature} already graduated to {home_before}")
    if feature_records.binds_shim_marker(feature_dir):
        why = feature_records.shim_problem(feature_dir, s.experimental_package)
        raise Refused(f"{s.experimental_dir}/{feature} binds {SHIM_MARKER} but is no pure re-export shim ({why}); "
                      "finish or undo the earlier graduation by hand")
    project = project_model(target)
    _check_home(target, project, home)
    old = f"{s.experimental_package}.{feature}"
    graduation = Graduation(target, feature, home, changes)
    record = feature_records.read(feature_dir / RECORD) if (feature_dir / RECORD).is_file() else None
    backends = set(record.backends or ()) if record else set()

    _move_feature(graduation, feature_dir, old)
    entry_points = _swap_core(graduation, project, old, backends)
    _move_tests(graduation, project, old)
    _retarget_examples(graduation, project, old)
    _list_in_docs(graduation, project, entry_points)
    _export_top_level(graduation, project, entry_points)
    if aot:
        _register_aot(graduation, project)
    else:
        graduation.ask(5, "if the kernels ship prebuilt, run again with --aot or register their specs by hand")
    _strings_naming_the_old_path(graduation, project, old)
    rewritten = {fix.path for fix in graduation.rewrites}
    words = {feature, *(name for _, name in entry_points)}
    for rel, number, text in docs_tree.lines_naming(target, project, words):
        if rel not in rewritten:
            graduation.ask(4, f"reread this docs line, written while it was experimental: {rel}:{number}: {text[:120]}")
    graduation.ask(1, "settle the API contract: names, dtypes, keyword-only performance arguments")
    graduation.ask(4, "add the trace template and its example test")
    tracking = f" ({record.tracking.render('')})" if record and record.tracking else ""
    graduation.ask(7, f"close the tracking issue{tracking}, naming the release {feature} graduated in")
    for rel, after in list(graduation.creations.items()):
        if rel.endswith(".py"):
            _must_parse(rel, after)
    for fix in graduation.rewrites:
        if fix.path.endswith(".py"):
            _must_parse(fix.path, fix.after)
    graduation.changes.add_planned(graduation.rewrites, graduation.creations, graduation.deletions, graduation.modes)
    return graduation


def _strings_naming_the_old_path(graduation: Graduation, project: Project, old: str) -> None:
    """String constants that still spell the experimental path (``importlib.import_module(
    "flashinfer.experimental.x.y")``, an f-string's parts) keep working through the shims
    for one release; each is listed for a person (step 2)."""
    target = graduation.target
    relative = "." + old.partition(".")[2]  # ".experimental.<feature>", as a relative import_module spells it
    new_bytes = {**{fix.path: fix.after for fix in graduation.rewrites}, **graduation.creations}
    shims = {fix.path for fix in graduation.rewrites if fix.path.startswith(target.settings.experimental_dir + "/")}
    paths = sorted({*project.files, *project.example_texts(), *new_bytes} - shims)
    for rel in paths:
        if not rel.endswith(".py") or any(under(rel, d) for d in graduation.deletions):
            continue
        data = new_bytes[rel] if rel in new_bytes else (target.root / rel).read_bytes()
        if graduation.feature.encode() not in data:
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        nodes = list(ast.walk(tree))
        prose = docstring_ids(nodes)
        for node in nodes:
            if id(node) in prose:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (old in node.value or relative in node.value):
                graduation.ask(2, f"a string still names the experimental path: {rel}:{node.lineno}: {node.value[:80]!r}")


def _must_parse(rel: str, data: bytes) -> None:
    try:
        ast.parse(data)
    except SyntaxError as error:  # a safety net, as in `fix`
        raise Refused(f"internal error: the rewrite of {rel} does not parse ({error.msg})") from None


def _check_home(target: FixTarget, project: Project, home: str) -> None:
    s = target.settings
    parts = home.split(".")
    if not all(p.isidentifier() for p in parts) or not module_under(home, s.package) or home == s.package:
        raise Refused(f"--to {home}: not a module under {s.package}")
    if s.is_experimental_module(home):
        raise Refused(f"--to {home}: inside the experimental package")
    path = target.root.joinpath(*parts)
    if path.exists() or path.with_suffix(".py").exists():
        raise Refused(f"--to {home}: {path.relative_to(target.root).as_posix()} already exists")
    parent = path.parent
    if not (parent / "__init__.py").is_file():
        raise Refused(f"--to {home}: its parent package {'.'.join(parts[:-1])} has no __init__.py")
    if parts[-1] in _exported_names(project, ".".join(parts[:-1])):
        raise Refused(
            f"--to {home}: {'.'.join(parts[:-1])} exports a name {parts[-1]!r}, which importing the new package "
            "would shadow; choose another name"
        )


def _exported_names(project: Project, package: str) -> Set[str]:
    """Names a package ``__init__`` binds at top level or serves from a lazy-export
    table, from the checker's facts."""
    rel = project.rel_of(package)
    if rel is None:
        return set()
    facts = project.facts(rel)
    names = set(facts.bindings) | {q for q in facts.definitions if "." not in q}
    for binding in facts.bindings.values():
        if isinstance(binding, DictBinding):
            names |= {key for key, _ in binding.value.entries if isinstance(key, str)}
    return names


# step 2: the code moves, shims stay ------------------------------------------------


def _move_feature(graduation: Graduation, feature_dir: Path, old: str) -> None:
    target = graduation.target
    home_dir = graduation.home.replace(".", "/")
    old_dir = feature_dir.relative_to(target.root).as_posix()
    changes = graduation.changes
    files = [target.root / rel for rel in changes.files_under(old_dir) if "__pycache__" not in rel.split("/")]
    if not (feature_dir / "__init__.py") in files:
        raise Refused(f"{old_dir} has no __init__.py; only a package can graduate")
    for path in files:
        rel = path.relative_to(target.root).as_posix()
        inner = path.relative_to(feature_dir).as_posix()
        new_rel = f"{home_dir}/{inner}"
        if path.name == RECORD:
            graduation.deletions.append(rel)
            continue
        data = changes.read(rel)
        graduation.modes[new_rel] = stat.S_IMODE(os.lstat(path).st_mode)
        if path.suffix != ".py":
            graduation.creations[new_rel] = data
            graduation.deletions.append(rel)
            continue
        module, is_package = target.module_of(rel)
        new_module, _ = target.module_of(new_rel)
        file = _parse(target, rel)
        edits: dict = {}
        _retarget(file, old, graduation.home, new_module, edits)
        _drop_experimental_markers(file, edits)
        graduation.creations[new_rel] = apply_edits(file, edits) if edits else data
        shim = _shim(graduation.feature, module, new_module, is_package and rel == f"{old_dir}/__init__.py", graduation.home)
        graduation.rewrites.append(Rewrite(rel, data, shim))
    graduation.did(2, f"moved {old_dir}/ to {home_dir}/ ({len(files)} files), shims left at the old module paths")
    if (feature_dir / RECORD).is_file():
        graduation.did(2, f"deleted {old_dir}/{RECORD}")


def _shim(feature: str, module: str, new_module: str, marks_package: bool, home: str) -> bytes:
    """A module at the old path that re-exports the new one and says where it went.
    Module names are dotted identifiers, so they need no escaping in a string."""
    marker = f'{SHIM_MARKER} = "{home}"\n\n' if marks_package else ""
    return (
        f'"""Moved to `{new_module}` when {feature} graduated from the experimental track.\n\n'
        f"This re-export stays for one release; import `{new_module}` instead.\n"
        f'"""\n\n'
        f"import importlib as _importlib\n"
        f"import warnings as _warnings\n\n"
        f"from {new_module} import *  # noqa: F401,F403\n\n"
        f"{marker}"
        f"_warnings.warn(\n"
        f'    "{module} moved to {new_module} when "\n'
        f'    "{feature} graduated; the old path goes in the next release",\n'
        f"    DeprecationWarning,\n"
        f"    stacklevel=2,\n"
        f")\n\n\n"
        f"def __getattr__(name):\n"
        f'    return getattr(_importlib.import_module("{new_module}"), name)\n'
    ).encode("utf-8")


def _retarget(file: PythonFile, old: str, new: str, new_module: str, edits: dict) -> int:
    """Point imports of `old` (and its submodules) at `new`, for a file whose module is
    now `new_module`; relative imports stay relative. Returns how many changed."""
    new_is_package = file.is_package
    changed = 0
    for node in _imports(file):
        if isinstance(node, cst.Import):
            aliases = [a for a in node.names if module_under(dotted_name(a.name), old)]
            if not aliases:
                continue
            if any(a.asname is None for a in aliases):
                raise Refused(f"{file.module_name}:{file.line_of(node)}: `import {old}...` binds the experimental "
                              "package's name; import it with `as` or `from` first")

            def edit(updated, node=node):
                names = [a.with_changes(name=_dotted_node(_moved(dotted_name(a.name), old, new)))
                         if module_under(dotted_name(a.name), old) else a for a in updated.names]
                return updated.with_changes(names=names)

            add_edit(edits, node, edit)
            changed += 1
            continue
        source = imported_module(file, node)
        moved = _moved(source, old, new)
        relative = len(node.relative)
        if relative:
            package = new_module if new_is_package else new_module.rpartition(".")[0]
            text = relative_import(package, moved)
            before = "." * relative + (dotted_name(node.module) if node.module else "")
            if text == before:
                continue
        elif moved == source:
            continue
        else:
            text = moved
        dots = len(text) - len(text.lstrip("."))
        rest = text[dots:]

        def edit(updated, dots=dots, rest=rest):
            return updated.with_changes(
                relative=[cst.Dot()] * dots, module=_dotted_node(rest) if rest else None,
            )

        add_edit(edits, node, edit)
        changed += 1
    return changed


def _imports(file: PythonFile) -> List:
    found: list = []

    class Finder(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            found.append(node)

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            found.append(node)

    file.tree.visit(Finder())
    return found


def _dotted_node(name: str):
    return cst.parse_expression(name)


def _drop_experimental_markers(file: PythonFile, edits: dict) -> None:
    """``@experimental_backend`` decorators and ``experimental=True`` arguments go; an
    import of ``experimental_backend`` left unused goes too."""
    dropped = []

    class Finder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            marks = [_is_backend_marker(file, d) for d in node.decorators]
            if any(marks):
                dropped.extend(d for d, mark in zip(node.decorators, marks) if mark)
                add_edit(edits, node, lambda updated, marks=marks: updated.with_changes(
                    decorators=[d for d, mark in zip(updated.decorators, marks) if not mark]))

        def visit_Call(self, node: cst.Call) -> None:
            if dotted_name(node.func).rpartition(".")[2] == "JitSpec" and any(
                a.keyword is not None and a.keyword.value == "experimental" for a in node.args
            ):
                add_edit(edits, node, _without_keyword("experimental"))

    file.tree.visit(Finder())
    if dropped:
        _drop_unused_import(file, EXPERIMENTAL_BACKEND, edits, ignore=dropped)


def _is_backend_marker(file: PythonFile, decorator: cst.Decorator) -> bool:
    return markers.KIND_EXPERIMENTAL_BACKEND in decorator_kinds(file, decorator)


def _without_keyword(keyword: str):
    def edit(updated: cst.Call) -> cst.Call:
        args = [a for a in updated.args if not (a.keyword is not None and a.keyword.value == keyword)]
        if args and updated.args and args[-1] is not updated.args[-1]:
            args[-1] = args[-1].with_changes(comma=updated.args[-1].comma)
        return updated.with_changes(args=args)

    return edit


def _drop_unused_import(file: PythonFile, name: str, edits: dict, ignore=()) -> None:
    """Remove the module-level import alias binding `name` when every use of it lies in `ignore`."""
    for assignment in file.scopes[file.tree].assignments[name]:
        statement = assignment.node
        if not isinstance(statement, (cst.Import, cst.ImportFrom)) or isinstance(statement.names, cst.ImportStar):
            return
        for reference in assignment.references:
            if not inside(file, reference.node, ignore):
                return
        kept = [a for a in statement.names if bound_name(a, statement) != name]
        if kept:
            add_edit(edits, statement, lambda updated, kept=[bound_name(a, statement) for a in kept]: with_aliases(
                updated, [a for a in updated.names if bound_name(a, updated) in kept]))
        else:
            drop_small_statement(file, statement, None, edits)


# step 3: the entry points ---------------------------------------------------------


def _swap_core(graduation: Graduation, project: Project, old: str, backends: Set[str]) -> List[Tuple[str, str]]:
    """Rewrite the core modules that import the feature; returns the swapped entry
    points as ``(module, name)``."""
    target = graduation.target
    s = target.settings
    entry_points: List[Tuple[str, str]] = []
    reached = False
    for rel in sorted(project.files):
        source = project.files[rel]
        if not s.is_core(source.module) or s.is_experimental_module(source.module):
            continue
        data = (target.root / rel).read_bytes()
        if graduation.feature.encode() not in data:
            continue  # any import of the feature, and any marker naming it, spells its name
        facts = project.facts(rel)
        if facts.syntax_error is not None:
            continue
        hits = [imp for imp in facts.imports if any(module_under(t, old) for t in project.import_targets(imp))]
        marked = EXPERIMENTAL_API.encode() in data
        if not hits and not marked:
            continue
        file = _parse(target, rel)
        edits: dict = {}
        _retarget(file, old, graduation.home, source.module, edits)
        functions = {imp.functions[0] for imp in hits if imp.scope == FUNCTION}
        swapped = _swap_decorators(file, functions, graduation.feature, edits)
        entry_points += [(source.module, name) for name in swapped]
        handed_off = _branch_backends(file, [imp for imp in hits if imp.scope == FUNCTION])
        removed_gates = _drop_gate_calls(file, set(swapped), backends | handed_off, graduation.feature, edits)
        for name in GATE_CALLS if removed_gates else ():
            _drop_unused_import(file, name, edits, ignore=removed_gates)
        gates = len(removed_gates)
        reached = reached or bool(hits) or bool(swapped)
        after = apply_edits(file, edits)
        if after != data:
            graduation.rewrites.append(Rewrite(rel, data, after))
            graduation.did(3, f"{rel}: imports point at {graduation.home}" + (
                f"; @{STABLE_API} on {', '.join(swapped)}" if swapped else "") + (
                f"; {gates} gate call(s) dropped" if gates else ""))
    if not reached:
        raise Refused(f"no core module reaches {graduation.feature}: nothing imports it or marks it "
                      f"@{EXPERIMENTAL_API}(feature={graduation.feature!r})")
    return entry_points


def _branch_backends(file: PythonFile, imports) -> Set[str]:
    """The backends whose ``if backend == "<name>":`` branch imports the feature."""
    found = set()
    for imp in imports:
        try:
            statement = import_at(file, imp)
        except Unfixable:  # importlib.import_module("..."): its string is listed for a person
            continue
        branch = backend_branch(file, statement)
        if branch is not None:
            found.add(branch[1])
    return found


def _swap_decorators(file: PythonFile, functions: Set[str], feature: str, edits: dict) -> List[str]:
    """``@flashinfer_experimental_api(...)`` -> ``@flashinfer_api`` on the top-level
    functions (and methods) named in `functions` or marked with this feature."""
    swapped: List[str] = []
    decorators: list = []

    class Finder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            for decorator in node.decorators:
                if markers.KIND_EXPERIMENTAL_API not in decorator_kinds(file, decorator):
                    continue
                if node.name.value in functions or _names_feature(decorator, feature):
                    swapped.append(node.name.value)
                    decorators.append(decorator)
                    add_edit(edits, decorator, _stable_decorator)

    file.tree.visit(Finder())
    if swapped:
        _ensure_stable_api_imported(file, edits, decorators)
    return swapped


def _names_feature(decorator: cst.Decorator, feature: str) -> bool:
    """``@flashinfer_experimental_api(feature="<feature>")``."""
    call = decorator.decorator
    return isinstance(call, cst.Call) and any(
        a.keyword is not None and a.keyword.value == "feature" and isinstance(a.value, cst.SimpleString)
        and a.value.evaluated_value == feature for a in call.args
    )


def _stable_decorator(updated: cst.Decorator) -> cst.Decorator:
    expression = updated.decorator
    if isinstance(expression, cst.Call):
        expression = _without_keyword("feature")(expression)
        if expression.args:
            return updated.with_changes(decorator=expression.with_changes(func=_renamed(expression.func)))
        expression = expression.func
    return updated.with_changes(decorator=_renamed(expression))


def _renamed(expression):
    if isinstance(expression, cst.Attribute):
        return expression.with_changes(attr=cst.Name(STABLE_API))
    return cst.Name(STABLE_API)


def _ensure_stable_api_imported(file: PythonFile, edits: dict, decorators: list) -> None:
    """The module imports ``flashinfer_api`` beside ``flashinfer_experimental_api``, which
    goes when nothing else uses it."""
    scope = file.scopes[file.tree]
    has_stable = bool(scope.assignments[STABLE_API])
    for assignment in scope.assignments[EXPERIMENTAL_API]:
        statement = assignment.node
        if not isinstance(statement, cst.ImportFrom) or isinstance(statement.names, cst.ImportStar):
            continue
        still_used = any(not inside(file, r.node, decorators) for r in assignment.references)
        names = [bound_name(a, statement) for a in statement.names]
        wanted = [n for n in names if n != EXPERIMENTAL_API or still_used]
        if not has_stable:
            wanted.append(STABLE_API)
        wanted = sorted(set(wanted), key=lambda n: (n not in names, names.index(n) if n in names else 0))

        def edit(updated, wanted=wanted):
            by_name = {bound_name(a, updated): a for a in updated.names}
            aliases = [by_name.get(n) or cst.ImportAlias(name=cst.Name(n)) for n in wanted]
            if not isinstance(updated.names, cst.ImportStar) and updated.names and len(aliases) > 1:
                aliases = _sorted_like(updated, aliases)
            return with_aliases(updated, aliases)

        add_edit(edits, statement, edit)
        return
    if not has_stable:
        raise Refused(f"{file.module_name}: cannot tell how to import {STABLE_API} (no `from ... import "
                      f"{EXPERIMENTAL_API}` at module level)")


def _sorted_like(statement: cst.ImportFrom, aliases: list) -> list:
    """Keep alphabetical order when the statement had it."""
    names = [bound_name(a, statement) for a in statement.names]
    if names == sorted(names):
        return sorted(aliases, key=lambda a: bound_name(a, statement))
    return aliases


def _drop_gate_calls(file: PythonFile, functions: Set[str], backends: Set[str], feature: str, edits: dict) -> list:
    """Statement-level gate calls in the swapped entry points, or naming the feature or
    one of its backends; returns the statements removed."""
    removed: list = []
    names = backends | {feature}

    class Finder(cst.CSTVisitor):
        def __init__(self) -> None:
            self.function: List[str] = []

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.function.append(node.name.value)

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.function.pop()

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            if len(node.body) != 1 or not isinstance(node.body[0], cst.Expr) or not isinstance(node.body[0].value, cst.Call):
                return
            call = node.body[0].value
            if not markers.is_gate_name(dotted_name(call.func)):
                return
            strings = {a.value.evaluated_value for a in call.args if isinstance(a.value, cst.SimpleString)}
            if (self.function and self.function[0] in functions) or strings & names:
                removed.append(node)
                add_edit(edits, node, lambda updated: cst.RemovalSentinel.REMOVE)

    file.tree.visit(Finder())
    return removed


# step 6: the tests --------------------------------------------------------------


def stable_tests_dir(target: FixTarget, home: str) -> str:
    """Where the moved tests go: beside the tests of the package when the stable lane
    mirrors it (``tests/flashinfer/...``), else ``<stable tests>/<last part>``."""
    s = target.settings
    parts = home.split(".")
    mirrored = f"{s.stable_tests}/{s.package.replace('.', '/')}"
    if (target.root / mirrored).is_dir():
        return f"{s.stable_tests}/{'/'.join(parts)}"
    return f"{s.stable_tests}/{parts[-1]}"


def _move_tests(graduation: Graduation, project: Project, old: str) -> None:
    target = graduation.target
    s = target.settings
    tests = target.root / s.experimental_tests / graduation.feature
    if not os.path.lexists(tests):
        graduation.ask(6, f"write stable tests: {s.experimental_tests}/{graduation.feature}/ does not exist")
        return
    new_dir = stable_tests_dir(target, graduation.home)
    if (target.root / new_dir).exists():
        raise Refused(f"the tests would move to {new_dir}, which already exists")
    dropped: List[str] = []
    trimmed: List[str] = []
    tests_rel = tests.relative_to(target.root).as_posix()
    files = [target.root / rel for rel in graduation.changes.files_under(tests_rel) if "__pycache__" not in rel.split("/")]
    for path in files:
        rel = path.relative_to(target.root).as_posix()
        new_rel = f"{new_dir}/{path.relative_to(tests).as_posix()}"
        data = graduation.changes.read(rel)
        graduation.modes[new_rel] = stat.S_IMODE(os.lstat(path).st_mode)
        if path.suffix == ".py":
            file = _parse(target, rel)
            edits: dict = {}
            _retarget(file, old, graduation.home, target.module_of(new_rel)[0], edits)
            gone, pruned = _drop_contract_tests(file, edits, old)
            dropped += [f"{new_rel}::{name}" for name in gone]
            trimmed += [f"{new_rel}::{name}" for name in pruned]
            data = apply_edits(file, edits) if edits else data
        graduation.creations[new_rel] = data
    graduation.deletions.append(tests.relative_to(target.root).as_posix())
    graduation.did(6, f"moved {s.experimental_tests}/{graduation.feature}/ to {new_dir}/ ({len(files)} files)")
    for name in dropped:
        graduation.did(6, f"dropped a test of the experimental contract: {name}")
    for name in trimmed:
        graduation.did(6, f"dropped what expects experimental markers in {name}")
    if dropped or trimmed:
        graduation.ask(6, "check that what was dropped covered nothing else")


def _drop_contract_tests(file: PythonFile, edits: dict, old: str) -> Tuple[List[str], List[str]]:
    """Top-level ``test_*`` functions about the experimental contract go (named for it,
    or reading its gate, its AOT refusal, its record or its path); in the others, a ``with
    pytest.warns(ExperimentalWarning):`` block gives way to its body, and the operands
    of an ``assert`` that read an experimental marker go (the whole statement when
    nothing is left). Returns the dropped tests and the trimmed ones."""
    dropped, trimmed = [], []
    for statement in file.tree.body:
        if not (isinstance(statement, cst.FunctionDef) and statement.name.value.startswith("test")):
            continue
        name = statement.name.value
        warns = _warns_blocks(statement)
        if "experimental" in name or _expects_contract(statement, old) or any(w is None for w in warns):
            dropped.append(name)
            add_edit(edits, statement, lambda updated: cst.RemovalSentinel.REMOVE)
            continue
        for block in warns:
            add_edit(edits, block, lambda updated: cst.FlattenSentinel(updated.body.body))
        if _prune_marker_asserts(statement, edits) or warns:
            trimmed.append(name)
    return dropped, trimmed


def _warns_blocks(function: cst.FunctionDef) -> list:
    """``with pytest.warns(ExperimentalWarning...):`` statements of one item in `function`
    (None for one that binds the record with ``as``, or has more items: the test goes)."""
    found: list = []

    class Finder(cst.CSTVisitor):
        def visit_With(self, node: cst.With) -> None:
            expects = [item for item in node.items if _is_warns_experimental(item.item)]
            if expects:
                simple = len(node.items) == 1 and expects[0].asname is None and isinstance(node.body, cst.IndentedBlock)
                found.append(node if simple else None)

    function.visit(Finder())
    return found


def _is_warns_experimental(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Call)
        and dotted_name(node.func).rpartition(".")[2] == "warns"
        and any(dotted_name(a.value).rpartition(".")[2] == "ExperimentalWarning" for a in node.args)
    )


def _reads_marker(node: cst.CSTNode) -> bool:
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Attribute(self, attribute: cst.Attribute) -> None:
            nonlocal found
            found = found or attribute.attr.value in _MARKER_ATTRIBUTES

    node.visit(Finder())
    return found


def _prune_marker_asserts(function: cst.FunctionDef, edits: dict) -> bool:
    asserts: list = []

    class Finder(cst.CSTVisitor):
        def visit_Assert(self, node: cst.Assert) -> None:
            if _reads_marker(node.test):
                asserts.append(node)

    function.visit(Finder())
    for node in asserts:
        operands = _and_operands(node.test)
        kept = [o for o in operands if not _reads_marker(o)]
        if not kept:
            add_edit(edits, node, lambda updated: cst.RemovalSentinel.REMOVE)
            continue
        test = kept[0]
        for operand in kept[1:]:
            test = cst.BooleanOperation(test, cst.And(), operand)
        add_edit(edits, node, lambda updated, test=test: updated.with_changes(test=test))
    return bool(asserts)


def _and_operands(node: cst.BaseExpression) -> list:
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And) and not node.lpar:
        return _and_operands(node.left) + _and_operands(node.right)
    return [node]


def _expects_contract(function: cst.FunctionDef, old: str) -> bool:
    """Does the test read the gate, the AOT refusal or the record, or spell the
    experimental path in a string (where the code lives while it is experimental)?"""
    strings = (*_CONTRACT_STRINGS, old, old.replace(".", "/"))
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:  # parameters (fixtures) included
            nonlocal found
            found = found or node.value in _CONTRACT_NAMES

        def visit_Attribute(self, node: cst.Attribute) -> None:
            nonlocal found
            found = found or node.attr.value in _CONTRACT_NAMES

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            nonlocal found
            found = found or any(s in node.value for s in strings)

    function.visit(Finder())
    return found


def _retarget_examples(graduation: Graduation, project: Project, old: str) -> None:
    target = graduation.target
    for rel in sorted(project.example_texts()):
        data = (target.root / rel).read_bytes()
        if old.encode() not in data and b".experimental" not in data:
            continue
        file = _parse(target, rel)
        edits: dict = {}
        if _retarget(file, old, graduation.home, file.module_name, edits):
            graduation.rewrites.append(Rewrite(rel, data, apply_edits(file, edits)))
            graduation.did(2, f"{rel}: imports point at {graduation.home}")


# step 4 (its mechanical part): docs page and top-level export ----------------------

_AUTOSUMMARY_RE = re.compile(r"^\.\. autosummary::[^\n]*\n(?:[ \t]+:[^\n]*\n)*\n?((?:[ \t]+\S[^\n]*\n)+)", re.M)
_AUTOFUNCTION_RE = re.compile(r"^\.\. autofunction:: (\S+)[^\n]*\n", re.M)


def _list_in_docs(graduation: Graduation, project: Project, entry_points: List[Tuple[str, str]]) -> None:
    """Add each entry point to the ``docs/api`` page that documents a stable neighbour
    from the same module (its autosummary list and an ``autofunction``)."""
    target = graduation.target
    pages = dict(project.docs_pages())
    for module, name in entry_points:
        neighbours = _module_names(project, module) - {name}
        page = next((rel for rel, text in sorted(pages.items())
                     if any(n in neighbours for n in _AUTOFUNCTION_RE.findall(text))), None)
        if page is None:
            graduation.ask(4, f"list {module}.{name} on a docs/api page (no page documents its neighbours)")
            continue
        text = pages[page]
        if re.search(rf"^\.\. autofunction:: {re.escape(name)}\b", text, re.M):
            continue
        text = _add_to_page(text, name)
        pages[page] = text
        graduation.did(4, f"{page}: lists {name}")
    for rel, text in pages.items():
        before = (target.root / rel).read_bytes()
        after = text.encode("utf-8")
        if after != before:
            graduation.rewrites.append(Rewrite(rel, before, after))


def _module_names(project: Project, module: str) -> Set[str]:
    rel = project.rel_of(module)
    if rel is None:
        return set()
    return set(project.facts(rel).definitions)


def _add_to_page(text: str, name: str) -> str:
    summary = _AUTOSUMMARY_RE.search(text)
    if summary:
        entries = summary.group(1)
        indent = re.match(r"[ \t]+", entries).group(0)
        text = text[: summary.end(1)] + f"{indent}{name}\n" + text[summary.end(1):]
    last = None
    for last in _AUTOFUNCTION_RE.finditer(text):
        pass
    addition = f"\n.. autofunction:: {name}\n"
    if last is None:
        return text.rstrip("\n") + "\n" + addition
    return text[: last.end()] + addition + text[last.end():]


def _export_top_level(graduation: Graduation, project: Project, entry_points: List[Tuple[str, str]]) -> None:
    """Each entry point is exported from the top-level package when its module's
    stable names are (in a lazy-export table, or by ``from .module import name``);
    a module whose names are reached through the module itself is left so."""
    target = graduation.target
    s = target.settings
    rel = project.rel_of(s.package)
    if rel is None:
        return
    file = _parse(target, rel)
    table = next((small.value for small in module_small_statements(file)
                  if isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(small.value, cst.Dict)
                  and _is_lazy_table(small.value)), None)
    served = _served_modules(file, table)
    exported = _exported_names(project, s.package)
    missing = []
    for module, name in entry_points:
        relative = module[len(s.package) + 1:]
        if name in exported:
            graduation.did(4, f"{rel}: already exports {name}")
        elif relative not in served:
            graduation.did(4, f"{rel}: {name} not exported, as no name of {module} is")
        else:
            missing.append((name, relative))
    if not missing:
        return
    edits: dict = {}
    if table is None:
        _export_by_import(file, missing, edits)
    else:
        add_edit(edits, table, _with_entries(missing))
    before = (target.root / rel).read_bytes()
    graduation.rewrites.append(Rewrite(rel, before, apply_edits(file, edits)))
    for name, _ in missing:
        graduation.did(4, f"{rel}: exports {name}")


def _served_modules(file: PythonFile, table: Optional[cst.Dict]) -> Set[str]:
    """Modules (relative to the package) whose names the package ``__init__`` exports."""
    if table is not None:
        return {e.value.evaluated_value.lstrip(".") for e in table.elements}
    return {dotted_name(small.module) for small in module_small_statements(file)
            if isinstance(small, cst.ImportFrom) and len(small.relative) == 1 and small.module is not None}


def _with_entries(missing: List[Tuple[str, str]]):
    def edit(updated: cst.Dict) -> cst.Dict:
        """New entries at the end, separated as the others are (one per line in a table
        written one per line); the old last entry's trailing comma ends the new last."""
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


def _export_by_import(file: PythonFile, missing: List[Tuple[str, str]], edits: dict) -> None:
    """A package ``__init__`` that imports its exports (``from .decode import f as f``):
    the name joins the import from its module, or a new line after the last relative
    import, spelt as the others are (with the redundant ``as`` when most use it)."""
    relative_imports = [small for small in module_small_statements(file)
                        if isinstance(small, cst.ImportFrom) and small.relative
                        and not isinstance(small.names, cst.ImportStar)]
    aliases = [a for small in relative_imports for a in small.names]
    redundant = sum(1 for a in aliases if a.asname is not None and bound_name(a, None) == dotted_name(a.name))
    spell_as = bool(aliases) and redundant * 2 > len(aliases)

    def alias(name: str) -> cst.ImportAlias:
        asname = cst.AsName(cst.Name(name)) if spell_as else None
        return cst.ImportAlias(cst.Name(name), asname=asname)

    new_lines = []
    for name, relative in missing:
        same = next((s for s in relative_imports if len(s.relative) == 1 and s.module is not None
                     and dotted_name(s.module) == relative), None)
        if same is not None:
            add_edit(edits, same, lambda updated, name=name: with_aliases(updated, [*updated.names, alias(name)]))
        else:
            new_lines.append(cst.SimpleStatementLine([cst.ImportFrom(
                module=_dotted_node(relative), relative=[cst.Dot()], names=[alias(name)])]))
    if not new_lines:
        return
    lines = list(file.tree.body)
    anchor = max((i for i, line in enumerate(lines) if isinstance(line, cst.SimpleStatementLine)
                  and any(s in relative_imports for s in line.body)), default=None)
    if anchor is None:
        add_edit(edits, file.tree, lambda updated: updated.with_changes(body=[*updated.body, *new_lines]))
        return
    add_edit(edits, lines[anchor], lambda updated: cst.FlattenSentinel([updated, *new_lines]))


def _is_lazy_table(mapping: cst.Dict) -> bool:
    return bool(mapping.elements) and all(
        isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) and isinstance(e.value, cst.SimpleString)
        for e in mapping.elements
    )


# step 5: AOT ------------------------------------------------------------------------


def _register_aot(graduation: Graduation, project: Project) -> None:
    """Register the moved modules' spec factories in the AOT module's ``_register_builtin``."""
    target = graduation.target
    factories = []
    for new_rel, data in sorted(graduation.creations.items()):
        module = target.module_of(new_rel)[0] if new_rel.endswith(".py") else None
        if not module_under(module, graduation.home):  # the moved tests are created too
            continue
        for node in ast.parse(data).body:
            if isinstance(node, ast.FunctionDef) and _returns_spec(node) and _callable_bare(node):
                factories.append((module, node.name))
    if not factories:
        graduation.ask(5, "--aot: no spec factory (a function returning JitSpec callable without arguments) "
                          "in the moved code; register the specs by hand")
        return
    aot_module = target.settings.aot_modules[0]
    rel = project.rel_of(aot_module)
    if rel is None:
        raise Refused(f"--aot: no AOT module {aot_module}")
    file = _parse(target, rel)
    function = next((s for s in file.tree.body if isinstance(s, cst.FunctionDef) and s.name.value == "_register_builtin"), None)
    if function is None:
        raise Refused(f"--aot: {rel} has no _register_builtin() to add the specs to; register them by hand")
    lines = []
    for module, name in factories:
        lines.append(f"from {relative_import(aot_module.rpartition('.')[0], module)} import {name}\n")
    lines += [f"register({name}())\n" for _, name in factories]
    statements = [cst.parse_statement(line) for line in lines]
    for at in (0, len(factories)):
        statements[at] = statements[at].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    edits: dict = {}
    add_edit(edits, function.body, lambda updated: updated.with_changes(body=[*updated.body, *statements]))
    before = (target.root / rel).read_bytes()
    graduation.rewrites.append(Rewrite(rel, before, apply_edits(file, edits)))
    for module, name in factories:
        graduation.did(5, f"{rel}: registers {module}.{name}()")


def _returns_spec(node: ast.FunctionDef) -> bool:
    annotation = node.returns
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.rpartition(".")[2] == "JitSpec"
    return isinstance(annotation, (ast.Name, ast.Attribute)) and (
        getattr(annotation, "id", None) == "JitSpec" or getattr(annotation, "attr", None) == "JitSpec")


def _callable_bare(node: ast.FunctionDef) -> bool:
    args = node.args
    positional = args.posonlyargs + args.args
    return len(args.defaults) == len(positional) and all(d is not None for d in args.kw_defaults)


# the command ------------------------------------------------------------------------


def _parse(target: FixTarget, rel: str) -> PythonFile:
    try:
        return parse((target.root / rel).read_bytes(), *target.module_of(rel))
    except Unfixable as reason:
        raise Refused(f"{rel}: {reason}") from None


def checklist(graduation: Graduation, applied: bool) -> List[str]:
    """The seven steps, each with what this run did and what is left for a person."""
    lines = []
    for step in GRADUATION_STEPS:
        done = graduation.done.get(step.number, [])
        left = graduation.for_a_person.get(step.number, [])
        mark = "x" if done and not left and applied else " "
        lines.append(f"[{mark}] {step.number}. {step.text}")
        verb = "" if applied else "would: "
        lines += [f"      {verb}{item}" for item in done]
        lines += [f"      for a person: {item}" for item in left]
    return lines


@click.command()
@click.argument("feature")
@click.option("--to", "home", required=True, metavar="MODULE", help="The stable package the code moves to, e.g. flashinfer.gated_norm.")
@click.option("--diff", is_flag=True, help="Print a unified diff of the graduation and write nothing.")
@click.option("--aot", is_flag=True, help="Register the moved kernels' JIT specs for ahead-of-time builds.")
@click.option("--root", type=click.Path(file_okay=False, exists=True), default=None, help="Project root (default: nearest pyproject.toml).")
def graduate(feature: str, home: str, diff: bool, aot: bool, root: Optional[str]) -> None:
    """Graduate the experimental FEATURE into the stable package MODULE, and print the
    graduation checklist with each step's state.

    Exit status: 0 done (or, with --diff, possible), 1 refused (nothing written), 2 error.
    """
    raise SystemExit(run_graduate(feature, home, diff=diff, aot=aot, root=root))


def run_graduate(feature: str, home: str, *, diff: bool = False, aot: bool = False, root: Optional[str] = None) -> int:
    return run_plan("graduate", feature, lambda target: plan_graduation(target, feature, home, aot=aot), diff=diff,
                    root=root)
