"""Every feature of a real FlashInfer release through ``policy-check remove`` and
``policy-check graduate``, each run checked against the lifecycle commands' promises.

    python benchmarks/lifecycle_release.py [--tree DIR] [--features a,b] [--commands remove,graduate]
        [--home TEMPLATE] [--jobs N] [--python PY] [--workdir DIR] [--keep] [--copy-all]
        [--checker-no-cache] [--json FILE]

TREE defaults to FlashInfer 0.7.4's wheel unzipped at /tmp/fi074/tree
(``pip download --no-deps flashinfer-python==0.7.4``, unzip; never installed). The
features are the directories of ``flashinfer/experimental/``. The tree is copied once
into ``WORKDIR/base``, a git repository with one commit and a ``pyproject.toml`` holding
``[tool.policy-check]`` (the defaults: FlashInfer's layout); a later run with the same
``--workdir`` reuses that base and its import survey. Each trial (a feature and a
command; ``graduate --to flashinfer.FEATURE``, or ``--home`` with ``{feature}`` replaced)
gets a copy of the base inside a fresh parent directory that holds only a sentinel file:
its files copied, ``flashinfer/data`` hard-linked (``--copy-all`` copies it too), a git
repository of its own reading the base's objects. The command runs there with ``--diff``,
then for real (in a fresh copy when --diff wrote); the working directory of a run is the
parent and ``--root`` the copy, so that a stray relative write lands where it is seen.
Then, as pass / FAIL / n.a. with the reason:

    agree    the --diff run's exit status is the real run's
    pure     the --diff run wrote nothing
    clean    refused (exit 1) or failed (2): the copy is byte for byte the base, and
             ``git status --porcelain -uall`` is empty
    patch    done (exit 0): ``git apply`` of the --diff output to the base gives exactly the
             real run's files (bytes and executable bits; ``__pycache__`` ignored). Only
             the files the patch names or the run touched can differ, so the patch is
             applied to a scratch folder holding those files of the base
    outside  nothing changed in the copies' parent directories but the copies, nor in the
             base (a write through a hard link would; later trials are then not run)
    checker  done: ``policy-check run`` on the result reports no (rule, path, message) that
             it did not report on the base (new EXP001 findings are counted apart); they
             are listed for a person to judge: a graduated module's findings move with it
    imports  done: every module of the tree that imported before still imports after
             (below)
    unused   done: no import the run made unused is left in an edited module, at module
             level (package ``__init__`` files and names other files import from it aside)
             or in a function body (benchmarks/unused_imports.py)
    baseline a removal done: the base's ``policy-check-baseline.json`` (written by
             ``policy-check baseline`` when the base is made) holds no entry of the feature
             or of a file the run deleted
    markers  a graduation done: no marker of the feature is left (``@flashinfer_experimental_api``
             or ``@experimental_backend`` on a definition, a class setting ``is_experimental
             = True``, a ``require_experimental*`` gate call) in the moved code or on the
             feature's entry points (core definitions around an import of the feature's old
             path or new home, or whose marker says ``feature="FEATURE"``), read with the
             checker's own readers (policy_checks/model/markers.py, facts.py); one left passes only
             when the printed checklist leaves step 3 unticked and names its place

Speed: a cold ``policy-check run`` of the base (no cache, default jobs) is timed once in
every benchmark run, and each trial's ratio to it ("x cold": the slower of its --diff and
real runs) is printed, with the median and maximum for done and refused trials and how
many exceed the targets (3x done, 1x refused).

Byte comparisons hash a file only when its stat (size, mtime, ctime, inode, mode)
differs from the copy's own right after copying: any write changes the ctime, which no
``utime`` can set back. Empty directories are not compared.

Imports. Once per base, on a throwaway copy (importing FlashInfer's ``build_backend``
rewrites ``flashinfer/_build_meta.py``), every module of the tree (its top-level
packages, ``flashinfer`` and ``b12x``, all their submodules, the top-level ``.py`` files)
is imported with ``--python`` (default /tmp/fi074/venv/bin/python; without it the
invariant is n.a.), the copy's root first on ``sys.path``: a process preloads torch and
the heavy third-party packages and forks one process per top-level package, which
imports it (the modules this loads are "preloaded") and then the other modules one after
the other in a forked child; a module past the timeout, or whose import kills its child,
fails and a new child goes on after it. While the child imports, each file opened (an
audit hook on ``open``) and each tree module named by an import statement or
``importlib.import_module`` is recorded against the tree module whose code ran it: an
edge from its file. Where torch has no CUDA, its device queries answer for one
stand-in GPU (`stand_in_device`: sm_100, 148 SMs; ``is_available()`` stays False), so
that modules reading the device at import (FlashInfer 0.7.0's ``import flashinfer``
does) are judged too. On this CPU-only machine many modules still fail; they are left out.

After a command, in the changed copy once the other checks are done, the imports that
the touched (changed or deleted) files may break are tried again: each top-level package
whose import read one (and each module it had preloaded, which costs nothing unless it
is no longer loaded); each other module that imported and whose file reaches one through
the edges; each module of a created file. A batch failure is retried alone, and a module
failing alone is imported alone on a copy of the base too (one that fails there as well
is "unsteady": it imported only after others in the survey). A failure of a module that
imported before (the modules below a failing package count as broken too), or of a
graduated module whose experimental original imported, is a violation, with its
exception line. Modules whose own file was deleted are gone (``remove`` deletes them,
``graduate`` moves them). The edges miss what an import reaches without naming it (an
object that a preloaded module hands over, say): a break there goes unseen.

The venv at /tmp/fi074/venv (python3 -m venv; FlashInfer itself is not installed there,
the tree is put on ``sys.path``) holds, from the wheel's Requires-Dist: torch==2.13.0
(the CPU build on disk), apache-tvm-ffi, click, cuda-python (cuda-bindings 13), cuda-tile,
einops, nccl-extensions, nccl4py, ninja, numpy, nvidia-ml-py, nvidia-cutlass-dsl (with its
cu12 libs, about 95 MB), nvidia-cudnn-frontend (--no-deps: its cu13 libs would be another
92 MB), packaging, requests, tabulate, tqdm, and b12x's extra rich and safetensors. Not
installed: the ``cu13``, ``ptx`` and ``sm107`` extras (nvcc, nvshmem). So modules that need a
GPU, nvcc or those packages fail before any command and are not judged, as do those
needing triton (no Requires-Dist of the wheel), tvm or nvshmem. With this venv, 2,965 of
the 0.7.4 tree's 3,562 modules import (464 of them loaded by ``import flashinfer`` or
``import b12x``); the survey took 2 minutes on a busy 2-core machine.

The checker runs with a facts cache of its own under WORKDIR (keyed by file bytes, so
warm after the base run); ``--checker-no-cache`` runs it cold each time. Progress goes to
stderr; the table, the violations' details and a summary to stdout; ``--json FILE`` writes
the record (benchmarks/bench_record.py), rewritten after each trial. The exit status is
0 whatever the invariants say (the table is the finding), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import ast
import collections
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling modules, however it is loaded
import unused_imports  # noqa: E402

DEFAULT_TREE = Path("/tmp/fi074/tree")
DEFAULT_PYTHON = Path("/tmp/fi074/venv/bin/python")
DEFAULT_HOME = "flashinfer.{feature}"
COMMANDS = ("remove", "graduate")
INVARIANTS = ("agree", "pure", "clean", "patch", "outside", "checker", "imports", "unused", "baseline", "markers")
BASE_VERSION = 2  # 2: the base holds the checker's baseline of the release (the "baseline" invariant)
BASELINE = "policy-check-baseline.json"
EXPERIMENTAL_DIR = "flashinfer/experimental"
PYPROJECT = ("# Written by benchmarks/lifecycle_release.py: the checker's settings, all defaults\n"
             "# (FlashInfer's own layout), so that the checker finds this root.\n"
             "[tool.policy-check]\n")
SENTINEL = "SENTINEL"
COPY = "tree"
#: Folders of the base hard-linked into each copy instead of copied (``--copy-all`` copies
#: them): FlashInfer's kernel sources, 451 of the 0.7.4 wheel's 717 MB, which the checker
#: excludes. A write through a link would change the base: each trial checks it did not.
LINKED = ("flashinfer/data",)
#: Third-party packages the import probe loads before it forks (failures are ignored).
PRELOAD = ("torch", "numpy", "cutlass", "cutlass.cute", "tvm_ffi", "cuda.bindings.driver", "einops")
MODULE_TIMEOUT_S = 180
PROBE_VERSION = 2
PASS, FAIL, NA = "pass", "FAIL", "n.a."


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- trees: copies and byte snapshots ----------------------------------------------------------

def _stat_key(st: os.stat_result) -> tuple:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def _digest(path: str) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _walk(root: Path):
    """(relative path, absolute path, stat) of every file below `root`, git's folder and
    ``__pycache__`` left out; a symbolic link counts as a file (its target is not read)."""
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in (".git", "__pycache__")]
        rel_dir = os.path.relpath(directory, root)
        for name in files:
            path = os.path.join(directory, name)
            rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            yield rel, path, os.lstat(path)


@dataclass
class Snapshot:
    """The files of a tree: relative path -> (stat key, sha1, executable)."""

    files: dict

    @classmethod
    def take(cls, root: Path, reference: Snapshot | None = None) -> Snapshot:
        """Hash each file unless `reference` (a snapshot of this very directory) has it
        with the same stat: unchanged bytes, since a write moves the ctime."""
        files = {}
        for rel, path, st in _walk(root):
            key = _stat_key(st)
            known = reference.files.get(rel) if reference else None
            if known is not None and known[0] == key:
                files[rel] = known
            elif stat.S_ISLNK(st.st_mode):
                files[rel] = (key, "link:" + os.readlink(path), False)
            else:
                files[rel] = (key, _digest(path), bool(st.st_mode & 0o111))
        return cls(files)

    def restat(self, root: Path) -> Snapshot:
        """This snapshot's contents under a fresh copy at `root` (``cp -a``), with the
        copy's own stat keys: the reference that later snapshots of the copy hash against."""
        files = {}
        for rel, _, st in _walk(root):
            if rel not in self.files or self.files[rel][0][0] != st.st_size:
                raise RuntimeError(f"{root}: the copy differs from its base at {rel}")
            files[rel] = (_stat_key(st), *self.files[rel][1:])
        if len(files) != len(self.files):
            raise RuntimeError(f"{root}: the copy lacks {len(self.files) - len(files)} file(s) of its base")
        return Snapshot(files)

    def contents(self) -> dict:
        return {rel: value[1:] for rel, value in self.files.items()}


