"""A finding, the one thing every rule, report format and command carries. Imports
nothing of the checker, so that a replayed run (`engine.replay`) and the report formats
build findings without loading the rules."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Finding:
    """One finding, the checker's only output.

    Every report format and ``policy-check fix`` carry these. Findings sort by path, line,
    column, rule.

    `subject` says what the finding is about, in words that survive edits around it. It
    names the imported module, the checker function, or the feature and its missing item. It
    never names a line or a column. With the module and the enclosing definition it makes the
    finding's fingerprint (`policy_checks.engine.baseline`). It is not part of a finding's
    identity: two findings at one place with one message are one finding.
    """

    path: str  # relative to the root, "/" separators
    line: int  # 1-based
    column: int  # 1-based
    rule: str
    message: str
    subject: str = field(default="", compare=False)
