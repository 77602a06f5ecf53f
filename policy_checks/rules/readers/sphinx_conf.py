"""What a Sphinx ``conf.py`` says about autodoc's defaults, read with ``ast`` (EXP006).

``autodoc_default_options = {"members": True}`` makes a bare ``.. automodule::`` list the
module's members. The file is a program, so it is read, never run. Module-level assignments
are followed in order:

- ``autodoc_default_options = {...}`` or ``dict(...)``;
- ``autodoc_default_options["members"] = ...``;
- ``autodoc_default_options.update(...)``;
- the legacy ``autodoc_default_flags = ["members", ...]``.

A value that is not a literal counts as set, so ``members`` is on. A default the reader
cannot see must not hide members.
"""

from __future__ import annotations

import ast
from typing import Optional

OPTIONS = "autodoc_default_options"
FLAGS = "autodoc_default_flags"
MAX_CONF_BYTES = 1024 * 1024


def autodoc_defaults(text: Optional[str]) -> dict:
    """The directive options autodoc fills in by default.

    It maps option -> value as a directive would spell it. A flag gets ``""``, and
    ``members: "a, b"`` gets the names. Options switched off (False/None) are left out."""
    if not text or len(text) > MAX_CONF_BYTES:
        return {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    options: dict = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id == OPTIONS and node.value is not None:
                    options = _table(node.value)
                elif isinstance(target, ast.Name) and target.id == FLAGS and node.value is not None:
                    for flag in _strings(node.value):
                        options.setdefault(flag, "")
                elif (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                      and target.value.id == OPTIONS and node.value is not None):
                    key = _literal(target.slice)
                    if isinstance(key, str):
                        _set(options, key, node.value)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            if (isinstance(call.func, ast.Attribute) and call.func.attr == "update"
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == OPTIONS):
                for arg in call.args:
                    options.update(_table(arg))
                for keyword in call.keywords:
                    if keyword.arg:
                        _set(options, keyword.arg.replace("_", "-"), keyword.value)
    return options


_UNKNOWN = object()


def _literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNKNOWN


def _set(options: dict, key: str, value_node) -> None:
    value = _literal(value_node)
    if value is False or value is None:
        options.pop(key, None)
    elif value is True or value is _UNKNOWN:
        options[key] = ""
    else:
        options[key] = str(value)


def _table(node) -> dict:
    """The options of a dict display or a ``dict(...)`` call.

    Anything else turns members on."""
    options: dict = {}
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            name = _literal(key) if key is not None else _UNKNOWN
            if isinstance(name, str):
                _set(options, name, value)
            else:
                options["members"] = ""  # ** or a computed key: what it adds is unknown
        return options
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        for arg in node.args:
            options.update(_table(arg))
        for keyword in node.keywords:
            if keyword.arg is None:
                options["members"] = ""
            else:
                _set(options, keyword.arg.replace("_", "-"), keyword.value)
        return options
    return {"members": ""}


def _strings(node) -> list:
    value = _literal(node)
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return ["members"] if value is _UNKNOWN else []