@dataclass
class Delta:
    created: list
    changed: list
    deleted: list

    @property
    def empty(self) -> bool:
        return not (self.created or self.changed or self.deleted)

    def touched(self) -> set:
        return set(self.created) | set(self.changed) | set(self.deleted)

    def summary(self, limit: int = 3) -> str:
        parts = []
        for what, paths in (("created", self.created), ("changed", self.changed), ("deleted", self.deleted)):
            if paths:
                more = f" (+{len(paths) - limit})" if len(paths) > limit else ""
                parts.append(f"{what} {', '.join(paths[:limit])}{more}")
        return "; ".join(parts) or "no change"


def compare(before: Snapshot, after: Snapshot) -> Delta:
    old, new = before.contents(), after.contents()
    return Delta(created=sorted(set(new) - set(old)), deleted=sorted(set(old) - set(new)),
                 changed=sorted(rel for rel in set(old) & set(new) if old[rel] != new[rel]))


def git(root: Path, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], input=data, capture_output=True)


def tree_fingerprint(tree: Path) -> str:
    """Cheap identity of a tree: every file's path, size and mtime."""
    h = hashlib.sha1()
    for rel, _, st in sorted(_walk(tree)):
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def make_base(tree: Path, base: Path) -> None:
    """`tree` copied to `base`, a git repository with one commit of every file (global
    ignores do not apply) and the checker's settings in ``pyproject.toml``."""
    if base.exists():
        shutil.rmtree(base)
    subprocess.run(["cp", "-a", str(tree), str(base)], check=True)
    pyproject = base / "pyproject.toml"
    text = pyproject.read_text() if pyproject.exists() else ""
    if "[tool.policy-check]" not in text:
        pyproject.write_text(text + ("\n" if text else "") + PYPROJECT)
    run = lambda *args: subprocess.run(["git", "-C", str(base), *args], check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    for key, value in (("user.name", "lifecycle-release"), ("user.email", "lifecycle-release@localhost"),
                       ("core.excludesFile", os.devnull), ("core.checkStat", "minimal"),
                       ("core.trustctime", "false"), ("gc.auto", "0")):
        run("config", key, value)  # copies made with cp -a keep the index valid without a rehash
    baselined = policy_check(["baseline", "--root", str(base)], base)  # today's findings, as a tree adopting the checker
    if baselined.exit != 0:
        raise RuntimeError(f"policy-check baseline failed ({baselined.exit}): {baselined.stderr[-1500:]}")
    run("add", "-A", "-f")
    run("commit", "-q", "-m", f"the release tree, unchanged but for pyproject.toml and {BASELINE}")


@dataclass
class Copy:
    parent: Path
    root: Path
    reference: Snapshot
    parent_entries: dict

    def outside_changes(self) -> list:
        """What changed in the parent directory besides the copy itself."""
        now, then = _parent_state(self.parent), self.parent_entries
        notes = []
        for name in sorted(set(now) | set(then)):
            if name not in then:
                notes.append(f"{name} (new)")
            elif name not in now:
                notes.append(f"{name} (gone)")
            elif now[name] != then[name]:
                notes.append(f"{name} (changed)")
        return notes


def _parent_state(parent: Path) -> dict:
    state = {}
    for entry in os.scandir(parent):
        if entry.name == COPY:
            state[entry.name] = "copy"
        elif entry.is_file(follow_symlinks=False):
            state[entry.name] = Path(entry.path).read_bytes()
        else:
            state[entry.name] = "other"
    return state


def make_copy(base: Path, snapshot: Snapshot, workdir: Path, label: str, linked=LINKED) -> Copy:
    """A separate copy of the base in a fresh parent directory holding a sentinel file: its
    files copied with their times (the folders `linked` hard-linked instead), and a git
    repository of its own whose objects are read from the base's (``objects/info/alternates``;
    git never writes there)."""
    parent = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=workdir))
    (parent / SENTINEL).write_text(f"{label}: nothing but {COPY}/ may change beside this file\n")
    root, links = parent / COPY, tuple(os.path.join(base, folder) + os.sep for folder in linked)

    def copy(source, target):
        if source.startswith(links):
            os.link(source, target)
        else:
            shutil.copy2(source, target)

    top = lambda skip: lambda folder, names: [skip] if Path(folder) in (base, base / ".git") else []  # noqa: E731
    shutil.copytree(base, root, symlinks=True, copy_function=copy, ignore=top(".git"))
    shutil.copytree(base / ".git", root / ".git", symlinks=True, ignore=top("objects"))
    (root / ".git/objects/info").mkdir(parents=True)
    (root / ".git/objects/pack").mkdir()
    (root / ".git/objects/info/alternates").write_text(f"{base / '.git/objects'}\n")
    return Copy(parent, root, snapshot.restat(root), _parent_state(parent))


# --- the commands ------------------------------------------------------------------------------

@dataclass
class Run:
    exit: int
    seconds: float
    stdout: bytes
    stderr: str


CHECKOUT = Path(__file__).resolve().parents[1]  # the policy_checks measured: this checkout's


def policy_check(args: list, cwd: Path, timeout: float = 3600) -> Run:
    """``policy-check ARGS`` as a process of this interpreter, with this checkout's
    policy_checks (whatever is installed)."""
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "policy_checks", *args], cwd=cwd, capture_output=True,
                              timeout=timeout, env=_clean_env(PYTHONPATH=str(CHECKOUT)))
    except subprocess.TimeoutExpired as expired:
        return Run(-9, time.perf_counter() - start, expired.stdout or b"", f"timed out after {timeout:.0f} s")
    return Run(done.returncode, time.perf_counter() - start, done.stdout, done.stderr.decode("utf-8", "replace"))


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME")}
    return {**env, **extra}


def command_args(command: str, feature: str, home: str) -> list:
    if command == "remove":
        return ["remove", feature]
    return ["graduate", feature, "--to", home.format(feature=feature)]


# --- invariants --------------------------------------------------------------------------------

@dataclass
class Check:
    status: str
    detail: str = ""
    data: dict = field(default_factory=dict)


def check_agree(diff_exit: int, real_exit: int) -> Check:
    if diff_exit == real_exit:
        return Check(PASS, f"both exit {real_exit}")
    return Check(FAIL, f"--diff exit {diff_exit}, real run exit {real_exit}")


