"""One audit of one tree.

First it reads every input of the verdict. Those are the files' bytes, the
suppressions and what the base revision says of them, and the stable lane. Then it
runs the requests in the workers on a private copy of the tree. Meanwhile it
collects the stable lane (`collection.py`) in the same copy and scratch
directories. Then it judges the outcomes.

Nothing the verdict uses is read from the tree after the first child started. The
code under test can rewrite its own checkout, such as a suppression comment or a
``git replace`` ref. That must change nothing.
"""

from __future__ import annotations

import os
import shutil
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..engine.context import Context
from ..model.facts import may_hold_suppressions
from .aot import aot_requests, declared_aot_line, judge_aot, missing_aot
from .chains import keep_first
from .collection import audit_collection, stable_lane
from .imports import import_requests, judge_imports
from .modules import allowed_support, core_modules, preloads
from .sandbox import (PRELOAD, Interpreter, Pool, Scratch, bind_read_only, interpreter, network_namespace,
                      protections)

DEFAULT_TIMEOUT = 60.0  # seconds one import or the AOT listing may take in a worker
# what an AOT build job sets, so the listing lists every architecture's specs (FlashInfer
# refuses to list without it, having no GPU to ask)
AOT_ENVIRONMENT = {"FLASHINFER_CUDA_ARCH_LIST": "7.5 8.0 8.6 8.9 9.0a 10.0a 10.3a 11.0a 12.0a 12.1a"}


@dataclass
class Audit:
    findings: list
    modules: int  # core modules requested
    audited: int  # imports that completed
    not_audited: int
    stand_ins: list  # third-party top-level packages replaced by stand-ins in the imports
    skipped: list  # (what, why)
    support: dict  # support modules allowed (module -> first core importer)
    notes: list = field(default_factory=list)  # what else the report says (collection audit missing...)
    project: object = None
    processes: list = field(default_factory=list)  # new processes the imports started
    network_namespace: bool = False  # the workers ran without any network interface
    collection_stand_ins: list = field(default_factory=list)  # the same, in the stable lane's collection
    interpreter: Optional[Interpreter] = None  # the Python the workers and the collection ran
    suppressions: dict = field(default_factory=dict)  # rel -> the suppressions that count, read first
    protections: dict = field(default_factory=dict)  # sandbox.PROTECTIONS's kinds -> on?


def audit_tree(context: Context, jobs: Optional[int] = None, timeout: float = DEFAULT_TIMEOUT,
               progress: Optional[Callable[[int, int], None]] = None, stand_ins: bool = True,
               collection: bool = True, python: Optional[str] = None,
               judge: Optional[Callable[[dict], dict]] = None) -> Audit:
    """Audit the tree of `context` under its settings.

    The rules are AUD000-AUD002, and AUD003 when the collection audit is there.
    `python` runs the children. It may be another environment's interpreter, such as
    FlashInfer's; by default it is the checker's own. `judge` says which of the
    tree's suppressions count. With ``--policy-from``, those are the ones the base
    revision had. It is asked before any child starts.
    """
    root, settings = context.root, context.settings
    python_used = interpreter(python)  # first: a wrong --python is a usage error, before any work
    # every input of the verdict, before the code under test runs
    listing = core_modules(root, settings)
    project = listing.project
    lane = stable_lane(root, settings) if collection else None
    requests = import_requests(listing.modules)
    aot = aot_requests(settings.aot_modules, project, len(requests))
    gone, notes = missing_aot(settings.aot_modules, project, declared_aot_line(_text(root / "pyproject.toml")))
    preload = preloads(project, listing.texts, PRELOAD)
    jobs = jobs or os.cpu_count() or 1
    suppressions = read_suppressions(project, listing.texts, judge)  # the base's blobs: before any child
    with Scratch() as scratch, ThreadPoolExecutor(max_workers=1) as beside:
        tree = scratch.path / "tree"
        config = {"root": str(tree), "package": settings.package, "experimental_package": settings.experimental_package,
                  "stand_ins": stand_ins, "aot_environment": AOT_ENVIRONMENT, "preload": preload,
                  "scratch": str(scratch.path), "aot_listing": settings.aot_listing}
        pool = Pool(config, jobs, timeout, python=python_used.path, progress=progress)
        try:
            # the copy (files: waiting on the disk), the workers' preloads (the tree is not
            # on their path yet) and, in this thread, the support modules, all at once
            copied = beside.submit(private_copy, root, scratch, bind_points(root, scratch, settings))
            pool.start(scratch, len(aot) + len(requests))
            support = allowed_support(project, listing.texts)
            copied.result()
            # the lane's collection, one more child in the same scratch, runs while the workers import
            collected = beside.submit(audit_collection, tree, settings, preload=preload, stand_ins=stand_ins,
                                      scratch=scratch, python=python_used.path, lane=lane) if lane else None
            # the AOT listing first: the longest request, it overlaps the imports in other workers
            outcomes = pool.run(aot + requests, scratch)
            collected_lane = collected.result() if collected is not None else None
        finally:
            pool.close()
    import_outcomes = [o for o in outcomes if o.request.op == "import"]
    verdict = judge_imports(import_outcomes, project, support)
    findings = verdict.findings + gone + judge_aot([o for o in outcomes if o.request.op == "aot"], project, support)
    if collected_lane is not None:
        findings += collected_lane.findings
    return Audit(keep_first(findings), len(listing.modules), verdict.audited, verdict.not_audited,
                 sorted(verdict.stand_ins), listing.skipped, support, notes, project, verdict.processes,
                 bool(network_namespace()), collected_lane.stand_ins if collected_lane is not None else [],
                 python_used, suppressions, protections())


