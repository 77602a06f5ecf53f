"""Reading a large tree cheaply: a file that does not spell a name can neither import
nor use it, so most files are only searched for a few bytes, never parsed."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, Iterable, NamedTuple, Optional

from ...model import parsed


class Spelling(NamedTuple):
    """Where a use of some names must spell them: `pattern` is searched only in the
    files that hold one of `words` (a plain search; the pattern costs much more)."""

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
    return Spelling(tuple(n.encode("utf-8") for n in names), re.compile(pattern))
