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
import re
import stat
import subprocess
import threading
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
_KNOWN: contextvars.ContextVar = contextvars.ContextVar("policy_check_tree_state", default=None)  # `known`


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
    tree = _known(root)
    if tree is not None:
        found = Listing(tree.selected(chosen), chosen, Path(root))
        return None if package_dir is not None and not found.has_directory(package_dir.strip("/")) else found
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
    """Standard output of one git command in `root`, or None when it fails or runs past
    `_TIMEOUT`. The output is read in one call and `stdin` written by a thread, not both
    polled in small chunks: a listing of a large tree is megabytes."""
    try:
        with subprocess.Popen(["git", "-C", str(root), *arguments], stdin=subprocess.PIPE if stdin else
                              subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as process:
            timer = threading.Timer(_TIMEOUT, process.kill)  # a killed git exits non-zero
            timer.start()
            try:
                writer = threading.Thread(target=_write, args=(process.stdin, stdin), daemon=True)
                if stdin:
                    writer.start()
                output = process.stdout.read()
                status = process.wait()
                if stdin:
                    writer.join()
            finally:
                timer.cancel()
    except (OSError, subprocess.SubprocessError):
        return None
    return output if status == 0 else None


def _write(pipe, data: bytes) -> None:
    """Write `data` to `pipe` and close it; git may exit before it reads it all."""
    try:
        pipe.write(data)
        pipe.close()
    except OSError:  # BrokenPipeError: the exit status says what happened
        pass


def vouched(root: Path) -> Dict[str, str]:
    """Path (relative to `root`) -> object id, for each Python file (``*.py``) whose
    bytes on disk git vouches for (the module's docstring); empty when git cannot say."""
    tree = _known(root)
    if tree is not None:
        return tree.vouched()
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


# every index entry (tag, mode, object id, stage, path), the entries git finds modified or
# deleted, and every untracked entry, ignored or not ("? path"), a directory holding no
# tracked file as one entry ("? dir/"), empty directories included: one walk of the work tree
_STATE = ("ls-files", "-z", "-v", "-s", "--cached", "--modified", "--deleted", "--others", "--directory")
# the untracked files git does not ignore ("? path"), below the untracked entries named
# after it (`_LITERAL`): a walk of those entries only
_LISTED_OTHERS = ("ls-files", "-z", "-v", "--others", "--exclude-standard")
_LITERAL = "--literal-pathspecs"  # git's option: a name given is a name, never a pattern
_MAX_NAMED = 256  # more untracked entries than this: `_LISTED_OTHERS` walks the whole tree
_OTHER = re.compile(rb"\0\? ([^\0]*)")  # an untracked entry of `_STATE`'s output: its name
_NOT_OTHER = re.compile(rb"\0(?!\? )")  # the start of any other record, or the output's end
# a record of `_STATE`'s output (each one after a NUL): its header (tag, and for an index
# entry mode, object id and stage)
_HEADER = re.compile(rb"\0(?:[A-Za-z] [0-7]+ [0-9a-f]+ [0-3]\t|\? )")
# the path of each record but a clean index entry of a regular file or a link at stage 0,
# whose object id names what lies on disk
_UNVOUCHED = re.compile(rb"\0(?!H 1(?:00644|00755|20000) [0-9a-f]+ 0\t)"
                        rb"(?:[A-Za-z] [0-7]+ [0-9a-f]+ [0-3]\t|\? )([^\0]*)")
_GITLINK = re.compile(rb"\0[A-Za-z] 160000 ")  # a submodule's entry
_NESTED = re.compile(rb"\0\? [^\0]*/\0")  # a nested repository, as --others shows it


# a clean index entry of a Python file that git vouches for, unless `state` reads it: its
# object id and its path
_PYTHON_BLOB = re.compile(rb"\0H 100(?:644|755) ([0-9a-f]+) 0\t([^\0]*\.py)(?=\0)")
_PATH_AFTER_TAB = re.compile(rb"\t([^\0]*\0)")  # an index entry's path and its NUL: its header holds one tab
_INDEX_PATH = re.compile(rb"\0[A-Za-z] [0-7]+ [0-9a-f]+ [0-3]\t([^\0]*)")  # the path of each index entry


class TreeState:
    """What the files below a root hold, as one digest (`state`): `digest`, whether a
    symbolic link is among them (`links`), the paths git lists (`files`), and what git
    said, so that `known` can answer `listing` and `vouched` without asking again."""

    def __init__(self, root: Path, digest: bytes, links: bool, records: bytes, read: set):
        self.root, self.digest, self.links = Path(root), digest, links
        self._records = records  # `_STATE`'s output, each record after a NUL
        self._read = read  # the paths whose bytes `state` read: git does not vouch for them
        self._files: Optional[FrozenSet[str]] = None
        self._directories: Optional[FrozenSet[str]] = None

    def files(self) -> FrozenSet[str]:
        """The paths git lists: tracked, and untracked but not ignored."""
        if self._files is None:
            self._files = frozenset(os.fsdecode(_names(self._records)).split("\0")) - {""}
        return self._files

    def selected(self, chosen: str) -> list:
        """The names `listing` selects under `chosen`, as git printed them."""
        if chosen == STAGED:
            return os.fsdecode(b"\0".join(_INDEX_PATH.findall(self._records))).split("\0")
        return list(self.files())

    def vouched(self) -> Dict[str, str]:
        """`vouched`'s answer, from what git said when this state was taken."""
        return {path: oid for oid, path in ((os.fsdecode(o), os.fsdecode(p)) for o, p in
                                            _PYTHON_BLOB.findall(self._records)) if path not in self._read}

    def directories(self) -> FrozenSet[str]:
        """Every directory above a listed path (the root is ``""``)."""
        if self._directories is None:
            found = {""}
            for name in self.files():
                end = name.rfind("/")
                while end > 0 and name[:end] not in found:
                    found.add(name[:end])
                    end = name.rfind("/", 0, end)
            self._directories = frozenset(found)
        return self._directories


def state(root: Path, before: Optional[TreeState] = None) -> Optional[TreeState]:
    """What every file git lists below `root` holds, and what else lies there, as one
    digest; None when git cannot say, or when the tree holds something git does not
    look inside (a submodule, a nested repository) that the checker would read.

    A tracked file counts by git's object id where git vouches for its bytes on disk
    (the module's docstring says when; any file, not only Python ones); every other
    listed path (modified, deleted, untracked, flagged, converted) by what lies on
    disk, read here: missing, a link and its target, or a file and a hash of its
    bytes. Every other entry (ignored, an empty directory, a directory holding no
    listed file, each as git names it) counts by its name and its kind, not its contents.

    Git walks the work tree once (`_STATE`: the index's entries and every untracked
    entry, ignored or not); which untracked files it does not ignore, it tells from a
    walk of those entries only (`_LISTED_OTHERS`), none when there are none.

    With `before` (an earlier state of the same root), the paths git may convert are
    those of `before`, not asked of git again: the digest is then the same as
    `before`'s exactly when nothing changed since."""
    if not _maybe_in_a_work_tree(Path(root)):
        return None
    walked = _git(root, *_STATE)
    if walked is None:
        return None
    walked = b"\0" + walked + (b"" if walked.endswith(b"\0") or not walked else b"\0")
    # git prints the untracked entries first, then the index's records (should it ever
    # mix them, the regular expressions find each)
    split = _NOT_OTHER.search(walked).start()
    names, index = _OTHER.findall(walked[:split]), walked[split:]
    if b"\0? " in index:
        names, index = _OTHER.findall(walked), _OTHER.sub(b"", walked)
    untracked = b"".join(name + b"\0" for name in names)
    # the untracked files git does not ignore all lie at or below an untracked entry
    if not names:
        others = b""
    elif len(names) <= _MAX_NAMED:
        others = _git(root, _LITERAL, *_LISTED_OTHERS, "--", *(os.fsdecode(n.rstrip(b"/")) for n in names))
    else:
        others = _git(root, *_LISTED_OTHERS)
    if others is None:
        return None
    listed = others + index[1:]  # what one ``ls-files --exclude-standard`` would print
    records = b"\0" + listed + (b"" if listed.endswith(b"\0") or not listed else b"\0")
    if (b" 160000 " in index and _GITLINK.search(index)) or _NESTED.search(b"\0" + others):
        return None
    import hashlib

    digest = hashlib.sha256(b"state\0" + listed)
    read = {os.fsdecode(name) for name in _UNVOUCHED.findall(records)}
    links = b" 120000 " in listed
    autocrlf = _git(root, "config", "--get", "core.autocrlf") if before is None else None  # None: unset
    if before is not None:
        read.update(before._read)
    elif autocrlf is not None and autocrlf.strip().lower() not in (b"false", b"no", b"off", b"0", b""):
        read.update(os.fsdecode(_names(records)).split("\0"))  # any text file may be converted
        read.discard("")
    elif listed:
        attributes = _git(root, "check-attr", "-z", "--stdin", "--all", stdin=_names(records))
        if attributes is None:
            return None
        fields = os.fsdecode(attributes).split("\0")
        for at in range(0, len(fields) - 2, 3):
            path, attribute, value = fields[at:at + 3]
            if attribute in _CONVERTING and value != "unset":
                read.add(path)
    for path in sorted(read):
        found = _on_disk(Path(root) / path)
        links = links or found.startswith(b"link")
        digest.update(b"\0read\0" + os.fsencode(path) + b"\0" + found)
    digest.update(b"\0untracked\0" + untracked)
    for name in untracked.split(b"\0"):
        if name:
            kind = _kind(Path(root) / os.fsdecode(name.rstrip(b"/")))
            links = links or kind == b"link"
            digest.update(b"\0" + kind)
    return TreeState(Path(root), digest.digest(), links, records, read)


def _names(records: bytes) -> bytes:
    """The path of each of `records` (`_STATE`'s output), each ending in NUL."""
    split = _NOT_OTHER.search(records).start()
    if b"\0? " in records[split:]:  # an untracked entry after the index's: the slow way
        return _HEADER.sub(b"\0", records)[1:]
    return (b"".join(name + b"\0" for name in _OTHER.findall(records[:split]))
            + b"".join(_PATH_AFTER_TAB.findall(records[split:])))


@contextmanager
def known(tree: Optional[TreeState]) -> Iterator[None]:
    """Inside, `listing` and `vouched` of `tree`'s root answer from `tree` (what git said
    when it was taken) instead of asking git again; with None, nothing changes."""
    token = _KNOWN.set(tree)
    try:
        yield
    finally:
        _KNOWN.reset(token)


def _known(root) -> Optional[TreeState]:
    tree = _KNOWN.get()
    return tree if tree is not None and tree.root == Path(root) else None


def _kind(path: Path) -> bytes:
    """What kind of file `path` is, not following a link."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return b"missing"
    if stat.S_ISLNK(mode):
        return b"link"
    return b"dir" if stat.S_ISDIR(mode) else b"file" if stat.S_ISREG(mode) else b"other %o" % stat.S_IFMT(mode)


def _on_disk(path: Path) -> bytes:
    """What lies at `path`: missing, a link and its target, a directory, a regular file
    and a hash of its bytes (or why they cannot be read), or another kind of file."""
    kind = _kind(path)
    if kind == b"link":
        try:
            return b"link\0" + os.fsencode(os.readlink(path))
        except OSError as error:
            return b"link unreadable %d" % (error.errno or 0)
    if kind != b"file":
        return kind
    import hashlib

    try:
        with open(path, "rb") as handle:
            return b"file\0" + hashlib.sha256(handle.read()).digest()
    except OSError as error:
        return b"file unreadable %d" % (error.errno or 0)


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
