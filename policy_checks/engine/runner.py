"""One run of the checker: files -> prefilter -> facts (cache or parallel parse) ->
rules -> suppressions -> sorted findings.

The rules the run checks come from the rule table (`rules.registry`); what each
needs comes from its own declaration (`Rule.reads`, `Rule.triggers`), which
`needs.Prefilter` composes into the byte-level prefilter that decides which files
get complete facts up front (*primary* files; the soundness argument is in
`policy_checks/analysis/needs.py`). Every other file is read as bytes only (its suppression
comments), not parsed, and a rule or a follow-up that reaches into it gets its facts
on demand (`Project.facts`, or its symbol table alone: `Project.summary`).

Work per file happens once: a file whose facts are not in the cache is read,
hashed, scanned for triggers and parsed by one worker process; a warm run finds
the rest (facts and trigger scan) in the cache under each file's key: for a file
whose bytes git vouches for, a key made from git's object id without reading the
file (`gitfiles.Listing.blobs`), for any other one read and hashed in this process. When the cache holds nothing, this process does not read the files at
all: the workers do. Files of equal size go to one worker together, which
scans each distinct content once (generated trees repeat files: 8% of
FlashInfer 0.7.4's bytes are copies).
"""

from __future__ import annotations

import fnmatch
import gc
import os
import re
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Optional

from . import baseline as baseline_module
from ..model import markers
from . import cache as cache_module
from ..model.config import Settings, under
from .context import Context
from ..model.facts import FileFacts, bytes_only, extract, syntax_only, text_suppressions, unreadable
from ..analysis.needs import BACKEND_REQUIREMENT, CORE_MODULE, EXPERIMENTAL_MODULE, Prefilter, Scanner, is_primary
from ..model.project import Project, SourceFile, excluder, printable
from ..rules.registry import ALL_IDS, RULES, check_settings, matches, selected_ids
from .result import Result
from .suppressions import apply

_POOL_THRESHOLD = 48  # fewer files to parse than this: not worth starting processes


def _task(project: Project, needs: Prefilter, source: SourceFile, complete: bool = False) -> tuple:
    """What a worker needs to know of one file, as a plain tuple (cheap to send):
    ``(rel, path, module, is_package, want, complete, oid, top)``; `want` is
    `Prefilter.want`'s, `complete` asks for complete facts even if not primary, `oid`
    is `_blob`'s, `top` the package's top name for a core module (whose bytes-only facts
    keep `facts.project_words` for the import-time follow-ups), else None."""
    want = needs.want(project, source)
    path = os.path.join(project.root, source.rel)
    core = project.settings.is_core(source.module) and project.is_module_file(source.rel)
    top = project.settings.package.partition(".")[0] if core else None
    return source.rel, path, source.module, source.is_package, want, complete, _blob(project, source.rel), top


def _blob(project: Project, rel: str) -> Optional[str]:
    """Git's object id of the file `rel` where git vouches for its bytes on disk
    (`gitfiles.Listing.blobs`), else None: its cache key then comes from hashing them."""
    return _blobs(project).get(rel)


def _blobs(project: Project) -> dict:
    listing = getattr(project, "listing", None)
    return listing.blobs() if listing is not None else {}


def _vouched(project: Project, rel: str) -> Optional[str]:
    """`_blob` of a file this process may also read: its key can then be made without
    reading it, and what a run would read of it is what git says."""
    oid = _blobs(project).get(rel)
    return oid if oid is not None and _readable(os.path.join(project.root, rel)) else None


def _readable(path: str) -> bool:
    """Could this process read `path`? Git vouches for a file's bytes, not for this
    process's permission to read them: an unreadable file must still be reported as
    one (read and fail), as a run that reads every file reports it."""
    if os.access in os.supports_effective_ids:
        return os.access(path, os.R_OK, effective_ids=True)
    return os.access(path, os.R_OK)


def _by_size(project: Project, tasks: list) -> list:
    """`tasks` as groups (tuples) of files of one size, biggest first: only files
    of equal size can be copies of each other (`_compute`)."""
    groups = {}
    for task in tasks:
        groups.setdefault(project.files[task[0]].size, []).append(task)
    return [tuple(group) for _, group in sorted(groups.items(), key=lambda item: -item[0] * len(item[1]))]


