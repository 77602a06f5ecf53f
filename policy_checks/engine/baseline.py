"""The baseline: today's findings, accepted as debt, so that a tree with findings can
adopt the checker and still fail on every new one (docs/policy_check.rst, "Adopting
policy-check on an existing tree").

A finding is known by its *fingerprint*: ``(rule, module, scope, subject)``. `module`
is the dotted module of a Python file (``flashinfer.gemm``), else the path (a docs
page, ``FEATURE.toml``, a feature directory's record); `scope` the qualname of the
innermost ``def`` or ``class`` holding the finding's line (``"<module>"`` outside
every one; ``""`` for a file that is not Python code or does not parse); `subject`
what the finding is about (`rules.base.Finding.subject`). No line and no column:
inserting lines above a finding, re-wrapping its statement or renaming a local
variable leaves its fingerprint alone.

The file, ``policy-check-baseline.json`` at the project root, maps fingerprints to
a count (two identical findings in one scope are two). It is written one entry a
line, sorted, so that a pull request's diff of it says exactly which debt came and
went (the bot reads it so). Reading it is strict: anything but that shape is an
error naming the file, never an empty baseline (which would be a silent "all
clear" for nothing, or a flood).

Matching (`match`) is exact, each finding consuming one of its entry's count. The
module is part of the key: an entry whose module (or path) is gone is paid debt, and
never accepts the same finding in another module (deleting a module that carried
debt and adding its import elsewhere is new debt). A file moved with its content
is re-keyed by ``policy-check baseline``; the bot reads that change as a rename.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable, Iterable, NamedTuple, Optional

from .store import read_bounded

FILE_NAME = "policy-check-baseline.json"
KEY = "policy-check-baseline"  # the top-level key, holding the format's version
VERSION = 1
MAX_BYTES = 16 * 1024 * 1024  # about 100,000 entries; a bigger file is refused unread
MAX_COUNT = 10**9  # no real baseline holds more findings of one fingerprint
_FIELDS = ("rule", "module", "scope", "subject", "count")


class Fingerprint(NamedTuple):
    rule: str
    module: str  # dotted module of a Python file, else the path
    scope: str  # innermost def/class qualname, "<module>", or "" (not Python code)
    subject: str


class BaselineError(ValueError):
    """The baseline file cannot be used; the message names it (exit status 2) and,
    for a file on disk, says how to restore it. `problem`: the message without that."""

    def __init__(self, message: str, problem: Optional[str] = None):
        super().__init__(message)
        self.problem = problem or message


class Baseline(NamedTuple):
    """A baseline as read: `counts` maps each `Fingerprint` to how many findings it
    accepts; `name` is how reports name the file."""

    counts: dict
    name: str


# fingerprints -----------------------------------------------------------------------


def fingerprint(project, finding, by_path: frozenset) -> Fingerprint:
    """`finding`'s fingerprint. `by_path`: ids of rules whose findings are about a
    directory or a record (`Rule.fingerprint_by_path`). A Python file's scope comes
    from its complete facts (computed on demand for a file no rule inspected)."""
    rel = finding.path
    if finding.rule in by_path or not rel.endswith(".py"):
        return Fingerprint(finding.rule, rel, "", finding.subject)
    source = project.files.get(rel)
    if source is None:  # unreadable, or its name is not UTF-8: no facts
        from ..model.project import module_name  # here: reading a stored result loads no project model

        return Fingerprint(finding.rule, module_name(rel)[0], "", finding.subject)
    facts = project.facts(rel)
    scope = "" if facts.syntax_error is not None else facts.scope_at(finding.line)
    return Fingerprint(finding.rule, source.module, scope, finding.subject)


def locator(project) -> Callable[[str], Optional[str]]:
    """A function from an entry's module (or path) to the file it names in the
    project, or None when there is no such file any more."""
    known = {source.module: rel for rel, source in project.files.items()}
    root = str(project.root) + os.sep

    def locate(module: str) -> Optional[str]:
        if module not in known:  # a path, or a module gone: ask the file system once
            if not module or module.startswith("/") or "\0" in module or ".." in module.split("/"):
                known[module] = None  # no file of the project has such a name
            else:
                known[module] = module if os.path.lexists(root + module) else None
        return known[module]

    return locate


# matching ---------------------------------------------------------------------------


class Matched(NamedTuple):
    new: list  # indexes of findings no entry accepts
    baselined: list  # indexes of findings an entry accepts
    fixed: list  # (Fingerprint, count) of what entries accept beyond the findings


def match(counts: dict, prints: list) -> Matched:
    """Match findings (by their fingerprints `prints`, in report order) against
    `counts`. The first findings of a fingerprint consume its count; the rest are
    new. The module is part of the key: an entry whose module is gone is paid debt
    (fixed), never a key that accepts the same finding in another module."""
    left = dict(counts)
    new, baselined = [], []
    for index, fp in enumerate(prints):
        if left.get(fp, 0) > 0:
            left[fp] -= 1
            baselined.append(index)
        else:
            new.append(index)
    fixed = [(fp, n) for fp, n in sorted(left.items()) if n > 0]
    return Matched(new, baselined, fixed)


def accept(result, counts: dict, name: str) -> Matched:
    """Apply the entries `counts` to `result` (a report's result, its findings
    fingerprinted): keep the findings they do not accept as new, set the accepted ones
    aside with their fingerprints, and note the entries left over as paid off. Every
    command that reads a baseline (run, audit, consumer) applies it here."""
    findings, prints = result.findings, result.fingerprints
    matched = match(counts, prints)
    result.findings = [findings[i] for i in matched.new]
    result.fingerprints = [prints[i] for i in matched.new]
    result.baselined = [findings[i] for i in matched.baselined]
    result.baselined_fingerprints = [prints[i] for i in matched.baselined]
    result.fixed = matched.fixed
    result.baseline = name
    return matched


# the file ---------------------------------------------------------------------------


def entry(fp: Fingerprint, count: int) -> dict:
    """An entry as the file (and the JSON report) writes it, keys in that order."""
    return dict(zip(_FIELDS, (*fp, count)))


def digest(fp: Fingerprint) -> str:
    """A short, stable name of a fingerprint (SARIF's ``partialFingerprints``): a hash
    of its four fields, so it changes exactly when the fingerprint does."""
    text = json.dumps(list(fp), ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:32]


def describe(fp: Fingerprint) -> str:
    """An entry in words, for a person: ``EXP007 flashinfer.legacy (old): flashinfer.experimental.x``."""
    return f"{fp.rule} {fp.module} ({fp.scope or 'file'}): {fp.subject}"


class Change(NamedTuple):
    fingerprint: Fingerprint
    before: int  # its count in the old baseline (0: no such entry)
    after: int  # its count in the new one (0: gone)


def changes(old: dict, new: dict) -> tuple:
    """``(added, removed)``: the `Change` of each entry whose count rose (or that is
    new) and of each whose count fell (or that is gone), from counts `old` to `new`."""
    added = [Change(fp, old.get(fp, 0), n) for fp, n in sorted(new.items()) if n > old.get(fp, 0)]
    removed = [Change(fp, n, new.get(fp, 0)) for fp, n in sorted(old.items()) if n > new.get(fp, 0)]
    return added, removed


def default_path(root: Path) -> Path:
    return Path(root) / FILE_NAME


def read(path: Path, name: Optional[str] = None) -> Baseline:
    """The baseline in `path`: a regular file of at most `MAX_BYTES` in exactly the
    format `dumps` writes (entries in any order). Raises `BaselineError` naming the
    file for anything else (not JSON, another top-level key or version, a wrong
    field, a duplicate entry, a FIFO, a symbolic link, a directory)."""
    name = name or str(path)
    try:
        data = read_bounded(Path(path), MAX_BYTES)
    except FileNotFoundError:
        raise _failure(name, "no such file", restore=True) from None
    except (OSError, ValueError) as error:
        raise _failure(name, f"cannot read: {getattr(error, 'strerror', None) or error}", restore=True) from None
    try:
        return loads(data, name)
    except BaselineError as error:
        raise BaselineError(f"{error}{_restore(name)}", str(error)) from None


def _failure(name: str, problem: str, restore: bool = False) -> BaselineError:
    message = f"baseline {name}: {problem}"
    return BaselineError(message + (_restore(name) if restore else ""), message)


def _restore(name: str) -> str:
    """How to get a baseline file back. Never "regenerate it": that would accept
    every finding of today, new debt included, as if it were old."""
    return (f". Restore the committed file with `git checkout -- {name}` (or the base branch's: "
            f"`git checkout <base-branch> -- {name}`); meanwhile `--no-baseline` reports every finding")


def loads(data: bytes, name: str) -> Baseline:
    """The baseline in `data` (the bytes of a baseline file, at most `MAX_BYTES`:
    another revision's, say), read as strictly as `read` reads a file."""

    def fail(problem: str) -> BaselineError:
        return _failure(name, problem)

    if len(data) > MAX_BYTES:
        raise fail(f"cannot read: larger than {MAX_BYTES} bytes")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise fail(f"not JSON ({type(error).__name__}: {error})") from None
    if not isinstance(document, dict) or set(document) != {KEY, "entries"}:
        keys = sorted(document) if isinstance(document, dict) else type(document).__name__
        raise fail(f"not a policy-check baseline (expected the keys {KEY!r} and 'entries', found {keys})")
    version = document[KEY]
    if type(version) is not int or version != VERSION:
        raise fail(f"format version {version!r}, this policy-check reads version {VERSION}")
    entries = document["entries"]
    if not isinstance(entries, list):
        raise fail("'entries' is not a list")
    counts = {}
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or set(entry) != set(_FIELDS):
            raise fail(f"entry {number} is not an object with exactly the keys {', '.join(_FIELDS)}")
        if not all(isinstance(entry[k], str) for k in _FIELDS[:4]) or not entry["rule"] or not entry["module"]:
            raise fail(f"entry {number}: rule, module, scope and subject must be strings (rule and module non-empty)")
        count = entry["count"]
        if type(count) is not int or not 1 <= count <= MAX_COUNT:
            raise fail(f"entry {number}: count must be an integer from 1 to {MAX_COUNT}")
        fp = Fingerprint(entry["rule"], entry["module"], entry["scope"], entry["subject"])
        if fp in counts:
            raise fail(f"entry {number} repeats an earlier entry's rule, module, scope and subject")
        counts[fp] = count
    return Baseline(counts, name)


def dumps(counts: dict) -> str:
    """The file's text: one entry a line, sorted by rule, module, scope, subject."""
    lines = ["    " + json.dumps(entry(fp, counts[fp]), separators=(", ", ": "), ensure_ascii=True) for fp in sorted(counts)]
    if not lines:
        return f'{{\n  "{KEY}": {VERSION},\n  "entries": []\n}}\n'
    body = ",\n".join(lines)
    return f'{{\n  "{KEY}": {VERSION},\n  "entries": [\n{body}\n  ]\n}}\n'


def write(path: Path, counts: dict) -> None:
    """Write the baseline atomically (a temporary file renamed into place), with
    the permissions a new file gets (it is meant to be committed)."""
    path = Path(path)
    import secrets  # here: reading a baseline writes nothing

    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(dumps(counts).encode("ascii"))
        os.replace(temporary, path)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise


def counted(prints: Iterable[Fingerprint]) -> dict:
    counts = {}
    for fp in prints:
        counts[fp] = counts.get(fp, 0) + 1
    return counts


def pruned(counts: dict, fixed: list) -> dict:
    """`counts` less what `fixed` says no finding uses: counts only fall, entries
    only go; nothing is added."""
    result = dict(counts)
    for fp, n in fixed:
        result[fp] = result[fp] - n
        if result[fp] <= 0:
            del result[fp]
    return result

