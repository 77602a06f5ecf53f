"""Step 5, with ``--aot``: register the moved modules' spec factories.

A spec factory is a function annotated to return ``JitSpec``, or a list of them.
It is callable without arguments. Each is added where the AOT module lists its own
specs.

Two shapes of AOT module are known. Which one a tree has is decided first
(`check_shape`), before the project model is built. So a tree of neither shape
refuses in well under a second, naming the line to add by hand. The shapes are:

- a ``_register_builtin()`` function that calls ``register(spec)``, as in this
  repository's ``flashinfer/aot.py``. An import and a ``register(factory())`` go
  at its end;
- a ``gen_all_modules(...)`` function that starts a list (``jit_specs = []``),
  appends to it, extends it, and returns it (FlashInfer 0.7.x). The factory is
  imported beside the module's other imports. It is appended after the function's
  last top-level statement that adds to the list, before the list is read.

A tool cannot call a factory that needs arguments. The line to add is listed for a
person, with its place.
"""

from __future__ import annotations

import ast
import os
from typing import List, NamedTuple, Optional

import libcst as cst

from ...model.config import module_under
from ...editing.cst_tools import add_edit, apply_edits, relative_import
from ...editing.target import FixTarget, Refused
from ...model.facts import package_of
from ..plan import Plan
from .rewrite import parse_file

REGISTER_FUNCTION = "_register_builtin"
LISTING_FUNCTION = "gen_all_modules"
_LISTS = ("List", "list", "Sequence", "Iterable", "Tuple", "tuple")


class AotShape(NamedTuple):
    """Where the AOT module lists its specs."""

    rel: str  # root-relative path of the AOT module
    module: str  # its dotted name
    function: str  # REGISTER_FUNCTION or LISTING_FUNCTION
    list_name: Optional[str] = None  # the list gen_all_modules fills


class Factory(NamedTuple):
    module: str  # where it lives after the move
    name: str
    returns_list: bool
    bare: bool  # callable without arguments
    line: int


def check_shape(target: FixTarget) -> AotShape:
    """The AOT module's shape, read from its file alone. Raises `Refused` when it has neither."""
    aot_module = target.settings.aot_modules[0]
    rel = _rel_of(target, aot_module)
    if rel is None:
        raise Refused(f"--aot: no AOT module {aot_module} ({aot_module.replace('.', '/')}.py)")
    data = (target.root / rel).read_bytes()
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError) as error:
        raise Refused(f"--aot: {rel} does not parse ({error}); register the specs by hand") from None
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if REGISTER_FUNCTION in functions:
        return AotShape(rel, aot_module, REGISTER_FUNCTION)
    listing = functions.get(LISTING_FUNCTION)
    if listing is None:
        end = len(data.splitlines())
        raise Refused(f"--aot: {rel} has neither {REGISTER_FUNCTION}() nor {LISTING_FUNCTION}(); add the "
                      f"feature's specs where {rel} lists its own, e.g. at {rel}:{end + 1}: "
                      f"register(<factory>())")
    list_name = _spec_list(listing)
    if list_name is None:
        line = _return_line(listing)
        raise Refused(f"--aot: {rel}:{listing.lineno}: {LISTING_FUNCTION}() fills no list it returns "
                      f"(`specs = []`, `specs.append(...)`, `return specs`); add the feature's specs by hand "
                      f"before {rel}:{line}")
    return AotShape(rel, aot_module, LISTING_FUNCTION, list_name)


def _rel_of(target: FixTarget, module: str) -> Optional[str]:
    base = module.replace(".", "/")
    for rel in (f"{base}.py", f"{base}/__init__.py"):
        path = target.root / rel
        if os.path.isfile(path) and not os.path.islink(path):
            return rel
    return None


def _spec_list(function: ast.FunctionDef) -> Optional[str]:
    """The name of the list `function` starts empty at its top level, adds to, and returns.

    Reading it after its last addition counts as returning it. FlashInfer's dedup
    loop does that.
    """
    started = []
    for node in function.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.List) and not node.value.elts:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            started += [t.id for t in targets if isinstance(t, ast.Name)]
    for name in started:
        if _last_addition(function, name) is not None and _read_later(function, name):
            return name
    return None


def _adds_to(node: ast.AST, name: str) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in ("append", "extend") \
                and isinstance(sub.func.value, ast.Name) and sub.func.value.id == name:
            return True
        if isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name) and sub.target.id == name:
            return True
    return False


def _last_addition(function: ast.FunctionDef, name: str) -> Optional[ast.stmt]:
    """The function's last top-level statement that adds to the list `name`."""
    return next((node for node in reversed(function.body) if _adds_to(node, name)), None)


def _read_later(function: ast.FunctionDef, name: str) -> bool:
    last = _last_addition(function, name)
    after = function.body[function.body.index(last) + 1:]
    return any(isinstance(n, ast.Name) and n.id == name for node in after for n in ast.walk(node))


def _return_line(function: ast.FunctionDef) -> int:
    returns = [n for n in function.body if isinstance(n, ast.Return)]
    return (returns[-1] if returns else function.body[-1]).lineno


def register_aot(graduation: Plan, shape: AotShape) -> None:
    """Add the moved modules' spec factories where the AOT module lists its specs."""
    factories = _factories(graduation)
    if not factories:
        graduation.ask(5, "--aot: no spec factory (a function returning JitSpec) in the moved code; "
                          "register the specs by hand")
        return
    bare = [f for f in factories if f.bare]
    if shape.function == REGISTER_FUNCTION:
        _add_to_register_builtin(graduation, shape, [f for f in bare if not f.returns_list])
        bare_done = [f for f in bare if not f.returns_list]
    else:
        _add_to_listing(graduation, shape, bare)
        bare_done = bare
    for factory in factories:
        if factory not in bare_done:
            graduation.ask(5, f"--aot: {factory.module}.{factory.name}() needs arguments; add by hand: "
                              f"{_where_to_add(graduation, shape)}: {_call_text(shape, factory, '...')}")


