"""A planned edit of a tree: its ``--diff``, and its apply, all or nothing.

Every command that edits the tree (``fix``, ``remove``, ``graduate``) plans a
`ChangeSet` first. It writes nothing until the plan is whole. The set keeps the
promises the commands make:

- Its `ChangeSet.diff` is the patch `ChangeSet.apply` carries out. ``git apply`` on
  a copy of the tree gives the tree the run leaves. Created and deleted files carry
  git's headers (``/dev/null``, file modes), so empty files and modes survive. A
  file that is not UTF-8 text goes as a git binary patch. It has full blob ids, as
  git requires.
- A created text file may be at least half the same as one deleted. That is git's
  default rename threshold. It may also be that alike to the old bytes of a file
  rewritten into something else, such as a moved module's shim. Such a file is
  shown as git shows a rename or a copy (`Rename`). That is ``similarity index``,
  ``rename from``/``rename to`` (``copy ...``), then only the hunks of what
  changed.
- Only regular files inside the root are read, written or deleted. A path with
  ``..`` or an absolute path is `Refused` when planned. So is a symlink on the way
  or at the end, a FIFO or a device. Paths are checked with `lstat`, never
  following links. The bytes planned from are checked again just before the apply.
- `ChangeSet.apply` either makes every change or none. On any failure half-way,
  it puts back every file it had touched and removes what it created.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import os
import re
import stat
import tempfile
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Dict, List, NamedTuple, Optional

from ..model import walk
from .target import Refused

REGULAR_MODE = 0o644


class Rewrite(NamedTuple):
    """A planned rewrite of an existing file, before it joins a `ChangeSet`."""

    path: str
    before: bytes
    after: bytes
_LINE = re.compile(rb"[^\n]*\n|[^\n]+\Z")  # git's lines: split at "\n" only
_NOT_SHOWN = ("__pycache__",)  # deleted with their directory, never part of the patch


@dataclass(frozen=True)
class Change:
    """One file. `before` None means created; `after` None means deleted."""

    path: str  # root-relative, posix
    before: Optional[bytes]
    after: Optional[bytes]
    mode: int = REGULAR_MODE  # the permission bits of the file after the change
    old_mode: Optional[int] = None  # before it, where they differ (a file deleted and made again)

    @property
    def shown(self) -> bool:
        return not any(part in _NOT_SHOWN for part in PurePosixPath(self.path).parts)

    def diff(self) -> str:
        """This change as git writes it (``git diff`` / ``git apply`` format)."""
        mode_changed = self.old_mode is not None and _git_mode(self.old_mode) != _git_mode(self.mode)
        if self.before == self.after and not mode_changed:
            return ""
        old, new = f"a/{self.path}", f"b/{self.path}"
        head = [f"diff --git {old} {new}\n"]
        if mode_changed and self.before is not None and self.after is not None:
            head += [f"old mode {_git_mode(self.old_mode)}\n", f"new mode {_git_mode(self.mode)}\n"]
        if self.before is None:
            head.append(f"new file mode {_git_mode(self.mode)}\n")
            old = "/dev/null"
        elif self.after is None:
            head.append(f"deleted file mode {_git_mode(self.mode)}\n")
            new = "/dev/null"
        before, after = self.before or b"", self.after or b""
        if _is_binary(before) or _is_binary(after):
            head.append(f"index {_blob_id(self.before)}..{_blob_id(self.after)}\n")
            return "".join(head) + "GIT binary patch\n" + _literal(after) + "\n" + _literal(before) + "\n"
        if before == after:  # an empty file created or deleted, or a mode changed: the header says it all
            return "".join(head)
        lines = difflib.unified_diff(_lines(before), _lines(after), old, new)
        body = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
        return "".join(head) + body


@dataclass(frozen=True)
class Rename:
    """A created file shown as git shows a move or a copy.

    It is a move when its source was deleted. It is a copy when its source was
    rewritten into something else, such as a shim. It shows the headers, then the
    hunks of the edit. There are none when the bytes are the same.
    """

    old: Change  # the source: deleted, or rewritten beyond recognition
    new: Change  # created
    similarity: int  # percent, as git rounds it: down

    @property
    def kind(self) -> str:
        return "rename" if self.old.after is None else "copy"

    def diff(self) -> str:
        head = [f"diff --git a/{self.old.path} b/{self.new.path}\n"]
        if _git_mode(self.old.mode if self.kind == "rename" else _mode_before(self.old)) != _git_mode(self.new.mode):
            old_mode = self.old.mode if self.kind == "rename" else _mode_before(self.old)
            head += [f"old mode {_git_mode(old_mode)}\n", f"new mode {_git_mode(self.new.mode)}\n"]
        head += [f"similarity index {self.similarity}%\n", f"{self.kind} from {self.old.path}\n",
                 f"{self.kind} to {self.new.path}\n"]
        lines = difflib.unified_diff(_lines(self.old.before), _lines(self.new.after),
                                     f"a/{self.old.path}", f"b/{self.new.path}")
        body = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
        return "".join(head) + body


def _mode_before(change: Change) -> int:
    return change.old_mode if change.old_mode is not None else change.mode


RENAME_THRESHOLD = 50  # percent, git's default (``-M50%``)
_PAIRS_COMPARED = 40_000  # beyond this many source x created pairs only same-named files are compared


def similarity(before: bytes, after: bytes) -> int:
    """How much of two files is the same, in percent, as git scores a rename.

    It is the bytes of the lines they share over the size of the larger. Lines are
    counted, so it runs in linear time.
    """
    larger = max(len(before), len(after))
    if larger == 0:
        return 100
    old, new = Counter(_LINE.findall(before)), Counter(_LINE.findall(after))
    shared = sum(len(line) * min(count, new[line]) for line, count in old.items() if line in new)
    return shared * 100 // larger


def find_renames(changes: List[Change]) -> List[Rename]:
    """Pair created text files with sources at least `RENAME_THRESHOLD` percent alike.

    Best pairs come first, and each file joins one pair at most. Same bytes pair
    before anything. A source is a deleted file, which makes a rename. Or it is a
    file rewritten into something less than half alike, as git's ``-B`` breaks it.
    That makes a copy: a moved module whose old path now holds a shim.
    """
    created = [c for c in changes if c.before is None and c.after is not None and c.shown and _is_text(c.after)]
    if not created:
        return []
    sources = [c for c in changes if c.shown and c.before is not None and _is_text(c.before)
               and (c.after is None or _broken(c))]
    if not sources:
        return []
    scored = []
    compare_all = len(sources) * len(created) <= _PAIRS_COMPARED
    by_name: Dict[str, List[Change]] = {}
    for new in created:
        by_name.setdefault(_name(new.path), []).append(new)
    by_bytes = {new.after: new for new in created}
    for old in sources:
        same = by_bytes.get(old.before)
        if same is not None:
            scored.append((101, _name(old.path) == _name(same.path), old, same))
        candidates = created if compare_all else by_name.get(_name(old.path), [])
        for new in candidates:
            small, large = sorted((len(old.before), len(new.after)))
            if new is same or small * 100 < large * RENAME_THRESHOLD:
                continue  # the shared bytes are at most the smaller file's
            score = similarity(old.before, new.after)
            if score >= RENAME_THRESHOLD:
                scored.append((score, _name(old.path) == _name(new.path), old, new))
    scored.sort(key=lambda s: (-s[0], not s[1], s[2].path, s[3].path))
    taken, renames = set(), []
    for score, _, old, new in scored:
        if old.path in taken or new.path in taken:
            continue
        taken |= {old.path, new.path}
        renames.append(Rename(old, new, 100 if old.before == new.after else min(score, 99)))
    return renames


def _broken(change: Change) -> bool:
    """Does the rewrite keep less than half of the file (git's ``-B``)?

    Then its old bytes may be the source of a copy. Size is checked first, which
    usually settles it.
    """
    small, large = sorted((len(change.before), len(change.after)))
    if small * 100 < large * RENAME_THRESHOLD:
        return True
    return similarity(change.before, change.after) < RENAME_THRESHOLD


def _name(path: str) -> str:
    return PurePosixPath(path).name


def _is_text(data: bytes) -> bool:
    return bool(data) and not _is_binary(data)


def _git_mode(mode: int) -> str:
    return "100755" if mode & 0o111 else "100644"


def _lines(data: bytes) -> List[str]:
    return [line.decode("utf-8") for line in _LINE.findall(data)]


def _is_binary(data: bytes) -> bool:
    if b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _blob_id(data: Optional[bytes]) -> str:
    if data is None:
        return "0" * 40
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _literal(data: bytes) -> str:
    """A git binary patch hunk.

    It is ``literal <size>``, then zlib data in base85 lines of at most 52 bytes.
    Each line is led by its length: A-Z for 1-26, a-z for 27-52.
    """
    packed = zlib.compress(data)
    out = [f"literal {len(data)}\n"]
    for start in range(0, len(packed), 52):
        chunk = packed[start:start + 52]
        size = len(chunk)
        lead = chr(ord("A") + size - 1) if size <= 26 else chr(ord("a") + size - 27)
        out.append(lead + base64.b85encode(chunk, pad=True).decode("ascii") + "\n")
    return "".join(out)


class ChangeSet:
    """The changes one command plans for the tree at `root`, checked as they are added."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._changes: Dict[str, Change] = {}
        self._directories: List[str] = []  # removed whole, once their files are gone

    # planning ---------------------------------------------------------------------

    def read(self, rel: str) -> bytes:
        """The bytes of the regular file `rel`. Raises `Refused` for anything else."""
        path = self._inside(rel)
        info = self._lstat(rel, path)
        if info is None:
            raise Refused(f"{rel}: no such file")
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{rel} is {_kind(info.st_mode)}, not a regular file; refusing to touch it")
        return path.read_bytes()

    def rewrite(self, rel: str, after: bytes, before: Optional[bytes] = None) -> None:
        """Replace the file's bytes. `before` is what the plan read; it is read now if not given."""
        current = self.read(rel)  # a regular file inside the root, or Refused
        if before is not None and before != current:
            raise Refused(f"{rel} changed on disk during the run; nothing written")
        before = current
        mode = stat.S_IMODE(os.lstat(self._inside(rel)).st_mode)
        self._add(Change(rel, before, after, mode))

    def create(self, rel: str, data: bytes, mode: int = REGULAR_MODE) -> None:
        """Plan a new file. Raises `Refused` where something is already there, which stays."""
        path = self._inside(rel)
        earlier = self._changes.get(rel)
        if earlier is not None:
            if earlier.after is not None:
                raise Refused(f"{rel} is planned twice")
            self._changes[rel] = Change(rel, earlier.before, data, mode, earlier.mode)  # deleted, made again
            self._keep_folders_of(rel)
            return
        if self._lstat(rel, path) is not None:
            raise Refused(f"{rel} already exists")
        self._changes[rel] = Change(rel, None, data, mode)
        self._keep_folders_of(rel)

    def delete(self, rel: str) -> None:
        """Delete the file `rel`, or the directory `rel` and every file under it."""
        path = self._inside(rel)
        info = self._lstat(rel, path)
        if info is None:
            return
        if stat.S_ISDIR(info.st_mode):
            for file_rel in list(self._files_under(rel)):  # whole, or refused before any is planned
                self.delete(file_rel)
            for made in [c.path for c in self._changes.values() if c.before is None and c.path.startswith(rel + "/")]:
                del self._changes[made]  # planned, then its folder deleted: never made
            self._directories.append(rel)
            return
        before = self.read(rel)
        earlier = self._changes.get(rel)
        if earlier is not None and earlier.before is None:  # created by this plan: no change at all
            del self._changes[rel]
            return
        self._add(Change(rel, earlier.before if earlier else before, None, stat.S_IMODE(info.st_mode)))

    def files_under(self, rel: str) -> List[str]:
        """Root-relative paths of the regular files under the directory `rel`, sorted.

        Raises `Refused` at a symlink or a special file anywhere below it.
        """
        info = self._lstat(rel, self._inside(rel))
        if info is None or not stat.S_ISDIR(info.st_mode):
            raise Refused(f"{rel} is {_kind(info.st_mode) if info else 'missing'}, not a directory")
        return list(self._files_under(rel))

    def _files_under(self, rel: str) -> List[str]:
        found, unlisted = [], []
        for entry in walk.walk(self._inside(rel), problems=unlisted):
            child = f"{rel}/{entry.rel}"
            if entry.kind == walk.FILE:
                found.append(child)
            elif entry.kind != walk.DIRECTORY:
                raise Refused(f"{child} is {_kind(os.lstat(entry.path).st_mode)}; refusing to touch it")
        for below, why in unlisted:
            raise Refused(f"{rel}/{below}: {why}")
        return sorted(found)

    def _add(self, change: Change) -> None:
        earlier = self._changes.get(change.path)
        if earlier is not None:
            old_mode = earlier.old_mode if earlier.old_mode is not None else earlier.mode
            change = Change(change.path, earlier.before, change.after, change.mode,
                            old_mode if earlier.before is not None else None)
        self._changes[change.path] = change
        if change.after is not None:
            self._keep_folders_of(change.path)

    def _keep_folders_of(self, rel: str) -> None:
        """A file the plan keeps or makes keeps its folders.

        A directory deleted earlier in the plan is then not removed whole. Its other
        files still go one by one.
        """
        self._directories = [d for d in self._directories if not rel.startswith(d + "/")]

    def _inside(self, rel: str) -> Path:
        """`rel` as a path under the root, with no component a link. Raises `Refused` otherwise."""
        pure = PurePosixPath(rel)
        if not rel or pure.is_absolute() or ".." in pure.parts or "\\" in rel or "\0" in rel:
            raise Refused(f"{rel!r} is not a path inside the repository")
        current = self.root
        for part in pure.parts[:-1]:
            current = current / part
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                break
            if not stat.S_ISDIR(info.st_mode):
                raise Refused(f"{current.relative_to(self.root).as_posix()} is {_kind(info.st_mode)}, "
                              "not a directory; refusing to go through it")
        return self.root.joinpath(*pure.parts)

    @staticmethod
    def _lstat(rel: str, path: Path) -> Optional[os.stat_result]:
        try:
            return os.lstat(path)
        except FileNotFoundError:
            return None

    def add_planned(self, rewrites=(), creations=None, deletions=(), modes=None) -> "ChangeSet":
        """Add a command's plan.

        It adds `Rewrite` values, then {path: bytes} creations, then deletions. Creations
        take their `modes`, by default `REGULAR_MODE`. Deletions are files or whole
        directories.
        """
        for rel, before, after in rewrites:
            self.rewrite(rel, after, before)
        for rel, data in sorted((creations or {}).items()):
            self.create(rel, data, (modes or {}).get(rel, REGULAR_MODE))
        for rel in deletions:
            self.delete(rel)
        return self

    # reading the plan -------------------------------------------------------------

    @property
    def changes(self) -> List[Change]:
        return [self._changes[rel] for rel in sorted(self._changes)]

    def changed(self, rel: str) -> Optional[Change]:
        return self._changes.get(rel)

    def __bool__(self) -> bool:
        return any(c.before != c.after for c in self._changes.values()) or bool(self._directories)

    def diff(self) -> str:
        """The patch of the whole set, in path order. This is what ``--diff`` prints.

        A moved file shows at its old path, in git's rename form.
        """
        changes = self.changes
        pairs = {rename.old.path: rename for rename in find_renames(changes)}
        made = {rename.new.path for rename in pairs.values()}
        parts = []
        for change in changes:
            if not change.shown or change.path in made:
                continue
            pair = pairs.get(change.path)
            if pair is None:
                parts.append(change.diff())
            elif pair.kind == "rename":
                parts.append(pair.diff())
            else:  # the source's own rewrite, then the copy read from its old bytes
                parts += [change.diff(), pair.diff()]
        return "".join(parts)

    # writing ----------------------------------------------------------------------

    def apply(self, before_each: Optional[Callable[[Change], None]] = None) -> None:
        """Make every change, or none.

        The tree is checked against the plan first. It raises `Refused` if a file
        changed since it was read. A failure half-way puts back what was done, then
        is raised again. Such a failure is an `OSError`, or an error from
        `before_each`, which tests use.
        """
        for change in self.changes:
            self._check_unchanged(change)
        undo: List[Callable[[], None]] = []
        try:
            for change in self.changes:
                if before_each is not None:
                    before_each(change)
                undo.append(self._write(change))
            for rel in sorted(self._directories, key=len, reverse=True):
                undo.append(self._remove_directory(rel))
        except BaseException:
            for step in reversed(undo):
                step()
            raise

    def _check_unchanged(self, change: Change) -> None:
        path = self._inside(change.path)
        info = self._lstat(change.path, path)
        if change.before is None:
            if info is not None:
                raise Refused(f"{change.path} appeared on disk during the run; nothing written")
            return
        if info is None or not stat.S_ISREG(info.st_mode) or path.read_bytes() != change.before:
            raise Refused(f"{change.path} changed on disk during the run; nothing written")

    def _write(self, change: Change) -> Callable[[], None]:
        path = self._inside(change.path)
        if change.after is None:
            path.unlink()
            return lambda: _put(path, change.before, change.mode)
        made = _make_parents(path.parent)
        try:
            _put(path, change.after, change.mode)
        except BaseException:
            _remove_made(made)
            raise
        if change.before is None:
            return lambda: (path.unlink(), _remove_made(made))
        return lambda: _put(path, change.before, change.mode)

    def _remove_directory(self, rel: str) -> Callable[[], None]:
        """Remove what is left of a deleted directory: empty folders and ``__pycache__``."""
        top = self._inside(rel)
        if not top.exists():
            return lambda: None
        removed: List[Path] = []
        for folder, dirs, files in os.walk(top, topdown=False):
            for name in files:
                leftover = Path(folder, name)
                if not any(part in _NOT_SHOWN for part in leftover.relative_to(self.root).parts):
                    raise Refused(f"{leftover.relative_to(self.root).as_posix()} appeared during the run")
                leftover.unlink()
            os.rmdir(folder)
            removed.append(Path(folder))
        return lambda: [p.mkdir(parents=True, exist_ok=True) for p in reversed(removed)]


def _put(path: Path, data: bytes, mode: int) -> None:
    """Write `data` at `path` atomically: a temporary file beside it, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _make_parents(folder: Path) -> List[Path]:
    made = []
    while not folder.exists():
        made.append(folder)
        folder = folder.parent
    for path in reversed(made):
        path.mkdir()
    return made


def _remove_made(made: List[Path]) -> None:
    for path in made:  # deepest first
        try:
            path.rmdir()
        except OSError:
            pass


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"
