"""One run of the checker: files -> facts (cache or parallel parse) -> rules ->
suppressions -> sorted findings.

Which files get a full fact extraction up front is decided by `needs_facts`, a
byte-level prefilter; every other file is only syntax-checked (EXP000), and any
rule that follows a reference into it gets its facts on demand. The prefilter is
sound for what the rules inspect as *primary* files (the proof is in its
docstring); `tests/policy_checks/test_runner.py` checks it by running with and
without the prefilter over trees holding every import form and comparing.
"""

from __future__ import annotations

import fnmatch
import io
import multiprocessing
import os
import re
import sys
import time
import tokenize
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from . import cache as cache_module
from .config import Settings
from .facts import CALL_TOKENS, FileFacts, extract, syntax_only, text_suppressions
from .project import Project, SourceFile, printable, under
from .rules import RULES
from .rules.exp008 import pytest_config
from .suppressions import META_RULES, apply

ALL_IDS = {**{i: r for i, r in RULES.items()}, **META_RULES}
_POOL_THRESHOLD = 48  # fewer files to parse than this: not worth starting processes


@dataclass
class Result:
    findings: list
    files_checked: int
    warnings: list = field(default_factory=list)
    parsed: int = 0  # files whose facts were computed this run (not from the cache)


def needs_facts(project: Project, source: SourceFile, data: bytes) -> bool:
    """Must this file's facts be computed up front (is it a *primary* file)?

    Proof sketch, rule by rule (the rules iterate over primary files only):

    - EXP001/EXP002/EXP007 look at core modules that import a module under the
      experimental package. Every import form names its target literally: absolute
      forms spell each dotted component, so ``experimental`` appears; a relative
      form in a core module can only reach the experimental package by spelling it
      (``from . import experimental``, ``from ..experimental.x import``), because
      core lies outside it and a relative import only climbs. Dynamic imports are
      recognised only by the names ``import_module`` / ``__import__``; a file
      containing either is primary, so string escapes and implicit concatenation
      in their literal cannot hide a target (``pytest.importorskip`` likewise).
    - EXP002 and EXP005: the package ``__init__`` and the AOT modules are always primary.
    - EXP004 starts from ``backend_requirement`` calls; the extractor recognises a
      call by that name or by an alias bound in the same file, whose binding
      spells ``backend_requirement``. An alias bound at module level in another
      module is found after this pass (that module spells the name, so it is
      primary); every module naming the alias is then extracted again, knowing it
      (`_follow_requirement_aliases`).
    - EXP008 looks at stable tests importing below the experimental package; tests
      are not in the package, so the import is absolute and spells ``experimental``.
    - EXP003, EXP006 and EXP009 reach other files through references from primary
      files, docs pages or directories, and load their facts on demand.

    "Spells" is meant as Python reads identifiers (NFKC, PEP 3131): the bytes of a
    non-ASCII file are normalised first, so ``ｅxperimental`` is found too.
    """
    s = project.settings
    if not data.isascii():
        data = _as_python_reads_names(data)
    if any(token in data for token in CALL_TOKENS):
        return True
    if project.is_stable_test(source.rel):
        return names_experimental(data, s.package)
    if project.by_module.get(source.module) != source.rel:
        return False
    if b"backend_requirement" in data:
        return True
    if s.is_experimental(source.module):
        return False
    return source.module == s.package or source.module in s.aot_modules or names_experimental(data, s.package)


