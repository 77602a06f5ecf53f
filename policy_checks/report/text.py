"""``path:line:col: EXP00N message`` lines, then an optional per-rule count, then
(``--policy-from``) the findings a policy change hides, each with what hid it."""

from __future__ import annotations

from collections import Counter


def fixed_line(result) -> str:
    """The one line about baseline entries that match nothing any more ("" if none)."""
    fixed = sum(n for _, n in result.fixed)
    if not fixed:
        return ""
    return (f"{fixed} baselined finding(s) no longer found (fixed): run \"policy-check baseline --prune\" "
            f"to remove them from {result.baseline}")


def policy_words(result) -> str:
    """The base revision a ``--policy-from`` run judged by, in words."""
    given, commit = result.policy_from
    return given if given == commit else f"{given} ({commit[:12]})"


def hidden_section(result) -> list:
    """With ``--policy-from``: the findings this tree's policy change hides, each
    with what hid it (none: no lines)."""
    if not result.hidden:
        return []
    verdict = ("approved by a maintainer (--approved-policy-change): listed, not failing" if result.approved
               else "they fail the check until a maintainer approves the change")
    lines = [f"Hidden by this pull request's policy change: the policy at {policy_words(result)} reports "
             f"{len(result.hidden)} finding(s) that this tree's policy hides; {verdict}:"]
    for h in result.hidden:
        f = h.finding
        lines.append(f"{f.path}:{f.line}:{f.column}: {f.rule} {f.message}")
        lines.append(f"    {h.reason}")
    return lines


def text(result, rule_names: dict, statistics: bool = False) -> str:
    lines = [f"{f.path}:{f.line}:{f.column}: {f.rule} {f.message}" for f in result.findings]
    if statistics:
        counts = Counter(f.rule for f in result.findings)
        lines += [f"{count:6d}  {rule}  {rule_names.get(rule, '')}" for rule, count in sorted(counts.items())]
    lines += hidden_section(result)
    noun = "file" if result.files_checked == 1 else "files"
    failing_hidden = len(result.hidden) if not result.approved else 0
    if result.findings or failing_hidden:
        summary = f"{len(result.findings)} finding(s)"
        if result.hidden:
            summary += f", {len(result.hidden)} hidden by this pull request's policy change"
        summary += f" in {result.files_checked} {noun} checked"
    else:
        summary = f"All clear: {result.files_checked} {noun} checked"
        if result.hidden:
            summary += f", {len(result.hidden)} finding(s) hidden by an approved policy change"
    if result.baseline is not None:
        summary += f", {len(result.baselined)} baselined"
        fixed = fixed_line(result)
        if fixed:
            lines.append(fixed)
    if result.policy_from is not None:
        summary += f"; policy from {policy_words(result)}"
    lines.append(summary)
    return "\n".join(lines) + "\n"
