"""``# policy: ignore[EXP00N] reason`` comments: applying them, and reporting bad ones.

A suppression silences findings of the rules it names on its own line. Two meta
findings keep suppressions honest (they are not containment rules, so they do not
take an EXP id; select or ignore them like any rule):

- SUP001 invalid-suppression: no rule id, an id that is not a rule, or no reason.
  An invalid suppression silences nothing.
- SUP002 unused-suppression: a valid suppression that silenced nothing in a run
  where every rule it names was checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rules.base import Finding


@dataclass(frozen=True)
class MetaRule:
    id: str
    name: str
    summary: str
    doc: str


INVALID = MetaRule("SUP001", "invalid-suppression", "a suppression comment lacks a rule id or a reason", __doc__)
UNUSED = MetaRule("SUP002", "unused-suppression", "a suppression comment silences nothing", __doc__)
META_RULES = {INVALID.id: INVALID, UNUSED.id: UNUSED}


def apply(findings: list, suppressions: dict, known_ids, checked_ids) -> list:
    """Findings left after `suppressions` (path -> [Suppression]), plus SUP findings.

    `known_ids`: every valid id; `checked_ids`: ids this run checked (an unused
    suppression is reported only when all its ids were checked).
    """
    by_line = {}
    result = []
    for path, items in suppressions.items():
        for s in items:
            unknown = [i for i in s.ids if i not in known_ids]
            problem = s.problem or (f"names an unknown rule id {unknown[0]!r}" if unknown else None)
            if problem:
                result.append(Finding(path, s.line, s.column, INVALID.id, f"invalid suppression `{s.text}`: {problem}", s.text))
            else:
                by_line.setdefault((path, s.line), []).append([s, False])
    for finding in findings:
        entries = by_line.get((finding.path, finding.line), ())
        matched = [e for e in entries if finding.rule in e[0].ids]
        for entry in matched:
            entry[1] = True
        if not matched:
            result.append(finding)
    for (path, _), entries in by_line.items():
        for s, used in entries:
            if not used and all(i in checked_ids for i in s.ids):
                result.append(Finding(path, s.line, s.column, UNUSED.id, f"unused suppression `{s.text}`: it silences nothing", s.text))
    return result
