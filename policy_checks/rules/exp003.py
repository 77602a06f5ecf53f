"""EXP003 heavy-support-module."""

from __future__ import annotations

from ..analysis.import_time import support_modules
from ..analysis.needs import CORE_MODULE, EXPERIMENTAL_NAME
from .base import STDLIB, Example, Rule, memo, runs_at_import


class HeavySupportModule(Rule):
    """A support module imports something heavy at module level.

    Core imports ``@experimental_backend`` checkers from a *support module* at module level.
    That is EXP001's one exception. So whatever the support module imports at module level is
    imported by stable code too.

    It may import only:

    - the standard library, ``torch`` and ``typing_extensions``;
    - the ``flashinfer.experimental`` package itself, for its re-exported primitives;
    - core modules outside ``flashinfer.jit``.

    So no kernels, no JIT, no other experimental modules and no other third-party packages.

    The feature packages between ``flashinfer.experimental`` and the support module count as
    support modules too. Importing the module runs their ``__init__.py``. Support modules may
    import one another, as each is held to this rule itself. Examples:
    ``from .support import check`` in the feature's ``__init__.py``, and
    ``from . import LIMIT`` in the support module.
    """

    id = "EXP003"
    name = "heavy-support-module"
    summary = "a support module imports more than stdlib, torch and light core modules"
    MESSAGE = ("support module {module} (imported by core at {importer}) imports {target} at module level; a "
               "support module may import only the standard library, torch, typing_extensions, the experimental "
               "package and core modules outside the JIT")
    # Support modules are found from core modules' static imports of experimental
    # checkers, which name the experimental package; the support modules themselves
    # are reached through those imports, their facts loaded on demand.
    reads = (CORE_MODULE,)
    triggers = (EXPERIMENTAL_NAME,)

    _TREE = {
        "flashinfer/__init__.py": "",
        "flashinfer/utils.py": "",
        "flashinfer/jit/__init__.py": "",
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/experimental/feat/__init__.py": "",
        "flashinfer/experimental/feat/kernels.py": "",
        "flashinfer/gemm.py": "from .experimental.feat.support import check\n",
    }
    _CHECK = "\n@experimental_backend\ndef check(x):\n    return True\n"

    VALID = [
        Example(
            {
                **_TREE,
                "flashinfer/experimental/feat/support.py": (
                    "from __future__ import annotations\nimport os\nimport torch.nn\n"
                    "import typing_extensions\nfrom flashinfer.experimental import experimental_backend\n"
                    "from ... import utils\nfrom ...utils import supported_compute_capability\n"
                    "def later():\n    import numpy\n    from . import kernels\n" + _CHECK
                ),
            }
        ),
        Example(
            {
                **_TREE,
                "flashinfer/experimental/feat/__init__.py": "from .support import check\n",
                "flashinfer/experimental/feat/support.py": (
                    "from flashinfer.utils import experimental_backend\nfrom . import LIMIT\n" + _CHECK
                ),
            },
            note="the feature package and the support module import each other, nothing more",
        ),
    ]
    INVALID = [
        Example(
            {
                **_TREE,
                "flashinfer/experimental/feat/support.py": (
                    "from flashinfer.utils import experimental_backend\n"
                    "import numpy\n"  # 2
                    "from . import kernels\n"  # 3
                    "from .kernels import run\n"  # 4
                    "from flashinfer.jit import gen\n"  # 5
                    "import flashinfer.jit.core as jc\n" + _CHECK  # 6
                ),
            },
            expect=tuple(("flashinfer/experimental/feat/support.py", n) for n in (2, 3, 4, 5, 6)),
        ),
        Example(
            {
                **_TREE,
                "flashinfer/experimental/feat/__init__.py": "from . import kernels\n",
                "flashinfer/experimental/feat/support.py": "from flashinfer.utils import experimental_backend\n" + _CHECK,
            },
            expect=(("flashinfer/experimental/feat/__init__.py", 1),),
            note="the feature package's __init__ runs too",
        ),
        Example(
            {
                **_TREE,
                "flashinfer/gemm.py": "from .experimental.feat import check\n",
                "flashinfer/experimental/feat/__init__.py": "from .support import check\n",
                "flashinfer/experimental/feat/support.py": (
                    "from flashinfer.utils import experimental_backend\nimport numpy\n" + _CHECK
                ),
            },
            expect=(("flashinfer/experimental/feat/support.py", 2),),
            note="a checker imported through a re-export: its defining module is a support module",
        ),
    ]

    def check(self, project):
        s = project.settings
        jit = s.package + ".jit"
        supports = memo(project, "support_modules", support_modules)
        for module, importer in sorted(supports.items()):
            rel = project.rel_of(module)
            facts = project.module_facts(module)
            if facts is None:
                continue
            for imp in facts.imports:
                if not runs_at_import(project, imp.scope) or imp.module is None:
                    continue
                for target in project.import_targets(imp):
                    top = target.partition(".")[0]
                    allowed = (
                        top in STDLIB
                        or top in ("torch", "typing_extensions")
                        or target == s.experimental_package
                        or target in supports
                        or (s.is_core(target) and not (target == jit or target.startswith(jit + ".")))
                    )
                    if not allowed:
                        yield self.finding(
                            rel, imp.line, imp.column,
                            self.MESSAGE.format(module=module, importer=importer, target=target),
                            subject=target,
                        )
                        break
