"""``policy-check fix``: apply the safe rewrites for EXP001, EXP002, EXP004 and EXP006."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Sequence

import click

from .apply import FIXABLE_RULES, plan, write
from .findings import FixError, collect, load_project


def _rules(value: Optional[str]) -> Sequence[str]:
    if not value:
        return FIXABLE_RULES
    rules = [r.strip().upper() for r in value.split(",") if r.strip()]
    unknown = [r for r in rules if r not in FIXABLE_RULES]
    if unknown:
        raise click.BadParameter(
            f"{', '.join(unknown)}: no automatic fix (fixable: {', '.join(FIXABLE_RULES)})", param_hint="--select"
        )
    return rules


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--diff", is_flag=True, help="Print a unified diff of the fixes and write nothing.")
@click.option("--select", default=None, help="Comma-separated rule ids to fix (default: all fixable).")
@click.option("--root", type=click.Path(file_okay=False, exists=True), default=None, help="Project root (default: nearest pyproject.toml).")
def fix(paths: Sequence[str], diff: bool, select: Optional[str], root: Optional[str]) -> None:
    """Fix what can be fixed safely; report what needs a person.

    Exit status: 0 nothing left to fix by hand, 1 findings left, 2 error.
    """
    raise SystemExit(run_fix(paths, diff=diff, rules=_rules(select), root=root))


def run_fix(
    paths: Sequence[str],
    *,
    diff: bool = False,
    rules: Sequence[str] = FIXABLE_RULES,
    root: Optional[str] = None,
    before_replace: Optional[Callable[[Path], None]] = None,
) -> int:
    """The command's work, callable from tests; returns the exit status."""
    try:
        project = load_project(Path(root) if root else None)
        fixes = plan(project, collect(project, paths, rules))
    except FixError as error:
        click.echo(f"policy-check fix: {error}", err=True)
        return 2
    verb = "would fix" if diff else "fixed"
    fixed = left = 0
    for file_fix in fixes:
        if diff:
            click.echo(file_fix.diff(), nl=False)
        elif file_fix.changed and not write(project, file_fix, before_replace):
            file_fix.left = [(f, "the file changed on disk during the run; nothing written") for f in file_fix.fixed] + file_fix.left
            file_fix.fixed, file_fix.after = [], file_fix.before
        for finding in file_fix.fixed:
            click.echo(f"{verb}: {finding.path}:{finding.line}:{finding.column}: {finding.rule} {finding.message}", err=diff)
        for finding, reason in file_fix.left:
            click.echo(f"needs a person: {finding.path}:{finding.line}:{finding.column}: {finding.rule} {reason}", err=diff)
        fixed += len(file_fix.fixed)
        left += len(file_fix.left)
    changed = sum(1 for f in fixes if f.changed)
    click.echo(f"{verb} {fixed} finding(s) in {changed} file(s); {left} need(s) a person", err=diff)
    return 1 if left else 0
