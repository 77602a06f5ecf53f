"""``policy-check graduate FEATURE --to MODULE``: the mechanical steps of graduation.

The graduation checklist (`policy_checks.model.window.GRADUATION_STEPS`) has seven
steps. This command carries out 2, 3, 5 and 6. It prints all seven with their
state. A step is ticked only when nothing of it is left for a person.

2. The feature's files move from ``<experimental package>/<feature>/`` to the
   package MODULE. Imports inside them are retargeted. At each old module path, a
   shim re-exports the new one for one release. It warns with a
   `DeprecationWarning` naming the new path. The shim package's ``__init__`` binds
   ``__graduated_to__``. That tells the checker (EXP009) and the board that the
   directory is a shim, not a feature. ``FEATURE.toml`` goes. Imports of the old
   path in other code point at the new home, or are listed (`elsewhere`). Other
   code means other features, tests, examples, and the repository's other
   packages.
3. In core, ``@flashinfer_experimental_api(...)`` on the entry points becomes
   ``@flashinfer_api``, keeping its ``trace=``. The deferred imports and the
   checker imports point at the new home. The gate calls that guarded the feature
   go. In the moved code, ``@experimental_backend`` and ``experimental=True`` go
   (`core`, `move`). What still reaches experimental code at call time is listed
   (`leftovers`).
5. With ``--aot``, the moved module's spec factories are registered in the AOT
   module.
6. ``<experimental tests>/<feature>/`` moves to the stable lane, with imports
   retargeted. Tests of the experimental contract are dropped and listed
   (`stable_lane`).

Step 4 is partly mechanical (`listing`). It lists the feature on the docs page of
its stable neighbours and adds the top-level export. The rest of it, and steps 1
and 7, are for a person.

Nothing stable may reach experimental code unnoticed. No public name may change
kind. So a graduation refuses (exit 1, nothing written) in two cases. One is when
its new home would shadow a name its parent package serves (`exports`). The other
is when the moved code would import other experimental code at module level
(`reach`, what EXP001 reports).

Those refusals, and every other one that needs no plan of the move, are decided
first (`refusals`). Then the plan is computed in full (`planner`) before anything
is written. It goes through one `ChangeSet`, which ``--diff`` prints. Where the
feature is imported is read from the checker's facts
(`policy_checks.model.project.Project`). Rewrites use `cst_tools`.
"""

from __future__ import annotations

from typing import Optional

import click

from ...editing.shell import run_plan
from ...report import click_options as shared
from .move import shim as _shim  # noqa: F401  (the shim tests write one)
from .planner import checklist, plan_graduation
from .stable_lane import stable_tests_dir

__all__ = ["checklist", "graduate", "plan_graduation", "run_graduate", "stable_tests_dir"]


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
    """The command's body, for callers without click. Returns the exit status."""
    return run_plan("graduate", feature, lambda target: plan_graduation(target, feature, home, aot=aot), diff=diff,
                    root=root)
