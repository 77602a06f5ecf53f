"""Which files a run reads, as git sees them.

In a git work tree the checker reads what git would commit, not whatever lies on disk:

- ``work-tree`` (the default): the files git tracks, and the untracked files it does not
  ignore (``git ls-files --cached --others --exclude-standard``). A gitignored file (a
  generated module, a build output, a scratch copy) is never read, as ruff skips what
  ``.gitignore`` names; a tracked file is read even when an ignore pattern matches it.
- ``staged``: only the files in git's index (``git ls-files --cached``), what a commit
  holds; an untracked file is not read, so a scratch file never blocks an unrelated
  commit. The bytes read are the work tree's: under pre-commit, which stashes the
  unstaged changes of tracked files before a hook runs, they are the staged content.

`listing` asks git once (one subprocess, names as bytes: a name need not be UTF-8). When
git is missing, fails (the root is in no repository, or one git refuses to read), or
selects no file of the checked package at all (the root lies in a directory its
repository ignores, such as an unpacked tree under ``build/``), it answers None and the
walk of the directories decides alone, as outside a repository.

The mode of a run is `mode` (default ``work-tree``); `selecting` sets it for the code it
wraps, so that an entry point can choose it without a new argument on every layer
between the command line and `project.Project`.
"""

from __future__ import annotations

import contextvars
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import FrozenSet, Iterator, Optional

WORK_TREE = "work-tree"
STAGED = "staged"
MODES = (WORK_TREE, STAGED)

_TIMEOUT = 60  # seconds; a listing takes milliseconds
_ARGUMENTS = {
    WORK_TREE: ("ls-files", "-z", "--cached", "--others", "--exclude-standard"),
    STAGED: ("ls-files", "-z", "--cached"),
}
_MODE: contextvars.ContextVar = contextvars.ContextVar("policy_check_files", default=WORK_TREE)


def mode() -> str:
    """The file selection of runs started now (`WORK_TREE` unless `selecting` says otherwise)."""
    return _MODE.get()


@contextmanager
def selecting(chosen: str) -> Iterator[None]:
    """Runs started inside select their files by `chosen` (`WORK_TREE` or `STAGED`)."""
    if chosen not in MODES:
        raise ValueError(f"unknown file selection {chosen!r}: one of {', '.join(MODES)}")
    token = _MODE.set(chosen)
    try:
        yield
    finally:
        _MODE.reset(token)


class Listing:
    """The files git selects below a root: paths relative to it, ``/`` separators.

    `files` are the names git printed; `directories` every directory above one of them.
    A name git printed that is a directory on disk (a submodule, or a nested repository
    that ``--others`` shows as ``dir/``) selects everything below it: git does not look
    inside, so neither does this listing."""

    def __init__(self, names, chosen: str):
        self.mode = chosen
        files = set()
        directories = set()
        for name in names:
            name = name.rstrip("/")
            if not name:
                continue
            files.add(name)
            parts = name.split("/")
            for end in range(1, len(parts)):
                directories.add("/".join(parts[:end]))
        self.files: FrozenSet[str] = frozenset(files)
        self.directories: FrozenSet[str] = frozenset(directories)

    def _below_an_entry(self, rel: str) -> bool:
        parts = rel.split("/")
        return any("/".join(parts[:end]) in self.files for end in range(1, len(parts)))

    def has_directory(self, rel: str) -> bool:
        """Does git select anything at or below the directory `rel`?"""
        return rel in self.directories or rel in self.files or self._below_an_entry(rel)

    def has_file(self, rel: str) -> bool:
        """Does git select the file `rel`?"""
        return rel in self.files or self._below_an_entry(rel)

    def selects(self, rel: str) -> bool:
        """Is `rel`, a file or a directory, selected (or, a directory, above a selected file)?"""
        return rel in self.files or rel in self.directories or self._below_an_entry(rel)

    def __len__(self) -> int:
        return len(self.files)


def listing(root: Path, chosen: Optional[str] = None, package_dir: Optional[str] = None) -> Optional[Listing]:
    """What git selects below `root` under `chosen` (default: `mode()`), or None when git
    cannot say (no git, not a repository, an error) or, given `package_dir` (the checked
    package, relative to the root), selects nothing below it: then the caller walks."""
    chosen = chosen or mode()
    if chosen not in MODES:
        raise ValueError(f"unknown file selection {chosen!r}: one of {', '.join(MODES)}")
    if not _maybe_in_a_work_tree(Path(root)):
        return None  # no process started: most trees outside a repository are temporary ones
    command = ["git", "-C", str(root), *_ARGUMENTS[chosen]]
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=_TIMEOUT)
    except (OSError, subprocess.SubprocessError):  # no git on the PATH, or it hung
        return None
    if done.returncode != 0:  # not a work tree, a bare repository, "dubious ownership", ...
        return None
    found = Listing((os.fsdecode(name) for name in done.stdout.split(b"\0")), chosen)
    if package_dir is not None and not found.has_directory(package_dir.strip("/")):
        return None
    return found


def _maybe_in_a_work_tree(root: Path) -> bool:
    """Could git find a repository for `root`: a ``.git`` (directory or file) at or above
    it, or a repository named by the environment? A few stats, where git costs a process."""
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
        return True
    try:
        here = root.resolve()
    except OSError:
        return True  # let git say
    return any(os.path.lexists(directory / ".git") for directory in (here, *here.parents))
