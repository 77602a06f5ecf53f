"""The text report.

It prints, in order:

- ``path:line:col: EXP00N [*] message`` lines. ``[*]`` marks a rule ``policy-check fix``
  rewrites. A feature's EXP009 findings go under one heading;
- with ``--policy-from``, the findings a policy change hides, each with what hid it;
- the summary line. It lists the entries by rule when headings make them fewer than the
  findings;
- one line saying what to do next.

``--statistics`` prints a count per rule instead of the findings. ``--quiet`` prints the
findings and nothing else."""

from __future__ import annotations

from collections import Counter

from .options import Options
from .rule_help import FIXABLE

MARK = "[*]"  # beside a finding of a rule `policy-check fix` rewrites


def fixed_line(result) -> str:
    """The one line about stale baseline entries, which match nothing; "" if none."""
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
    """With ``--policy-from``: the findings this tree's policy change hides.

    Each comes with what hid it. No such findings give no lines."""
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


def finding_line(f) -> str:
    mark = f"{MARK} " if f.rule in FIXABLE else ""
    return f"{f.path}:{f.line}:{f.column}: {f.rule} {mark}{f.message}"


GROUPED_RULE = "EXP009"  # one finding per missing item (for the baseline); one heading per feature in text


def _feature_of(f) -> str:
    """The feature an EXP009 finding is about; "" if none.

    Its subject is ``<feature>: <item>``."""
    return f.subject.partition(": ")[0] if f.rule == GROUPED_RULE and ": " in f.subject else ""


def finding_lines(findings) -> list:
    """`finding_line` for each finding, with a feature's EXP009 findings under one heading.

    The heading is at its first finding, with each missing item indented under it. A feature
    without a record lacks some fifteen items, which a person reads as one fact. JSON, SARIF
    and the annotations keep one result per item."""
    groups: dict = {}
    for f in findings:
        if _feature_of(f):
            groups.setdefault(_feature_of(f), []).append(f)
    lines, shown = [], set()
    for f in findings:
        feature = _feature_of(f)
        if not feature or len(groups[feature]) == 1:
            lines.append(finding_line(f))
            continue
        if feature in shown:
            continue
        shown.add(feature)
        items = groups[feature]
        lines.append(f"{f.path}:{f.line}:{f.column}: {f.rule} experimental feature {feature} lacks {len(items)} item(s):")
        prefix = f"experimental feature {feature}: "
        for item in items:
            where = "" if (item.path, item.line) == (f.path, f.line) else f"{item.path}:{item.line}: "
            lines.append(f"    {where}{item.message.removeprefix(prefix)}")
    return lines


def entries_by_rule(findings) -> dict:
    """rule -> ``(findings, entries)``.

    That is how many findings of the rule there are, and how many entries `finding_lines`
    shows for them. A feature's EXP009 findings are one entry."""
    counts = Counter(f.rule for f in findings)
    groups = Counter(_feature_of(f) for f in findings if _feature_of(f))
    entries = Counter(f.rule for f in findings if not _feature_of(f) or groups[_feature_of(f)] == 1)
    entries[GROUPED_RULE] += sum(1 for n in groups.values() if n > 1)
    return {rule: (counts[rule], entries[rule]) for rule in sorted(counts)}


def entries_words(findings) -> str:
    """What the listing shows when it is shorter than the findings, through grouped EXP009 items.

    For example: ``listed as 3 entries (EXP001 1; EXP009 27 under 2 feature headings)``. It is
    "" when each finding is an entry of its own."""
    by_rule = entries_by_rule(findings)
    shown = sum(entries for _, entries in by_rule.values())
    if shown == len(findings):
        return ""
    parts = [f"{rule} {count}" + (f" under {entries} feature heading(s)" if entries != count else "")
             for rule, (count, entries) in by_rule.items()]
    return f"listed as {shown} entries ({'; '.join(parts)})"


def statistics_lines(result, rule_names: dict) -> list:
    """A count per rule, most frequent first, ties by id."""
    counts = Counter(f.rule for f in result.findings)
    return [
        f"{count:6d}  {rule}  {MARK if rule in FIXABLE else ' ' * len(MARK)} {rule_names.get(rule, '')}".rstrip()
        for rule, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def next_step(result, fix: str = "policy-check fix") -> str:
    """What to do about the findings, in one line; "" when there are none.

    `fix` is the ``fix`` command that sees these findings as this run saw them. It uses the
    same baseline, or none (`Options.fix`). So the hint promises only what it does."""
    if not result.findings:
        return ""
    first = result.findings[0].rule
    fixable = sum(1 for f in result.findings if f.rule in FIXABLE)
    steps = [f"`policy-check explain {first}` says what a rule wants and why"]
    if fixable:
        steps.append(f"`{fix}` rewrites the {fixable} finding(s) marked {MARK} (`--diff` to preview)")
    steps.append(f"`# policy: ignore[{first}] <reason>` on a finding's line suppresses it")
    return "Next: " + "; ".join(steps) + "."


def summary_line(result, listed: bool = False) -> str:
    """The run in one line.

    `listed` means the findings were listed above, not with ``--statistics``. Then it says how
    many entries they made when fewer (`entries_words`)."""
    noun = "file" if result.files_checked == 1 else "files"
    failing_hidden = len(result.hidden) if not result.approved else 0
    if result.findings or failing_hidden:
        summary = f"{len(result.findings)} finding(s)"
        if result.hidden:
            summary += f", {len(result.hidden)} hidden by this pull request's policy change"
        summary += f" in {result.files_checked} {noun} checked"
        entries = entries_words(result.findings) if listed else ""
        summary += f", {entries}" if entries else ""
    else:
        summary = f"All clear: {result.files_checked} {noun} checked"
        if result.hidden:
            summary += f", {len(result.hidden)} finding(s) hidden by an approved policy change"
    if result.baseline is not None:
        summary += f", {len(result.baselined)} baselined"
    if result.policy_from is not None:
        summary += f"; policy from {policy_words(result)}"
    if result.no_experimental_package:
        summary += f"; {no_experimental_words(result.no_experimental_package)}"
    return summary


def no_experimental_words(directory: str) -> str:
    """Why a tree without an experimental package is trivially clean; the board says it too."""
    return (f"no experimental package ({directory}) in this tree, so the containment rules "
            f"had nothing to check")


def text(result, rule_names: dict, options: Options = Options()) -> str:
    if options.statistics:
        lines = statistics_lines(result, rule_names)
    else:
        lines = finding_lines(result.findings) + hidden_section(result)
    if not options.quiet:
        fixed = fixed_line(result) if result.baseline is not None else ""
        lines += [fixed] if fixed else []
        lines.append(summary_line(result, listed=not options.statistics))
        step = next_step(result, options.fix)
        lines += [step] if step else []
    return "".join(line + "\n" for line in lines)
