"""The command line of ``policy-check graduate``: the shared shell of plan commands."""

from __future__ import annotations

from typing import Optional

import click

from ...report import click_options as shared
from ...editing.shell import run_plan
from .planner import plan_graduation


@click.command()
@click.argument("feature")
@click.option("--to", "home", required=True, metavar="MODULE", help="The stable package the code moves to, e.g. flashinfer.gated_norm.")
@shared.diff("the graduation")
@click.option("--aot", is_flag=True, help="Register the moved kernels' JIT specs for ahead-of-time builds.")
@shared.root()
def graduate(feature: str, home: str, diff: bool, aot: bool, root: Optional[str]) -> None:
    """Graduate the experimental FEATURE into the stable package MODULE, and print the
    graduation checklist with each step's state.

    Exit status: 0 done (or, with --diff, possible), 1 refused (nothing written), 2 error.
    """
    raise SystemExit(run_graduate(feature, home, diff=diff, aot=aot, root=root))


def run_graduate(feature: str, home: str, *, diff: bool = False, aot: bool = False, root: Optional[str] = None) -> int:
    """The command's body, for callers without click: returns the exit status."""
    return run_plan("graduate", feature, lambda target: plan_graduation(target, feature, home, aot=aot), diff=diff,
                    root=root)
