"""Reading a large tree cheaply, and how code names a feature without importing it.

A file that does not spell a name can neither import nor use it. So most files
are only searched for a few bytes, never parsed (`Spelling`, `Texts`).

Code may also name what a command touches in a string. It may be a module's
dotted name: ``importlib.import_module("pkg.experimental.feat.x")``, or an
f-string prefix. It may be a path through the feature's directory, in one string
or built from pieces: ``Path(root) / "experimental" / "feat"``, or
``os.path.join(root, "experimental", "feat")``.

``remove`` and ``graduate`` read the tree through both.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, NamedTuple, Optional

from ..model import markers, parsed


class Spelling(NamedTuple):
    """Where a use of some names must spell them.

    `pattern` is searched only in files that hold one of `words`. The plain search
    is cheap; the pattern costs much more.
    """

    words: tuple  # bytes
    pattern: "re.Pattern"

    def found_in(self, data: bytes) -> bool:
        return any(word in data for word in self.words) and self.pattern.search(data) is not None


class Texts:
    """Each file's bytes, and its ``ast``, read once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._bytes: Dict[str, bytes] = {}
        self._trees: Dict[str, Optional[ast.Module]] = {}

    def read(self, rel: str) -> bytes:
        data = self._bytes.get(rel)
        if data is None:
            try:
                data = (self.root / rel).read_bytes()
            except OSError:
                data = b""
            self._bytes[rel] = data
        return data

    def tree(self, rel: str) -> Optional[ast.Module]:
        """The file's ``ast`` as it is on disk, or None when it does not parse."""
        if rel not in self._trees:
            try:
                self._trees[rel] = parsed.tree(self.read(rel))
            except (SyntaxError, ValueError):
                self._trees[rel] = None
        return self._trees[rel]

    def mentions(self, rel: str, words: Iterable[str]) -> bool:
        data = self.read(rel)
        return any(word.encode("utf-8") in data for word in words)

    def matches(self, rel: str, spelling: Optional[Spelling]) -> bool:
        return spelling is not None and spelling.found_in(self.read(rel))


def uses_pattern(names, quoted: bool = False) -> Optional[Spelling]:
    """Where a file that uses a removed function or class must spell its name.

    The name follows a dot, or sits in an import (one line, or a parenthesized
    list). With `quoted`, it may also be a string (``__all__``, a lazy-export
    table). So a common name (``prepare``) costs a regex search, not a parse. That
    holds in the files that merely spell it.
    """
    if not names:
        return None
    alternatives = b"|".join(re.escape(n.encode("utf-8")) for n in sorted(names, key=len, reverse=True))
    name = rb"\b(?:" + alternatives + rb")\b"
    pattern = rb"\.[ \t]*" + name + rb"|\bimport\b[^\n]*" + name + rb"|\bimport[ \t]*\([^)]*" + name
    if quoted:
        pattern += rb"|[\"'](?:" + alternatives + rb")[\"']"
    return Spelling(tuple(n.encode("utf-8") for n in names), re.compile(pattern))


_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\.?$")
_SEPARATORS = re.compile(r"[/\\]+")
_JOINS = ("join", "joinpath", "Path", "PurePath", "PosixPath", "PurePosixPath", "WindowsPath", "PureWindowsPath")


class GoneFiles(NamedTuple):
    """What the removal deletes, as code may name it."""

    modules: FrozenSet[str]  # dotted names whose files go, with everything below each
    segments: tuple  # ("experimental", "feat"): these two path segments in a row lead into the feature
    directory: str  # "pkg/experimental/feat", for the messages

    def names_module(self, text: str) -> Optional[str]:
        """The module `text` names when it is the dotted name of one that goes, else None.

        A trailing dot counts too: it is the prefix of the module's submodules.
        """
        if not _DOTTED.match(text):
            return None
        name = text.rstrip(".")
        return name if under_any(name, self.modules) else None

    def names_path(self, pieces: List[Optional[str]]) -> bool:
        """Do the `pieces` of a path hold the feature's two segments in a row?

        A piece is None for a part not known here.
        """
        segments: List[Optional[str]] = []
        for piece in pieces:
            segments += [None] if piece is None else [s for s in _SEPARATORS.split(piece) if s]
        width = len(self.segments)
        return any(tuple(segments[i:i + width]) == self.segments for i in range(len(segments) - width + 1))