def check_unchanged(copy: Copy, what: str) -> Check:
    """`copy` is still byte for byte the base, and git sees no change in it."""
    after = Snapshot.take(copy.root, copy.reference)
    delta = compare(copy.reference, after)
    status = git(copy.root, "status", "--porcelain", "--ignored=no", "-uall")
    problems = []
    if not delta.empty:
        problems.append(delta.summary())
    if status.returncode != 0:
        problems.append(f"git status failed: {status.stderr.decode(errors='replace').strip()}")
    elif status.stdout.strip():
        lines = status.stdout.decode(errors="replace").splitlines()
        problems.append(f"git status: {'; '.join(lines[:3])}" + (f" (+{len(lines) - 3})" if len(lines) > 3 else ""))
    if problems:
        return Check(FAIL, f"{what}: " + " | ".join(problems), asdict(delta))
    return Check(PASS, f"{what}: unchanged")


def check_patch(patch: bytes, base: Path, run: Delta, expected: Snapshot, workdir: Path) -> Check:
    """``git apply`` of `patch` to the base gives `expected`, the tree of the real run (whose
    changes are `run`). A file that neither the patch nor the run touches is the base's in
    both, so the patch is applied to a scratch folder holding only the base's files among
    those the patch names or the run touched, and the two are compared on those."""
    with tempfile.TemporaryDirectory(prefix="patched-", dir=workdir) as scratch:
        env = {**os.environ, "GIT_CEILING_DIRECTORIES": scratch}  # no repository around: a plain patch

        def apply(*args) -> subprocess.CompletedProcess:
            return subprocess.run(["git", "apply", *args, "-"], input=patch, cwd=scratch, capture_output=True, env=env)

        def failed(done) -> Check:
            return Check(FAIL, "git apply failed: " + done.stderr.decode(errors="replace").strip()[:600])

        paths = run.touched()
        if patch.strip():
            listed = apply("--numstat", "-z")
            if listed.returncode:
                return failed(listed)
            paths |= _numstat_paths(listed.stdout)
        for rel in paths:
            if (base / rel).is_file():
                (Path(scratch) / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(base / rel, Path(scratch) / rel)
        if patch.strip():
            applied = apply("--whitespace=nowarn")
            if applied.returncode:
                return failed(applied)
        got = Snapshot.take(Path(scratch))
    want = Snapshot({rel: value for rel, value in expected.files.items() if rel in paths})
    delta = compare(want, got)  # what the patch did that the real run did not
    if delta.empty:
        lines = patch.count(b"\n")
        return Check(PASS, f"the {lines}-line patch gives the real run's tree ({len(paths)} files)")
    return Check(FAIL, "patched vs real run: only in patched: {} | only in real: {} | differ: {}".format(
        _few(delta.created), _few(delta.deleted), _few(delta.changed)), asdict(delta))


def _numstat_paths(listing: bytes) -> set:
    """The paths of ``git apply --numstat -z``: "added TAB deleted TAB path NUL", or for a
    rename "added TAB deleted TAB NUL old NUL new NUL"."""
    fields, paths = listing.decode("utf-8", "surrogateescape").split("\0"), set()
    while fields:
        head = fields.pop(0)
        if not head:
            continue
        path = head.split("\t", 2)[2]
        if path:
            paths.add(path)
        else:
            paths.update(fields[:2])
            del fields[:2]
    return paths


def _few(items, limit: int = 3) -> str:
    items = list(items)
    if not items:
        return "-"
    return ", ".join(items[:limit]) + (f" (+{len(items) - limit})" if len(items) > limit else "")


def check_outside(copies: list, base: Path, snapshot: Snapshot) -> Check:
    """Nothing changed beside the copies, nor in the base (which their linked files share)."""
    changed = [f"{copy.parent.name}/{entry}" for copy in copies for entry in copy.outside_changes()]
    in_base = compare(snapshot, Snapshot.take(base, snapshot))
    if not in_base.empty:
        changed.append(f"the base repository: {in_base.summary()}")
    data = {"base_changed": not in_base.empty}
    if changed:
        return Check(FAIL, "changed: " + _few(changed), data)
    return Check(PASS, "parent directories and base untouched", data)


def check_unused(base: Path, root: Path, delta: Delta) -> Check:
    """No import that the run made unused is left in a kept, edited module
    (benchmarks/unused_imports.py: module level and in function bodies)."""
    left = []
    for rel in delta.changed:
        if rel.endswith(".py"):
            left += unused_imports.made_unused(rel, (base / rel).read_bytes(), (root / rel).read_bytes(),
                                               lambda name, rel=rel: _imported_from(root, rel, name))
    if left:
        return Check(FAIL, f"{len(left)} imports made unused are left: {_few(left)}", {"left": left})
    return Check(PASS, f"no import made unused in {sum(r.endswith('.py') for r in delta.changed)} edited modules")


def _imported_from(root: Path, rel: str, name: str) -> bool:
    """Does a file of the tree import `name` from the module at `rel` (``from ...last
    import ... name``, or ``last.name``)? A ``git grep`` of the copy."""
    last = rel[:-3].rpartition("/")[2]
    pattern = rf"\b{last}[[:space:]]+import\b.*\b{name}\b|\b{last}\.{name}\b"
    found = git(root, "grep", "-q", "-E", pattern, "--", "*.py", f":!{rel}")
    return found.returncode == 0


def _checker():
    """The checker's own readers (this checkout's), for the marker invariant."""
    if str(CHECKOUT) not in sys.path:
        sys.path.insert(0, str(CHECKOUT))
    from policy_checks.model import facts, markers

    return facts, markers


def check_markers(root: Path, feature: str, experimental: str, home: str, delta: Delta, output: str) -> Check:
    """After a graduation, no marker of the feature is left in the moved code (the files
    created under the home's folder) or on the feature's entry points in the other
    ``.py`` files that name the feature (``git grep``); one that is left must be named
    under an unticked step 3 of the printed checklist (`output`)."""
    facts_mod, markers = _checker()
    old, home_dir = f"{experimental}.{feature}", home.replace(".", "/")
    moved = {rel for rel in delta.created if rel.endswith(".py") and (rel + "/").startswith(home_dir + "/")
             or rel == home_dir + ".py"}
    named = git(root, "grep", "-l", "--untracked", "-F", feature, "--", "*.py", f":!{experimental.replace('.', '/')}/")
    files = moved | set(named.stdout.decode("utf-8", "surrogateescape").splitlines())
    left = []
    for rel in sorted(files):
        data = (root / rel).read_bytes()
        parts = rel[:-3].split("/")
        package = parts[-1] == "__init__"
        facts = facts_mod.extract(data, ".".join(parts[:-1] if package else parts), package)
        if facts.syntax_error is not None:
            continue
        if rel in moved:
            owned = None  # everything in the moved code is the feature's
        else:
            owned = {imp.functions[0] for imp in facts.imports
                     if imp.scope == facts_mod.FUNCTION and imp.functions and imp.module
                     and any(_module_under(m, target) for target in (old, home)
                             for m in (imp.module, *(f"{imp.module}.{n}" for n, _ in imp.names)))}
            owned |= {q.rpartition(".")[0] for q in owned if "." in q}  # a method's class goes whole
        mine = lambda qualname: owned is None or any(  # noqa: E731
            qualname == q or qualname.startswith(q + ".") for q in owned)
        for marked, node in markers.marked_nodes(data) or ():
            if marked.kind in markers.EXPERIMENTAL_KINDS and (mine(marked.qualname) or _says_feature(node, feature)):
                left.append((rel, marked.line, f"{marked.qualname} marked {marked.kind}"))
        for definition in facts.definitions.values():
            if definition.kind == "class" and definition.flagged and mine(definition.qualname):
                left.append((rel, definition.line, f"class {definition.qualname} sets {markers.EXPERIMENTAL_FLAG}"))
        for scope, line in markers.gate_calls(data) or ():
            if (scope and mine(scope)) or owned is None or _gate_names(data, line, feature):
                left.append((rel, line, f"a gate call in {scope or 'the module'}"))
    places = [f"{rel}:{line}: {what}" for rel, line, what in left]
    if not left:
        return Check(PASS, f"no marker of {feature} left in {len(files)} files", {"files": len(files)})
    ticked = re.search(r"^\[x\] 3\.", output, re.M) is not None
    person = [line for line in output.splitlines() if "for a person:" in line]
    unnamed = [p for (rel, line, _), p in zip(left, places) if not any(f"{rel}:{line}" in item for item in person)]
    data = {"left": places, "step3_ticked": ticked, "unnamed": unnamed}
    if ticked:
        return Check(FAIL, f"step 3 ticked but {len(left)} markers left: {_few(places)}", data)
    if unnamed:
        return Check(FAIL, f"{len(unnamed)} markers left and not named by the checklist: {_few(unnamed)}", data)
    return Check(PASS, f"{len(left)} markers left, step 3 unticked and each named", data)


def _module_under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _says_feature(node, feature: str) -> bool:
    """Does a decorator (or ``x = marker(...)(f)``) of `node` pass ``feature="FEATURE"``?"""
    calls = list(getattr(node, "decorator_list", ()))
    value = getattr(node, "value", None)
    while isinstance(value, ast.Call):
        calls.append(value)
        value = value.func
    return any(isinstance(c, ast.Call) and any(k.arg == "feature" and isinstance(k.value, ast.Constant)
                                               and k.value.value == feature for k in c.keywords) for c in calls)


def _gate_names(data: bytes, line: int, feature: str) -> bool:
    """Does a gate call on `line` pass the feature's name (exactly: ``cake_stepfun`` is
    another feature than ``cake``)?"""
    tree = ast.parse(data)
    return any(isinstance(node, ast.Call) and node.lineno == line and any(
        isinstance(a, ast.Constant) and a.value == feature
        for a in (*node.args, *(k.value for k in node.keywords))) for node in ast.walk(tree))


def check_baseline(root: Path, feature: str, experimental: str, delta: Delta) -> Check:
    """After a removal, the baseline holds no entry of what went: the feature's modules
    and directory, and every file the run deleted."""
    path = root / BASELINE
    if not path.is_file():
        return Check(NA, f"no {BASELINE}")
    gone = set(delta.deleted) | {rel[:-3].replace("/", ".").removesuffix(".__init__")
                                 for rel in delta.deleted if rel.endswith(".py")}
    module, folder = f"{experimental}.{feature}", f"{experimental.replace('.', '/')}/{feature}"
    entries = json.loads(path.read_bytes())["entries"]
    stale = sorted({e["module"] for e in entries if e["module"] in gone or e["module"] == module
                    or e["module"].startswith(module + ".") or e["module"].startswith(folder + "/")})
    if stale:
        return Check(FAIL, f"{len(stale)} entries of what went are left: {_few(stale)}", {"stale": stale})
    return Check(PASS, f"{len(entries)} entries, none of {feature}")


def finding_keys(report: dict) -> collections.Counter:
    return collections.Counter((f["rule"], f["path"], f["message"]) for f in report["findings"])


def check_findings(before: collections.Counter, after: collections.Counter) -> Check:
    """No finding (rule, path, message) that the base did not have."""
    new = sorted((after - before).elements())
    gone = sum((before - after).values())
    exp001 = sum(1 for rule, _, _ in new if rule == "EXP001")
    data = {"new": [list(key) for key in new], "gone": gone, "new_exp001": exp001}
    if new:
        shown = "; ".join(f"{rule} {path}: {message[:120]}" for rule, path, message in new[:3])
        more = f" (+{len(new) - 3})" if len(new) > 3 else ""
        return Check(FAIL, f"{len(new)} new ({exp001} EXP001), {gone} gone: {shown}{more}", data)
    return Check(PASS, f"no new finding, {gone} gone", data)


def run_checker(root: Path, cache: Path | None) -> dict:
    args = ["run", "--root", str(root), "--format", "json", "--exit-zero", "--no-baseline", "--jobs", "1"]
    args += ["--cache-dir", str(cache)] if cache else ["--no-cache"]
    done = policy_check(args, root)
    if done.exit != 0:
        raise RuntimeError(f"policy-check run failed ({done.exit}): {done.stderr[-1500:]}")
    return json.loads(done.stdout)


# --- imports -----------------------------------------------------------------------------------

def tree_modules(root: Path, paths=None) -> dict:
    """module name -> relative path of its file, for the importable ``.py`` files of the
    tree (or of `paths` only): top-level packages (folders with ``__init__.py``), every
    module and namespace folder below them with identifier names, and top-level modules."""
    def name_of(rel: str):
        parts = rel[:-3].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        if not parts or not all(p.isidentifier() for p in parts):
            return None
        if "/" in rel and not (root / parts[0] / "__init__.py").is_file():
            return None  # below a top-level folder that is no package
        return ".".join(parts)

    rels = paths if paths is not None else (rel for rel, _, _ in _walk(root))
    modules = {}
    for rel in rels:
        if rel.endswith(".py") and "__pycache__" not in rel.split("/"):
            name = name_of(rel)
            if name:
                modules[name] = rel
    return dict(sorted(modules.items()))


def _group(module: str, rel: str) -> str:
    """Where a module is imported: after its top-level package, or alone ("") for a
    top-level module file."""
    return module.split(".")[0] if "/" in rel else ""


def _packages(module: str) -> list:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


@dataclass
class Survey:
    """What imported. Per top-level package: its import's outcome, the files it read, the
    modules it loaded ("preloaded"). Per module: its outcome. Per tree file that ran at
    import: the tree files it reached directly (see `probe`)."""

    groups: dict
    modules: dict
    edges: dict = field(default_factory=dict)
    seconds: float = 0.0
    reused: bool = False

    def ok(self) -> list:
        return [m for m, r in self.modules.items() if r["ok"]]

    def reaching(self, files: set) -> set:
        """The files whose import reaches one of `files`, directly or through others (and
        `files` themselves)."""
        back = collections.defaultdict(set)
        for source, targets in self.edges.items():
            for target in targets:
                back[target].add(source)
        seen, todo = set(files), list(files)
        while todo:
            for source in back.get(todo.pop(), ()):
                if source not in seen:
                    seen.add(source)
                    todo.append(source)
        return seen


def run_probe(python: Path, root: Path, modules: dict, log_path: Path, progress: bool = False,
              preload=PRELOAD, timeout: float = MODULE_TIMEOUT_S, groups=(), mode: str = "batch") -> Survey:
    """Import `modules` (name -> relative path) of the tree at `root` with `python`, in this
    file's probe mode (`probe`); `groups` adds top-level packages to import even with none
    of their modules named. `mode`: "batch" (the survey), "confirm" (a failure is retried
    alone), "isolated" (each module alone)."""
    request_groups = {top: [] for top in groups}
    for module, rel in modules.items():
        request_groups.setdefault(_group(module, rel), []).append(module)
    if "" in request_groups:  # last: FlashInfer's build_backend rewrites flashinfer/_build_meta.py when imported
        request_groups[""] = request_groups.pop("")
    request = {"root": str(root), "preload": list(preload), "timeout": timeout, "groups": request_groups,
               "mode": mode}
    start, last = time.perf_counter(), time.perf_counter()
    survey = Survey({}, {})
    edges = collections.defaultdict(set)
    with open(log_path, "ab") as errors:
        process = subprocess.Popen([str(python), "-B", str(Path(__file__).resolve()), "--import-probe"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, cwd=root,
                                   env=_clean_env(PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1",
                                                  PYTHONNOUSERSITE="1"))
        process.stdin.write(json.dumps(request).encode())
        process.stdin.close()
        for line in process.stdout:
            record = json.loads(line)
            if record.pop("kind") == "group":
                survey.groups[record.pop("top")] = record
                continue
            for source, targets in record.pop("edges", {}).items():
                edges[source].update(targets)
            module = record.pop("module")
            survey.modules[module] = {**record, "group": record.pop("top"), "path": modules[module]}
            if progress and time.perf_counter() - last > 60:
                last = time.perf_counter()
                ok = sum(r["ok"] for r in survey.modules.values())
                log(f"  imports: {len(survey.modules)} of {len(modules)} tried, {ok} import, "
                    f"{last - start:.0f} s (now {module})")
        process.wait()
    for module in set(modules) - set(survey.modules):  # the probe died: say so instead of calling them broken
        survey.modules[module] = {"ok": False, "error": f"the probe exited {process.returncode} first",
                                  "group": _group(module, modules[module]), "path": modules[module],
                                  "preloaded": False, "probe_error": True}
    survey.edges = {source: sorted(targets) for source, targets in sorted(edges.items())}
    survey.seconds = time.perf_counter() - start
    return survey


def load_survey(path: Path) -> Survey | None:
    try:
        data = json.loads(path.read_text())
        return Survey(data["groups"], data["modules"], data["edges"], data["seconds"], reused=True)
    except (OSError, ValueError, KeyError):
        return None


def save_survey(survey: Survey, path: Path) -> None:
    path.write_text(json.dumps({"groups": survey.groups, "modules": survey.modules, "edges": survey.edges,
                                "seconds": survey.seconds}))


def import_candidates(survey: Survey, copy_root: Path, delta: Delta) -> tuple[dict, list, list]:
    """What to import again after a command: (modules -> path, the gone ones, the top-level
    packages to import again). A package whose import read a touched (changed or deleted)
    file is imported again, and each module it had loaded checked (cheap: only those it
    no longer loads are imported); another module that imported, when its file reaches a
    touched file (`Survey.reaching`); a module of a created file, always. A module whose
    own file was deleted is gone."""
    touched, deleted = delta.touched(), set(delta.deleted)
    groups = sorted(top for top, g in survey.groups.items() if g["ok"] and set(g["files"]) & touched)
    reaching = survey.reaching(touched)
    again, gone = {}, []
    for module, record in survey.modules.items():
        if not record["ok"]:
            continue
        if (record["group"] in groups if record["preloaded"] else record["path"] in reaching):
            if record["path"] in deleted:
                gone.append(module)
            else:
                again[module] = record["path"]
    again.update(tree_modules(copy_root, delta.created))
    return again, sorted(gone), groups


def check_imports(survey: Survey, python: Path, copy_root: Path, delta: Delta, log_path: Path,
                  renames: tuple | None = None, preload=PRELOAD, on_base=None) -> Check:
    """Every module that imported on the base and may have been touched still imports in
    the changed tree (`import_candidates`); failures are retried alone. `renames` is (old
    prefix, new prefix): a created module whose original imported must import too.
    `on_base` (modules -> Survey) imports the failing ones alone on the base: one that
    fails there too is unsteady (it imported only after others), not broken."""
    again, gone, groups = import_candidates(survey, copy_root, delta)
    if not again and not groups:
        return Check(PASS, f"none to import again ({len(gone)} gone)", {"gone": gone})
    after = run_probe(python, copy_root, again, log_path, preload=preload, groups=groups, mode="confirm")
    broken, new_failing = {}, []
    for top, record in after.groups.items():
        if survey.groups.get(top, {}).get("ok") and not record["ok"]:
            broken[top] = record["error"]
    for module, record in after.modules.items():
        if record["ok"]:
            continue
        if module in survey.modules:
            broken[module] = record["error"]
            continue
        original = None
        if renames and (module == renames[1] or module.startswith(renames[1] + ".")):
            original = renames[0] + module[len(renames[1]):]
        if original and survey.modules.get(original, {}).get("ok"):
            broken[module] = f"{record['error']} (as {original} it imported)"
        else:
            new_failing.append(f"{module}: {record['error']}")
    unsteady = []
    first = {m: survey.modules[m]["path"] for m, error in broken.items()
             if m in survey.modules and not error.startswith("its package ")}  # not those its package explains
    if first and on_base is not None:
        before = on_base(first)
        unsteady = sorted(m for m, r in before.modules.items() if not r["ok"])
        for module in list(broken):
            if module in unsteady or any(broken[module].startswith(f"its package {u} failed") for u in unsteady):
                del broken[module]
    # a package that fails takes the modules below it along, imported again or not
    below = [m for m in survey.ok() if m not in broken and m not in gone
             and any(p in broken for p in [survey.modules[m]["group"], *_packages(m)])]
    lines = [f"{module}: {error}" for module, error in sorted(broken.items())]
    data = {"imported_again": len(again), "groups": groups, "gone": gone, "broken": lines,
            "broken_below": len(below), "new_failing": new_failing, "unsteady": unsteady,
            "seconds": round(after.seconds, 1)}
    tail = f"{len(again)} imported again, {len(gone)} gone"
    if new_failing:
        tail += f", {len(new_failing)} new module(s) failing that no original did"
    if unsteady:
        tail += f", {len(unsteady)} unsteady (fail alone on the base too)"
    if lines:
        more = f" and {len(below)} module(s) below them" if below else ""
        return Check(FAIL, f"{len(lines)} broken{more} ({tail}): {'; '.join(lines[:3])}", data)
    return Check(PASS, tail, data)


# --- the import probe: runs under --python, standard library only ------------------------------

#: What a CPU-only torch answers for "the" GPU in the probe (`stand_in_device`).
STAND_IN_DEVICE = {"name": "lifecycle_release stand-in (sm_100)", "major": 10, "minor": 0,
                   "multi_processor_count": 148, "total_memory": 180 << 30, "L2_cache_size": 126 << 20,
                   "warp_size": 32, "max_threads_per_multi_processor": 2048, "max_threads_per_block": 1024,
                   "regs_per_multiprocessor": 65536, "shared_memory_per_block": 48 << 10,
                   "shared_memory_per_block_optin": 227 << 10, "shared_memory_per_multiprocessor": 228 << 10,
                   "is_integrated": 0, "is_multi_gpu_board": 0}


def stand_in_device(torch) -> bool:
    """Where torch has no CUDA, its device queries (properties, capability, name) answer
    for one stand-in GPU, so that a module reading them at import (FlashInfer 0.7.0's
    gdn_kernels, which ``import flashinfer`` loads) imports on the CPU, before and after
    a command alike. ``is_available()`` still says False: code that would run on a GPU
    at import still fails, and is left out as before. True when the stand-in is in place."""
    cuda = getattr(torch, "cuda", None)
    if cuda is None or cuda.is_available():
        return False
    import types

    properties = types.SimpleNamespace(**STAND_IN_DEVICE)
    cuda.get_device_properties = lambda device=None: properties
    cuda.get_device_capability = lambda device=None: (properties.major, properties.minor)
    cuda.get_device_name = lambda device=None: properties.name
    return True


class _Probe:
    """The probing interpreter's state (see `probe`): what the audit hook saw opened, and,
    while recording, which tree module reached which file or module."""

    def __init__(self, root: str, timeout: float):
        import builtins
        import importlib

        self.root, self.prefix, self.timeout = root, root + os.sep, timeout
        self.recording, self.current = False, None
        self.opened, self.reached = set(), []
        self.builtins, self.importlib = builtins, importlib
        self.real_import, self.real_import_module = builtins.__import__, importlib.import_module

    def tree_file(self, path) -> str | None:
        path = os.path.normpath(os.path.join(self.root, os.fsdecode(path)))
        if path.startswith(self.prefix) and "__pycache__" not in path and os.path.isfile(path):
            return os.path.relpath(path, self.root).replace(os.sep, "/")
        return None

    def module_file(self, name) -> str | None:
        module = sys.modules.get(name) if name else None
        path = getattr(module, "__file__", None)
        return self.tree_file(path) if isinstance(path, str) else None

    def loaded(self) -> dict:
        """Tree modules in sys.modules -> their file."""
        files = {name: self.module_file(name) for name in list(sys.modules)}
        return {name: rel for name, rel in files.items() if rel}

    def running(self, frame) -> str | None:
        """The innermost tree module whose code runs at `frame` (else the one being imported)."""
        while frame is not None:
            path = frame.f_globals.get("__file__")
            if isinstance(path, str) and path.startswith(self.prefix):
                return frame.f_globals.get("__name__")
            frame = frame.f_back
        return self.current

    def hook(self, event, args) -> None:
        if event == "open" and args and isinstance(args[0], (str, bytes)):
            if self.recording:
                self.reached.append((self.running(sys._getframe(1)), "file", args[0]))
            else:
                self.opened.add(args[0])

    def recording_import(self, name, globals=None, locals=None, fromlist=(), level=0):
        module = self.real_import(name, globals, locals, fromlist, level)
        if self.recording:
            path = (globals or {}).get("__file__")
            who = globals.get("__name__") if isinstance(path, str) and path.startswith(self.prefix) else self.current
            if fromlist:  # `from X import a, b`: X, and a and b where they are modules
                base = getattr(module, "__name__", name)
                self.reached.append((who, "module", base))
                self.reached.extend((who, "module", f"{base}.{item}") for item in fromlist if item != "*")
            elif level == 0:
                self.reached.append((who, "module", name))
        return module

    def recording_import_module(self, name, package=None):
        module = self.real_import_module(name, package)
        if self.recording:
            self.reached.append((self.running(sys._getframe(1)), "module", module.__name__))
        return module

    def install(self, preload) -> None:
        sys.addaudithook(self.hook)
        for name in preload:
            try:
                self.importlib.import_module(name)
            except BaseException:  # noqa: BLE001 - an absent heavy package is only slower
                pass
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(1)  # no thread pool to leave locked behind a fork
            stand_in_device(sys.modules["torch"])
        self.builtins.__import__ = self.recording_import
        self.importlib.import_module = self.recording_import_module

    def take_edges(self) -> dict:
        """What each tree file reached since the last call: file -> files."""
        edges = collections.defaultdict(set)
        for who, kind, value in self.reached:
            source = self.module_file(who)
            target = self.tree_file(value) if kind == "file" else self.module_file(value)
            if source and target and target != source:
                edges[source].add(target)
        self.reached.clear()
        return {source: sorted(targets) for source, targets in edges.items()}

    def failure(self, error: BaseException) -> str:
        import traceback

        frames = traceback.extract_tb(error.__traceback__)
        place = next((f" ({os.path.relpath(f.filename, self.root)}:{f.lineno})" for f in reversed(frames)
                      if f.filename.startswith(self.prefix)), "")
        text = "".join(traceback.format_exception_only(type(error), error)).strip().splitlines()
        return ((text[-1] if text else type(error).__name__)[:300]) + place

    def batch(self, modules: list, preloaded: dict, failed: dict, write: int) -> None:
        """In a forked child: import `modules` one after the other, a line per module (and
        a "start" line before each import, for the parent's timeout)."""
        def send(record):
            data = json.dumps(record).encode() + b"\n"
            while data:
                data = data[os.write(write, data):]

        os.setpgid(0, 0)
        self.recording = True
        for module in modules:
            package = next((p for p in _packages(module) if p in failed), None)
            if package is not None:
                send({"module": module, "ok": False, "error": f"its package {package} failed: {failed[package]}"})
                continue
            if module in preloaded:
                send({"module": module, "ok": True, "error": None, "preloaded": True})
                continue
            send({"start": module})
            start, self.current = time.perf_counter(), module
            try:
                self.importlib.import_module(module)
                result = {"ok": True, "error": None}
            except BaseException as error:  # noqa: BLE001 - SystemExit and all: it did not import
                result = {"ok": False, "error": self.failure(error)}
                failed[module] = result["error"]
            self.current = None
            send({"module": module, **result, "seconds": round(time.perf_counter() - start, 3),
                  "edges": self.take_edges()})
        os._exit(0)

    def run_batch(self, modules: list, preloaded: dict, failed: dict, emit) -> list:
        """`batch` in forked children, one after another until every module has its line:
        a module past the timeout, or whose child dies, gets a line saying so and the next
        child starts after it."""
        import select
        import signal

        results, pending = [], list(modules)
        while pending:
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                self.batch(pending, preloaded, failed, write)
            os.close(write)
            buffer, started, timed_out = b"", None, False
            deadline = time.monotonic() + self.timeout
            while pending:  # not to EOF: a process an import started may hold the pipe open
                if b"\n" not in buffer:
                    if not select.select([read], [], [], max(0.0, deadline - time.monotonic()))[0]:
                        timed_out = True
                        break
                    chunk = os.read(read, 1 << 16)
                    if not chunk:
                        break
                    buffer += chunk
                    continue
                line, buffer = buffer.split(b"\n", 1)
                record = json.loads(line)
                deadline = time.monotonic() + self.timeout
                if "start" in record:
                    started = record["start"]
                    continue
                record.setdefault("preloaded", False)
                results.append(record)
                emit(record)
                pending.remove(record["module"])
                if not record["ok"]:
                    failed[record["module"]] = record["error"]
                started = None
            os.close(read)
            try:
                os.killpg(pid, signal.SIGKILL)  # the child, if still there, and whatever it started
            except OSError:
                pass
            _, status = os.waitpid(pid, 0)
            if pending:
                module = started or pending[0]
                error = (f"timed out after {self.timeout:.0f} s" if timed_out
                         else f"the child died (wait status {status:#x})")
                record = {"module": module, "ok": False, "error": error, "preloaded": False}
                results.append(record)
                emit(record)
                pending.remove(module)
                failed[module] = error
        return results

    def group(self, top: str, modules: list, mode: str, emit) -> None:
        """In a forked process: import the top-level package `top` (none for ""), then `modules`."""
        import signal

        def too_long(signum, frame):
            raise TimeoutError("the package's import timed out")

        start = time.perf_counter()
        record = {"kind": "group", "top": top, "ok": True, "error": None}
        if top:
            signal.signal(signal.SIGALRM, too_long)
            signal.alarm(int(self.timeout) * 3)
            try:
                self.importlib.import_module(top)
            except BaseException as error:  # noqa: BLE001
                record.update(ok=False, error=self.failure(error))
            signal.alarm(0)
        preloaded = self.loaded()
        files = {self.tree_file(path) for path in self.opened} | set(preloaded.values())
        emit({**record, "files": sorted(files - {None}), "preloaded": sorted(preloaded),
              "seconds": round(time.perf_counter() - start, 3)})
        failed = {} if record["ok"] else {top: record["error"]}

        def send(result):
            emit({"kind": "module", "top": top, **result})

        if mode == "batch":
            self.run_batch(modules, preloaded, failed, send)
            return
        if mode == "isolated":
            for module in modules:
                self.run_batch([module], preloaded, failed, send)
            return
        results = self.run_batch(modules, preloaded, failed, lambda result: None)
        held = {} if record["ok"] else {top: record["error"]}  # failures that hold alone
        for result in results:  # "confirm": a failure in the batch is retried alone
            module = result["module"]
            if not result["ok"] and not any(p in held for p in _packages(module)):
                result = self.run_batch([module], preloaded, dict(held), lambda result: None)[0]
            if not result["ok"]:
                held[module] = result["error"]
            send(result)


def probe() -> None:
    """Answer a request (JSON on stdin) with a JSON line per top-level package and per
    module on stdout. The heavy third-party packages are imported first; then, per top-level
    package, a forked process imports it (the modules this loads are "preloaded") and forks
    a child that imports the other modules one after the other (request "mode": "batch"),
    each alone ("isolated"), or in a batch with each failure retried alone ("confirm").
    While a child imports, every file opened (an audit hook on ``open``) and every tree
    module named by an import statement or ``importlib.import_module`` is recorded against
    the tree module whose code ran it: the edges of `Survey.reaching`. A module's line
    carries the edges recorded during its import."""
    request = json.load(sys.stdin)
    root = request["root"]
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever the imports print goes to the log, not into the answer
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [root] + [p for p in sys.path if p and os.path.abspath(p) != here]
    sys.dont_write_bytecode = True

    def emit(record: dict) -> None:
        out.write(json.dumps(record) + "\n")
        out.flush()

    state = _Probe(root, request["timeout"])
    state.install(request["preload"])
    for top, modules in request["groups"].items():
        pid = os.fork()  # the top-level package is imported once, in a process of its own
        if pid == 0:
            state.group(top, modules, request["mode"], emit)
            out.close()
            os._exit(0)
        os.waitpid(pid, 0)
    out.close()


# --- one trial ---------------------------------------------------------------------------------

@dataclass
class Context:
    base: Path
    snapshot: Snapshot
    workdir: Path
    home: str
    findings: collections.Counter
    survey: Survey | None
    python: Path | None
    cache: Path | None
    keep: bool
    preload: tuple = PRELOAD
    experimental: str = EXPERIMENTAL_DIR.replace("/", ".")
    linked: tuple = LINKED
    base_changed: str = ""  # set when a trial changed the base (through a linked file)
    cold_s: float = 0.0  # a cold ``policy-check run`` of the base, measured in this benchmark run
    lock: object = None  # `WorkdirLock`, held for the run

    def import_on_base(self, modules: dict, mode: str, progress: bool = False) -> Survey:
        """`run_probe` on a throwaway copy of the base: imports may write into the tree
        (FlashInfer's ``build_backend`` rewrites ``flashinfer/_build_meta.py``)."""
        scratch = make_copy(self.base, self.snapshot, self.workdir, "imports", self.linked)
        try:
            survey = run_probe(self.python, scratch.root, modules, self.workdir / "imports.log", progress,
                               self.preload, mode=mode)
            wrote = compare(scratch.reference, Snapshot.take(scratch.root, scratch.reference))
            if not wrote.empty and progress:
                log(f"  the imports wrote into the tree: {wrote.summary()}")
            return survey
        finally:
            shutil.rmtree(scratch.parent, ignore_errors=True)


def run_trial(ctx: Context, feature: str, command: str) -> dict:
    """One command on one feature, with --diff and then for real in a copy of the base
    (a fresh one when --diff wrote), and every invariant."""
    if ctx.base_changed:
        raise RuntimeError(f"not run: {ctx.base_changed}, so no copy of it is the release any more")
    label = f"{command}-{feature}"
    copies = []
    try:
        return _trial(ctx, feature, command, label, copies)
    finally:
        if ctx.keep:
            log(f"  kept: {', '.join(str(copy.parent) for copy in copies)}")
        else:
            for copy in copies:
                shutil.rmtree(copy.parent, ignore_errors=True)


def _trial(ctx: Context, feature: str, command: str, label: str, copies: list) -> dict:
    args = command_args(command, feature, ctx.home)
    b = make_copy(ctx.base, ctx.snapshot, ctx.workdir, label, ctx.linked)
    copies.append(b)
    diff = policy_check([*args, "--diff", "--root", str(b.root)], b.parent)
    checks = {}
    checks["pure"] = check_unchanged(b, "after --diff")
    if checks["pure"].status != PASS:  # the --diff run wrote: the real run gets a fresh copy
        b = make_copy(ctx.base, ctx.snapshot, ctx.workdir, f"{label}-again", ctx.linked)
        copies.append(b)
    real = policy_check([*args, "--root", str(b.root)], b.parent)
    checks["agree"] = check_agree(diff.exit, real.exit)
    outside = check_outside(copies, ctx.base, ctx.snapshot)
    if outside.data["base_changed"]:
        ctx.base_changed = f"{label} changed the base"
    b_after = Snapshot.take(b.root, b.reference)
    delta = compare(b.reference, b_after)
    if real.exit != 0:
        checks["clean"] = check_unchanged(b, f"exit {real.exit}")
        for name in ("patch", "checker", "imports", "unused", "baseline", "markers"):
            checks[name] = Check(NA, "not done")
    else:
        checks["clean"] = Check(NA, "done")
        checks["patch"] = check_patch(diff.stdout, ctx.base, delta, b_after, ctx.workdir)
        checks["unused"] = check_unused(ctx.base, b.root, delta)
        checks["baseline"] = (check_baseline(b.root, feature, ctx.experimental, delta) if command == "remove"
                              else Check(NA, "a graduation keeps the baseline's entries (they follow a move)"))
        checks["markers"] = (check_markers(b.root, feature, ctx.experimental, ctx.home.format(feature=feature), delta,
                                           real.stdout.decode("utf-8", "replace") + real.stderr)
                             if command == "graduate" else Check(NA, "a removal leaves no marker to swap"))
        after = run_checker(b.root, ctx.cache)
        checks["checker"] = check_findings(ctx.findings, finding_keys(after))
        if ctx.survey is None or ctx.python is None:
            checks["imports"] = Check(NA, "no --python")
        else:
            renames = None
            if command == "graduate":
                renames = (f"{ctx.experimental}.{feature}", ctx.home.format(feature=feature))
            checks["imports"] = check_imports(ctx.survey, ctx.python, b.root, delta, ctx.workdir / "imports.log",
                                              renames, ctx.preload,
                                              on_base=lambda modules: ctx.import_on_base(modules, "isolated"))
    checks["outside"] = outside
    if ctx.keep:  # beside the copies, for whoever inspects them
        (ctx.workdir / f"{label}.diff").write_bytes(diff.stdout)
        (ctx.workdir / f"{label}.stderr").write_text(f"--diff:\n{diff.stderr}\nreal run:\n{real.stderr}")
    return {
        "feature": feature, "command": command, "args": args,
        "diff_exit": diff.exit, "exit": real.exit,
        "diff_s": round(diff.seconds, 2), "real_s": round(real.seconds, 2),
        "ratio": round(max(diff.seconds, real.seconds) / ctx.cold_s, 2) if ctx.cold_s else None,
        "reason": _reason(real), "patch_lines": diff.stdout.count(b"\n"),
        "files": {"created": len(delta.created), "changed": len(delta.changed), "deleted": len(delta.deleted)},
        "checks": {name: asdict(checks[name]) for name in INVARIANTS},
        "copies": [str(copy.parent) for copy in copies] if ctx.keep else [],
    }


def _reason(run: Run) -> str:
    """The refusal or error line of a failed run's stderr: the first that says so, else the last."""
    if run.exit == 0:
        return ""
    lines = [line for line in run.stderr.splitlines() if line.strip()] or [""]
    said = [line for line in lines if "refused" in line or "error" in line.lower()]
    return (said[0] if said else lines[-1])[:400]


# --- report ------------------------------------------------------------------------------------

def table(rows: list) -> str:
    head = ["feature", "command", "exit", *INVARIANTS, "diff s", "real s", "x cold"]
    body = [[r["feature"], r["command"], f"{r['diff_exit']}/{r['exit']}",
             *(r["checks"][name]["status"] for name in INVARIANTS), f"{r['diff_s']:.1f}", f"{r['real_s']:.1f}",
             "-" if r.get("ratio") is None else f"{r['ratio']:.2f}"]
            for r in rows]
    widths = [max(len(str(cell)) for cell in column) for column in zip(head, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(head), line(["-" * w for w in widths]), *map(line, body)])


def summary(rows: list) -> dict:
    counts = {name: collections.Counter(r["checks"][name]["status"] for r in rows) for name in INVARIANTS}
    result = {"trials": len(rows), "done": sum(r["exit"] == 0 for r in rows),
              "refused": sum(r["exit"] == 1 for r in rows), "errors": sum(r["exit"] not in (0, 1) for r in rows),
              "invariants": {name: dict(counts[name]) for name in INVARIANTS}}
    for what, wanted, limit in (("done", 0, 3.0), ("refused", 1, 1.0)):
        ratios = sorted(r["ratio"] for r in rows if r["exit"] == wanted and r.get("ratio") is not None)
        if ratios:
            result[f"ratio_{what}"] = {"median": ratios[len(ratios) // 2] if len(ratios) % 2 else
                                       round((ratios[len(ratios) // 2 - 1] + ratios[len(ratios) // 2]) / 2, 2),
                                       "max": ratios[-1], "limit": limit,
                                       "over": sum(ratio > limit for ratio in ratios), "of": len(ratios)}
    for what, wanted in (("slowest_refusal", 1), ("slowest_success", 0)):
        runs = [r for r in rows if r["exit"] == wanted]
        if runs:
            slow = max(runs, key=lambda r: r["real_s"])
            result[what] = {"feature": slow["feature"], "command": slow["command"], "seconds": slow["real_s"]}
    return result


def print_report(rows: list, figures: dict) -> None:
    print(table(rows))
    details = [(r, name) for r in rows for name in INVARIANTS if r["checks"][name]["status"] == FAIL]
    if details:
        print("\nviolations:")
        for r, name in details:
            print(f"  {r['command']} {r['feature']}: {name}: {r['checks'][name]['detail']}")
    refused = [r for r in rows if r["exit"] != 0]
    if refused:
        print("\nrefusals and errors:")
        for r in refused:
            print(f"  {r['command']} {r['feature']} (exit {r['exit']}): {r['reason']}")
    s = figures["summary"]
    print(f"\n{s['trials']} trials: {s['done']} done, {s['refused']} refused, {s['errors']} errors")
    for name in INVARIANTS:
        print(f"  {name:<8} " + ", ".join(f"{status} {n}" for status, n in sorted(s["invariants"][name].items())))
    if figures.get("cold_run_s"):
        print(f"  cold policy-check run of the base: {figures['cold_run_s']:.1f} s (this run); "
              "x cold = the slower of --diff and the real run over it")
    for what in ("done", "refused"):
        ratio = s.get(f"ratio_{what}")
        if ratio:
            print(f"  x cold, {what}: median {ratio['median']:.2f}, max {ratio['max']:.2f}; "
                  f"{ratio['over']} of {ratio['of']} over {ratio['limit']:.0f}x")
    for what in ("slowest_refusal", "slowest_success"):
        if what in s:
            print(f"  {what.replace('_', ' ')}: {s[what]['command']} {s[what]['feature']} {s[what]['seconds']:.1f} s")
    survey = figures.get("import_survey")
    if survey:
        print(f"  import survey: {survey['modules_ok']} of {survey['modules']} modules import on the base "
              f"({survey['seconds']:.0f} s{', reused' if survey.get('reused') else ''})")
    else:
        print(f"  imports not checked: no interpreter at {figures['python']} (--python)")
    print(f"  trial wall time: {figures['trial_s_min']:.0f}-{figures['trial_s_max']:.0f} s, "
          f"mean {figures['trial_s_mean']:.0f} s")


# --- driver ------------------------------------------------------------------------------------

def features_of(tree: Path) -> list:
    experimental = tree / EXPERIMENTAL_DIR
    return sorted(d.name for d in experimental.iterdir() if d.is_dir() and d.name != "__pycache__")


def prepare(options) -> Context:
    """The base repository (reused when WORKDIR holds one of this tree), its snapshot, the
    checker's findings on it and the import survey."""
    workdir = options.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    lock = WorkdirLock(workdir)
    base, stamp_path = workdir / "base", workdir / "base.json"
    fingerprint = f"{tree_fingerprint(options.tree)}-base{BASE_VERSION}"
    stamp = json.loads(stamp_path.read_text()) if stamp_path.exists() else {}
    status = git(base, "--no-optional-locks", "status", "--porcelain", "-uall") if base.is_dir() else None
    reuse = stamp.get("fingerprint") == fingerprint and status is not None and not status.stdout.strip()
    if not reuse:
        lock.writing(f"its base is not a clean copy of {options.tree}")
        log(f"copying {options.tree} into the base repository {base}")
        stamp_path.unlink(missing_ok=True)
        make_base(options.tree, base)
        stamp = {"tree": str(options.tree), "fingerprint": fingerprint}
        stamp_path.write_text(json.dumps(stamp))
    log("hashing the base")
    snapshot = Snapshot.take(base)
    cache = None if options.checker_no_cache else workdir / "checker-cache"
    if cache:
        cache.mkdir(mode=0o700, exist_ok=True)
    log("policy-check run on the base")
    findings = finding_keys(run_checker(base, cache))
    log("a cold policy-check run of the base (no cache, default jobs): the yardstick of every trial")
    cold = policy_check(["run", "--root", str(base), "--format", "json", "--exit-zero", "--no-baseline", "--no-cache"],
                        base)
    if cold.exit != 0:
        raise RuntimeError(f"policy-check run failed ({cold.exit}): {cold.stderr[-1500:]}")
    python = options.python
    if not python.is_file():
        log(f"no {python}: the import invariant is skipped")
        python = None
    ctx = Context(base, snapshot, workdir, options.home, findings, None, python, cache, options.keep,
                  linked=() if options.copy_all else LINKED, cold_s=cold.seconds)
    if python is not None:
        survey_path = workdir / "import-survey.json"
        key = {"fingerprint": fingerprint, "python": str(python), "probe": PROBE_VERSION}
        ctx.survey = load_survey(survey_path) if stamp.get("survey") == key else None
        if ctx.survey is not None:
            log(f"import survey reused: {len(ctx.survey.ok())} of {len(ctx.survey.modules)} modules import")
        else:
            lock.writing(f"it has no import survey with {python}")
            modules = tree_modules(base)
            log(f"import survey: {len(modules)} modules with {python}")
            ctx.survey = ctx.import_on_base(modules, "batch", progress=True)
            if any(r.get("probe_error") for r in ctx.survey.modules.values()):
                raise SystemExit(f"the import probe died; see {workdir / 'imports.log'}")
            save_survey(ctx.survey, survey_path)
            stamp_path.write_text(json.dumps({**stamp, "survey": key}))
            log(f"import survey: {len(ctx.survey.ok())} of {len(ctx.survey.modules)} import, "
                f"{ctx.survey.seconds:.0f} s")
    lock.share()
    ctx.lock = lock
    return ctx


class WorkdirLock:
    """A lock on WORKDIR for as long as this run lasts: shared while the trials run (any
    number of runs may read one base), exclusive while a run writes the base or the survey.
    A run that finds the workdir in use and would have to write it stops instead."""

    def __init__(self, workdir: Path):
        import fcntl

        self.fcntl, self.file = fcntl, open(workdir / "workdir.lock", "w")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.exclusive = True
        except BlockingIOError:
            fcntl.flock(self.file, fcntl.LOCK_SH)  # waits only while another run prepares it
            self.exclusive = False

    def writing(self, why: str) -> None:
        if not self.exclusive:
            raise SystemExit(f"{Path(self.file.name).parent} is in use by another run and {why}: "
                             "pass another --workdir")

    def share(self) -> None:
        self.fcntl.flock(self.file, self.fcntl.LOCK_SH)
        self.exclusive = False


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=DEFAULT_TREE, help="the unpacked release (default %(default)s)")
    parser.add_argument("--features", help="comma-separated features (default: every one)")
    parser.add_argument("--commands", default=",".join(COMMANDS), help="default %(default)s")
    parser.add_argument("--home", default=DEFAULT_HOME, help="graduate --to, {feature} replaced (default %(default)s)")
    parser.add_argument("--jobs", type=int, default=1, help="trials at once (default 1)")
    parser.add_argument("--python", type=Path, default=DEFAULT_PYTHON,
                        help="the interpreter of the import checks (default %(default)s; absent: skipped)")
    parser.add_argument("--workdir", type=Path, help="base, copies and caches (default: a new temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep every copy for inspection")
    parser.add_argument("--checker-no-cache", action="store_true", help="run the checker cold each time")
    parser.add_argument("--copy-all", action="store_true",
                        help=f"copy {', '.join(LINKED)} into each copy too instead of hard-linking it")
    parser.add_argument("--json", type=Path, help="also write the record to this JSON file")
    parser.add_argument("--import-probe", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.import_probe:
        return options
    options.tree = options.tree.resolve()
    if not (options.tree / EXPERIMENTAL_DIR).is_dir():
        parser.error(f"{options.tree} holds no {EXPERIMENTAL_DIR}/ (pip download --no-deps "
                     "flashinfer-python==0.7.4 -d .; unzip -q -o *.whl -d tree)")
    options.commands = [c for c in options.commands.split(",") if c]
    if not options.commands or set(options.commands) - set(COMMANDS):
        parser.error(f"--commands: a comma-separated subset of {','.join(COMMANDS)}")
    every = features_of(options.tree)
    options.features = options.features.split(",") if options.features else every
    if set(options.features) - set(every):
        parser.error(f"no such feature: {', '.join(sorted(set(options.features) - set(every)))}")
    if options.jobs < 1:
        parser.error("--jobs: at least 1")
    options.workdir = (options.workdir or Path(tempfile.mkdtemp(prefix="lifecycle-release-"))).resolve()
    return options


def main(argv=None) -> None:
    options = parse(argv)
    if options.import_probe:
        return probe()
    started = time.perf_counter()
    ctx = prepare(options)
    trials = [(feature, command) for feature in options.features for command in options.commands]
    survey = ctx.survey
    figures = {"tree": str(options.tree), "features": len(options.features), "commands": options.commands,
               "home": options.home, "jobs": options.jobs, "checker_cache": ctx.cache is not None,
               "python": str(options.python), "linked": list(ctx.linked),
               "base_findings": sum(ctx.findings.values()), "setup_s": round(time.perf_counter() - started, 1),
               "cold_run_s": round(ctx.cold_s, 2),
               "import_survey": survey and {"modules": len(survey.modules), "modules_ok": len(survey.ok()),
                                            "seconds": round(survey.seconds, 1), "reused": survey.reused}}
    rows, lock = [], threading.Lock()

    def one(trial):
        feature, command = trial
        start = time.perf_counter()
        try:
            row = run_trial(ctx, feature, command)
        except Exception as error:  # noqa: BLE001 - a broken trial is a row, not the end of the run
            row = {"feature": feature, "command": command, "args": [], "diff_exit": None, "exit": None,
                   "diff_s": 0.0, "real_s": 0.0, "reason": f"driver error: {error!r}"[:400], "patch_lines": 0,
                   "files": {}, "checks": {name: asdict(Check(FAIL, "driver error")) for name in INVARIANTS},
                   "copies": []}
        row["trial_s"] = round(time.perf_counter() - start, 1)
        with lock:
            rows.append(row)
            failed = [name for name in INVARIANTS if row["checks"][name]["status"] == FAIL]
            log(f"[{len(rows)}/{len(trials)}] {command} {feature}: exit {row['diff_exit']}/{row['exit']}, "
                f"{row['trial_s']:.0f} s" + (f", FAIL: {', '.join(failed)}" if failed else ", no violation"))
            if options.json:  # a run of hours keeps what it has
                write_record(options, figures, rows)

    with concurrent.futures.ThreadPoolExecutor(max_workers=options.jobs) as pool:
        list(pool.map(one, trials))
    base_delta = compare(ctx.snapshot, Snapshot.take(ctx.base, ctx.snapshot))
    figures["base_unchanged"] = base_delta.empty
    if not base_delta.empty:
        log(f"the base repository changed during the run: {base_delta.summary()}")
    order = {trial: i for i, trial in enumerate(trials)}
    rows.sort(key=lambda r: order[(r["feature"], r["command"])])
    finish(figures, rows)
    print_report(rows, figures)
    if options.json:
        write_record(options, figures, rows)
    log(f"the base, import survey and checker cache are in {options.workdir} (--workdir to reuse them)")


def finish(figures: dict, rows: list) -> None:
    seconds = [r["trial_s"] for r in rows] or [0.0]
    figures.update(trial_s_min=min(seconds), trial_s_max=max(seconds),
                   trial_s_mean=round(sum(seconds) / len(seconds), 1), summary=summary(rows), trials=rows)


def write_record(options, figures: dict, rows: list) -> None:
    import bench_record

    finish(figures, list(rows))
    bench_record.write(options.json, "lifecycle_release", figures,
                       bench_record.command("lifecycle_release.py", tree=options.tree),
                       tree={"flashinfer_version": bench_record.tree_version(options.tree)})


if __name__ == "__main__":
    if "--import-probe" not in sys.argv:  # the probe runs under another interpreter: nothing of ours
        sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
