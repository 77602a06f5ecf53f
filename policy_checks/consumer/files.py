"""Which downstream files the consumer check reads, and as what.

PATHS are walked without following symbolic links; version-control, cache and virtual
environment directories are skipped. In a git work tree the files are those git selects,
as for ``policy-check run`` (`policy_checks.gitfiles`: tracked and not ignored; with
``--staged`` only the index). A file's *kind* comes from its name: Python, or one of the
settings formats that can set an environment variable (shell, Dockerfile, YAML, TOML,
INI, ``.env``, JSON); everything else is not read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

from .. import gitfiles

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


def _relative(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def selected(root: Path, paths: List[Path], staged: bool, problems: list) -> Iterator[Tuple[str, Path, str]]:
    """``(path as reported, path on disk, kind)`` of each file to read under `paths`."""
    listing = gitfiles.listing(root, gitfiles.STAGED if staged else gitfiles.WORK_TREE)
    seen = set()
    for given in paths:
        given = Path(os.path.abspath(given))
        for path in _walk(given, problems):
            kind = kind_of(path.name)
            if kind is None:
                continue
            rel = _relative(root, path)
            if rel in seen:
                continue
            seen.add(rel)
            if listing is not None and not rel.startswith("/") and not listing.has_file(rel):
                continue
            yield rel, path, kind


def _walk(top: Path, problems: list) -> Iterator[Path]:
    try:
        mode = os.lstat(top).st_mode
    except OSError as error:
        problems.append((str(top), f"cannot read: {error.strerror or error}"))
        return
    if stat.S_ISREG(mode):
        yield top
        return
    if not stat.S_ISDIR(mode):
        return
    for directory, subdirectories, names in os.walk(top, onerror=lambda e: problems.append((e.filename, str(e)))):
        subdirectories[:] = sorted(d for d in subdirectories if d not in SKIPPED_DIRECTORIES
                                   and not os.path.islink(os.path.join(directory, d)))
        for name in sorted(names):
            path = os.path.join(directory, name)
            if kind_of(name) is not None and stat.S_ISREG(os.lstat(path).st_mode):
                yield Path(path)