def _call_text(shape: AotShape, factory: Factory, arguments: str = "") -> str:
    if shape.function == REGISTER_FUNCTION:
        return f"register({factory.name}({arguments}))"
    verb = "extend" if factory.returns_list else "append"
    return f"{shape.list_name}.{verb}({factory.name}({arguments}))"


def _where_to_add(graduation: Plan, shape: AotShape) -> str:
    tree = ast.parse(graduation.planned(shape.rel))
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == shape.function)
    if shape.function == REGISTER_FUNCTION:
        return f"{shape.rel}:{function.end_lineno + 1}"
    return f"{shape.rel}:{_last_addition(function, shape.list_name).end_lineno + 1}"


def _import_line(shape: AotShape, factory: Factory) -> str:
    package = package_of(shape.module, shape.rel.endswith("/__init__.py"))
    return f"from {relative_import(package, factory.module)} import {factory.name}\n"


def _add_to_register_builtin(graduation: Plan, shape: AotShape, factories: List[Factory]) -> None:
    """This repository's shape: imports and ``register(factory())`` at the end of ``_register_builtin``."""
    if not factories:
        return
    rel = shape.rel
    file = parse_file(graduation.target, rel, graduation.planned(rel))
    function = next(s for s in file.tree.body if isinstance(s, cst.FunctionDef) and s.name.value == REGISTER_FUNCTION)
    lines = [_import_line(shape, f) for f in factories] + [_call_text(shape, f) + "\n" for f in factories]
    statements = [cst.parse_statement(line) for line in lines]
    for at in (0, len(factories)):
        statements[at] = statements[at].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    edits: dict = {}
    add_edit(edits, function.body, lambda updated: updated.with_changes(body=[*updated.body, *statements]))
    graduation.rewrite(rel, apply_edits(file, edits))
    for f in factories:
        graduation.did(5, f"{rel}: registers {f.module}.{f.name}()")


def _add_to_listing(graduation: Plan, shape: AotShape, factories: List[Factory]) -> None:
    """FlashInfer's shape.

    Each factory is imported after the module's last top-level import. It is
    appended after the last top-level statement of ``gen_all_modules`` that adds to
    its list. A list of specs is extended instead. Lines go in as text, so every
    other byte stays.
    """
    if not factories:
        return
    rel = shape.rel
    data = graduation.planned(rel)
    tree = ast.parse(data)
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == LISTING_FUNCTION)
    last = _last_addition(function, shape.list_name)
    lines = data.splitlines(keepends=True)
    newline = "\r\n" if lines and lines[0].endswith(b"\r\n") else "\n"
    indent = " " * last.col_offset
    calls = "".join(f"{indent}{_call_text(shape, f)}{newline}" for f in factories)
    imports_end = max((n.end_lineno for n in tree.body[:tree.body.index(function)]
                       if isinstance(n, (ast.Import, ast.ImportFrom))), default=_docstring_end(tree))
    imports = "".join(_import_line(shape, f).replace("\n", newline) for f in factories)
    at_call, at_import = last.end_lineno, imports_end
    lines.insert(at_call, calls.encode("utf-8"))
    lines.insert(at_import, imports.encode("utf-8"))
    graduation.rewrite(rel, b"".join(lines))
    first = at_call + 1 + imports.count(newline)  # the first added call, in the new bytes
    for number, f in enumerate(factories, first):
        graduation.did(5, f"{rel}: {LISTING_FUNCTION}() adds {f.module}.{f.name}()")
        graduation.ask(5, f"{rel}:{number}: {f.name}() is added for every build; put it under the architecture "
                          f"check its kernels need, as {LISTING_FUNCTION}() does for its own")


def _docstring_end(tree: ast.Module) -> int:
    first = tree.body[0] if tree.body else None
    is_doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    return first.end_lineno if is_doc else 0


def _factories(graduation: Plan) -> List[Factory]:
    """Each spec factory in the moved code, not in the moved tests."""
    found = []
    for new_rel, data in sorted(graduation.creations.items()):
        module = graduation.target.module_of(new_rel)[0] if new_rel.endswith(".py") else None
        if not module_under(module, graduation.home) or b"JitSpec" not in data:
            continue
        for node in ast.parse(data).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                returns = _returns_spec(node.returns)
                if returns is not None:
                    found.append(Factory(module, node.name, returns, _callable_bare(node), node.lineno))
    return found


def _returns_spec(annotation) -> Optional[bool]:
    """Whether the annotation is a list of specs; None when it is no spec.

    Lists are ``List[JitSpec]``, ``list[JitSpec]`` and ``Sequence[JitSpec]``, quoted
    or not.
    """
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Subscript):
        container = getattr(annotation.value, "id", None) or getattr(annotation.value, "attr", None)
        if container not in _LISTS:
            return None
        return True if _returns_spec(annotation.slice) is False else None
    name = getattr(annotation, "id", None) or getattr(annotation, "attr", None)
    return False if name == "JitSpec" else None


def _callable_bare(node: ast.FunctionDef) -> bool:
    args = node.args
    positional = args.posonlyargs + args.args
    return len(args.defaults) == len(positional) and all(d is not None for d in args.kw_defaults)
