"""``policy-check graduate FEATURE --to MODULE``: the mechanical steps of graduation.

The graduation checklist (`policy_checks.model.window.GRADUATION_STEPS`) has seven
steps; this command carries out 2, 3, 5 and 6 and prints all seven with their state
(a step is ticked only when nothing of it is left for a person):

2. The feature's files move from ``<experimental package>/<feature>/`` to the package
   MODULE (imports inside them retargeted); at each old module path a shim re-exports
   the new one with a `DeprecationWarning` naming it, for one release. The shim
   package's ``__init__`` binds ``__graduated_to__``, which tells the checker (EXP009)
   and the board that the directory is a shim, not a feature. ``FEATURE.toml`` goes.
   Imports of the old path in other code (other features, tests, examples, the
   repository's other packages) point at the new home, or are listed (`elsewhere`).
3. In core, ``@flashinfer_experimental_api(...)`` on the entry points becomes
   ``@flashinfer_api`` (its ``trace=`` kept), the deferred imports and the checker
   imports point at the new home, the gate calls that guarded the feature go; in the
   moved code ``@experimental_backend`` and ``experimental=True`` go (`core`, `move`).
   What still reaches experimental code at call time is listed (`leftovers`).
5. With ``--aot``, the moved module's spec factories are registered in the AOT module.
6. ``<experimental tests>/<feature>/`` moves to the stable lane, imports retargeted;
   tests of the experimental contract are dropped and listed (`stable_lane`).

Step 4 is partly mechanical (`listing`: the docs page of its stable neighbours, the
top-level export); the rest, and steps 1 and 7, are for a person.

Nothing stable may reach experimental code unnoticed, and no public name may change
kind: a graduation refuses (exit 1, nothing written) when its new home would shadow a
name its parent package serves (`exports`), or when the moved code would import other
experimental code at module level (`reach`, what EXP001 reports). Those refusals, and
every other one that needs no plan of the move, are decided first (`refusals`); then
the plan is computed in full (`planner`) before anything is written, through one
`ChangeSet` that ``--diff`` prints. Where the feature is imported is read from the
checker's facts (`policy_checks.model.project.Project`); rewrites use `cst_tools`.
"""

from .command import graduate, run_graduate
from .move import shim as _shim  # noqa: F401  (the shim tests write one)
from .plan import Graduation, checklist
from .planner import plan_graduation
from .stable_lane import stable_tests_dir

__all__ = ["Graduation", "checklist", "graduate", "plan_graduation", "run_graduate", "stable_tests_dir"]
