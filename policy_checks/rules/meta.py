"""``# policy: ignore[EXP00N] reason`` comments: the two meta rules that report bad ones.

A suppression silences findings of the rules it names on its own line. Two meta findings
keep suppressions honest. They are not containment rules, so they do not take an EXP id.
Select or ignore them like any rule:

- SUP001 invalid-suppression: no rule id, an id that is not a rule, or no reason.
  An invalid suppression silences nothing.
- SUP002 unused-suppression: a valid suppression that silenced nothing in a run
  where every rule it names was checked.
"""

# This docstring is what `policy-check explain SUP001` prints. `policy_checks.engine.suppressions`
# applies the comments and reports these findings; the rule table (`registry`) lists them
# from here, so the rules never import the suppressions.

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetaRule:
    id: str
    name: str
    summary: str
    doc: str


INVALID = MetaRule("SUP001", "invalid-suppression", "a suppression comment lacks a rule id or a reason", __doc__)
UNUSED = MetaRule("SUP002", "unused-suppression", "a suppression comment silences nothing", __doc__)
META_RULES = {INVALID.id: INVALID, UNUSED.id: UNUSED}
