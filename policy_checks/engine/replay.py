"""A whole run replayed: the stored result of a run whose inputs are all unchanged.

``policy-check run`` first makes a key of every input a run reads (`plan`). When
the store holds a result under that key, the command prints it: no facts are
loaded, no rule runs, and neither the runner nor the rules are imported. The key
holds:

- the checker: its version, the bytes of every module of its package, the
  libraries it reads the tree with (PyYAML, tomli: `LIBRARIES`), and the Python
  running it (version and implementation);
- the command: the settings, ``--select`` and ``--ignore``, the paths given, the
  file selection (work tree or ``--staged``), the baseline file's name and bytes
  (or that there is none), and every environment variable named ``GIT_*`` or
  ``POLICY_CHECK_*`` (git's and the checker's own);
- the tree (`gitfiles.state`): every file git lists, tracked or untracked and not
  ignored, whatever its kind (docs pages, workflows, ``FEATURE.toml``, conftests,
  ``pyproject.toml``): by git's object id where git vouches for the bytes on disk,
  else hashed here, deletions included; and the name and kind of every other entry
  (ignored ones, empty directories). A tree with a symbolic link is never
  replayed: a link may lead out of the tree. The root's own path is not in the
  key (a second checkout replays the first's result), so a result that names it
  is not stored.

Why that is every input: a run that computes its result records each file it
opens and each directory it lists inside the root (an audit hook, `watching`; the
runner announces the files its worker processes open), and its result is stored
only when each is covered (`covered`), when the tree's state is the same after the
run as before it, and when the run gave no warning.
``tests/policy_checks/engine/test_replay.py`` records every open, listing and stat
of a run on a small tree and on this repository and checks each is covered; and
that an edit to any input misses the store and gives a cold run's findings.

The store is kept like the facts cache (`store`): under the same private
directory, outside the tree unless git ignores it there; a file is read only when
it is a regular file of this user that nobody else may write, at most `MAX_BYTES`
long, and as JSON, each field checked; one that fails is ignored. A stored
result names its key, and is used only under that key. At most `KEEP` results are
kept, the oldest removed first.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from .. import __version__
from ..model import gitfiles
from ..model.finding import Finding
from . import store
from .baseline import Fingerprint
from .result import Result

FORMAT_KEY = "policy-check-replay"  # the file's top-level key, holding the format's version
FORMAT = 1
DIRECTORY = "replay"  # beside the facts file, in the store's directory (`store.location`)
MAX_BYTES = 16 * 1024 * 1024  # a stored result larger than this is neither written nor read
KEEP = 64  # stored results kept; a save removes the oldest beyond these
ENVIRONMENT = ("GIT_", "POLICY_CHECK_")  # prefixes of the environment variables in the key
PACKAGE = Path(__file__).resolve().parents[1]  # the checker's own package
# what the rules read with a library outside the standard library: workflows (PyYAML), and
# TOML before Python 3.11 (tomli); the module that holds each one's version is in the key
LIBRARIES = ("yaml", "tomli")


@dataclass(frozen=True)
class Plan:
    """The key of one run's inputs, and what storing its result needs."""

    key: str  # hex digest of every input
    root: Path
    directory: Path  # where stored results live
    tree: gitfiles.TreeState
    baseline: Optional[Path]  # the baseline file, None with ``--no-baseline``


def plan(context, select=(), ignore=(), paths=()) -> Optional[Plan]:
    """The key of a run of `context` with these options, or None when it cannot be
    made: no cache, no git work tree, a store another user could write, a baseline
    that cannot be read (the run then reports why)."""
    if not context.use_cache:
        return None
    root = context.root
    where = store.location(root, context.cache_dir)
    directory = where / DIRECTORY
    if store.refusal(root, where, DIRECTORY) or store.private_levels(directory):
        return None
    tree = gitfiles.state(root)
    if tree is None or tree.links:
        return None  # a link may lead out of the tree, where the key does not look
    digest = hashlib.sha256(f"{FORMAT_KEY}\0{FORMAT}\0{__version__}\0{sys.version}\0"
                            f"{sys.implementation.cache_tag}\0".encode())
    digest.update(_checker_digest())
    digest.update(_libraries_digest())
    digest.update(repr((context.settings, context.files, tuple(select), tuple(ignore))).encode())
    for path in paths:
        digest.update(b"\0path\0" + os.fsencode(_relative(root, path)))
    if context.baseline_path is not None:
        from .context import baseline_name

        path = context.baseline_path
        try:
            data = store.read_bounded(Path(path), 64 * 1024 * 1024)
        except FileNotFoundError:
            data = b"absent"
        except (OSError, ValueError):
            return None
        digest.update(b"\0baseline\0" + baseline_name(root, Path(path)).encode("utf-8", "surrogateescape")
                      + b"\0" + hashlib.sha256(data).digest())
    for name in sorted(os.environ):
        if name.startswith(ENVIRONMENT):
            digest.update(f"\0env\0{name}={os.environ[name]}".encode("utf-8", "surrogateescape"))
    digest.update(b"\0tree\0" + tree.digest)
    baseline = Path(os.path.abspath(context.baseline_path)) if context.baseline_path is not None else None
    return Plan(digest.hexdigest(), root, directory, tree, baseline)


