"""``policy-check baseline``: accept today's findings, or prune what is fixed.

It prints how many entries it wrote. When few changed, it prints each entry added
or removed. So a reviewer sees the debt the commit accepts.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import click

from ..model.config import ConfigError
from ..report import click_options as shared
from ..report.click_options import EXIT_ERROR
from ..rules.registry import AUDIT_RULES

LIST_AT_MOST = 10  # `policy-check baseline` lists the entries it added and removed up to this many


@click.command("baseline")
@shared.root()
@click.option("--file", "baseline_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="The baseline file (default: policy-check-baseline.json at the root).")
@click.option("--prune", is_flag=True, help="Only remove what no finding uses any more; never add an entry "
              "nor raise a count.")
@shared.work
def baseline_command(root, baseline_file, prune, jobs, no_cache, cache_dir):
    """Write today's findings as the baseline (accepting them), or --prune it.

    Prints how many entries it wrote, and what it added and removed. When there are
    few, it prints the entries themselves."""
    from ..engine import baseline
    from ..engine.context import Context, baseline_name
    from ..engine.runner import check

    try:
        context = Context.build(root, baseline_file=baseline_file, read=False, use_cache=not no_cache,
                                cache_dir=cache_dir)
        path = context.baseline_path
        name = baseline_name(context.root, path)
        previous, unreadable = None, None
        if prune:
            previous = baseline.read(path, name)
        elif os.path.lexists(path):
            try:
                previous = baseline.read(path, name)
            except baseline.BaselineError as error:  # replaced: say so, and what it was
                unreadable = error.problem
        result = check(context.with_policy(context.settings, previous if prune else None), jobs=jobs,
                       fingerprints=True)
        if prune:
            counts = baseline.pruned(previous.counts, result.fixed)
            removed = sum(n for _, n in result.fixed)
            summary = (f"{name}: pruned {removed} finding(s) no longer found "
                       f"({len(previous.counts) - len(counts)} entries removed); {len(counts)} entries kept")
            if result.findings:
                summary += f"; {len(result.findings)} new finding(s) not added (run `policy-check baseline` to accept them)"
        else:
            counts = baseline.counted(result.fingerprints)
            if previous is not None:  # `policy-check audit --update-baseline`'s entries are the audit's to keep
                counts.update({fp: n for fp, n in previous.counts.items() if fp.rule in AUDIT_RULES})
            summary = f"{name}: wrote {len(counts)} entries for {len(result.fingerprints)} finding(s)"
            if unreadable is not None:
                summary += f" (replacing a file that could not be read: {unreadable})"
            elif previous is None:
                summary += " (a new baseline)"
        baseline.write(path, counts)
    except (ConfigError, ValueError) as error:
        click.echo(f"policy-check: error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    except OSError as error:
        click.echo(f"policy-check: error: cannot write the baseline: {error}", err=True)
        sys.exit(EXIT_ERROR)
    except Exception:
        click.echo(f"policy-check: internal error:\n{traceback.format_exc()}", err=True)
        sys.exit(EXIT_ERROR)
    for warning in result.warnings:
        click.echo(f"policy-check: warning: {warning}", err=True)
    for line in _changes(baseline, previous.counts if previous is not None else {}, counts, name):
        summary += line if line.startswith(";") else "\n" + line
    click.echo(summary)


def _changes(baseline, old: dict, new: dict, name: str) -> list:
    """What `policy-check baseline` changed: ``; added ..., removed ...``.

    When at most `LIST_AT_MOST` entries changed, it adds one line for each.
    """
    added, removed = baseline.changes(old, new)
    if not added and not removed:
        return ["; nothing added or removed"]

    def findings(changes) -> int:
        return sum(abs(c.after - c.before) for c in changes)

    words = [f"added {findings(added)} finding(s) in {len(added)} entries" if added else "added nothing",
             f"removed {findings(removed)} finding(s) in {len(removed)} entries" if removed else "removed nothing"]
    lines = ["; " + ", ".join(words)]
    if len(added) + len(removed) > LIST_AT_MOST:
        return lines + [f"  ({name} lists each entry)" if not old else f"  (`git diff {name}` shows each entry)"]
    for sign, changes in (("+", added), ("-", removed)):
        for change in changes:
            count = "" if {change.before, change.after} <= {0, 1} else f" (count {change.before} -> {change.after})"
            lines.append(f"  {sign} {baseline.describe(change.fingerprint)}{count}")
    return lines
