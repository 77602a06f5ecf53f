"""The one directory walker, with one policy for links.

Every reader that lists a folder of the repository walks it here. A symbolic link is
never followed: it may lead out of the repository, or back into it as a loop. The
walker yields it as a `LINK` entry, and each caller decides what a link means to it
(a finding, a page left out, a file not edited). The order is stable: a directory's
own entries by name, then each subdirectory in name order. So "the first Python
file" is the same on every machine.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator, List, NamedTuple, Optional, Tuple, Union

FILE, DIRECTORY, LINK, OTHER = "file", "directory", "link", "other"


class Entry(NamedTuple):
    """One entry below the walked folder."""

    rel: str  # relative to the walk's root, "/"-separated
    path: str  # the path to open
    name: str
    kind: str  # FILE, DIRECTORY, LINK (never followed) or OTHER (a socket, a device, a pipe)


# (rel, "cannot list directory: why") for each directory that could not be listed
Problems = List[Tuple[str, str]]


def walk(root: Union[str, Path], top: str = "", *, enter: Optional[Callable[[Entry], bool]] = None,
         problems: Optional[Problems] = None) -> Iterator[Entry]:
    """Every entry below `root/top`, `top` itself left out. A directory is entered
    when `enter` (an `Entry` -> bool) says so, every directory when it is None. A
    directory that cannot be listed is noted in `problems` (when given) and skipped.
    Nothing is yielded when `root/top` is no directory; a link there is followed,
    since the caller named it."""
    root = str(root)
    start = os.path.join(root, top) if top else root
    if not os.path.isdir(start):  # the caller chose the start, a link or not
        return
    prefix = len(root.rstrip(os.sep)) + 1
    stack = [start]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as error:
            if problems is not None:
                problems.append((directory[prefix:].replace(os.sep, "/"),
                                 f"cannot list directory: {error.strerror or error}"))
            continue
        below = []
        for found in entries:
            entry = Entry(found.path[prefix:].replace(os.sep, "/"), found.path, found.name, _kind(found))
            yield entry
            if entry.kind == DIRECTORY and (enter is None or enter(entry)):
                below.append(found.path)
        stack.extend(reversed(below))


def files(root: Union[str, Path], top: str = "", *, enter: Optional[Callable[[Entry], bool]] = None,
          problems: Optional[Problems] = None) -> Iterator[Entry]:
    """The regular files of `walk` (links and other entries left out)."""
    return (entry for entry in walk(root, top, enter=enter, problems=problems) if entry.kind == FILE)


def _kind(entry: os.DirEntry) -> str:
    try:
        if entry.is_symlink():
            return LINK
        if entry.is_dir(follow_symlinks=False):
            return DIRECTORY
        if entry.is_file(follow_symlinks=False):
            return FILE
    except OSError:
        pass
    return OTHER
