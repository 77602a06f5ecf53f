"""Facts by content hash, kept between runs outside the checked tree.

One JSON file maps a key (hash of the facts version, the file's path and its
bytes) to that file's facts, and a key derived from it and the trigger vocabulary
(`scan_key`) to which rule triggers occur in those bytes (`needs.Scanner.scan`), so
that a warm run decides which files are primary without scanning them. The key
proves only which bytes an entry claims to describe, not that the facts are true:
whoever can write the cache decides what the checker believes. So the cache never
comes from the tree being checked (a
pull request could plant one, and CI and the pre-commit hook check a pull
request's tree): it lives in the user's cache directory, one subdirectory per
project (a hash of the root's resolved path), or under ``--cache-dir`` /
``$POLICY_CHECK_CACHE_DIR``. A location inside the project is used only when git
ignores it and tracks nothing in it; any other is refused with a warning and the
run goes on without a cache, so the result is the one ``--no-cache`` gives.

Nor does it come from another local user: the directory chosen for caches and the
project's subdirectory, where they exist, must be owned by this user or root and
writable by nobody else (the rule of ``flashinfer.jit.cache``, which this package
may not import), else the location is refused the same way; directories the
checker creates are mode 0o700. So a shared ``$POLICY_CHECK_CACHE_DIR``, or a
project subdirectory someone else created first, is never read.

The file is still input: it is read without following a symbolic link, only when
it is a regular file of this user (or root) that nobody else may write, at most
`MAX_BYTES` long, and as JSON (loading JSON runs no code). Writes go to a
temporary file renamed into place, so two runs sharing the cache never see a
half-written file (the last writer wins, and both versions are valid). An
unreadable, untrusted or corrupt cache is ignored with a warning.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

import platformdirs

from .facts import FACTS_VERSION, FileFacts, from_data, to_data

ENVIRONMENT = "POLICY_CHECK_CACHE_DIR"
MAX_BYTES = 64 * 1024 * 1024  # about 30,000 files' facts; a bigger file is refused unread
_FILE = f"facts-v{FACTS_VERSION}.json"


def key(rel: str, data: bytes, variant: str = "") -> bytes:
    """`variant` tells apart facts of the same bytes computed differently (with
    another module's ``backend_requirement`` aliases)."""
    # SHA-256 runs on the CPU's SHA extensions where present: the fastest hashlib digest here
    digest = hashlib.sha256(f"{FACTS_VERSION}\0{rel}\0{variant}\0".encode())
    digest.update(data)
    return digest.digest()[:16]


def scan_key(k: bytes, vocabulary: str) -> bytes:
    """The key of the trigger scan of the bytes `k` is the key of, for the trigger
    vocabulary `vocabulary` (`needs.Scanner.key`): derived, not hashed again."""
    return hashlib.sha256(b"scan\0" + vocabulary.encode() + b"\0" + k).digest()[:16]


def location(root: Path, base=None) -> Path:
    """The cache directory of the project at `root`: a subdirectory of `base`, else
    of ``$POLICY_CHECK_CACHE_DIR``, else of the user's cache directory, named by a
    hash of the root (projects never share a file, so none evicts another's facts)."""
    base = base or os.environ.get(ENVIRONMENT) or platformdirs.user_cache_dir("policy-check")
    project = hashlib.sha256(os.fsencode(Path(root).resolve())).hexdigest()[:16]
    return Path(base).expanduser().resolve() / project


def refusal(root: Path, directory: Path) -> Optional[str]:
    """Why the project at `root` must not keep its cache in `directory` (what
    `location` gives), or None.

    Inside the project, git must ignore the cache file and track nothing in the
    directory chosen for caches (`directory`'s parent): then no checkout (of a pull
    request, say) can have put anything there. Without git there is no telling, so
    it is refused. Anywhere, that directory and `directory` must be private
    (`_private_levels`): another user must not have made or be able to change them.
    """
    return _tree_refusal(Path(root).resolve(), directory) or _private_levels(directory)


def _private_levels(directory: Path) -> Optional[str]:
    """Why another local user could have put or changed files in `directory` (a
    project's cache directory) or its parent (the directory chosen for caches), or
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


def _tree_refusal(root: Path, directory: Path) -> Optional[str]:
    try:
        inside = directory.relative_to(root)
    except ValueError:
        return None
    try:
        tracked = _git(root, "ls-files", "-z", "--", inside.parent.as_posix())
        ignored = _git(root, "check-ignore", "-q", "--", (inside / _FILE).as_posix(), check=False).returncode == 0
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


class FactsCache:
    """`vocabulary`: names the triggers a stored scan covers (`needs.Scanner.key`)."""

    def __init__(self, root: Path, enabled: bool = True, directory=None, vocabulary: str = ""):
        self.vocabulary = vocabulary
        self.entries: dict = {}
        self.used: set = set()
        self.dirty = False
        self.warnings: list = []
        self.path = None
        if enabled:
            where = location(root, directory)
            problem = refusal(root, where)
            if problem:
                self.warnings.append(f"not using the cache in {where}: {problem}; running without a cache")
                enabled = False
            else:
                self.path = where / _FILE
        self.enabled = enabled
        if enabled:
            self._load()

    def _load(self) -> None:
        try:
            stored = json.loads(read_bounded(self.path, owner_only=True))
            if not isinstance(stored, dict):
                raise ValueError("not a mapping")
            self.entries = {bytes.fromhex(k): v for k, v in stored.items()}
        except FileNotFoundError:
            pass
        except Untrusted as error:  # never read: the next save replaces it with a file of ours
            self.warnings.append(f"not using the cache file {self.path}: it is {error}; running without a cache")
        except Exception as error:  # any corruption: start afresh
            self.warnings.append(f"ignoring unreadable cache {self.path}: {type(error).__name__}: {error}")

    def get(self, k: bytes, complete: bool = False):
        """Facts stored under `k` (complete ones if `complete`), or None."""
        facts = self.entries.get(k)
        if facts is None:
            return None
        if not isinstance(facts, FileFacts):
            try:
                facts = self.entries[k] = from_data(facts)
            except (TypeError, ValueError, KeyError, IndexError):
                del self.entries[k]  # a damaged entry: recompute
                return None
        if complete and not facts.complete:
            return None
        self.used.add(k)
        return facts

    def holds(self, k: bytes) -> bool:
        return k in self.entries

    @property
    def holds_entries(self) -> bool:
        return bool(self.entries)

    def found(self, k: bytes) -> Optional[int]:
        """The trigger scan stored for the bytes `k` is the key of, or None."""
        sk = scan_key(k, self.vocabulary)
        mask = self.entries.get(sk)
        if mask is None:
            return None
        if type(mask) is not int or mask < 0:
            del self.entries[sk]  # a damaged entry: scan again
            return None
        self.used.add(sk)
        return mask

    def put(self, k: bytes, facts, found: Optional[int] = None) -> None:
        """Store `facts` under `k`, and `found` (the trigger scan) unless None."""
        self.entries[k] = facts
        self.used.add(k)
        self.dirty = True
        if found is not None:
            self.put_scan(k, found)

    def put_scan(self, k: bytes, found: int) -> None:
        sk = scan_key(k, self.vocabulary)
        self.entries[sk] = found
        self.used.add(sk)
        self.dirty = True

    def save(self) -> None:
        """Write the entries this run used (plus the rest while they are few)."""
        if not self.enabled or not self.dirty:
            return
        entries = self.entries
        if len(entries) > 2 * len(self.used):
            entries = {k: v for k, v in entries.items() if k in self.used}
        stored = {k.hex(): to_data(v) if isinstance(v, FileFacts) else v for k, v in entries.items()}
        data = json.dumps(stored, separators=(",", ":")).encode()
        if len(data) > MAX_BYTES:
            self.warnings.append(f"not writing cache {self.path}: {len(data)} bytes, more than the {MAX_BYTES} it may hold")
            return
        try:
            _private_directories(self.path.parent)
            problem = _private_levels(self.path.parent)  # someone made it since we looked
            if problem:
                self.warnings.append(f"not writing cache {self.path}: {problem}")
                return
            fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(temporary, self.path)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError as error:
            self.warnings.append(f"cannot write cache {self.path}: {error}")


class Untrusted(ValueError):
    """A file another user could have written (`_untrusted`)."""


def read_bounded(path: Path, limit: Optional[int] = None, owner_only: bool = False) -> bytes:
    """The bytes of the regular file `path` (not through a symbolic link, never
    blocking on a FIFO), at most `limit` (default `MAX_BYTES`) of them: a longer
    file raises ValueError unread; with `owner_only`, one another user could have
    written (`_untrusted`) raises `Untrusted` unread. Also reads the baseline
    (`policy_checks.baseline`), which is part of the tree and so anyone's."""
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


def _private_directories(directory: Path) -> None:
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