def _as_python_reads_names(data: bytes) -> bytes:
    """`data` decoded with its declared encoding (PEP 263) and NFKC-normalised, as
    the tokenizer normalises identifiers; strings and comments change too, which
    only widens the prefilter."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        encoding, text = "", data.decode("utf-8", "replace")
    if encoding.startswith("utf-8") and unicodedata.is_normalized("NFKC", text):
        return data  # the common case: nothing to rewrite
    return unicodedata.normalize("NFKC", text).encode("utf-8", "replace")


_WORD = b"experimental"
_IDENTIFIER = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def names_experimental(data: bytes, package: str) -> bool:
    """Could `data` name a module called ``experimental`` of this project?

    In an import, the experimental package is a dotted-name component, so the
    word ``experimental`` stands alone: ``flashinfer_experimental_api`` cannot name
    it. An occurrence inside an absolute dotted chain whose head is another
    top-level name (``cutlass.cute.experimental``, ``cuda.core.experimental``)
    names a third-party module. Any other occurrence (in code, a string or a
    comment alike) makes the file a candidate; that over-approximation is what keeps
    the filter sound.
    """
    head = package.partition(".")[0].encode()
    at = data.find(_WORD)
    while at >= 0:
        end = at + len(_WORD)
        standalone = (at == 0 or data[at - 1] not in _IDENTIFIER) and (end == len(data) or data[end] not in _IDENTIFIER)
        if standalone and _chain_head(data, at) in (None, head):
            return True
        at = data.find(_WORD, end)
    return False


def _chain_head(data: bytes, at: int):
    """The first name of the absolute dotted chain ending in ``.experimental`` at
    `at` (``b"cutlass"`` for ``cutlass.cute.experimental``), or None when the word
    is not such a chain's last component (or the chain is relative)."""
    position = at
    head = None
    while position > 0 and data[position - 1] == ord("."):
        end = position - 1
        start = end
        while start > 0 and data[start - 1] in _IDENTIFIER:
            start -= 1
        if start == end or data[start] in b"0123456789":
            return None  # ".experimental" after a non-name: relative or odd, keep it
        head, position = data[start:end], start
    if head is None or (position > 0 and data[position - 1] == ord(".")):
        return None
    return head


def _compute(task) -> tuple:
    """Worker: ``(rel, cache key, facts)`` of one file."""
    rel, path, module, is_package, complete = task
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        facts = FileFacts(module, is_package)
        facts.syntax_error = (1, 1, f"cannot read: {error.strerror or error}")
        return rel, None, facts
    make = extract if complete else syntax_only
    return rel, cache_module.key(rel, data), make(data, module, is_package)


