"""One ``ast`` parse per text within a command.

A lifecycle command reads the same bytes from several passes (is the file untouched?
can its imports be edited as text? do its string constants name the old path? what do
the planned bytes declare?), and the parse is most of each pass's cost on a large
tree. `tree` keeps the most recent trees, keyed by the text itself, within a budget of
source bytes (a tree takes about thirty times its source in memory), while a command
holds `sharing()`; elsewhere (the checker's run over a whole tree) each call parses.

The trees are shared: a caller reads them and never changes a node.
"""

from __future__ import annotations

import ast
import hashlib
import warnings
from collections import OrderedDict
from contextlib import contextmanager
from functools import wraps
from typing import Callable, Iterator, Tuple, TypeVar, Union

_T = TypeVar("_T")

#: Source bytes whose trees are kept (about 300 MB of trees): a feature's moved files
#: and the planned bytes of each stay for the later passes.
BUDGET = 12 * 1024 * 1024

_FAILURES = (SyntaxError, ValueError, TypeError, RecursionError, MemoryError, OverflowError)

_kept: "OrderedDict[bytes, Union[ast.Module, BaseException]]" = OrderedDict()
_size = [0]
_sharing = [0]
_valid: set = set()  # digests of the texts that parsed, kept or not: `parses` needs no tree


@contextmanager
def sharing() -> Iterator[None]:
    """Within the block, `tree` keeps what it parses; the trees go when it ends."""
    _sharing[0] += 1
    try:
        yield
    finally:
        _sharing[0] -= 1
        if not _sharing[0]:
            clear()


def shared(function: Callable[..., _T]) -> Callable[..., _T]:
    """`function` runs within `sharing()` (a command's planner)."""
    @wraps(function)
    def within(*args, **kwargs) -> _T:
        with sharing():
            return function(*args, **kwargs)
    return within


def tree(data: bytes) -> ast.Module:
    """``ast.parse(data)``, shared with every other pass that parses the same bytes;
    raises what ``ast.parse`` raises (SyntaxError, ValueError, ...). The parser's
    warnings about the text are not printed: it is someone else's, judged, not run."""
    found = _kept.get(data)
    if found is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found = ast.parse(data)
        except _FAILURES as error:
            found = error
        if _sharing[0]:
            _keep(data, found)
            if not isinstance(found, BaseException):
                _valid.add(_digest(data))
    else:
        _kept.move_to_end(data)
    if isinstance(found, BaseException):
        raise found.with_traceback(None)
    return found


def tree_or_none(data: bytes) -> "ast.Module | None":
    """`tree`, or None where the text does not parse."""
    try:
        return tree(data)
    except _FAILURES:
        return None


def parses(data: bytes) -> bool:
    """Is `data` Python? Answered without a parse for a text parsed before in the block
    (a safety net re-checking the bytes a plan writes)."""
    if _sharing[0] and _digest(data) in _valid:
        return True
    return tree_or_none(data) is not None


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _keep(data: bytes, found) -> None:
    if len(data) > BUDGET:
        return
    _kept[data] = found
    _size[0] += len(data)
    while _size[0] > BUDGET:
        old, _ = _kept.popitem(last=False)
        _size[0] -= len(old)


def stats() -> Tuple[int, int]:
    """(texts kept, their bytes): for tests and benchmarks."""
    return len(_kept), _size[0]


def clear() -> None:
    _kept.clear()
    _valid.clear()
    _size[0] = 0
