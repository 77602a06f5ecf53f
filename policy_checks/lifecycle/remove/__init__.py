"""``policy-check remove FEATURE``: delete an experimental feature.

It also proves the containment rules made that a matter of deleting one directory.

What goes:

- the feature's directory;
- its tests (``<experimental-tests>/<feature>/``);
- its own examples: ``<examples>/<feature>/``, files named ``<feature>.py`` or
  ``<feature>_demo.py`` / ``_example.py``, and files importing it;
- in core, exactly what reaches it. That is an ``@flashinfer_experimental_api``
  function whose body imports the feature; a class left without methods goes too.
  It is the ``backend_checks`` entries whose checker is imported from the
  feature, with that import. For a removed backend, it is ``if backend ==
  "<name>":`` branches and ``"<name>"`` items of tuple, list and set displays. It
  is the entries of a package ``__init__``'s lazy-export table and of ``__all__``
  that name a removed function or class. A core module left holding nothing a
  user could call goes;
- in the docs, the feature's own pages and the toctree lines naming them. Other
  prose that mentions the feature is listed for a person.

The plan is computed in full before anything is written. What core holds that no
edit removes refuses first (`planner`). Anything it cannot remove cleanly refuses
the whole removal with its reason, so nothing is half done.

Kept files' uses of what goes are gathered before and after the plan of core. They
are refused in one answer. That covers the whole repository, not only the checked
package. A kept file anywhere may refuse: other top-level packages, scripts, tests,
examples. It refuses when it imports the feature, or uses a removed name or
backend. It refuses when it loads the feature by its module name or a path into its
directory.

Where the feature's modules are imported is read from the checker's facts
(`policy_checks.model.project.Project`). Rewrites use `cst_tools`, so every byte not
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
