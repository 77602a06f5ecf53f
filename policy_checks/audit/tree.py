"""One audit of one tree: list the core modules, run the requests in the workers,
judge the outcomes, and collect the stable lane (`collection.py`) meanwhile, in the
same scratch directories."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..context import Context
from .aot import aot_requests, judge_aot
from .chains import keep_first
from .collection import audit_collection
from .imports import import_requests, judge_imports
from .modules import allowed_support, core_modules, preloads
from .sandbox import PRELOAD, Interpreter, Pool, Scratch, interpreter, network_namespace

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


def audit_tree(context: Context, jobs: Optional[int] = None, timeout: float = DEFAULT_TIMEOUT,
               progress: Optional[Callable[[int, int], None]] = None, stand_ins: bool = True,
               collection: bool = True, python: Optional[str] = None) -> Audit:
    """Audit the tree of `context` under its settings (AUD000-AUD002, and AUD003 when
    the collection audit is there), the children run by `python` (another environment's
    interpreter, FlashInfer's; default: the checker's own)."""
    root, settings = context.root, context.settings
    python_used = interpreter(python)  # first: a wrong --python is a usage error, before any work
    listing = core_modules(root, settings)
    project = listing.project
    support = allowed_support(project)
    requests = import_requests(listing.modules)
    aot = aot_requests(settings.aot_modules, project, len(requests))
    config = {"root": str(root), "package": settings.package, "experimental_package": settings.experimental_package,
              "stand_ins": stand_ins, "aot_environment": AOT_ENVIRONMENT, "preload": preloads(project, PRELOAD)}
    jobs = jobs or os.cpu_count() or 1
    with Scratch() as scratch, ThreadPoolExecutor(max_workers=1) as beside:
        # the lane's collection, one more child in the same scratch, runs while the workers import
        collected = beside.submit(audit_collection, root, settings, preload=config["preload"], stand_ins=stand_ins,
                                  scratch=scratch, python=python_used.path) if collection else None
        # the AOT listing first: the longest request, it overlaps the imports in other workers
        outcomes = Pool(config, jobs, timeout, python=python_used.path, progress=progress).run(aot + requests, scratch)
        lane = collected.result() if collected is not None else None
    import_outcomes = [o for o in outcomes if o.request.op == "import"]
    verdict = judge_imports(import_outcomes, project, support)
    findings = verdict.findings + judge_aot([o for o in outcomes if o.request.op == "aot"], project, support)
    if lane is not None:
        findings += lane.findings
    return Audit(keep_first(findings), len(listing.modules), verdict.audited, verdict.not_audited,
                 sorted(verdict.stand_ins), listing.skipped, support, [], project, verdict.processes,
                 bool(network_namespace()), lane.stand_ins if lane is not None else [], python_used)

