"""Step 2 in the moved code: module paths in string literals.

A string literal may be exactly a module path under the feature's old package.
Examples are ``importlib.import_module("flashinfer.experimental.x.kernels")``, a
manifest's module names, and a logger's name. It names code that moved with the
feature. So it is pointed at the same module under the new home.

Left alone, it would import the old path through a shim that lasts one release.
EXP007 would also report a core function importing experimental code. Strings
elsewhere, and strings that only contain the path, stay listed for a person
(`elsewhere.strings_naming_the_old_path`).

Only plain literals are edited: one quote character each side, no prefix, no
escape. Their bytes are the value. They are edited as bytes, and the result is
parsed again. It must have the same number of nodes, with every other constant
unchanged.
"""

from __future__ import annotations

import ast
import re
from typing import List

from ...model import parsed
from .text_retarget import line_starts, span

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z", re.ASCII)


def retarget_module_strings(data: bytes, old: str, home: str) -> bytes:
    """`data` with each plain string literal naming `old`, or a module below it, pointed at `home`.

    Returns `data` itself where there is none, or where the edit cannot be checked.
    """
    if old.encode() not in data:
        return data
    try:
        tree = parsed.tree(data)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return data
    starts = line_starts(data)
    edits, values = [], []
    for node in ast.walk(tree):
        values.append(node.value if isinstance(node, ast.Constant) else None)
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and _names(node.value, old)):
            continue
        start, end = span(starts, node)
        literal = node.value.encode()
        if data[start:end] in (b"'" + literal + b"'", b'"' + literal + b'"'):
            quote = data[start:start + 1]
            edits.append((start, end, quote + (home + node.value[len(old):]).encode() + quote))
    if not edits:
        return data
    after = bytearray(data)
    for start, end, text in sorted(edits, reverse=True):
        after[start:end] = text
    return bytes(after) if _only_those_strings(bytes(after), values, old, home) else data


def _names(value: str, old: str) -> bool:
    return (value == old or value.startswith(old + ".")) and _DOTTED.match(value) is not None


def _only_those_strings(after: bytes, before: List, old: str, home: str) -> bool:
    """Does `after` parse to the same nodes, with only the edited constants changed?

    Each must change to its path under `home`.
    """
    try:
        tree = parsed.tree(after)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    now = [node.value if isinstance(node, ast.Constant) else None for node in ast.walk(tree)]
    if len(now) != len(before):
        return False
    for was, is_ in zip(before, now):
        if was != is_ and not (isinstance(was, str) and _names(was, old) and is_ == home + was[len(old):]):
            return False
    return True