def _compute(scanner: Scanner, keyed: bool, group: tuple) -> list:
    """Worker: for each file of `group`, ``(rel, cache key, facts, trigger scan,
    primary?)``, or ``(rel, None, None, error message, False)`` when it cannot be
    read. The key is None unless `keyed` (a run with a cache). Copies are scanned
    and read for suppressions once: both depend on the bytes alone."""
    # A syntax tree is many objects that all survive until the tree dies whole, by
    # reference counting: the cyclic collector would only walk them again and again
    # (a quarter of the time `extract` takes).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _compute_group(scanner, keyed, group)
    finally:
        if collecting:
            gc.enable()


def _compute_group(scanner: Scanner, keyed: bool, group: tuple) -> list:
    results = []
    seen = {}  # (bytes, top, what is asked of them) -> [trigger scan, bytes-only facts or None]
    for rel, path, module, is_package, want, complete, oid, top in group:
        try:
            data = Path(path).read_bytes()
        except OSError as error:
            results.append((rel, None, None, f"cannot read: {error.strerror or error}", False))
            continue
        shared = seen.get((data, top, want[2]))
        if shared is None:
            shared = seen[(data, top, want[2])] = [scanner.scan(data, want[2]), None]
        found = shared[0]
        primary = is_primary(want, found)
        if primary or complete:
            facts = extract(data, module, is_package)
        elif shared[1] is None:
            facts = shared[1] = bytes_only(data, module, is_package, top)
        else:
            facts = replace(shared[1], module=module, is_package=is_package)
        results.append((rel, cache_module.key_of(rel, data, oid) if keyed else None, facts, found, primary))
    return results


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
    baseline=None,
    fingerprints: bool = True,
    facts_cache=None,
    suppressions=None,
) -> Result:
    """`check` of the project at `root` under `settings`, for a caller that has no
    `context.Context`: `cache_dir` (default: `cache.location`'s) and `use_cache` say
    how the facts cache is kept, `baseline` is the one applied."""
    context = Context(Path(root).resolve(), settings, baseline=baseline, use_cache=use_cache, cache_dir=cache_dir)
    return check(context, paths=paths, select=select, ignore=ignore, jobs=jobs, prefilter=prefilter,
                 progress=progress, fingerprints=fingerprints, facts_cache=facts_cache, suppressions=suppressions)


