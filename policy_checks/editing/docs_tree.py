"""The docs tree as the lifecycle commands read it: its directories and text files,
its toctrees, and the lines that name something.

``policy-check remove`` deletes a feature's pages and their toctree lines and lists
other lines naming what went; ``policy-check graduate`` lists the lines naming the
feature that now read wrong. Both find the docs through the ``docs`` setting.
"""

from __future__ import annotations

import posixpath
import re
from typing import Iterable, Iterator, List, Set, Tuple

from .target import FixTarget

PAGE_SUFFIXES = (".rst", ".md")
TEXT_SUFFIXES = (".rst", ".md", ".txt")
_RST_TOCTREE = re.compile(r"^([ \t]*)\.\.[ \t]+toctree::")
_MYST_TOCTREE = re.compile(r"^[ \t]*(`{3,}|:{3,})\{toctree\}")
_TITLED_ENTRY = re.compile(r"^(.*?)\s*<([^<>]+)>$")


def docs_dirs(target: FixTarget) -> List[str]:
    """The docs directories: the top directory of each ``docs`` glob (``docs`` for
    ``docs/api/*.rst``)."""
    found = []
    for pattern in target.settings.docs:
        top = pattern.strip("/").split("/")[0]
        if top and not set(top) & set("*?[") and top not in found and (target.root / top).is_dir():
            found.append(top)
    return found


def docs_files(target: FixTarget, project, top: str) -> List[str]:
    """Root-relative text files below a docs directory, build output and excluded paths left out."""
    found = []
    for path in sorted((target.root / top).rglob("*")):
        rel = path.relative_to(target.root).as_posix()
        parts = rel.split("/")
        if any(p.startswith(".") or p == "_build" for p in parts) or project.excluded(rel):
            continue
        if path.suffix in TEXT_SUFFIXES and path.is_file():
            found.append(rel)
    return found


def setting_dirs(target: FixTarget) -> Set[str]:
    """The directories the ``docs`` globs name, and those above them (``docs`` and
    ``docs/api`` for ``docs/api/*.rst``): the project's own, whatever their names."""
    found = set()
    for pattern in target.settings.docs:
        parts = pattern.strip("/").split("/")
        fixed = next((i for i, part in enumerate(parts) if set(part) & set("*?[")), len(parts) - 1)
        found |= {"/".join(parts[:end]) for end in range(1, fixed + 1)}
    return found


def is_feature_page(rel: str, top: str, feature: str, reserved: Set[str] = frozenset()) -> bool:
    """A page named after the feature, or any page in a directory named after it,
    unless that directory is `reserved` (`setting_dirs`: ``docs/api`` is not the
    pages of a feature named ``api``)."""
    parts = rel.split("/")
    if not rel.endswith(PAGE_SUFFIXES):
        return False
    if parts[-1].rpartition(".")[0] == feature:
        return True
    directories = ["/".join(parts[:end]) for end in range(top.count("/") + 2, len(parts))]  # below `top`
    return any(d.rpartition("/")[2] == feature and d not in reserved for d in directories)


def source_dir(target: FixTarget, rel: str, top: str) -> str:
    """The Sphinx source directory of a page: the nearest directory above it holding
    ``conf.py``, else the docs directory (absolute toctree entries start there)."""
    directory = rel.rpartition("/")[0]
    while directory and directory != top:
        if (target.root / directory / "conf.py").is_file():
            return directory
        directory = directory.rpartition("/")[0]
    return top


def toctree_lines(lines: List[bytes], rel: str, source_dir: str, gone_pages: Set[str]) -> Set[int]:
    """Indexes of the toctree entry lines of a page that name a deleted page."""
    dropped = set()
    for index, entry in toctree_entries(lines):
        titled = _TITLED_ENTRY.match(entry)
        name = titled.group(2).strip() if titled else entry
        base = source_dir if name.startswith("/") else rel.rpartition("/")[0]
        path = posixpath.normpath(posixpath.join(base, name.lstrip("/")))
        if path.endswith(PAGE_SUFFIXES):
            path = path.rpartition(".")[0]
        if path in gone_pages:
            dropped.add(index)
    return dropped


def toctree_entries(lines: List[bytes]):
    """``(index, entry)`` of each entry line of the page's toctrees: an indented
    ``.. toctree::`` block (reST) or a ``{toctree}`` fence (MyST); options and
    comments are not entries."""
    index = 0
    while index < len(lines):
        text = lines[index].decode("utf-8", "replace").rstrip("\r\n")
        rst, myst = _RST_TOCTREE.match(text), _MYST_TOCTREE.match(text)
        index += 1
        if not (rst or myst):
            continue
        while index < len(lines):
            line = lines[index].decode("utf-8", "replace").rstrip("\r\n")
            entry = line.strip()
            if rst and entry and len(line) - len(line.lstrip(" \t")) <= len(rst.group(1)):
                break
            if myst and entry.startswith(myst.group(1)[0] * len(myst.group(1))) and entry.strip(myst.group(1)[0]) == "":
                index += 1
                break
            if entry and not entry.startswith((":", "..", "#", "---")):
                yield index, entry
            index += 1



def word_pattern(words: Iterable[str]) -> "re.Pattern":
    """A regex matching any of `words` as a whole word (longest first)."""
    alternatives = "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))
    return re.compile(r"(?<![\w])(?:" + alternatives + r")(?!\w)")


def lines_naming(target: FixTarget, project, words: Iterable[str]) -> Iterator[Tuple[str, int, str]]:
    """``(rel, line number, stripped text)`` of each docs line naming one of `words`."""
    pattern = word_pattern(words)
    for top in docs_dirs(target):
        for rel in docs_files(target, project, top):
            text = (target.root / rel).read_bytes().decode("utf-8", "replace")
            for number, line in enumerate(text.splitlines(), 1):
                if pattern.search(line):
                    yield rel, number, line.strip()
