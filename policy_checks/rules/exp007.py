"""EXP007 deferred-import-outside-entry-point."""

from __future__ import annotations

from .base import (
    BACKEND_REQUIREMENT, EXPERIMENTAL_API, PUBLIC_API, Example, Rule, core_primary,
    experimental_targets, is_aot,
)
from ..model.entry_points import entry_point
from ..analysis.import_time import runs_on_call
from ..analysis.needs import CORE_MODULE, EXPERIMENTAL_NAME, IMPORT_CALLS


def sanctioned(project, facts, functions) -> bool:
    """Is the import inside an entry point?

    Entry points are defined once, in `policy_checks/model/entry_points.py`. The lifecycle
    commands share that definition."""
    return entry_point(project, facts, functions) is not None


class DeferredImportOutsideEntryPoint(Rule):
    """A core function imports ``flashinfer.experimental...`` but is not an entry point.

    Deferred imports are how core hands off to experimental code. The hand-off must happen
    only in thin entry points (docs/experimental.rst, "Containment"). Then deleting a feature
    means deleting its directory plus its tagged entry points. The definition of an entry
    point is shared with ``policy-check remove`` and ``graduate``. An entry point is:

    - an ``@flashinfer_experimental_api`` function;
    - a public API (``@flashinfer_api`` or ``@backend_requirement``) selecting an experimental
      backend. Its backend branch is the feature's. That is an ``if``/``elif`` arm selecting
      that one backend, that can go alone: ``if backend == "<name>":``,
      ``if list(backends) == ["<name>"]:``. It is never ``"<name>" in backends``;
    - a class that is an experimental API. It is decorated itself, has an
      ``@flashinfer_experimental_api`` method such as ``run``, or sets
      ``is_experimental = True``. Its methods, ``__init__`` included, are inside it. The class
      is then the tagged entry point, removed or graduated whole with the feature;
    - the module ``__getattr__`` of a package ``__init__.py``, a lazy export.

    A helper that imports experimental code spreads the feature through core. ``remove`` takes
    it along only when the feature's entry points alone call it. Otherwise it refuses, naming
    the callers. A nested function counts as inside its enclosing entry point. A lambda is a
    function too: one at module level that imports experimental code is not an entry point.
    """

    id = "EXP007"
    name = "deferred-import-outside-entry-point"
    summary = "a core function that is not an entry point imports experimental code"
    MESSAGE = ("{function} imports {target} but is not an entry point "
               f"(@{EXPERIMENTAL_API}, @{PUBLIC_API} / @{BACKEND_REQUIREMENT}, or a package's module __getattr__)")
    # As for EXP001: a deferred import of experimental code names the experimental
    # package (static forms) or calls an import function (dynamic forms).
    reads = (CORE_MODULE,)
    triggers = (EXPERIMENTAL_NAME, *IMPORT_CALLS)

    _TREE = {
        "flashinfer/__init__.py": "",
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/experimental/feat/__init__.py": "",
    }
    VALID = [
        Example(
            {
                **_TREE,
                "flashinfer/ops/__init__.py": "def __getattr__(name):\n    from ..experimental import feat\n    return feat\n",
                "flashinfer/ops/norm.py": (
                    "from ..api_logging import flashinfer_api, flashinfer_experimental_api as fea\n"
                    "from .. import utils\n"
                    "@fea(feature='feat')\ndef fast(x):\n    from ..experimental.feat import run\n    return run(x)\n"
                    "@flashinfer_api\ndef stable(x, backend='auto'):\n"
                    "    def inner():\n        import flashinfer.experimental.feat\n    return inner()\n"
                    "@utils.backend_requirement({})\ndef other(x, backend='auto'):\n"
                    "    import importlib\n    return importlib.import_module('flashinfer.experimental.feat')\n"
                    "class Wrapper:\n    def __init__(self):\n        from ..experimental.feat import Planner\n"
                    "    @fea\n    def run(self):\n        pass\n"
                    "class Flagged:\n    is_experimental = True\n"
                    "    def __init__(self):\n        from ..experimental.feat import Planner\n"
                    "@fea\ndef lazy(x):\n    load = lambda: importlib.import_module('flashinfer.experimental.feat')\n"
                    "    return load()\n"
                ),
            }
        )
    ]
    INVALID = [
        Example(
            {
                **_TREE,
                "flashinfer/norm.py": (
                    "def helper(x):\n"
                    "    from .experimental.feat import run\n"  # 2
                    "    return run(x)\n"
                    "class Runner:\n    def go(self):\n"
                    "        __import__('flashinfer.experimental.feat')\n"  # 6
                    "def __getattr__(name):\n    from . import experimental\n"  # 8: not a package
                    "class Plain:\n    def __init__(self):\n        from .experimental import feat\n"  # 11
                    "    @flashinfer_api\n    def run(self):\n        pass\n"
                    "import importlib\nload = lambda: importlib.import_module('flashinfer.experimental.feat')\n"  # 16
                ),
            },
            expect=tuple(("flashinfer/norm.py", n) for n in (2, 6, 8, 11, 16)),
        )
    ]

    def check(self, project):
        for rel, facts in core_primary(project):
            if is_aot(project, facts):
                continue
            for imp in facts.imports:
                if not runs_on_call(imp):
                    continue
                targets = experimental_targets(project, imp)
                if targets and not sanctioned(project, facts, imp.functions):
                    yield self.finding(
                        rel, imp.line, imp.column,
                        self.MESSAGE.format(function=imp.functions[-1], target=targets[-1]),
                        subject=targets[-1],
                    )