def _relative(root: Path, path) -> str:
    """A path given on the command line as the run reads it: relative to the root
    when inside it, else absolute (the run then refuses it)."""
    absolute = Path(path).resolve()
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return str(absolute)


def _checker_digest() -> bytes:
    """A digest of every module of the checker's package, by path and bytes."""
    digest = hashlib.sha256(b"checker\0")
    for directory, subdirectories, files in os.walk(PACKAGE):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, "rb") as handle:
                    digest.update(os.path.relpath(path, PACKAGE).encode() + b"\0" + handle.read() + b"\0")
    return digest.digest()


def _libraries_digest() -> bytes:
    """A digest of the libraries outside the standard library whose reading a rule's
    findings may depend on (`LIBRARIES`): where each module lies and its bytes, found
    without importing it."""
    from importlib.util import find_spec

    digest = hashlib.sha256(b"libraries\0")
    for name in LIBRARIES:
        try:
            spec = find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None)
        digest.update(f"{name}\0{origin}\0".encode("utf-8", "surrogateescape"))
        if origin and os.path.isfile(origin):
            with open(origin, "rb") as handle:
                digest.update(hashlib.sha256(handle.read()).digest())
    return digest.digest()


def replayed(plan: Plan) -> Optional[tuple]:
    """``(Result, rule names)`` stored under `plan`'s key, or None (none stored, or
    one that fails a check)."""
    try:
        data = store.read_bounded(plan.directory / f"{plan.key}.json", MAX_BYTES, owner_only=True)
        stored = json.loads(data)
        if type(stored) is not dict or stored.get(FORMAT_KEY) != FORMAT or stored.get("key") != plan.key:
            return None
        return _result(stored["result"]), _names(stored["names"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remember(plan: Plan, result: Result, names: dict, seen: list) -> bool:
    """Store `result` (and the rule `names` its report shows) under `plan`'s key, when
    the run read nothing the key leaves out (`seen`, from `watching`), the tree is as
    it was when the key was made, and the result is one a replay can give (no
    warnings, no ``--policy-from``). Returns whether it was stored."""
    if result.warnings or result.hidden or result.policy_from is not None:
        return False
    if not covered(plan, seen):
        return False
    after = gitfiles.state(plan.root, before=plan.tree)
    if after is None or after.digest != plan.tree.digest:
        return False  # changed while the run read it: its result is of no one state
    data = json.dumps({FORMAT_KEY: FORMAT, "key": plan.key, "names": names, "result": _data(result)},
                      separators=(",", ":")).encode()
    if len(data) > MAX_BYTES or json.dumps(str(plan.root))[1:-1].encode() in data:
        return False  # too big, or it names the root, which the key leaves out
    import tempfile  # here: a replayed run writes nothing

    try:
        store.private_directories(plan.directory)
        if store.private_levels(plan.directory):
            return False
        fd, temporary = tempfile.mkstemp(dir=plan.directory, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temporary, plan.directory / f"{plan.key}.json")
        except BaseException:
            os.unlink(temporary)
            raise
        _prune(plan.directory)
    except OSError:
        return False
    return True


def _prune(directory: Path) -> None:
    """Remove all but the `KEEP` stored results written last."""
    entries = []
    with os.scandir(directory) as found:
        for entry in found:
            if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                entries.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name))
    for _, name in sorted(entries, reverse=True)[KEEP:]:
        try:
            os.unlink(directory / name)
        except OSError:
            pass


