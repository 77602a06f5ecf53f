"""``policy-check fix``: apply the safe rewrites for EXP001, EXP002, EXP004 and EXP006."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Sequence

import click

from .apply import FIXABLE_RULES, plan, write
from .findings import FixError, collect, load_project

MAX_ROUNDS = 3


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
    """The command's work, callable from tests; returns the exit status.

    Without ``--diff`` it checks again after writing and fixes what that uncovers (a
    checker marked in one round makes its import acceptable in the next), for at most
    `MAX_ROUNDS` rounds; with ``--diff`` it shows one round.
    """
    verb = "would fix" if diff else "fixed"
    fixed, changed_files = 0, set()
    try:
        target = load_project(Path(root) if root else None, Path(paths[0]) if paths else None)
        for _ in range(1 if diff else MAX_ROUNDS):
            fixes = plan(target, collect(target, paths, rules, use_cache=not diff))
            for file_fix in fixes:
                if diff:
                    click.echo(file_fix.diff(), nl=False)
                elif file_fix.changed:
                    _write(target, file_fix, before_replace)
                for finding in file_fix.fixed:
                    click.echo(f"{verb}: {_where(finding)} {finding.message}", err=diff)
                fixed += len(file_fix.fixed)
                changed_files |= {file_fix.path} if file_fix.changed else set()
            if not any(f.changed for f in fixes):
                break
    except FixError as error:
        click.echo(f"policy-check fix: {error}", err=True)
        return 2
    left = [item for file_fix in fixes for item in file_fix.left]
    for finding, reason in left:
        click.echo(f"needs a person: {_where(finding)} {reason}", err=diff)
    click.echo(f"{verb} {fixed} finding(s) in {len(changed_files)} file(s); {len(left)} need(s) a person", err=diff)
    return 1 if left else 0


def _write(target, file_fix, before_replace) -> None:
    """Write one file; when that cannot be done, its findings all become leftovers."""
    try:
        problem = None if write(target, file_fix, before_replace) else "the file changed on disk during the run"
    except OSError as error:
        problem = f"cannot write the file: {error.strerror or error}"
    if problem:
        every = file_fix.fixed + [finding for finding, _ in file_fix.left]
        file_fix.left = [(finding, f"{problem}; nothing written") for finding in every]
        file_fix.fixed, file_fix.after = [], file_fix.before


def _where(finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.column}: {finding.rule}"