def feature_spelling(segments: tuple) -> Spelling:
    """Where a file that imports or loads the feature spells its name.

    The name may follow the experimental package's name. That covers a dotted
    name, a path, path pieces, and ``from pkg.experimental import feat``. It may
    also sit in a relative import of a sibling: ``from ..feat import x`` or
    ``from .. import feat``. So a name that is also a common identifier
    (``attn_scores``) costs a search, not a parse.
    """
    experimental, feature = (re.escape(s).encode("utf-8") for s in segments)
    name = rb"\b" + feature + rb"\b"
    relative = rb"\bfrom[ \t]+\.+[ \t]*"
    pattern = (rb"\b" + experimental + rb"(?:[\s./\\'\",()]|\bimport\b)*" + name
               + b"|" + relative + name
               + b"|" + relative + rb"import\b[^\n]*" + name
               + b"|" + relative + rb"import[ \t]*\([^)]*" + name)
    return Spelling((segments[1].encode("utf-8"),), re.compile(pattern))


def under_any(module: str, modules: FrozenSet[str]) -> bool:
    """Is `module` one of `modules` or below one? It takes one look-up per dot."""
    parts = module.split(".")
    return any(".".join(parts[:end]) in modules for end in range(1, len(parts) + 1))


def path_pieces(node: ast.AST) -> List[Optional[str]]:
    """The parts of a path or string expression, in order.

    - A string is itself.
    - ``a / b`` gives its sides.
    - ``os.path.join(a, b)``, ``x.joinpath(a)`` and ``Path(a, b)`` give their
      arguments, after ``x``.
    - ``a + b`` and an f-string give their parts. Adjacent strings run together.
    - Any other expression is one unknown part (None).
    """
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return path_pieces(node.left) + path_pieces(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _concatenated(path_pieces(node.left) + path_pieces(node.right))
    if isinstance(node, ast.JoinedStr):
        return _concatenated([v.value if isinstance(v, ast.Constant) else None for v in node.values])
    if is_join(node):
        head = path_pieces(node.func.value) if _last_name(node.func) == "joinpath" else []
        return head + [p for argument in node.args for p in path_pieces(argument)]
    return [None]


def _concatenated(pieces: List[Optional[str]]) -> List[Optional[str]]:
    joined: List[Optional[str]] = []
    for piece in pieces:
        if piece is not None and joined and joined[-1] is not None:
            joined[-1] += piece
        else:
            joined.append(piece)
    return joined


def is_join(node: ast.AST) -> bool:
    """A call that joins path pieces (``os.path.join``, ``joinpath``, ``Path(...)``)."""
    return isinstance(node, ast.Call) and _last_name(node.func) in _JOINS and (
        _last_name(node.func) != "joinpath" or isinstance(node.func, ast.Attribute))


def is_path_expression(node: ast.AST) -> bool:
    """An expression that builds a path or a name from pieces."""
    return is_join(node) or isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Add)))


def loads(call: ast.Call) -> bool:
    """Does the call load what its arguments name?

    Such calls are import functions, finders, loaders, and
    ``sys.path.insert``/``append``.
    """
    dotted = markers.dotted_name(call.func) or ""
    return dotted.rpartition(".")[2] in markers.LOADING_FUNCTIONS or dotted.startswith(markers.SEARCH_PATH + ".")


def _last_name(node: ast.AST) -> str:
    return (markers.dotted_name(node) or "").rpartition(".")[2]
