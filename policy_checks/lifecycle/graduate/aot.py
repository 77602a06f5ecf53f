"""Step 5, with ``--aot``: the moved modules' spec factories (functions annotated to
return ``JitSpec`` and callable without arguments) are registered in the AOT module."""

from __future__ import annotations

import ast

import libcst as cst

from ...config import module_under
from ...editing.cst_tools import add_edit, apply_edits, relative_import
from ...editing.target import Refused
from ...project import Project
from .plan import Graduation
from .rewrite import parse_file


def register_aot(graduation: Graduation, project: Project) -> None:
    """Register the moved modules' spec factories in the AOT module's ``_register_builtin``."""
    target = graduation.target
    factories = _factories(graduation)
    if not factories:
        graduation.ask(5, "--aot: no spec factory (a function returning JitSpec callable without arguments) "
                          "in the moved code; register the specs by hand")
        return
    aot_module = target.settings.aot_modules[0]
    rel = project.rel_of(aot_module)
    if rel is None:
        raise Refused(f"--aot: no AOT module {aot_module}")
    file = parse_file(target, rel, graduation.planned(rel))
    function = next((s for s in file.tree.body if isinstance(s, cst.FunctionDef) and s.name.value == "_register_builtin"), None)
    if function is None:
        raise Refused(f"--aot: {rel} has no _register_builtin() to add the specs to; register them by hand")
    lines = [f"from {relative_import(aot_module.rpartition('.')[0], module)} import {name}\n" for module, name in factories]
    lines += [f"register({name}())\n" for _, name in factories]
    statements = [cst.parse_statement(line) for line in lines]
    for at in (0, len(factories)):
        statements[at] = statements[at].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    edits: dict = {}
    add_edit(edits, function.body, lambda updated: updated.with_changes(body=[*updated.body, *statements]))
    graduation.rewrite(rel, apply_edits(file, edits))
    for module, name in factories:
        graduation.did(5, f"{rel}: registers {module}.{name}()")


def _factories(graduation: Graduation) -> list:
    """``(module, name)`` of each spec factory in the moved code (not the moved tests)."""
    found = []
    for new_rel, data in sorted(graduation.creations.items()):
        module = graduation.target.module_of(new_rel)[0] if new_rel.endswith(".py") else None
        if not module_under(module, graduation.home):
            continue
        for node in ast.parse(data).body:
            if isinstance(node, ast.FunctionDef) and _returns_spec(node) and _callable_bare(node):
                found.append((module, node.name))
    return found


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
