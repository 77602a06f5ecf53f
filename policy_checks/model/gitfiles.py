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

`Listing.blobs` names, for the Python files whose bytes git vouches for, git's object id of
those bytes: the facts cache keys them by that id instead of hashing them
(`cache.key_of`). Git vouches for a file only when what it says of it is a statement
about the bytes on disk: an index entry at stage 0 (not in a merge conflict) of a
regular file (mode 100644 or 100755: never a symbolic link, whose blob is the link's
text, nor a submodule), that ``git ls-files --modified`` does not report (the check of
``git diff-files``: stat data, and the content where the stat data cannot tell), with
neither the assume-unchanged nor the skip-worktree flag (with these git does not look at
the file at all, so ``--modified`` would not report a change), and that no conversion
touches between the index and the work tree (no ``filter``, ``ident``,
``working-tree-encoding``, ``text``, ``eol`` or ``crlf`` attribute, and no
``core.autocrlf``): git's id is the id of the converted bytes, which are not the ones
the checker reads. Every other file (untracked, modified, staged differently from what
is on disk, flagged, converted) is hashed from its bytes. In ``--staged`` mode the same
rule holds: the bytes read are the work tree's, so a file whose staged content differs
from them is hashed.
"""

from __future__ import annotations

import contextvars
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, Optional

WORK_TREE = "work-tree"
STAGED = "staged"
MODES = (WORK_TREE, STAGED)

_TIMEOUT = 60  # seconds; a listing takes milliseconds
_ARGUMENTS = {
    WORK_TREE: ("ls-files", "-z", "--cached", "--others", "--exclude-standard"),
    STAGED: ("ls-files", "-z", "--cached"),
}
# index entry, as ``ls-files -z -v -s`` prints it: tag, mode, object id, stage, TAB, path; of
# Python files only (the facts cache holds nothing else): git then looks at no other file
_BLOBS = ("ls-files", "-z", "-v", "-s", "--cached", "--modified", "--", ":(glob)**/*.py")
_REGULAR = ("100644", "100755")
# attributes that make git convert a file between the index and the work tree
_CONVERTING = frozenset(("filter", "ident", "working-tree-encoding", "text", "eol", "crlf"))
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

    def __init__(self, names, chosen: str, root: Optional[Path] = None):
        self.mode = chosen
        self.root = root  # where git is asked about `blobs`; None: git vouches for nothing
        self._blobs: Optional[Dict[str, str]] = None
        files = set()
        directories = set()
        for name in names:
            name = name.rstrip("/")
            if not name:
                continue
            files.add(name)
            # each directory above the name, the nearest first, until one already seen
            end = name.rfind("/")
            while end > 0:
                parent = name[:end]
                if parent in directories:
                    break
                directories.add(parent)
                end = name.rfind("/", 0, end)
        self.files: FrozenSet[str] = frozenset(files)
        self.directories: FrozenSet[str] = frozenset(directories)

    def blobs(self) -> Dict[str, str]:
        """Path -> git's object id of the bytes on disk, for the Python files git
        vouches for (the module's docstring says which); git is asked once, on the
        first call. Empty when git cannot say."""
        if self._blobs is None:
            self._blobs = vouched(self.root) if self.root is not None else {}
        return self._blobs

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
    found = Listing(os.fsdecode(done.stdout).split("\0"), chosen, Path(root))
    if package_dir is not None and not found.has_directory(package_dir.strip("/")):
        return None
    return found


def _git(root: Path, *arguments: str, stdin: bytes = b"") -> Optional[bytes]:
    """Standard output of one git command in `root`, or None when it fails."""
    try:
        done = subprocess.run(["git", "-C", str(root), *arguments], input=stdin, capture_output=True,
                              timeout=_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def vouched(root: Path) -> Dict[str, str]:
    """Path (relative to `root`) -> object id, for each Python file (``*.py``) whose
    bytes on disk git vouches for (the module's docstring); empty when git cannot say."""
    listed = _git(root, *_BLOBS)
    if not listed:
        return {}
    candidates: Dict[str, str] = {}
    changed = set()
    for line in os.fsdecode(listed).split("\0"):
        head, tab, path = line.partition("\t")
        fields = head.split(" ")
        if not tab or len(fields) != 4:
            continue
        tag, mode, oid, stage = fields
        if tag != "H" or mode not in _REGULAR or stage != "0":
            changed.add(path)  # modified ("C"), flagged (lower case, "S"), conflicted, a link, ...
        elif path not in changed:
            candidates[path] = oid
    for path in changed:
        candidates.pop(path, None)
    if not candidates:
        return {}
    autocrlf = _git(root, "config", "--get", "core.autocrlf")  # None: unset (exit 1)
    if autocrlf is not None and autocrlf.strip().lower() not in (b"false", b"no", b"off", b"0", b""):
        return {}  # every text file may be converted (the detection is git's, not repeated here)
    attributes = _git(root, "check-attr", "-z", "--stdin", "--all",
                      stdin=b"".join(os.fsencode(path) + b"\0" for path in candidates))
    if attributes is None:
        return {}
    fields = os.fsdecode(attributes).split("\0")
    for at in range(0, len(fields) - 2, 3):
        path, attribute, value = fields[at:at + 3]
        if attribute in _CONVERTING and value != "unset":
            candidates.pop(path, None)
    return candidates


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