def check(
    context: Context,
    paths=(),
    select=None,
    ignore=(),
    jobs: Optional[int] = None,
    prefilter: bool = True,
    progress: bool = True,
    fingerprints: bool = True,
    facts_cache=None,
    suppressions=None,
) -> Result:
    """One run over the project of `context` (its root, settings, file selection,
    baseline and facts cache). `prefilter` False gives every file complete facts
    (what the prefilter must not change the findings of). With the context's
    baseline (a `baseline.Baseline`): report only the findings it does not accept
    (`Result.baselined`, `Result.fixed`).
    `fingerprints`: also give each finding's fingerprint (`Result.fingerprints`:
    SARIF's ``partialFingerprints``; cheap, from facts the run has). `paths` must
    each name something the run checks (`check_paths`), else ValueError says why.

    Two evaluations of one tree under two policies (`policy_change`) share their
    facts: `facts_cache` (a `cache.FactsCache`) is then used instead of a new one,
    keeps what it learns in memory even when it is not persisted, and is saved by
    its owner, not here. `suppressions`: a function from the suppression comments
    found (path -> [`facts.Suppression`]) to those this evaluation applies."""
    root, settings, baseline = context.root, context.settings, context.baseline
    check_settings(settings)
    package_dir = root / settings.package.replace(".", "/")
    if not package_dir.is_dir():
        raise ValueError(f"no package {settings.package!r} at {package_dir}; pass --root or set [tool.policy-check] package")
    given = _relative_paths(root, paths)
    rel_paths = [] if any(rel == "" for _, rel in given) else [rel for _, rel in given]
    selected = selected_ids(settings, select, ignore)
    rules = [rule for rule_id, rule in RULES.items() if rule_id in selected]
    needs = Prefilter(rules, RULES.values(), settings, enabled=prefilter)
    shared = facts_cache is not None
    if shared:
        facts_cache.vocabulary = needs.scanner.key  # the trigger scans this run reads and stores
    else:
        facts_cache = context.facts_cache(needs.scanner.key)
    parsed = [0]

    def on_demand(source: SourceFile, complete: bool = True) -> FileFacts:
        """Facts of a file a rule reached on demand: complete ones, or (`complete`
        False) the syntax-only summary a follow-up asks for (`Project.summary`)."""
        try:
            data = (root / source.rel).read_bytes()
        except OSError as error:
            return unreadable(source.module, source.is_package, error)
        key = cache_module.key_of(source.rel, data, _blob(project, source.rel))
        facts = facts_cache.get(key, complete=complete)
        if facts is None or not facts.checked:
            if complete:
                facts, found = extract(data, source.module, source.is_package), _scan_again(source.rel, key, data)
                parsed[0] += 1
            else:
                facts, found = syntax_only(data, source.module, source.is_package), None
            facts_cache.put(key, facts, found)
        return facts

    def _scan_again(rel: str, key: bytes, data: bytes) -> Optional[int]:
        """The trigger scan stored with a file parsed on demand. The first pass scanned
        these bytes already (same key): that scan serves. A cache nobody reads again
        (``--no-cache``, not shared) stores no scan, so none is made."""
        if keys.get(rel) == key and project.scan_of(rel) is not None:
            return project.scan_of(rel)
        return needs.scanner.scan(data) if facts_cache.enabled or shared else None

    project = context.project(on_demand)
    project.scan = partial(_scan, facts_cache)
    project.scanner, project.summarize = needs.scanner, partial(on_demand, complete=False)
    if rel_paths:
        check_paths(project, given)
    keys: dict = {}  # rel -> cache key, of every file read (`_follow`)
    tasks = _facts_from_cache(project, needs, facts_cache, keys)
    parsed[0] += len(tasks)
    follow_up = partial(_prefetch, project, needs, rules)
    _compute_all(project, facts_cache, needs.scanner, tasks, jobs, progress, follow_up, facts_cache.enabled or shared, keys)
    if BACKEND_REQUIREMENT in needs.triggers:
        parsed[0] += _follow_requirement_aliases(project, facts_cache)
    if needs.enabled:  # what rules follow beyond their triggers (`Rule.follow_ups`), each once
        _follow(project, rules, facts_cache, keys)

    findings = []
    for rule in sorted(rules, key=lambda rule: getattr(rule, "runs_last", False)):  # EXP000 sees what they read
        findings.extend(f for f in rule.check(project) if f.rule in selected)
    found = _suppressions(project)
    findings = apply(findings, found if suppressions is None else suppressions(found), set(ALL_IDS), selected)
    findings = [f for f in findings if f.rule in selected and not _ignored_for_file(settings, f)]
    if rel_paths:
        findings = [f for f in findings if any(under(f.path, p) for p in rel_paths)]
    checked = list(project.files) + [rel for rel, _ in project.docs_pages()]
    if rel_paths:
        checked = [c for c in checked if any(under(c, p) for p in rel_paths)]
    result = Result(sorted({_printable(f) for f in findings}), len(checked), facts_cache.warnings)
    if not (root / settings.experimental_dir).is_dir():
        result.no_experimental_package = settings.experimental_dir
    if baseline is not None or fingerprints:
        _fingerprint(project, result, baseline, selected, rel_paths)  # may parse: before saving
    if not shared:
        facts_cache.save()
    result.parsed = parsed[0]
    return result


def _fingerprint(project: Project, result: Result, baseline, selected: set, rel_paths: list) -> None:
    """Fingerprint `result`'s findings and, with a baseline, keep only the new ones.
    Entries of rules this run did not check, or (with PATHS) for files elsewhere,
    are not reported as fixed: this run could not have seen their findings."""
    by_path = frozenset(rule_id for rule_id, rule in RULES.items() if getattr(rule, "fingerprint_by_path", False))
    prints = [baseline_module.fingerprint(project, f, by_path) for f in result.findings]
    result.fingerprints = prints
    if baseline is None:
        return
    counts = {fp: n for fp, n in baseline.counts.items() if fp.rule in selected}
    matched = baseline_module.accept(result, counts, baseline.name)
    if rel_paths:
        locate = baseline_module.locator(project)

        def here(fp) -> bool:
            rel = locate(fp.module)
            return rel is not None and any(under(rel, p) for p in rel_paths)

        result.fixed = [(fp, n) for fp, n in matched.fixed if here(fp)]


