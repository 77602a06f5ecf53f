"""EXP001 core-imports-experimental."""

from __future__ import annotations

from ..analysis import import_time
from ..analysis.needs import CORE_MODULE, EXPERIMENTAL_NAME, IMPORT_CALLS
from .base import (
    EXPERIMENTAL_BACKEND, Example, Rule, calls_importing, checker_import, core_primary, describe_calls, describe_chain,
    excluded_imports, experimental_targets, is_aot, is_init, runs_at_import,
)

_CHECKER = (
    "from flashinfer.utils import experimental_backend\n\n"
    "@experimental_backend\ndef fast_check(x):\n    return True\n"
)


class CoreImportsExperimental(Rule):
    """A core module imports ``flashinfer.experimental...`` at module level.

    Core is everything in the package outside ``flashinfer/experimental/``. It must not
    execute experimental code when it is imported. Otherwise importing a stable module would
    pull in unreviewed kernels and JIT code. Removing a feature would also break stable
    imports. Hand-offs to experimental code are deferred imports inside a sanctioned entry
    point (see EXP007).

    The one exception: ``from <support module> import checker, ...`` where every imported
    name is an ``@experimental_backend`` checker. ``backend_requirement`` needs its checkers
    when the decorated API is defined. What a support module may import is then EXP003's
    business.

    Every import form counts:

    - ``import a.b``, and ``from a import b`` with ``b`` a subpackage;
    - relative forms at any depth;
    - ``importlib.import_module`` and ``__import__`` with literal arguments, also under an
      alias;
    - an f-string's literal package.

    Module level means the body, including module-level ``if``/``try``/``with``/``for`` and
    class bodies. It includes decorators, default values and annotations. It excludes
    function and lambda bodies. It also excludes ``if TYPE_CHECKING:`` and the ``else`` of
    ``if not TYPE_CHECKING:``. Only typing's own ``TYPE_CHECKING``, never rebound in the
    file, guards a block (`policy_checks.model.facts.type_checking_guards`). A name of one's
    own guards nothing.

    These are imports too:

    - loaders with literal names: ``pkgutil.resolve_name``, ``runpy.run_module``/``run_path``,
      ``importlib.util.find_spec``, ``spec_from_file_location``, and
      ``exec``/``eval``/``compile`` of import text;
    - names built from literal pieces, or held by a module-level constant;
    - a call run at import of a project function whose body imports experimental code, however
      many calls down. A class whose ``__init__`` does counts too. So does a helper handing its
      parameter to an import function with a literal experimental name. The message names the
      chain of calls (`policy_checks.analysis.import_time`);
    - an import of a module the ``exclude`` setting leaves out, when that module imports
      experimental code at its module level. The message names the chain of modules.

    ``flashinfer/__init__.py`` is EXP002's and AOT modules are EXP005's.
    """

    id = "EXP001"
    name = "core-imports-experimental"
    summary = "a core module imports flashinfer.experimental... at module level"
    # the messages, one per shape of finding
    IMPORT = ("core module imports {target} at module level; defer the import into a sanctioned entry point "
              f"(only @{EXPERIMENTAL_BACKEND} checkers may be imported from a support module)")
    EXCLUDED_IMPORT = ("core module imports {first} at module level, which the settings exclude from the checks but "
                       "which imports {last}: {chain}; defer the import")
    CALL = ("core module calls {func} ({function}) at module level, which imports {target}: that is a module-level "
            "import; call it from a function instead")
    # A core module that imports experimental code names the experimental package
    # in the import (static forms), or calls an import function or loader (dynamic
    # forms: `needs.IMPORT_CALLS`). One that does so through a call of a function that
    # reaches such an import, or through an excluded module, is made primary by the
    # follow-up (`import_time.follow_calls`), which documents its own limits.
    reads = (CORE_MODULE,)
    triggers = (EXPERIMENTAL_NAME, *IMPORT_CALLS)
    follow_ups = (import_time.follow_calls,)  # callers of functions reaching experimental code

    VALID = [
        Example(
            {
                "flashinfer/__init__.py": "",
                "flashinfer/experimental/__init__.py": "",
                "flashinfer/experimental/feat/__init__.py": "",
                "flashinfer/experimental/feat/support.py": _CHECKER,
                "flashinfer/gemm.py": (
                    "from .experimental.feat.support import fast_check\n"
                    "def mm(x):\n    from flashinfer.experimental.feat import kernels\n"
                ),
            },
            note="support-module checker import; deferred import",
        ),
        Example(
            {
                "flashinfer/__init__.py": "",
                "flashinfer/gdn_kernels/__init__.py": "",
                "flashinfer/gdn_kernels/experimental/__init__.py": "",
                "flashinfer/gdn.py": (
                    "from .gdn_kernels.experimental import thing\n"
                    "from .gdn_kernels import experimental\n"
                    "import cutlass.experimental\nfrom cuda.core.experimental import Device\n"
                    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                    "    import flashinfer.experimental.feat\n"
                ),
            },
            note="a directory merely named experimental; third-party; TYPE_CHECKING",
        ),
        Example(
            {
                "flashinfer/__init__.py": "",
                "flashinfer/experimental/__init__.py": "",
                "flashinfer/experimental/feat/__init__.py": "",
                "flashinfer/entry.py": "def fast():\n    from .experimental import feat\n    return feat\n",
                "flashinfer/gemm.py": (
                    "import runpy, re\nfrom .entry import fast\n"
                    "def later():\n    return fast()\n"
                    "PATTERN = re.compile('import flashinfer.experimental')\nrunpy.run_module('flashinfer.entry')\n"
                ),
            },
            note="a deferring function called at run time; a pattern; a loader of a stable module",
        ),
    ]
    INVALID = [
        Example(
            {
                "flashinfer/__init__.py": "",
                "flashinfer/experimental/__init__.py": "",
                "flashinfer/experimental/feat/__init__.py": "",
                "flashinfer/experimental/feat/kernels.py": "def run(): pass\n",
                "flashinfer/experimental/feat/support.py": _CHECKER + "HEAVY = 1\n",
                "flashinfer/ops/__init__.py": "",
                "flashinfer/ops/a.py": (
                    "import flashinfer.experimental.feat.kernels\n"  # 1
                    "import flashinfer.experimental.feat as f\n"  # 2
                    "from flashinfer.experimental.feat.kernels import run\n"  # 3
                    "from flashinfer.experimental import feat\n"  # 4
                    "from ..experimental.feat import kernels\n"  # 5
                    "from .. import experimental\n"  # 6
                    "import importlib\n"
                    "importlib.import_module('flashinfer.experimental.feat')\n"  # 8
                    "importlib.import_module('..experimental.feat', package='flashinfer.ops')\n"  # 9
                    "__import__('flashinfer.experimental.feat.kernels')\n"  # 10
                    "try:\n    from ..experimental.feat.support import fast_check, HEAVY\n"  # 12
                    "except ImportError:\n    pass\n"
                    "class C:\n    from flashinfer.experimental.feat import kernels\n"  # 16
                    "def f(x=importlib.import_module('flashinfer.experimental.feat')):\n    pass\n"  # 17
                ),
            },
            expect=tuple(("flashinfer/ops/a.py", n) for n in (1, 2, 3, 4, 5, 6, 8, 9, 10, 12, 16, 17)),
        ),
        Example(
            {
                "flashinfer/__init__.py": "",
                "flashinfer/experimental/__init__.py": "",
                "flashinfer/experimental/feat/__init__.py": "",
                "flashinfer/gemm.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import flashinfer.experimental.feat\n",
            },
            expect=(("flashinfer/gemm.py", 3),),
            settings={"type-checking-imports": True},
            note="TYPE_CHECKING imports count when configured",
        ),
        Example(
            {
                "flashinfer/__init__.py": "",
                "flashinfer/experimental/__init__.py": "",
                "flashinfer/experimental/feat/__init__.py": "",
                "flashinfer/gemm.py": (
                    "import importlib\nfrom importlib import import_module as im\nload = importlib.import_module\n"
                    "im('flashinfer.experimental.feat')\n"  # 4
                    "load('.experimental.feat', package='flashinfer')\n"  # 5
                    "importlib.import_module(name='flashinfer.experimental.feat')\n"  # 6
                    "FEAT = importlib.import_module(f'flashinfer.experimental.{NAME}')\n"  # 7
                    "def f(x: importlib.import_module('flashinfer.experimental.feat')):\n    pass\n"  # 8
                    "from typing import TYPE_CHECKING\n"
                    "if not TYPE_CHECKING:\n    import flashinfer.experimental.feat\n"  # 12
                    "else:\n    import flashinfer.experimental\n"  # type checkers only
                ),
            },
            expect=tuple(("flashinfer/gemm.py", n) for n in (4, 5, 6, 7, 8, 12)),
            note="aliases of import_module, name=, an f-string's literal package, a parameter annotation",
        ),
        Example(
            {
                "flashinfer/__init__.py": "",
                "flashinfer/experimental/__init__.py": "",
                "flashinfer/experimental/feat/__init__.py": "",
                "flashinfer/gemm.py": (
                    "from typing import TYPE_CHECKING\nTYPE_CHECKING = True\n"
                    "if TYPE_CHECKING:\n    import flashinfer.experimental.feat\n"  # 4
                ),
            },
            expect=(("flashinfer/gemm.py", 4),),
            note="a rebound TYPE_CHECKING guards nothing",
        ),
        Example(
            {
                "flashinfer/__init__.py": "",
                "flashinfer/experimental/__init__.py": "",
                "flashinfer/experimental/feat/__init__.py": "",
                "flashinfer/entry.py": "def fast():\n    from .experimental import feat\n    return feat\n",
                "flashinfer/data/__init__.py": "",
                "flashinfer/data/tables.py": "import flashinfer.experimental.feat\n",
                "flashinfer/gemm.py": (
                    "import runpy, pkgutil\nfrom .entry import fast\nfrom .data import tables\n"  # 3
                    "runpy.run_module('flashinfer.experimental.feat')\n"  # 4
                    "pkgutil.resolve_name('flashinfer.exp' + 'erimental.feat:x')\n"  # 5
                    "exec('import flashinfer.experimental.feat')\n"  # 6
                    "FAST = fast()\n"  # 7
                ),
            },
            expect=tuple(("flashinfer/gemm.py", n) for n in (3, 4, 5, 6, 7)),
            note="an excluded module's import, loaders, a name from pieces, exec, a deferring function called",
        ),
    ]

    def check(self, project):
        for rel, facts in core_primary(project):
            if is_init(project, facts) or is_aot(project, facts):
                continue
            for imp in facts.imports:
                if not runs_at_import(project, imp.scope):
                    continue
                targets = experimental_targets(project, imp)
                if targets and not checker_import(project, imp):
                    yield self.finding(
                        rel, imp.line, imp.column,
                        self.IMPORT.format(target=targets[-1]),
                        subject=targets[-1],
                    )
                for chain in excluded_imports(project, imp) if not targets else ():
                    yield self.finding(
                        rel, imp.line, imp.column,
                        self.EXCLUDED_IMPORT.format(first=chain[0][0], last=chain[-1][0], chain=describe_chain(chain)),
                        subject=f"{chain[-1][0]} via {chain[0][0]}",
                    )
            for call, chain, target in calls_importing(project, facts):
                function = describe_calls(chain)
                yield self.finding(
                    rel, call.line, call.column,
                    self.CALL.format(func=call.func, function=function, target=target),
                    subject=f"{target} via {function}",
                )
