"""One consumer check: the files under PATHS judged against a `Surface`, then the baseline.

The result has the shape the report formats read (`policy_checks.report`): text,
json, github, sarif. So the consumer check prints exactly as ``policy-check run``
does. Each file is read once, bounded in size (`MAX_FILE_BYTES`). A Python file that
names neither FlashInfer nor the gate is not parsed. Suppression comments work as
for ``run``: ``# policy: ignore[CON001] reason`` on the finding's line.

A Python file's findings are remembered by its content and the surface. They are
kept in the checker's cache directory (`policy_checks.engine.cache`), in a store of
their own. So an unchanged file is not parsed again. ``--no-cache`` turns that off.

The baseline is ``policy-check-consumer-baseline.json`` at the root. It uses the
checker's own format (`policy_checks.engine.baseline`). A finding's fingerprint is its
rule, its file, the enclosing ``def``/``class``, and what it is about. That is the
API, ``api:backend``, or the gate. So it survives edits that move lines.
"""

from __future__ import annotations

import ast
import hashlib
import warnings
from pathlib import Path
from typing import List, Optional

from ..engine import baseline as baseline_module
from ..engine.cache import FactsCache
from ..engine.store import read_bounded
from ..model.facts import may_hold_suppressions, python_suppressions, text_suppressions
from ..rules.base import Finding
from ..rules.consumer import CONSUMER_RULES
from ..rules.registry import ALL_IDS
from ..engine.runner import Result  # the one result every report format reads
from ..engine.suppressions import apply
from . import files, python_code
from .settings_text import lines_setting_gate
from .surface import Surface, dumps

MEMO_FILE = "consumer-v1.json"  # the store of remembered findings, beside the checker's facts

MAX_FILE_BYTES = 4 * 1024 * 1024  # a larger file is reported unread, never parsed
BASELINE_FILE = "policy-check-consumer-baseline.json"
UNREAD = "CON000"  # not a finding: files that could not be read go to the warnings


def check(root: Path, paths: List[Path], surface: Surface, staged: bool = False,
          accepted: Optional[baseline_module.Baseline] = None, use_cache: bool = True,
          cache_dir: Optional[Path] = None) -> Result:
    """Findings of CON001-CON003 under `paths`, sorted. With `accepted`, only new ones."""
    root = Path(root).resolve()
    memo = FactsCache(root, enabled=use_cache, directory=cache_dir, file_name=MEMO_FILE)
    salt = hashlib.sha256(f"{MEMO_FILE}\0{python_code.READER_VERSION}\0".encode() + dumps(surface).encode()).digest()
    problems: list = []
    found: list = []  # (Finding, scope)
    suppressions: dict = {}
    checked = parsed = 0
    for rel, path, kind in files.selected(root, paths or [root], staged, problems):
        try:
            data = read_bounded(path, MAX_FILE_BYTES)
        except (OSError, ValueError) as error:
            problems.append((rel, f"not read: {getattr(error, 'strerror', None) or error}"))
            continue
        checked += 1
        if kind == files.PYTHON:
            if not python_code.mentions(data, surface):
                continue
            key = hashlib.sha256(salt + data).digest()[:16]
            hits = _remembered(memo, key)
            if hits is None:
                parsed += 1
                unread = len(problems)
                hits = _python(data, surface, rel, problems)
                if len(problems) == unread:  # a file that did not parse is tried again next time
                    memo.put(key, [list(h.__dict__.values()) for h in hits])
            if may_hold_suppressions(data):
                suppressions[rel] = python_suppressions(data)
        else:
            text = data.decode("utf-8", "replace")
            hits = [python_code.Hit("CON003", line, column,
                                    f"enables experimental automatic backends: `{shown}`; a supported release must "
                                    f"not set {surface.gate}=1 by default", f"{surface.gate}:settings", "")
                    for line, column, shown in lines_setting_gate(text, surface.gate)]
            if may_hold_suppressions(data):
                suppressions[rel] = text_suppressions(text, ("#",))
        found += [(Finding(rel, h.line, h.column, h.rule, h.message, h.subject), h.scope) for h in hits]
    scopes = {(f.path, f.line, f.column, f.rule, f.subject): scope for f, scope in found}
    findings = apply([f for f, _ in found], suppressions, set(ALL_IDS), set(CONSUMER_RULES))
    findings = sorted(set(findings), key=lambda f: (f.path, f.line, f.column, f.rule, f.message))
    prints = [baseline_module.Fingerprint(f.rule, f.path, scopes.get((f.path, f.line, f.column, f.rule, f.subject), ""),
                                          f.subject or f.message) for f in findings]
    memo.save()
    warnings_ = memo.warnings + [f"{rel}: {problem}" for rel, problem in problems]
    result = Result(findings, checked, warnings_, parsed=parsed, fingerprints=prints)
    if accepted is not None:
        baseline_module.accept(result, {fp: n for fp, n in accepted.counts.items() if fp.rule in CONSUMER_RULES},
                               accepted.name)
    return result


_HIT_TYPES = (str, int, int, str, str, str)  # the fields of a `python_code.Hit`, in order


def _remembered(memo: FactsCache, key: bytes) -> Optional[list]:
    """The findings stored under `key`. None when none are stored, or not of the right shape."""
    stored = memo.entries.get(key) if memo.enabled else None
    if type(stored) is not list:
        return None
    hits = []
    for item in stored:
        if type(item) is not list or len(item) != len(_HIT_TYPES) or not all(
                type(value) is kind for value, kind in zip(item, _HIT_TYPES)):
            return None
        hits.append(python_code.Hit(*item))
    memo.used.add(key)
    return hits


def _python(data: bytes, surface: Surface, rel: str, problems: list) -> list:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning of odd escapes: not ours to report
            tree = ast.parse(data, filename=rel)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        problems.append((rel, f"not parsed: {type(error).__name__}: {error}"))
        return []
    try:
        return python_code.read(tree, surface)
    except RecursionError:
        problems.append((rel, "not read: nested too deeply"))
        return []
