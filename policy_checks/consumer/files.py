"""Which downstream files the consumer check reads, and as what.

PATHS are walked without following symbolic links. Version-control, cache and
virtual environment directories are skipped. In a git work tree the files are those
git selects, as for ``policy-check run`` (`policy_checks.model.gitfiles`). Those are
tracked and not ignored; with ``--staged``, only the index.

A file's *kind* comes from its name. It is Python, or a settings format that can set
an environment variable. Those are shell, Dockerfile, YAML, TOML, INI, ``.env`` and
JSON. Everything else is not read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

from ..model import gitfiles, walk

PYTHON = "python"
SETTINGS = "settings"
SKIPPED_DIRECTORIES = frozenset({
    ".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".tox", ".nox",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages", ".eggs",
})
_SETTINGS_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh", ".yml", ".yaml", ".toml", ".ini", ".cfg", ".conf",
                      ".env", ".json", ".dockerfile", ".mk")
_SETTINGS_NAMES = ("Dockerfile", "Containerfile", "Makefile", ".env", "Jenkinsfile")


def kind_of(name: str) -> Optional[str]:
    if name.endswith(".py"):
        return PYTHON
    if name.endswith(_SETTINGS_SUFFIXES) or name.startswith(_SETTINGS_NAMES):
        return SETTINGS
    return None


def selected(root: Path, paths: List[Path], staged: bool, problems: list) -> Iterator[Tuple[str, Path, str]]:
    """``(path as reported, path on disk, kind)`` of each file to read under `paths`."""
    listing = gitfiles.listing(root, gitfiles.STAGED if staged else gitfiles.WORK_TREE)
    prefix = str(root).rstrip(os.sep) + os.sep
    seen = set()
    for given in paths:
        for path, kind in _walk(os.path.abspath(given), problems):
            rel = path[len(prefix):].replace(os.sep, "/") if path.startswith(prefix) else path
            if rel in seen:
                continue
            seen.add(rel)
            if listing is not None and rel != path and not listing.has_file(rel):
                continue
            yield rel, Path(path), kind


def _walk(top: str, problems: list) -> Iterator[Tuple[str, str]]:
    """``(path, kind)`` of the regular files below `top`, or `top` itself, that have a kind.

    No symbolic link is followed. Directories in `SKIPPED_DIRECTORIES` are not
    entered.
    """
    try:
        mode = os.lstat(top).st_mode
    except OSError as error:
        problems.append((top, f"cannot read: {error.strerror or error}"))
        return
    if stat.S_ISREG(mode):
        kind = kind_of(os.path.basename(top))
        if kind is not None:
            yield top, kind
        return
    if not stat.S_ISDIR(mode):
        return
    unlisted: walk.Problems = []
    for entry in walk.files(top, enter=lambda entry: entry.name not in SKIPPED_DIRECTORIES, problems=unlisted):
        kind = kind_of(entry.name)
        if kind is not None:
            yield entry.path, kind
    problems.extend((os.path.join(top, rel), why) for rel, why in unlisted)
