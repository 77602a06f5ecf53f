"""``# policy: ignore[EXP00N] reason`` comments: applying them, and reporting bad ones.

A suppression silences findings of the rules it names on its own line. The two meta
rules that keep suppressions honest, SUP001 invalid-suppression and SUP002
unused-suppression, are declared beside the rules (`policy_checks.rules.meta`, which
explains them): this module imports the rules, the rules never import it.
"""

from __future__ import annotations

from ..rules.base import Finding
from ..rules.meta import INVALID, UNUSED


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