def _text(path) -> Optional[str]:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def read_suppressions(project, texts: dict, judge: Optional[Callable[[dict], dict]]) -> dict:
    """rel -> the ``# policy: ignore[...]`` comments of every Python file, read before the audit runs.

    Only files whose bytes may spell one are read, as the facts decide it.
    ``# type: ignore[...]`` is no reason to parse a file. With `judge`, only the
    comments it keeps count. Those are the base revision's, read from git now, with
    replace refs ignored.
    """
    found = {}
    for rel in sorted(project.files):
        data = texts.get(rel)
        if rel.endswith(".py") and data is not None and may_hold_suppressions(data):
            items = project.facts(rel).suppressions
            if items:
                found[rel] = items
    return judge(found) if judge is not None else found


# never copied: git's own data (the verdict reads what it needs of it first), virtual
# environments (an installed package is the environment's, not the tree's), bytecode caches
_NOT_COPIED = (".git", "__pycache__")
_COPIERS = 4  # threads copying files: each mostly waits on the disk


def _not_copied(directory: str, names: list) -> set:
    return {name for name in names if name in _NOT_COPIED
            or os.path.isfile(os.path.join(directory, name, "pyvenv.cfg"))}


def _copy_regular(source: str, target: str) -> None:
    """Copy a regular file.

    A pipe, socket or device is left out, since reading one could block. A file that
    cannot be read is left out too. Its import then fails in the copy: AUD000.
    """
    try:
        if stat.S_ISREG(os.stat(source).st_mode):
            shutil.copy2(source, target)
    except OSError:
        pass


def shared_folders(root, settings) -> list:
    """The excluded folders the children may see read-only where they are, not in the copy.

    These are folders the settings exclude by name, not by glob. An example is
    ``flashinfer/data``, 451 of FlashInfer 0.7.4's 715 MB. A folder qualifies where
    a mount namespace can bind it (`bind_read_only`). Nothing in it may differ in the
    copy. So it holds no bytecode cache, virtual environment or git folder, which
    the copy leaves out. It holds no absolute link into the tree, which the copy
    points into itself.
    """
    top = os.path.realpath(root)
    found = []
    for pattern in settings.exclude:
        rel = pattern.strip("/")
        path = os.path.join(top, rel)
        if (not rel or any(c in rel for c in "*?[") or ".." in rel.split("/") or rel.split("/")[0] in _NOT_COPIED
                or any(rel.startswith(f + "/") or f.startswith(rel + "/") for f in found)
                or os.path.realpath(path) != path or not os.path.isdir(path)):
            continue
        if _as_copied(path, top):
            found.append(rel)
    return [rel for rel in found if bind_read_only(os.path.join(top, rel))]


def _as_copied(folder: str, top: str) -> bool:
    """Would the copy of `folder` hold the same as `folder`? See `shared_folders`."""
    for directory, folders, files in os.walk(folder):
        if "pyvenv.cfg" in files or any(name in _NOT_COPIED for name in folders + files):
            return False
        for name in folders + files:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                pointed = os.readlink(path)
                if os.path.isabs(pointed) and (pointed + os.sep).startswith(top + os.sep):
                    return False
    return True


def bind_points(root, scratch: Scratch, settings) -> list:
    """The `shared_folders` of `root`.

    Each one's place in the copy is made empty, since the copy leaves it out. It is
    noted in `scratch.binds`. Every child binds it there read-only when it starts.
    That may be before the copy is done.
    """
    top = os.path.realpath(root)
    shared = shared_folders(root, settings)
    for rel in shared:
        (scratch.path / "tree" / rel).mkdir(parents=True, exist_ok=True)
    scratch.binds = [(os.path.join(top, rel), str(scratch.path / "tree" / rel)) for rel in shared]
    return shared


def private_copy(root, scratch: Scratch, shared=()):
    """The tree the children run: a copy of `root` in the scratch directory.

    Links are copied as links. An absolute link into the tree points into the copy.
    So what the code under test writes into its checkout never reaches the tree the
    verdict was read from. The `shared` folders (`bind_points`) are left out. Each
    child binds them read-only at their place in the copy.
    """
    target = scratch.path / "tree"
    top = os.path.realpath(root)
    skipped = {os.path.join(top, rel) for rel in shared}

    def ignore(directory: str, names: list) -> set:
        return _not_copied(directory, names) | {n for n in names if os.path.join(directory, n) in skipped}

    with ThreadPoolExecutor(max_workers=_COPIERS) as copiers:
        shutil.copytree(top, target, symlinks=True, ignore=ignore, dirs_exist_ok=True,
                        copy_function=lambda source, place: copiers.submit(_copy_regular, source, place))
    prefix = str(root).rstrip(os.sep) + os.sep
    for directory, folders, files in os.walk(target):
        for name in folders + files:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                pointed = os.readlink(path)
                for start in {prefix, top + os.sep}:
                    if os.path.isabs(pointed) and (pointed + os.sep).startswith(start):
                        os.unlink(path)
                        os.symlink(os.path.join(str(target), pointed[len(start):]), path)
                        break
    return target
