"""Which docs pages Sphinx builds as the stable API reference: the pages the ``docs``
setting's globs match, and every page below their directories that a toctree reaches
from the root document. A glob alone misses a page one folder down that the index
lists, and such a page is built and published like the others.

The toctrees are read as text (``.. toctree::`` blocks in reST, ``{toctree}`` fences in
MyST): entries relative to the page or, starting with ``/``, to the source directory;
``Title <target>`` entries; ``:glob:`` patterns. Stdlib only: `Project.docs_pages`
(EXP006, graduate) and the lifecycle's edits of toctree lines read this one reader.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections import deque
from pathlib import Path
from typing import Iterator, List, Optional, Set, Tuple

from . import walk

PAGE_SUFFIXES = (".rst", ".md")
MAX_PAGES = 5_000  # pages read while following toctrees
MAX_PAGE_BYTES = 2 * 1024 * 1024  # a page larger than this is not read for its toctrees
_RST_TOCTREE = re.compile(r"^([ \t]*)\.\.[ \t]+toctree::")
_MYST_TOCTREE = re.compile(r"^[ \t]*(`{3,}|:{3,})\{toctree\}")
_TITLED_ENTRY = re.compile(r"^(.*?)\s*<([^<>]+)>$")
_GLOB = re.compile(r"^[ \t]*:glob:[ \t]*$")


class Toctree:
    """One toctree of a page: its entry lines (index, text) and whether ``:glob:`` is set."""

    def __init__(self) -> None:
        self.entries: List[Tuple[int, str]] = []
        self.glob = False


def toctrees(lines: List[bytes]) -> Iterator[Toctree]:
    """The toctrees of a page, in order. Options and comments are not entries."""
    index = 0
    while index < len(lines):
        text = lines[index].decode("utf-8", "replace").rstrip("\r\n")
        rst, myst = _RST_TOCTREE.match(text), _MYST_TOCTREE.match(text)
        index += 1
        if not (rst or myst):
            continue
        tree = Toctree()
        while index < len(lines):
            line = lines[index].decode("utf-8", "replace").rstrip("\r\n")
            entry = line.strip()
            if rst and entry and len(line) - len(line.lstrip(" \t")) <= len(rst.group(1)):
                break
            if myst and entry.startswith(myst.group(1)[0] * len(myst.group(1))) and entry.strip(myst.group(1)[0]) == "":
                index += 1
                break
            tree.glob = tree.glob or bool(_GLOB.match(line))
            if entry and not entry.startswith((":", "..", "#", "---")):
                tree.entries.append((index, entry))
            index += 1
        yield tree


def toctree_entries(lines: List[bytes]) -> Iterator[Tuple[int, str]]:
    """``(index, entry)`` of each entry line of the page's toctrees."""
    for tree in toctrees(lines):
        yield from tree.entries


def entry_path(entry: str, page: str, source_dir: str) -> str:
    """The root-relative document an entry names, without its suffix: relative to the
    page's directory, or (``/...``) to the source directory; a titled entry's target."""
    titled = _TITLED_ENTRY.match(entry)
    name = titled.group(2).strip() if titled else entry
    base = source_dir if name.startswith("/") else page.rpartition("/")[0]
    path = posixpath.normpath(posixpath.join(base, name.lstrip("/")))
    return path.rpartition(".")[0] if path.endswith(PAGE_SUFFIXES) else path


def source_dir(root: Path, top: str) -> str:
    """The Sphinx source directory of the docs directory `top`: `top`, or the nearest
    directory below it holding ``conf.py`` (``docs/source``), shallowest first."""
    if (root / top / "conf.py").is_file():
        return top
    for found in sorted(Path(root / top).glob("*/conf.py")):
        return found.parent.relative_to(root).as_posix()
    return top


def reached_pages(root: Path, top: str) -> Set[str]:
    """Root-relative pages a toctree reaches, transitively, from the root document
    (``index``) of the docs directory `top`, the root document included. Pages are
    kept inside the source directory; links and large pages are not followed."""
    source = source_dir(root, top)
    start = _page(root, f"{source}/index", source)
    found: Set[str] = set()
    queue = deque([start] if start else [])
    names: Optional[List[str]] = None  # every document of the source directory, for globs
    while queue and len(found) < MAX_PAGES:
        page = queue.popleft()
        if page in found:
            continue
        found.add(page)
        lines = _lines(root / page)
        for tree in toctrees(lines):
            for _, entry in tree.entries:
                target = entry_path(entry, page, source)
                if tree.glob and set(target) & set("*?["):
                    names = _documents(root, source) if names is None else names
                    queue.extend(f"{n}{suffix}" for n, suffix in names if fnmatch.fnmatchcase(n, target))
                else:
                    rel = _page(root, target, source)
                    if rel:
                        queue.append(rel)
    return found


def _page(root: Path, document: str, source: str) -> Optional[str]:
    """The page file of `document` (``.rst``, else ``.md``) inside `source`, not a link."""
    if not (document == source or document.startswith(source.rstrip("/") + "/")) or "/../" in f"/{document}/":
        return None
    for suffix in PAGE_SUFFIXES:
        path = root / f"{document}{suffix}"
        if path.is_file() and not os.path.islink(path):
            return f"{document}{suffix}"
    return None


def _documents(root: Path, source: str) -> List[Tuple[str, str]]:
    """``(document, suffix)`` of every page below `source`, build output and hidden folders left out."""
    found = []
    for entry in walk.files(root, source, enter=lambda entry: not hidden_or_built(entry.name)):
        suffix = os.path.splitext(entry.name)[1]
        if suffix in PAGE_SUFFIXES and not hidden_or_built(entry.name):
            found.append((entry.rel[: -len(suffix)], suffix))
    return sorted(found)


def hidden_or_built(name: str) -> bool:
    """A hidden entry, or the build output folder: never a page of the docs."""
    return name.startswith(".") or name == "_build"


def _lines(path: Path) -> List[bytes]:
    try:
        if path.stat().st_size > MAX_PAGE_BYTES:
            return []
        return path.read_bytes().splitlines(keepends=True)
    except OSError:
        return []


def fixed_dir(pattern: str) -> str:
    """The directory a glob's matches lie below: its parts before the first wildcard
    (``docs/api`` for ``docs/api/*.rst`` and ``docs/api/**/*.rst``)."""
    parts = pattern.strip("/").split("/")
    fixed = next((i for i, part in enumerate(parts) if set(part) & set("*?[")), len(parts) - 1)
    return "/".join(parts[:fixed])


def api_pages(root: Path, patterns) -> List[str]:
    """Root-relative stable API pages: each glob's matches, then every page below a
    glob's directory that the docs root's toctrees reach (sorted, once each)."""
    found: Set[str] = set()
    for pattern in patterns:
        found |= {path.relative_to(root).as_posix() for path in root.glob(pattern)}
    tops = {pattern.strip("/").split("/")[0] for pattern in patterns}
    directories = {fixed_dir(pattern) for pattern in patterns}
    for top in sorted(t for t in tops if t and not set(t) & set("*?[") and (root / t).is_dir()):
        found |= {rel for rel in reached_pages(root, top)
                  if rel.endswith(".rst") and any(rel.startswith(d.rstrip("/") + "/") for d in directories if d)}
    return sorted(found)
