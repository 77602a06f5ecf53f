"""The docs tree as the lifecycle commands read it.

It gives the docs directories and text files, their toctrees, and the lines that
name something.

``policy-check remove`` deletes a feature's pages and their toctree lines. It lists
other lines naming what went. ``policy-check graduate`` lists the lines naming the
feature that now read wrong. Both find the docs through the ``docs`` setting.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator, List, Set, Tuple

from ..model import walk
from ..model.sphinx_pages import PAGE_SUFFIXES, entry_path, hidden_or_built, toctree_entries
from .target import FixTarget

TEXT_SUFFIXES = (".rst", ".md", ".txt")


def docs_dirs(target: FixTarget) -> List[str]:
    """The docs directories: the top directory of each ``docs`` glob.

    ``docs/api/*.rst`` gives ``docs``.
    """
    found = []
    for pattern in target.settings.docs:
        top = pattern.strip("/").split("/")[0]
        if top and not set(top) & set("*?[") and top not in found and (target.root / top).is_dir():
            found.append(top)
    return found


def docs_files(target: FixTarget, project, top: str) -> List[str]:
    """Root-relative text files below a docs directory.

    Build output, hidden folders and excluded paths are left out. A link is no docs
    file. Editing it would write wherever it leads, perhaps outside the repository.
    """

    def kept(entry: walk.Entry) -> bool:
        return not hidden_or_built(entry.name) and not project.excluded(entry.rel)

    return sorted(entry.rel for entry in walk.files(target.root, top, enter=kept)
                  if kept(entry) and entry.name.endswith(TEXT_SUFFIXES))


def setting_dirs(target: FixTarget) -> Set[str]:
    """The directories the ``docs`` globs name, and those above them.

    ``docs/api/*.rst`` gives ``docs`` and ``docs/api``. They are the project's own,
    whatever their names.
    """
    found = set()
    for pattern in target.settings.docs:
        parts = pattern.strip("/").split("/")
        fixed = next((i for i, part in enumerate(parts) if set(part) & set("*?[")), len(parts) - 1)
        found |= {"/".join(parts[:end]) for end in range(1, fixed + 1)}
    return found


def is_feature_page(rel: str, top: str, feature: str, reserved: Set[str] = frozenset()) -> bool:
    """Is it a page named after the feature, or any page in a directory named after it?

    A `reserved` directory does not count (`setting_dirs`). ``docs/api`` is not the
    pages of a feature named ``api``.
    """
    parts = rel.split("/")
    if not rel.endswith(PAGE_SUFFIXES):
        return False
    if parts[-1].rpartition(".")[0] == feature:
        return True
    directories = ["/".join(parts[:end]) for end in range(top.count("/") + 2, len(parts))]  # below `top`
    return any(d.rpartition("/")[2] == feature and d not in reserved for d in directories)


def source_dir(target: FixTarget, rel: str, top: str) -> str:
    """The Sphinx source directory of a page.

    It is the nearest directory above it holding ``conf.py``, else the docs
    directory. Absolute toctree entries start there.
    """
    directory = rel.rpartition("/")[0]
    while directory and directory != top:
        if (target.root / directory / "conf.py").is_file():
            return directory
        directory = directory.rpartition("/")[0]
    return top


def toctree_lines(lines: List[bytes], rel: str, source_dir: str, gone_pages: Set[str]) -> Set[int]:
    """Indexes of the toctree entry lines of a page that name a deleted page."""
    return {index for index, entry in toctree_entries(lines) if entry_path(entry, rel, source_dir) in gone_pages}


def word_pattern(words: Iterable[str]) -> "re.Pattern":
    """A regex matching any of `words` as a whole word, longest first."""
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