def _facts_from_cache(project: Project, needs: Prefilter, facts_cache, keys: dict) -> list:
    """Set the facts the cache holds and mark primary files; returns the tasks for
    every other file. An empty cache is not consulted: the workers read the files."""
    if not facts_cache.holds_entries:
        return [_task(project, needs, source) for source in project.files.values()]
    tasks = []
    for rel, source in list(project.files.items()):
        oid = _vouched(project, rel)
        data = None
        if oid is not None:
            key = cache_module.blob_key(rel, oid)  # their key without reading them
        else:
            try:
                with open(os.path.join(project.root, rel), "rb") as handle:
                    data = handle.read()
            except OSError as error:
                project.drop_unreadable(rel, f"cannot read: {error.strerror or error}")
                continue
            key = cache_module.key(rel, data)
        keys[rel] = key
        if not facts_cache.holds(key):
            tasks.append(_task(project, needs, source))
            continue
        found = facts_cache.found(key)
        if found is None:  # facts stored without their scan (another vocabulary)
            if data is None:
                try:
                    data = (project.root / rel).read_bytes()
                except OSError:
                    data = None
                if data is None or cache_module.key_of(rel, data, oid) != key:  # changed since git looked
                    tasks.append(_task(project, needs, source))
                    continue
            found = needs.scanner.scan(data)
            facts_cache.put_scan(key, found)
        primary = is_primary(needs.want(project, source), found)
        cached = facts_cache.get(key, complete=primary)
        if cached is None:
            tasks.append(_task(project, needs, source))
            continue
        project.set_facts(rel, cached)
        project.set_found(rel, found)
        if primary:
            project.mark_primary(rel)
    return tasks


def _follow(project: Project, rules: list, facts_cache, keys: dict) -> None:
    """Run the selected rules' follow-ups (`Rule.follow_ups`), each once, or replay what
    they did: the files they made primary, remembered in the facts cache under a digest
    of everything they read (every file's key, the excluded folders' files, by git's
    object id where git vouches for them, the settings, and the follow-ups' own code). A
    warm run of an unchanged tree then reads the few files' facts instead of searching
    the project; so does a run where the only files changed are ones the follow-ups
    could have no use for (`_replay_unchanged`: a comment added to a module, say)."""
    from ..analysis import import_time

    follows = list(dict.fromkeys(follow for rule in rules for follow in rule.follow_ups))
    if not follows:
        return
    base = _follow_base(project, follows) if facts_cache.enabled and all(rel in keys for rel in project.files) else None
    digest = _follow_digest(base, project, keys) if base is not None else None
    done = facts_cache.followed(digest) if digest is not None else None
    record = facts_cache.last_followed(base) if base is not None and done is None else None
    if record is not None:
        done = _replay_unchanged(project, record, keys, facts_cache)
    if done is not None:
        for rel in done:
            if rel in project.files:
                project.facts(rel)
                project.mark_primary(rel)
        if record is not None:  # the same result, on these inputs
            facts_cache.put_followed(digest, done)
            facts_cache.put_last_followed(base, {**record, "keys": _key_list(project, keys)})
        return
    before = set(project.primary_rels())
    primary = _rels_digest(before)
    project.watch = {"facts": set(), "summary": set()}
    try:
        for follow in follows:
            follow(project)
        watched = project.watch
    finally:
        project.watch = None
    if digest is None:
        return
    made = sorted(set(project.primary_rels()) - before)
    facts_cache.put_followed(digest, made)
    analysis = import_time.of(project)
    facts_cache.put_last_followed(base, {
        "rels": _rels_digest(project.files), "primary": primary, "keys": _key_list(project, keys), "made": made,
        "parsed": {rel: keys[rel].hex() for rel in sorted(before | watched["facts"]) if rel in keys},
        "texts": sorted(analysis.read_texts), "called": sorted(analysis.called),
        "summaries": {rel: _summary_signature(project.summary(rel)) for rel in sorted(watched["summary"])
                      if rel in project.files},
        "searched": {name: sorted(homes) for name, homes in sorted(analysis.searched.items())},
    })


