"""A moved module whose only change is its imports of the feature, rewritten as text.

libcst parses a big module in seconds. Some features have hundreds of files that
import one another by absolute name. Such a feature spends minutes there, for edits
of a few bytes each.

So the text is edited directly when two things hold. First, a moved file cannot
hold a mark the move swaps or drops. Its text spells neither
``flashinfer_experimental_api`` nor ``experimental_backend``, and no call passes
``experimental=``. Every name the markers reader resolves to a mark comes from the
text (`policy_checks.model.markers`). Second, ``ast`` shows that each import the
move changes has a plain form. Then the import's module text is replaced in place.
The bytes are exactly what the libcst rewrite (`rewrite.retarget`) writes.

The plain forms are:

* ``from <module> import ...``, absolute or relative at the new depth. The
  statement must start ``from``, blanks, exactly the module's text, blanks,
  ``import``.
* ``import a.b as c, ...``. Each alias of the feature has an ``as``. The statement
  is written ``import a as b, c as d`` with single blanks.

Anything else is left to libcst. That includes ``from <parent> import <feature>``,
``import <feature>`` without ``as``, a continuation line, a comment inside the
statement, and a coding other than UTF-8. The result is parsed again. It must be
the original tree with only those module names changed; otherwise libcst does it.
"""

from __future__ import annotations

import ast
import codecs
import io
import re
import tokenize
from typing import List, Optional, Tuple

from ...model import parsed
from ...model.config import module_under
from ...editing.cst_tools import relative_import
from ...model.facts import package_of, resolve_relative
from ...model import markers
from .rewrite import moved

#: What the move's mark edits (`marks.swap_decorators`, `marks.drop_experimental_marks`)
#: look for: a file whose text spells none of these words has none of those marks.
_MARK_WORDS = (markers.EXPERIMENTAL_API.encode(), markers.EXPERIMENTAL_BACKEND.encode())
_MARK_KEYWORD = "experimental"  # JitSpec(..., experimental=True)

_Edit = Tuple[int, int, bytes]  # byte offsets [start, end) and the new bytes


def retargeted_text(data: bytes, old: str, home: str, module: str, new_module: str, is_package: bool,
                    marks_move: bool = True) -> Optional[bytes]:
    """`data` with its imports of `old` pointed at `home`.

    `module` is the module that moves to `new_module`. Returns None when a text edit
    cannot be trusted; then it is libcst's turn. A file that stays where it is
    keeps its own marks, such as another feature's file or a test. With
    `marks_move` False, a file that spells them may be edited as text too.
    """
    marked = marks_move and any(word in data for word in _MARK_WORDS)
    if data.startswith(codecs.BOM_UTF8) or marked or not is_utf8(data):
        return None
    try:
        tree = parsed.tree(data)
    except (SyntaxError, ValueError):
        return None
    old_package, new_package = package_of(module, is_package), package_of(new_module, is_package)
    starts = line_starts(data)
    edits: List[_Edit] = []
    nodes = 0
    for node in ast.walk(tree):
        nodes += 1
        if isinstance(node, ast.Import):
            edit = _import_edit(data, starts, node, old, home)
        elif isinstance(node, ast.ImportFrom):
            edit = _from_edit(data, starts, node, old, home, old_package, new_package)
        else:
            edit = False if marks_move and isinstance(node, ast.keyword) and node.arg == _MARK_KEYWORD else None
        if edit is False:
            return None
        if edit is not None:
            edits.append(edit)
    if not edits:
        return None  # nothing to retarget: `keeps_its_bytes` decides such files
    after = bytearray(data)
    for start, end, text in sorted(edits, reverse=True):
        after[start:end] = text
    expected = _imports_moved(tree, old, home, old_package, new_package)
    return bytes(after) if _same_but_imports(bytes(after), nodes, expected) else None


def is_utf8(data: bytes) -> bool:
    """Is the file UTF-8 (or ASCII)?

    ``ast`` column offsets are UTF-8 byte offsets of the decoded text. Only such a
    file has them on its own bytes.
    """
    if data.isascii():
        return True
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        data.decode("utf-8")
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return False
    return encoding == "utf-8"


def line_starts(data: bytes) -> List[int]:
    starts, offset = [0, 0], 0  # line numbers start at 1
    for line in data.splitlines(keepends=True):
        offset += len(line)
        starts.append(offset)
    return starts


def span(starts: List[int], node: ast.stmt) -> Tuple[int, int]:
    return starts[node.lineno] + node.col_offset, starts[node.end_lineno] + node.end_col_offset


def _import_edit(data: bytes, starts, node: ast.Import, old: str, home: str):
    """The edit. None when no alias is the feature's; False when not a plain form."""
    if not any(module_under(a.name, old) for a in node.names):
        return None
    if any(module_under(a.name, old) and not a.asname for a in node.names):
        return False  # `import <old>...` binds the top package: libcst looks at its uses
    start, end = span(starts, node)
    spelt = lambda name_of: "import " + ", ".join(  # noqa: E731
        name_of(a.name) + (f" as {a.asname}" if a.asname else "") for a in node.names)
    if data[start:end] != spelt(str).encode():
        return False
    return start, end, spelt(lambda name: moved(name, old, home)).encode()


def _from_edit(data: bytes, starts, node: ast.ImportFrom, old: str, home: str, old_package: str, new_package: str):
    """The edit of the module's text.

    None when there is nothing to change. False when it is not a plain form, or
    imports the feature by its name.
    """
    source = resolve_relative(old_package, node.level, node.module) if node.level else node.module
    if source is None:
        return False
    parent, _, last = old.rpartition(".")
    if source == parent and any(a.name == last for a in node.names):
        return False
    target = moved(source, old, home)
    original = "." * node.level + (node.module or "")
    text = relative_import(new_package, target) if node.level else target
    if text == original:
        return None
    start, end = span(starts, node)
    found = re.match(rb"from[ \t]+(" + re.escape(original.encode()) + rb")[ \t]+import\b", data[start:end])
    if found is None:
        return False
    return start + found.start(1), start + found.end(1), text.encode()


def _imports_moved(tree: ast.Module, old: str, home: str, old_package: str, new_package: str) -> list:
    """Every import statement of `tree` as the move should leave it.

    Each is (line, kind, level, module, aliases).
    """
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.append((node.lineno, "import", 0, None,
                          [(moved(a.name, old, home), a.asname) for a in node.names]))
        elif isinstance(node, ast.ImportFrom):
            source = resolve_relative(old_package, node.level, node.module) if node.level else node.module
            target = moved(source, old, home)
            level, module = 0, target
            if node.level:
                text = relative_import(new_package, target)
                level = len(text) - len(text.lstrip("."))
                module = text[level:] or None
            found.append((node.lineno, "from", level, module, [(a.name, a.asname) for a in node.names]))
    return sorted(found, key=repr)


def _same_but_imports(after: bytes, nodes: int, expected: list) -> bool:
    """Does `after` parse, with as many nodes as the original and its imports exactly `expected`?

    The edits replace bytes inside import statements only and keep every line
    break. So the rest of the tree is the original's.
    """
    try:
        new_tree = parsed.tree(after)
    except (SyntaxError, ValueError):
        return False
    count, found = 0, []
    for node in ast.walk(new_tree):
        count += 1
        if isinstance(node, ast.Import):
            found.append((node.lineno, "import", 0, None, [(a.name, a.asname) for a in node.names]))
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, "from", node.level, node.module, [(a.name, a.asname) for a in node.names]))
    return count == nodes and sorted(found, key=repr) == expected
