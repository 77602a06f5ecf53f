"""EXP004 unmarked-experimental-checker."""

from __future__ import annotations

from ..model import markers
from ..analysis.needs import BACKEND_REQUIREMENT, CORE_MODULE, EXPERIMENTAL_MODULE
from .base import EXPERIMENTAL_BACKEND, Example, Rule


class UnmarkedExperimentalChecker(Rule):
    """A checker defined under ``flashinfer/experimental/`` lacks ``@experimental_backend``.

    ``backend_requirement`` keeps experimental backends out of automatic selection. It does so
    by reading the marker on their checkers. An unmarked checker from experimental code would
    make its backend eligible for ``backend="auto"`` without the gate. The runtime refuses such
    a checker at decoration time. This rule catches it before anything runs.

    Checkers are found as values of the ``backend_checks`` mapping of every
    ``backend_requirement`` call, decorator or plain call. The mapping may be written inline
    or through a module-level dict. That dict may be imported from another module, built with
    ``dict(...)`` or ``**`` merges, or extended by a later ``D["k"] = v``. Imports and
    re-exports are followed to the defining function.

    The marker counts under any alias or attribute path (``@experimental_backend``, ``@eb``,
    ``@fe.experimental_backend``). So does wrapping the value inline in
    ``experimental_backend(...)``. The finding is reported at the checker's definition
    statement. That is its first line, or the first decorator's when it has any.
    """

    id = "EXP004"
    name = "unmarked-experimental-checker"
    summary = "an experimental backend checker lacks @experimental_backend"
    MESSAGE = ("checker {checker} is defined under the experimental package and used{label} by "
               f"{markers.BACKEND_REQUIREMENT} at {{where}} but lacks @{EXPERIMENTAL_BACKEND}")
    # Checkers are found from backend_requirement calls: a module making one spells
    # the name, or an alias the runner follows across modules after its first pass.
    reads = (CORE_MODULE, EXPERIMENTAL_MODULE)
    triggers = (BACKEND_REQUIREMENT,)

    _TREE = {
        "flashinfer/__init__.py": "",
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/experimental/feat/__init__.py": "",
    }
    VALID = [
        Example(
            {
                **_TREE,
                "flashinfer/experimental/feat/support.py": (
                    "import flashinfer.utils as fu\n"
                    "from flashinfer.utils import experimental_backend as eb, supported_compute_capability\n"
                    "@eb\n@supported_compute_capability([90])\ndef a(x):\n    return True\n"
                    "@fu.experimental_backend\ndef b(x):\n    return True\n"
                    "def c(x):\n    return True\n"
                ),
                "flashinfer/gemm.py": (
                    "from flashinfer.utils import backend_requirement, experimental_backend\n"
                    "from .experimental.feat.support import a, b, c\n"
                    "def stable_check(x):\n    return True\n"
                    "@backend_requirement({'a': a, 'b': b, 'c': experimental_backend(c), 's': stable_check})\n"
                    "def mm(x, backend='auto'):\n    pass\n"
                ),
            }
        )
    ]
    INVALID = [
        Example(
            {
                **_TREE,
                "flashinfer/experimental/feat/support.py": (
                    "from flashinfer.utils import supported_compute_capability\n"
                    "def a(x):\n    return True\n"  # 2
                    "@supported_compute_capability([90])\ndef b(x):\n    return True\n"  # 4: its decorator
                    "def c(x):\n    return True\n"  # 7
                ),
                "flashinfer/checks.py": "from .experimental.feat.support import c as renamed\n",
                "flashinfer/gemm.py": (
                    "import flashinfer.utils\n"
                    "from .experimental.feat import support\n"
                    "from .checks import renamed\n"
                    "CHECKS = {'a': support.a}\n"
                    "CHECKS['c'] = renamed\n"
                    "@flashinfer.utils.backend_requirement(backend_checks={**CHECKS, 'b': support.b})\n"
                    "def mm(x, backend='auto'):\n    pass\n"
                ),
            },
            expect=tuple(("flashinfer/experimental/feat/support.py", n) for n in (2, 4, 7)),
            note="module-level dict, spread, subscript assignment, re-export, attribute path",
        ),
        Example(
            {
                **_TREE,
                "flashinfer/experimental/feat/impl.py": (
                    "from flashinfer.utils import backend_requirement as br\n"
                    "def k(x):\n    return True\n"
                    "run = br(dict(k=k))(lambda x: x)\n"
                ),
            },
            expect=(("flashinfer/experimental/feat/impl.py", 2),),
            note="a plain call under an alias, dict(...) form, inside the experimental package",
        ),
        Example(
            {
                **_TREE,
                "flashinfer/experimental/feat/support.py": "def a(x):\n    return True\ndef b(x):\n    return True\n",
                "flashinfer/dispatch.py": "from .utils import backend_requirement as requires\n",
                "flashinfer/gemm.py": (
                    "from .dispatch import requires\nfrom .experimental.feat import support\n"
                    "@requires({'a': support.a})\ndef mm(x, backend='auto'):\n    pass\n"
                ),
                "flashinfer/bmm.py": (
                    "from . import dispatch\nfrom .experimental.feat import support\n"
                    "@dispatch.requires({'b': support.b})\ndef bmm(x, backend='auto'):\n    pass\n"
                ),
            },
            expect=(("flashinfer/experimental/feat/support.py", 1), ("flashinfer/experimental/feat/support.py", 3)),
            note="backend_requirement under an alias bound in another module",
        ),
    ]

    def check(self, project):
        s = project.settings
        reported = set()
        for rel, facts in project.primary_facts(CORE_MODULE, EXPERIMENTAL_MODULE):
            module = facts.module
            for call in facts.backend_calls:
                for key, where, ref in project.backend_entries(module, call.checks):
                    target = project.checker_of(where, ref)
                    if target is None:
                        continue
                    def_module, definition = target
                    if not s.is_experimental_module(def_module) or definition.kind != "function":
                        continue
                    if project.decorated_with(def_module, definition, EXPERIMENTAL_BACKEND):
                        continue
                    def_rel = project.rel_of(def_module)
                    if (def_rel, definition.line) in reported:
                        continue
                    reported.add((def_rel, definition.line))
                    label = f" for backend {key!r}" if key else ""
                    yield self.finding(  # at the statement's first line: its first decorator's
                        def_rel, definition.first_line or definition.line, definition.column,
                        self.MESSAGE.format(checker=definition.qualname, label=label, where=f"{rel}:{call.line}"),
                        subject=definition.qualname,
                    )
