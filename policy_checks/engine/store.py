"""Where the checker keeps what it stores between runs, and when it may trust it.

The facts cache (`cache`) and the replayed results (`replay`) live in one directory
(`location`), outside the checked tree unless git ignores it there (`refusal`). A
directory another local user made or may change is refused, as is a file another
user may write (`read_bounded` with ``owner_only``): whoever can write the store
decides what the checker believes. Imports nothing of the checker, so that a
replayed run loads no fact machinery.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from pathlib import Path
from typing import Optional


ENVIRONMENT = "POLICY_CHECK_CACHE_DIR"
STORE = "facts"  # the subdirectory of the directory chosen for caches that holds the store
MAX_BYTES = 64 * 1024 * 1024  # the most `read_bounded` reads unless told


def location(root=None, base=None) -> Path:
    """The directory of the facts store: `STORE` under `base`, else under
    ``$POLICY_CHECK_CACHE_DIR``, else under the user's cache directory. The same for
    every project (`root` is not part of it): entries are keyed by content, so a
    second clone or worktree of a repository finds the facts of the first."""
    base = base or os.environ.get(ENVIRONMENT)
    if not base:
        import platformdirs  # here: a run given its directory does not load it (7 ms: tempfile, shutil)

        base = platformdirs.user_cache_dir("policy-check")
    return Path(base).expanduser().resolve() / STORE


def refusal(root: Path, directory: Path, file_name: str) -> Optional[str]:
    """Why the project at `root` must not keep its store file `file_name` in `directory`
    (what `location` gives), or None.

    Inside the project, git must ignore that file and track nothing in the
    directory chosen for caches (`directory`'s parent): then no checkout (of a pull
    request, say) can have put anything there. Without git there is no telling, so
    it is refused. Anywhere, that directory and `directory` must be private
    (`private_levels`): another user must not have made or be able to change them.
    """
    return _tree_refusal(Path(root).resolve(), directory, file_name) or private_levels(directory)


def private_levels(directory: Path) -> Optional[str]:
    """Why another local user could have put or changed files in `directory` (the
    store's directory) or its parent (the directory chosen for caches), or
    None. A level that does not exist yet is fine: the checker creates it, 0o700."""
    for level in (directory.parent, directory):
        try:
            info = os.lstat(level)
        except FileNotFoundError:
            continue
        except OSError as error:
            return f"{level} cannot be examined ({error.strerror or error})"
        if stat.S_ISLNK(info.st_mode):
            return f"{level} is a symbolic link"
        if not stat.S_ISDIR(info.st_mode):
            return f"{level} is not a directory"
        problem = _untrusted(info)
        if problem:
            return f"{level} is {problem}"
    return None


def _untrusted(info: os.stat_result) -> str:
    """Why another user could have written what `info` describes (``""`` when only
    this user or root could): owned by someone else, or writable by its group or by
    others. Root's count as ours (root can change anything of ours anyway). Where
    there are no user ids (Windows) nothing is refused: mode bits say nothing there."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:
        return ""
    if info.st_uid not in (geteuid(), 0):
        return f"owned by uid {info.st_uid}, neither this user ({geteuid()}) nor root"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by group or others (mode {stat.S_IMODE(info.st_mode):o})"
    return ""


def _tree_refusal(root: Path, directory: Path, file_name: str) -> Optional[str]:
    try:
        inside = directory.relative_to(root)
    except ValueError:
        return None
    try:
        tracked = _git(root, "ls-files", "-z", "--", inside.parent.as_posix())
        ignored = _git(root, "check-ignore", "-q", "--", (inside / file_name).as_posix(), check=False).returncode == 0
    except (OSError, subprocess.SubprocessError) as error:  # not a repository, no git, ...
        detail = error.stderr.decode(errors="replace").strip() if isinstance(error, subprocess.CalledProcessError) else error
        return f"it is inside the project and git cannot say that no checkout put it there ({detail})"
    if tracked.stdout:
        return "it is inside the project and git tracks files in it"
    if not ignored:
        return "it is inside the project and git does not ignore it"
    return None


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Bytes out: tracked names need not be UTF-8."""
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=check, timeout=60)


class Untrusted(ValueError):
    """A file another user could have written (`_untrusted`)."""


def read_bounded(path: Path, limit: Optional[int] = None, owner_only: bool = False) -> bytes:
    """The bytes of the regular file `path` (not through a symbolic link, never
    blocking on a FIFO), at most `limit` (default `MAX_BYTES`) of them: a longer
    file raises ValueError unread; with `owner_only`, one another user could have
    written (`_untrusted`) raises `Untrusted` unread. Also reads the baseline
    (`policy_checks.engine.baseline`), which is part of the tree and so anyone's."""
    limit = MAX_BYTES if limit is None else limit
    if not hasattr(os, "O_NOFOLLOW") and path.is_symlink():
        raise ValueError("a symbolic link")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ValueError("a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        problem = _untrusted(info) if owner_only else ""
        if problem:
            raise Untrusted(problem)
        data = handle.read(limit + 1) if info.st_size <= limit else b""
    if len(data) > limit or info.st_size > limit:
        raise ValueError(f"larger than {limit} bytes")
    return data


def private_directories(directory: Path) -> None:
    """Create `directory` and any missing parents, each readable by this user only
    (``mkdir(parents=True)`` would give the parents the default mode)."""
    missing = []
    while not directory.is_dir():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            pass
