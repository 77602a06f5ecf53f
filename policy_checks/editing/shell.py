"""The one command-line shell of the commands that edit a tree as a whole plan.

``remove`` and ``graduate`` differ in what they plan, not in how a plan meets the
user:

- settings that cannot be used exit 2;
- a `Refused` plan exits 1, having written nothing;
- ``--diff`` prints the patch `ChangeSet.diff`, and the report on standard error.
  It writes nothing;
- otherwise the set is applied all or nothing, and the report printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, List, Optional, Protocol

import click

from .changes import ChangeSet
from .target import FixError, FixTarget, Refused, load_project


class Plan(Protocol):
    changes: ChangeSet

    def report(self, applied: bool) -> List[str]:
        """Lines for the user: what the plan does or did, and what is left for a person."""


def run_plan(command: str, subject: str, make_plan: Callable[[FixTarget], Plan], *, diff: bool,
             root: Optional[str]) -> int:
    """Plan with `make_plan`, then show or apply the plan. Returns the exit status."""
    try:
        target = load_project(Path(root) if root else None)
    except FixError as error:
        click.echo(f"policy-check {command}: {error}", err=True)
        return 2
    try:
        plan = make_plan(target)
    except Refused as reason:
        click.echo(f"policy-check {command}: {subject}: refused, nothing written: {reason}", err=True)
        return 1
    if diff:
        click.echo(plan.changes.diff(), nl=False)
    else:
        try:
            plan.changes.apply()
        except Refused as reason:
            click.echo(f"policy-check {command}: {subject}: refused, nothing written: {reason}", err=True)
            return 1
        except OSError as error:
            click.echo(f"policy-check {command}: {subject}: {error}; every change undone", err=True)
            return 1
    for line in plan.report(applied=not diff):
        click.echo(line, err=diff)
    return 0
