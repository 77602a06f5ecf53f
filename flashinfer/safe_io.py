"""Reading files that someone else may have planted, and creating private directories.

Autotune caches, trace-apply configurations and JIT cache entries are untrusted
input: their path may name a FIFO (opening it would wait for a writer), a device
such as ``/dev/zero`` (reading it never ends), a huge file, or, in a shared
directory, a file another user wrote. `read_regular_file` opens without
blocking, checks what it opened (``fstat`` on the descriptor, so the file cannot
be swapped between the check and the read) and reads a bounded number of bytes.
Standard library only.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["RefusedFileError", "make_private_dirs", "read_regular_file"]

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation
_CHUNK = 1 << 20


class RefusedFileError(OSError):
    """The path exists but is not a file we read: not regular, too large, or not ours."""


def read_regular_file(
    path: str | os.PathLike, max_bytes: int, *, follow_symlinks: bool = True, owner_only: bool = False
) -> bytes:
    """The content of the regular file at ``path``, at most ``max_bytes`` long.

    Raises `RefusedFileError` for a FIFO, device, directory or socket, for a file
    longer than ``max_bytes`` (also one that grows while read), and, with
    ``owner_only``, for a file not owned by the effective user or writable by its
    group or others. With ``follow_symlinks=False`` a symlink is refused by the
    open itself (``O_NOFOLLOW``: `OSError`). Other `OSError`s pass through.
    """
    flags = os.O_RDONLY | _NONBLOCK | _CLOEXEC | _BINARY | (0 if follow_symlinks else _NOFOLLOW)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFileError("not a regular file")
        if owner_only:
            problem = _writable_by_others(info)
            if problem:
                raise RefusedFileError(problem)
        if info.st_size > max_bytes:
            raise RefusedFileError(f"larger than {max_bytes} bytes")
        chunks, size = [], 0
        while size <= max_bytes:  # st_size is a hint: the file may grow meanwhile
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise RefusedFileError(f"larger than {max_bytes} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _writable_by_others(info: os.stat_result) -> str:
    """Why another user could have written this file (``""`` when only we or root could).

    Root's files count as ours: root can change anything of ours anyway, and a cache
    pre-built as root (a container image, a system package) should serve every user.
    """
    geteuid = getattr(os, "geteuid", None)
    if geteuid is not None and info.st_uid not in (geteuid(), 0):
        return f"owned by uid {info.st_uid}, neither this user ({geteuid()}) nor root"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by group or others (mode {stat.S_IMODE(info.st_mode):o})"
    return ""


def make_private_dirs(path: str | os.PathLike) -> None:
    """Create ``path`` and its missing parents with mode 0o700; existing ones stay as they are.

    ``Path.mkdir(parents=True, mode=...)`` gives missing parents the default mode;
    here every directory we create is ours alone (the umask can only narrow 0o700).
    """
    missing = []
    directory = Path(path)
    while not directory.is_dir():
        missing.append(directory)
        if directory.parent == directory:
            break
        directory = directory.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:  # another process made it meanwhile
            continue
