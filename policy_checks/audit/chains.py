"""The tracer's records, judged.

The static rules allow some experimental loads: the support modules. Each other
load is a finding whose message is its chain.
"""

from __future__ import annotations

from typing import Optional

from ..model.config import Settings, under
from ..rules.base import Finding
from .rules import CORE_LOADS_EXPERIMENTAL

MAX_CHAIN_STEPS = 6  # experimental frames named in a chain; the rest are counted


def chain_words(record: dict, settings: Settings) -> str:
    """``path:line (loader) -> experimental frames -> the module``, then its callers."""
    steps = []
    if record.get("core"):
        path, line = record["core"]
        steps.append(f"{path}:{line} ({record.get('loader') or 'import statement'})")
    elif record.get("loader"):
        steps.append(f"({record['loader']})")
    through = list(record.get("through") or [])
    if len(through) > MAX_CHAIN_STEPS:
        through = through[:MAX_CHAIN_STEPS] + [f"... {len(through) - MAX_CHAIN_STEPS} more"]
    steps += through
    unit = record["unit"]
    detail = record.get("detail") or ""
    steps.append(unit if not detail or under(detail, settings.experimental_dir) else f"{unit} (read through {detail})")
    words = " -> ".join(steps)
    callers = record.get("callers") or []
    if callers:
        words += "; called from " + ", ".join(callers)
    return words


def allowed(record: dict, records: list, support: dict, settings: Settings) -> bool:
    """Is the load `record` one the static rules allow?

    They allow a support module. They also allow the experimental package itself,
    loaded on the way to one from the same core line.
    """
    unit = record["unit"]
    if unit in support:
        return True
    if unit == settings.experimental_package:
        return any(other["unit"] in support and other.get("core") == record.get("core") for other in records)
    return False


def _subject(records: list) -> dict:
    """The record that names a core line's finding.

    It is the deepest module the line asked for: an import's own module, or its
    from-list's. Else it is the deepest module the line loaded. It is not the first
    event. An earlier line of the same request may already have loaded parent
    packages. That changes the order, never what the line asks for.
    """
    asked = [r for r in records if r.get("asked")] or records
    return max(asked, key=lambda r: (r["unit"].count("."), r["unit"]))


def reported(records: list, support: dict, settings: Settings) -> list:
    """The records that are findings, one per core line.

    Each is the module that line asked for beyond what is allowed (`_subject`).
    Records without a core line stay one each. What else the line loaded is not
    named. It depends on what an earlier line of the same request had already
    loaded. So it would differ from run to run.
    """
    found = [r for r in records if not allowed(r, records, support, settings)]
    heads, by_place = [], {}
    for record in found:
        place = tuple(record["core"]) if record.get("core") else None
        if place is None:
            heads.append([record])
        elif place in by_place:
            by_place[place].append(record)
        else:
            by_place[place] = [record]
            heads.append(by_place[place])
    return [_subject(group) for group in heads]


def located(record_core: Optional[list], fallback: tuple) -> tuple:
    """``(path, line)`` of a record: its core frame, else `fallback`."""
    if record_core:
        return record_core[0], int(record_core[1])
    return fallback


def keep_first(findings: list) -> list:
    """One finding per rule, place and subject.

    Workers that reach the same load from different importers report one chain
    each. The shortest message stays.
    """
    best = {}
    for finding in findings:
        key = (finding.rule, finding.path, finding.line, finding.subject)
        kept = best.get(key)
        if kept is None or (len(finding.message), finding.message) < (len(kept.message), kept.message):
            best[key] = finding
    return sorted(best.values())


def refusal_finding(refusal: dict, fallback: tuple, what: str) -> Finding:
    """AUD000 for a refused network call or write.

    It goes at its core line, in words that do not depend on which request reached
    the line. Otherwise it goes at `fallback`, saying what was run.
    """
    path, line = located(refusal.get("core"), fallback)
    prefix = "" if refusal.get("core") else f"{what}: "
    if refusal["event"] == "write":
        return Finding(path, line, 1, "AUD000",
                       f"{prefix}the audit refused a write to {refusal.get('args', '')} (outside its scratch "
                       "folders); what the code does with the file is not audited", "refused write")
    return Finding(path, line, 1, "AUD000",
                   f"{prefix}the audit refused {refusal['event']} {refusal.get('args', '')}; what the code does "
                   "with the network is not audited", f"refused {refusal['event']}")


def loaded_findings(answer: dict, place: tuple, support: dict, settings: Settings, rule: str, what: str,
                    loader: str) -> list:
    """A worker's answer as findings.

    Each network or process refusal it met is one. `what` says what was run, such
    as "importing flashinfer.x". Each experimental unit `loader` loaded beyond the
    support modules is one too, as `rule`. `loader` is words like "core code" or
    "the AOT listing". Each goes at its innermost core line, else at `place`.
    """
    findings = [refusal_finding(r, place, what) for r in answer.get("refusals", ())]
    for record in reported(answer.get("records", ()), support, settings):
        path, line = located(record.get("core"), place)
        # a load while a core module's top level ran is that module's import (AUD001),
        # whether an import request or the AOT listing reached it first
        this_rule, this_loader = (CORE_LOADS_EXPERIMENTAL.id, "core code") if record.get("at_import") else (rule, loader)
        findings.append(Finding(path, line, 1, this_rule, f"{this_loader} loads experimental {record['unit']}: "
                                                          f"{chain_words(record, settings)}", record["unit"]))
    return findings