def _replay_unchanged(project: Project, record: dict, keys: dict, facts_cache) -> Optional[list]:
    """What the follow-ups made primary in the run `record` describes, if no file changed
    since in a way they could use; else None (they run again). The same files must be
    there with the same ones primary before the follow-ups, and each changed file (a few at most)
    must be one the follow-ups neither read the text of nor made primary; a primary one
    (whose complete facts they read, and nothing else) must have the same facts; a
    module whose symbol table they built must have the same summary (`facts.syntax_only`)
    and be asked for it as before: because its bytes may load, or (`called`) because they
    do not and it may name, with one of its homes, a name they searched for; any other
    must still neither may load nor so name a name (`import_time`). Each of those is a
    question the follow-ups ask of a file alone, so the answers for every other file, and
    the result, are what they were."""
    from ..analysis import import_time

    try:
        if record["rels"] != _rels_digest(project.files) or record["primary"] != _rels_digest(project.primary_rels()):
            return None
        old = set(record["keys"])
        changed = [rel for rel in project.files if keys[rel].hex() not in old]
        summaries, searched = record["summaries"], {name: set(homes) for name, homes in record["searched"].items()}
        called = set(record["called"])  # each has a summary too: `follow_calls` asked for it
        untouchable = set(record["texts"]) | set(record["made"])
        parsed, made = record["parsed"], list(record["made"])
    except (KeyError, TypeError, AttributeError):
        return None
    if not changed or len(changed) > _FEW_CHANGED:
        return None
    for rel in changed:
        source = project.files[rel]
        core = project.is_module_file(rel) and project.settings.is_core(source.module)
        if rel in untouchable:
            return None
        if rel in parsed:  # they read its complete facts: the same ones, and nothing else of it?
            try:
                before = facts_cache.get(bytes.fromhex(parsed[rel]), complete=True)
            except ValueError:
                return None
            if before is None or not project.is_primary(rel) or before != project.facts(rel):
                return None  # of a file not primary they may also read the bytes
            continue
        if project.is_primary(rel) or getattr(project.known_facts(rel), "complete", True):
            return None
        if rel in summaries:  # asked for because it may load, or (`called`) may name what they searched for
            if rel in called:
                asked = not import_time.may_load(project, rel) and import_time.may_be_called(project, rel, searched)
            else:
                asked = import_time.may_load(project, rel)
            if not asked or _summary_signature(project.summary(rel)) != summaries[rel]:
                return None
        elif core and (import_time.may_load(project, rel) or import_time.may_be_called(project, rel, searched)):
            return None
    return made


_FEW_CHANGED = 16  # more changed files than this: the follow-ups run again


def _follow_base(project: Project, follows: list) -> bytes:
    """What the follow-ups' result depends on besides the checked files' keys, hashed:
    the settings, the follow-ups' own code, the excluded folders' files."""
    import hashlib
    import inspect

    digest = hashlib.sha256(b"follow\0" + repr(project.settings).encode())
    for follow in follows:
        digest.update(f"{follow.__module__}.{follow.__qualname__}\0".encode())
        digest.update(Path(inspect.getsourcefile(follow)).read_bytes())
    for module, source in sorted(project.excluded_modules().items()):
        oid = _vouched(project, source.rel)
        if oid is not None:
            digest.update(module.encode() + b"\0git\0" + oid.encode())
        else:
            data = project.excluded_texts().get(module)
            digest.update(module.encode() + (b"\0unread" if data is None else b"\0bytes\0" + data))
    return digest.digest()[:16]


def _follow_digest(base: bytes, project: Project, keys: dict) -> bytes:
    """`_follow_base` and every checked file's key, hashed."""
    import hashlib

    digest = hashlib.sha256(b"followed\0" + base)
    for rel in sorted(project.files):
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0" + keys[rel])
    return digest.digest()[:16]


def _key_list(project: Project, keys: dict) -> list:
    return sorted(keys[rel].hex() for rel in project.files)