def covered(plan: Plan, seen: list) -> bool:
    """Is each file opened and each directory listed in `seen` one the key covers?
    Inside the root: a file git lists, the baseline, or a path where nothing lies and
    the key says so (`kind_keyed`); the root, or a directory above a listed file. The
    checker's own modules (imported as the run goes) and the store are not the tree.
    Outside the root nothing is checked: a run reads Python's modules there, the
    checker's, and the store (a link that leads out keeps a tree from `plan`)."""
    root = str(plan.root)
    inside = root + os.sep
    own = (str(PACKAGE) + os.sep, str(plan.directory.parent) + os.sep)
    files = directories = None
    for kind, path in seen:
        if isinstance(path, int) or path is None:
            continue  # an open file descriptor, the working directory: nothing named
        path = os.path.abspath(os.fsdecode(path))
        if path == root and kind == "list":
            continue
        if not path.startswith(inside) or path.startswith(own):
            continue
        rel = path[len(inside):].replace(os.sep, "/")
        if files is None:
            files, directories = plan.tree.files(), plan.tree.directories()
        if kind == "open" and (rel in files or (plan.baseline is not None and path == str(plan.baseline))):
            continue
        if kind == "open" and not os.path.lexists(path) and kind_keyed(plan, rel):
            continue  # nothing there: what comes there is named in the key, listed or not
        if kind == "list" and rel in directories:
            continue
        return False
    return True


def kind_keyed(plan: Plan, rel: str) -> bool:
    """Does the key say what kind of entry lies at `rel` (a file, a directory, nothing)?
    So it does for a listed file, a directory above one, and an entry right inside such a
    directory (the tree's state names each such entry, ignored or not); below an entry
    that is neither, only when that entry is missing."""
    directories = plan.tree.directories()
    if rel in directories or rel in plan.tree.files():
        return True
    head = rel
    while head.rpartition("/")[0] not in directories:  # "" (the root) is one: this ends
        head = head.rpartition("/")[0]
    return head == rel or not os.path.lexists(os.path.join(plan.root, head))


_seen: Optional[list] = None  # what the hook records while a run is watched, else None
_hooked = False


def _audit(event: str, args: tuple) -> None:
    seen = _seen
    if seen is None:
        return
    if event in ("open", "policy_checks.read"):  # the second: a file a worker process opens
        seen.append(("open", args[0]))
    elif event in ("os.scandir", "os.listdir"):
        seen.append(("list", args[0]))


@contextmanager
def watching() -> Iterator[Optional[list]]:
    """Record, while inside, each file this process opens and each directory it lists
    (``("open" | "list", path)``); None when no audit hook can be added. The hook is
    added once a process and does nothing outside."""
    global _seen, _hooked
    if not _hooked:
        try:
            sys.addaudithook(_audit)
        except RuntimeError:  # another hook refused it
            yield None
            return
        _hooked = True
    _seen = seen = []
    try:
        yield seen
    finally:
        _seen = None


# a result as JSON, and back, each field checked --------------------------------------


def _data(result: Result) -> dict:
    def findings(items) -> list:
        return [[f.path, f.line, f.column, f.rule, f.message, f.subject] for f in items]

    def prints(items) -> Optional[list]:
        return None if items is None else [list(fp) for fp in items]

    return {
        "findings": findings(result.findings), "files_checked": result.files_checked,
        "fingerprints": prints(result.fingerprints), "baseline": result.baseline,
        "baselined": findings(result.baselined), "baselined_fingerprints": prints(result.baselined_fingerprints),
        "fixed": [[list(fp), n] for fp, n in result.fixed], "no_experimental_package": result.no_experimental_package,
    }


def _result(data: dict) -> Result:
    """The `Result` stored as `data`; ValueError, TypeError or KeyError for anything else."""
    fingerprints = data["fingerprints"]
    return Result(
        findings=_findings(data["findings"]), files_checked=_int(data["files_checked"]),
        fingerprints=None if fingerprints is None else _prints(fingerprints), baseline=_text_or_none(data["baseline"]),
        baselined=_findings(data["baselined"]), baselined_fingerprints=_prints(data["baselined_fingerprints"]),
        fixed=[(_print(fp), _int(n)) for fp, n in _list(data["fixed"])],
        no_experimental_package=_text_or_none(data["no_experimental_package"]),
    )


def _findings(items) -> list:
    found = []
    for item in _list(items):
        path, line, column, rule, message, subject = _list(item)
        found.append(Finding(_text(path), _int(line), _int(column), _text(rule), _text(message), _text(subject)))
    return found


def _prints(items) -> list:
    return [_print(item) for item in _list(items)]


def _print(item) -> Fingerprint:
    rule, module, scope, subject = _list(item)
    return Fingerprint(_text(rule), _text(module), _text(scope), _text(subject))


def _names(items) -> dict:
    if type(items) is not dict:
        raise TypeError("rule names")
    return {_text(k): _text(v) for k, v in items.items()}


def _list(value) -> list:
    if type(value) is not list:
        raise TypeError("a list")
    return value


def _text(value) -> str:
    if type(value) is not str:
        raise TypeError("a string")
    return value


def _text_or_none(value) -> Optional[str]:
    return None if value is None else _text(value)


def _int(value) -> int:
    if type(value) is not int or value < 0:
        raise TypeError("a count")
    return value