class _Progress:
    """A progress line on a terminal, only once a run has taken over a second."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled = total, enabled and sys.stderr.isatty()
        self.start = time.monotonic()
        self.shown = False

    def update(self, done: int) -> None:
        if self.enabled and (done % 16 == 0 or done == self.total) and time.monotonic() - self.start > 1.0:
            sys.stderr.write(f"\rpolicy-check: parsed {done}/{self.total} files")
            sys.stderr.flush()
            self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def run(
    root: Path,
    settings: Settings,
    paths=(),
    select=None,
    ignore=(),
    jobs: Optional[int] = None,
    use_cache: bool = True,
    prefilter: bool = True,
    progress: bool = True,
    cache_dir=None,
) -> Result:
    """`cache_dir`: where to keep the facts cache (default: `cache.location`'s)."""
    root = Path(root).resolve()
    package_dir = root / settings.package.replace(".", "/")
    if not package_dir.is_dir():
        raise ValueError(f"no package {settings.package!r} at {package_dir}; pass --root or set [tool.policy-check] package")
    facts_cache = cache_module.FactsCache(root, enabled=use_cache, directory=cache_dir)
    warnings = []
    parsed = [0]

    def load(source: SourceFile) -> FileFacts:
        """Complete facts of a file a rule reached on demand."""
        try:
            data = (root / source.rel).read_bytes()
        except OSError as error:
            facts = FileFacts(source.module, source.is_package)
            facts.syntax_error = (1, 1, f"cannot read: {error.strerror or error}")
            return facts
        key = cache_module.key(source.rel, data)
        facts = facts_cache.get(key, complete=True)
        if facts is None:
            facts = extract(data, source.module, source.is_package)
            facts_cache.put(key, facts)
            parsed[0] += 1
        return facts

    project = Project(root, settings, load)
    tasks = []
    for rel, source in list(project.files.items()):
        try:
            data = (root / rel).read_bytes()
        except OSError as error:
            project.read_problems.append((rel, f"cannot read: {error.strerror or error}"))
            del project.files[rel]
            project.by_module.pop(source.module, None)
            continue
        complete = needs_facts(project, source, data) if prefilter else True
        if complete:
            project.primary.add(rel)
        cached = facts_cache.get(cache_module.key(rel, data), complete=complete)
        if cached is not None:
            project.set_facts(rel, cached)
        else:
            tasks.append((rel, str(root / rel), source.module, source.is_package, complete))
    parsed[0] += len(tasks)
    _compute_all(project, facts_cache, tasks, jobs, progress, lambda: _prefetch(project))
    parsed[0] += _follow_requirement_aliases(project, facts_cache)

    selected = _selected_ids(settings, select, ignore)
    findings = []
    for rule_id, rule in RULES.items():
        if rule_id in selected:
            findings.extend(f for f in rule.check(project) if f.rule in selected)
    findings = apply(findings, _suppressions(project), set(ALL_IDS), selected)
    findings = [f for f in findings if f.rule in selected and not _ignored_for_file(settings, f)]
    rel_paths = _relative_paths(root, paths)
    if rel_paths:
        findings = [f for f in findings if any(under(f.path, p) for p in rel_paths)]
    checked = list(project.files) + [rel for rel, _ in project.docs_pages()]
    if rel_paths:
        checked = [c for c in checked if any(under(c, p) for p in rel_paths)]
    facts_cache.save()
    warnings += facts_cache.warnings
    return Result(sorted({_printable(f) for f in findings}), len(checked), warnings, parsed[0])


def _printable(finding):
    """Names on disk need not be UTF-8. Python files and docs pages so named are
    EXP000, but a rule may still name another path (a feature directory, say): every
    path and message leaves the run as valid text, whatever the format."""
    return replace(finding, path=printable(finding.path), message=printable(finding.message))


def _compute_all(project, facts_cache, tasks, jobs, progress, follow_up) -> None:
    """Compute `tasks` (in a pool when worth it), then the tasks `follow_up()`
    names once the first results are in."""
    jobs = jobs or os.cpu_count() or 1
    tasks.sort(key=lambda t: -project.files[t[0]].size)  # big files first: even load
    bar = _Progress(len(tasks), progress)
    if jobs > 1 and len(tasks) >= _POOL_THRESHOLD:
        context = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
        with context.Pool(min(jobs, len(tasks))) as pool:
            _collect(project, facts_cache, pool.imap_unordered(_compute, tasks, chunksize=4), bar)
            _collect(project, facts_cache, pool.imap_unordered(_compute, follow_up()), None)
    else:
        _collect(project, facts_cache, map(_compute, tasks), bar)
        _collect(project, facts_cache, map(_compute, follow_up()), None)
    bar.close()


def _prefetch(project) -> list:
    """Tasks for facts EXP005 will certainly ask for: the package modules the AOT
    modules import names from (it follows each name to its definition). Computing
    them in the pool beats parsing them one by one later."""
    wanted = set()
    for module in project.settings.aot_modules:
        facts = project.known_facts(project.by_module.get(module, ""))
        if facts is None or not facts.complete:
            continue
        for imp in facts.imports:
            for target in project.import_targets(imp):
                if project.is_module(target):
                    wanted.add(project.by_module[target])
    tasks = []
    for rel in sorted(wanted):
        known = project.known_facts(rel)
        if known is None or not known.complete:
            source = project.files[rel]
            tasks.append((rel, str(project.root / rel), source.module, source.is_package, True))
    return tasks


def requirement_aliases(project) -> frozenset:
    """Absolute names that package modules bind to ``backend_requirement`` under
    another name at module level (``from .utils import backend_requirement as
    requires`` in ``flashinfer/dispatch.py`` gives ``flashinfer.dispatch.requires``).
    Such a module spells ``backend_requirement``, so it is primary."""
    found = set()
    for rel in project.primary:
        module, facts = project.files[rel].module, project.known_facts(rel)
        if project.by_module.get(module) != rel or facts is None or facts.syntax_error:
            continue
        for name, binding in facts.bindings.items():
            if name != "backend_requirement" and binding[0] in ("from", "alias"):
                if facts.resolve_local(name).rpartition(".")[2] == "backend_requirement":
                    found.add(f"{module}.{name}")
    return frozenset(found)


def _follow_requirement_aliases(project, facts_cache) -> int:
    """Re-extract, knowing the aliases, every package module that names one (its
    calls through the alias are ``backend_requirement`` calls, EXP004); those
    modules become primary. Returns how many were parsed. Rare, so serial."""
    aliases = requirement_aliases(project)
    if not aliases:
        return 0
    variant = ",".join(sorted(aliases))
    words = [re.compile(rb"(?<!\w)" + re.escape(a.rpartition(".")[2].encode()) + rb"\b") for a in aliases]
    parsed = 0
    for rel, source in project.files.items():
        if project.by_module.get(source.module) != rel:
            continue
        try:
            data = (project.root / rel).read_bytes()
        except OSError:
            continue
        if not any(w.search(data) for w in words):
            continue
        key = cache_module.key(rel, data, variant)
        facts = facts_cache.get(key, complete=True)
        if facts is None:
            facts = extract(data, source.module, source.is_package, aliases)
            facts_cache.put(key, facts)
            parsed += 1
        project.set_facts(rel, facts)
        project.primary.add(rel)
    return parsed


def _collect(project, facts_cache, results, bar) -> None:
    for done, (rel, key, facts) in enumerate(results, 1):
        if key is not None:
            facts_cache.put(key, facts)
        project.set_facts(rel, facts)
        if bar is not None:
            bar.update(done)


def _matches(rule_id: str, patterns) -> bool:
    return any(rule_id.startswith(p) for p in patterns)


def _selected_ids(settings: Settings, select, ignore) -> set:
    select = tuple(select) if select else settings.select
    ignore = tuple(ignore) + settings.ignore
    return {i for i in ALL_IDS if (not select or _matches(i, select)) and not _matches(i, ignore)}


def _ignored_for_file(settings: Settings, finding) -> bool:
    for pattern, ids in settings.per_file_ignores:
        if (fnmatch.fnmatchcase(finding.path, pattern) or under(finding.path, pattern)) and _matches(finding.rule, ids):
            return True
    return False


def _relative_paths(root: Path, paths) -> list:
    result = []
    for path in paths:
        absolute = Path(path).resolve()
        try:
            rel = absolute.relative_to(root).as_posix()
        except ValueError:
            raise ValueError(f"{path} is outside the project root {root}") from None
        result.append("" if rel == "." else rel)
    return [] if "" in result else result


def _suppressions(project: Project) -> dict:
    """path -> suppressions, from Python files and the non-Python files findings point at."""
    found = {}
    for rel in project.files:
        facts = project.known_facts(rel)
        if facts is not None and facts.suppressions:
            found[rel] = facts.suppressions
    for rel, text in project.docs_pages():
        items = text_suppressions(text, ("..", "#"))
        if items:
            found[rel] = items
    others = []
    config = pytest_config(project)
    if config is not None:
        others.append(config[0])
    experimental_dir = project.root / project.settings.experimental_dir
    if experimental_dir.is_dir():
        others += [p.relative_to(project.root).as_posix() for p in experimental_dir.glob("*/FEATURE.toml")]
    for rel in others:
        try:
            text = (project.root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        items = text_suppressions(text, ("#", ";"))
        if items:
            found[rel] = items
    return found