def _rels_digest(rels) -> str:
    import hashlib

    return hashlib.sha256("\0".join(sorted(rels)).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _summary_signature(facts: FileFacts) -> str:
    """What the follow-ups read of a module's syntax-only summary, hashed."""
    import hashlib

    read = (facts.syntax_error, facts.top_names, facts.load_words, facts.suspects, facts.import_words,
            facts.class_words, facts.complete)
    return hashlib.sha256(repr(read).encode()).hexdigest()[:32]


def _scan(facts_cache, rel: str, data: bytes, scanner: Scanner) -> int:
    """`scanner`'s mask of a file no run parses (an excluded module), remembered in the
    facts cache by content and vocabulary like a checked file's trigger scan."""
    k = cache_module.key(rel, data)
    found = facts_cache.found(k, scanner.key)
    if found is None:
        found = scanner.scan(data)
        facts_cache.put_scan(k, found, scanner.key)
    return found


def _printable(finding):
    """Names on disk need not be UTF-8. Python files and docs pages so named are
    EXP000, but a rule may still name another path (a feature directory, say): every
    path and message leaves the run as valid text, whatever the format."""
    return replace(
        finding, path=printable(finding.path), message=printable(finding.message), subject=printable(finding.subject)
    )


def _compute_all(project, facts_cache, scanner, tasks, jobs, progress, follow_up, keyed: bool, keys: dict) -> None:
    """Compute `tasks` (in a pool when worth it), then the tasks `follow_up()`
    names once the first results are in. `keyed`: store the results in
    `facts_cache` under their keys (a persisted or a shared cache)."""
    jobs = jobs or os.cpu_count() or 1
    groups = _by_size(project, tasks)  # big files first: even load
    bar = _Progress(len(tasks), progress)
    work = partial(_compute, scanner, keyed)
    if jobs > 1 and len(tasks) >= _POOL_THRESHOLD:
        import multiprocessing  # only here: a warm run starts no process

        context = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
        with context.Pool(min(jobs, len(groups))) as pool:
            _collect(project, facts_cache, pool.imap_unordered(work, _announced(groups), chunksize=4), bar, keys)
            _collect(project, facts_cache, pool.imap_unordered(work, _announced(_by_size(project, follow_up()))),
                     None, keys)
    else:
        _collect(project, facts_cache, map(work, groups), bar, keys)
        _collect(project, facts_cache, map(work, _by_size(project, follow_up())), None, keys)
    bar.close()


def _announced(groups: list) -> list:
    """`groups`, after raising the audit event ``policy_checks.read`` for each path a
    worker will open: an audit hook of this process (`replay.watching`) does not see
    the workers' own opens."""
    for group in groups:
        for task in group:
            sys.audit("policy_checks.read", task[1])
    return groups


def _prefetch(project: Project, needs: Prefilter, rules: list) -> list:
    """Tasks for the files the rules say they will certainly ask facts of
    (`Rule.prefetch`) and that have no complete facts yet: computing them in the
    pool beats parsing them one by one later."""
    wanted = set()
    for rule in rules:
        wanted.update(rule.prefetch(project))
    tasks = []
    for rel in sorted(wanted):
        known = project.known_facts(rel)
        if rel in project.files and (known is None or not known.complete):
            tasks.append(_task(project, needs, project.files[rel], complete=True))
    return tasks


def requirement_aliases(project: Project) -> frozenset:
    """Absolute names that package modules bind to ``backend_requirement`` under
    another name at module level (``from .utils import backend_requirement as
    requires`` in ``flashinfer/dispatch.py`` gives ``flashinfer.dispatch.requires``).
    Such a module spells ``backend_requirement``, so it is primary."""
    found = set()
    for _, facts in project.primary_facts(CORE_MODULE, EXPERIMENTAL_MODULE):
        for name, binding in facts.bindings.items():
            if name != markers.BACKEND_REQUIREMENT and binding.tag in ("from", "alias"):
                if facts.resolve_local(name).rpartition(".")[2] == markers.BACKEND_REQUIREMENT:
                    found.add(f"{facts.module}.{name}")
    return frozenset(found)


def _follow_requirement_aliases(project: Project, facts_cache) -> int:
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
        if not project.is_module_file(rel):
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
            facts_cache.put(key, facts, None)
            parsed += 1
        project.set_facts(rel, facts)
        project.mark_primary(rel)
    return parsed


def _collect(project, facts_cache, groups, bar, keys: dict) -> None:
    done = 0
    for results in groups:
        for rel, key, facts, found, primary in results:
            if facts is None:
                project.drop_unreadable(rel, found)  # `found` holds the error message
            else:
                if key is not None:
                    facts_cache.put(key, facts, found)
                    keys[rel] = key
                project.set_facts(rel, facts)
                project.set_found(rel, found)
                if primary:
                    project.mark_primary(rel)
            done += 1
            if bar is not None:
                bar.update(done)


def _ignored_for_file(settings: Settings, finding) -> bool:
    for pattern, ids in settings.per_file_ignores:
        if (fnmatch.fnmatchcase(finding.path, pattern) or under(finding.path, pattern)) and matches(finding.rule, ids):
            return True
    return False


def _relative_paths(root: Path, paths) -> list:
    """``(path as given, path relative to the root)`` of each of `paths` (``""``
    for the root itself)."""
    result = []
    for path in paths:
        absolute = Path(path).resolve()
        try:
            rel = absolute.relative_to(root).as_posix()
        except ValueError:
            raise ValueError(f"{path} is outside the project root {root} (pass --root to check another project)") from None
        result.append((str(path), "" if rel == "." else rel))
    return result


def checked_files(project: Project) -> set:
    """Relative paths of every file the run checks and a finding may point at:
    the Python files of the package and the tests, the docs pages, files it could
    not read, and the other files rules read (``FEATURE.toml`` records, the pytest
    configuration; `needs.Kind.locate`)."""
    files = set(project.files) | {rel for rel, _ in project.read_problems}
    files.update(rel for rel, _ in project.docs_pages())
    for kind in dict.fromkeys(kind for rule in RULES.values() for kind in rule.reads):
        if kind.locate is not None:
            files.update(kind.locate(project))
    return files


def check_paths(project: Project, given: list) -> None:
    """Raise ValueError, saying why, unless each ``(path, rel)`` of `given` names
    something the run checks: a checked file, or a directory that holds one or lies
    in the package or the tests. A path elsewhere, excluded, or missing would
    otherwise read "All clear: 0 files checked"."""
    settings, root = project.settings, project.root
    checked = None
    for path, rel in given:
        if rel == "":
            continue
        if checked is None:
            checked = checked_files(project)
        if any(under(c, rel) for c in checked):
            continue
        tops = (settings.package.replace(".", "/"), settings.stable_tests)
        where = root / rel
        if not os.path.lexists(where):
            raise ValueError(f"{path} does not exist")
        excluded_by = next((p for p in settings.exclude if excluder([p])(rel)), None)
        if excluded_by is not None:
            raise ValueError(f"{path} is excluded from the check by {excluded_by!r} "
                             f"(see [tool.policy-check] exclude and extend-exclude)")
        inside = next((top for top in tops if under(rel, top)), None)
        if inside is not None and where.is_dir():
            continue  # nothing checked in it yet: "0 files checked" is the truth
        listing = getattr(project, "listing", None)  # what git selects (`gitfiles`), or None
        if listing is not None and not where.is_dir() and not listing.selects(rel):
            why = ("it is not in git's index (only staged files are checked)" if getattr(listing, "mode", "") == "staged"
                   else "git ignores it (an untracked file git ignores is not checked)")
            raise ValueError(f"{path} is left out of the check: {why}")
        if inside is not None:
            raise ValueError(
                f"{path} is not a file policy-check checks: it checks the Python files under "
                f"{tops[0]}/ and {tops[1]}/, the docs pages ({', '.join(settings.docs)}), the FEATURE.toml "
                f"records and the pytest configuration"
            )
        raise ValueError(
            f"{path} is outside the checked package {settings.package} (see [tool.policy-check] package); "
            f"policy-check checks {tops[0]}/, {tops[1]}/ (stable-tests), the docs pages "
            f"({', '.join(settings.docs)}) and the pytest configuration"
        )


def _suppressions(project: Project) -> dict:
    """path -> suppressions: from Python files, and from every non-Python file a
    rule says its findings may point at (`needs.Kind.locate`), whether or not the
    rule is selected (an invalid suppression is reported in any run)."""
    found = {}
    for rel in project.files:
        facts = project.known_facts(rel)
        if facts is not None and facts.suppressions:
            found[rel] = facts.suppressions
    for kind in dict.fromkeys(kind for rule in RULES.values() for kind in rule.reads):
        if kind.locate is None or not kind.comment_markers:
            continue
        for rel in kind.locate(project):
            text = project.read_text(rel)
            items = text_suppressions(text, kind.comment_markers) if text is not None else ()
            if items:
                found[rel] = items
    return found
