"""``path:line:col: EXP00N message`` lines, then an optional per-rule count."""

from __future__ import annotations

from collections import Counter


def fixed_line(result) -> str:
    """The one line about baseline entries that match nothing any more ("" if none)."""
    fixed = sum(n for _, n in result.fixed)
    if not fixed:
        return ""
    return (f"{fixed} baselined finding(s) no longer found (fixed): run \"policy-check baseline --prune\" "
            f"to remove them from {result.baseline}")


def text(result, rule_names: dict, statistics: bool = False) -> str:
    lines = [f"{f.path}:{f.line}:{f.column}: {f.rule} {f.message}" for f in result.findings]
    if statistics:
        counts = Counter(f.rule for f in result.findings)
        lines += [f"{count:6d}  {rule}  {rule_names.get(rule, '')}" for rule, count in sorted(counts.items())]
    noun = "file" if result.files_checked == 1 else "files"
    summary = f"{len(result.findings)} finding(s) in {result.files_checked} {noun} checked"
    summary = summary if result.findings else f"All clear: {result.files_checked} {noun} checked"
    if result.baseline is not None:
        summary += f", {len(result.baselined)} baselined"
        fixed = fixed_line(result)
        if fixed:
            lines.append(fixed)
    lines.append(summary)
    return "\n".join(lines) + "\n"
