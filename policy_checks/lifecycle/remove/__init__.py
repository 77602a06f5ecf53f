"""``policy-check remove FEATURE``: delete an experimental feature, and prove the
containment rules made that a matter of deleting one directory.

What goes: the feature's directory; its tests (``<experimental-tests>/<feature>/``);
its own examples (``<examples>/<feature>/``, files named ``<feature>.py`` or
``<feature>_demo.py`` / ``_example.py``, and files importing it); and, in core, exactly
what reaches it: an ``@flashinfer_experimental_api`` function whose body imports the
feature (a class left without methods goes too), the ``backend_checks`` entries whose
checker is imported from the feature together with that import, ``if backend ==
"<name>":`` branches and ``"<name>"`` items of tuple, list and set displays for a
removed backend, the entries of a package ``__init__``'s lazy-export table and of
``__all__`` that name a removed function or class. A core module left holding
nothing a user could call goes. In the docs: the feature's own pages and the toctree
lines naming them; other prose that mentions the feature is listed for a person.

The plan is computed in full before anything is written, and what core holds that no
edit removes refuses first (`planner`). Anything it cannot remove cleanly refuses the
whole removal with its reason: nothing is half done. Kept files' uses of what goes
are gathered before and after the plan of core and refused in one answer. That covers the whole repository, not
only the checked package: a kept file anywhere (other top-level packages, scripts,
tests, examples) that imports the feature, uses a removed name or backend, or loads
the feature by its module name or a path into its directory. Where the feature's
modules are imported is read from the checker's facts
(`policy_checks.model.project.Project`), and rewrites use `cst_tools`, so every byte not
removed stays as it was.
"""

from __future__ import annotations

from typing import Optional

import click

from ...report import click_options as shared
from ...editing.shell import run_plan
from .planner import plan_removal

__all__ = ["plan_removal", "remove", "run_remove"]


@click.command()
@click.argument("feature")
@shared.diff("the removal")
@shared.root()
def remove(feature: str, diff: bool, root: Optional[str]) -> None:
    """Remove the experimental FEATURE: its directory, tests, examples and the core
    entry points that reach it.

    Exit status: 0 removed (or, with --diff, removable), 1 refused (nothing written), 2 error.
    """
    raise SystemExit(run_remove(feature, diff=diff, root=root))


def run_remove(feature: str, *, diff: bool = False, root: Optional[str] = None) -> int:
    return run_plan("remove", feature, lambda target: plan_removal(target, feature), diff=diff, root=root)
