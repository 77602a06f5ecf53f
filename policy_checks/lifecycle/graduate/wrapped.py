"""``f.__wrapped__`` where the graduation swapped ``f``'s decorator.

``@flashinfer_experimental_api`` wraps its function; ``functools.wraps`` sets
``__wrapped__``. FlashInfer's ``@flashinfer_api`` hands the function back as it is
when API logging is off. A module that reads ``f.__wrapped__`` at import would then
raise AttributeError. It might read it to set a signature, say.

So each plain read becomes ``getattr(f, "__wrapped__", f)``. That gives the wrapped
function where there is a wrapper, else ``f`` itself. Either way, it is what the
read meant. The edit is made on the bytes, and the result must parse. Any other
spelling is listed for a person.
"""

from __future__ import annotations

import ast
from typing import List, Set, Tuple

from ...model import parsed
from ..plan import Plan
from .text_retarget import is_utf8, line_starts, span

WRAPPED = "__wrapped__"


def unwrap_reads(data: bytes, names: Set[str]) -> Tuple[bytes, List[Tuple[int, str]], List[Tuple[int, str]]]:
    """`data` with each plain read ``name.__wrapped__`` of one of `names` made tolerant.

    `names` are functions whose decorator was swapped. Also returns
    ``(line, name)`` of the reads edited, and of the reads left. A read is left
    when spelt another way, or in a file the edit cannot trust.
    """
    if not names or WRAPPED.encode() not in data:
        return data, [], []
    tree = parsed.tree_or_none(data)
    if tree is None:
        return data, [], []
    reads = [node for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr == WRAPPED and isinstance(node.ctx, ast.Load)
             and isinstance(node.value, ast.Name) and node.value.id in names]
    if not reads:
        return data, [], []
    starts = line_starts(data) if is_utf8(data) else None
    edits, done, left = [], [], []
    for node in reads:
        name = node.value.id
        start, end = span(starts, node) if starts is not None else (0, 0)
        if starts is None or data[start:end] != f"{name}.{WRAPPED}".encode():
            left.append((node.lineno, name))
            continue
        edits.append((start, end, f'getattr({name}, "{WRAPPED}", {name})'.encode()))
        done.append((node.lineno, name))
    after = bytearray(data)
    for start, end, text in sorted(edits, reverse=True):
        after[start:end] = text
    if not parsed.parses(bytes(after)):
        return data, [], sorted(done + left)
    return bytes(after), sorted(done), sorted(left)


def unwrap_swapped(graduation: Plan, rel: str, data: bytes, swapped: List[str]) -> bytes:
    """`unwrap_reads` for the module-level functions of `rel` whose marker was swapped.

    Each edit is reported under step 3. Each read left is listed there for a person.
    """
    after, done, left = unwrap_reads(data, {q for q in swapped if "." not in q})
    for line, name in done:
        graduation.did(3, f"{rel}:{line}: `{name}.{WRAPPED}` reads `getattr({name}, \"{WRAPPED}\", {name})`: "
                          "@flashinfer_api may hand the function back unwrapped")
    for line, name in left:
        graduation.ask(3, f"{rel}:{line} reads `{name}.{WRAPPED}`, which @flashinfer_api may not set; "
                          f"read `getattr({name}, \"{WRAPPED}\", {name})` instead")
    return after
