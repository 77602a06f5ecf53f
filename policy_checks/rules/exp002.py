"""EXP002 init-imports-experimental."""

from __future__ import annotations

from ..analysis import import_time
from ..analysis.needs import ALWAYS, PACKAGE_INIT
from .base import (
    Example, Rule, calls_importing, core_primary, describe_calls, describe_chain, excluded_imports,
    experimental_targets, is_init, runs_at_import,
)


class InitImportsExperimental(Rule):
    """The package's ``__init__.py`` imports from ``flashinfer.experimental`` at module level.

    ``import flashinfer`` must never import the experimental package. It is what every user
    runs, and it must stay fast and free of unreviewed code. Unlike EXP001, there is no
    support-module exception here. A name the package wants to export from experimental code
    is exported lazily, through a module ``__getattr__``.
    """

    id = "EXP002"
    name = "init-imports-experimental"
    summary = "flashinfer/__init__.py imports flashinfer.experimental at module level"
    # the messages, one per shape of finding ({init}: the package's __init__.py)
    EXCLUDED_IMPORT = ("{init} imports {first} at module level, which the settings exclude from the checks but which "
                       "imports {last}: {chain}")
    IMPORT = "{init} imports from {module} at module level; export it lazily from __getattr__"
    CALL = ("{init} calls {func} ({function}) at module level, which imports {target}: that is a module-level "
            "import; export it lazily from __getattr__")
    reads = (PACKAGE_INIT,)
    follow_ups = (import_time.follow_calls,)  # callers of functions reaching experimental code
    triggers = (ALWAYS,)  # one file, read by other rules through re-exports anyway

    VALID = [
        Example(
            {
                "flashinfer/__init__.py": (
                    "def __getattr__(name):\n"
                    "    from .experimental.feat import api\n    return api\n"
                ),
                "flashinfer/experimental/__init__.py": "",
                "flashinfer/experimental/feat/__init__.py": "",
            }
        )
    ]
    INVALID = [
        Example(
            {
                "flashinfer/__init__.py": (
                    "from .experimental import experimental_backend\n"
                    "from .experimental.feat.support import check\n"
                    "from . import experimental\n"
                    "import importlib\n"
                    "try:\n    feat = importlib.import_module('.experimental.feat', __name__)\n"
                    "except ImportError:\n    pass\n"
                ),
                "flashinfer/experimental/__init__.py": "",
                "flashinfer/experimental/feat/__init__.py": "",
                "flashinfer/experimental/feat/support.py": (
                    "from flashinfer.utils import experimental_backend\n"
                    "@experimental_backend\ndef check(x):\n    return True\n"
                ),
            },
            expect=tuple(("flashinfer/__init__.py", n) for n in (1, 2, 3, 6)),
        )
    ]

    def check(self, project):
        for rel, facts in core_primary(project):
            if not is_init(project, facts):
                continue
            for imp in facts.imports:
                targets = experimental_targets(project, imp) if runs_at_import(project, imp.scope) else []
                chains = excluded_imports(project, imp) if runs_at_import(project, imp.scope) and not targets else []
                for chain in chains:
                    yield self.finding(
                        rel, imp.line, imp.column,
                        self.EXCLUDED_IMPORT.format(init=f"{project.settings.package}/__init__.py", first=chain[0][0],
                                                    last=chain[-1][0], chain=describe_chain(chain)),
                        subject=f"{chain[-1][0]} via {chain[0][0]}",
                    )
                if targets:
                    yield self.finding(
                        rel, imp.line, imp.column,
                        self.IMPORT.format(init=f"{project.settings.package}/__init__.py", module=imp.module),
                        subject=targets[-1],
                    )
            for call, chain, target in calls_importing(project, facts):
                function = describe_calls(chain)
                yield self.finding(
                    rel, call.line, call.column,
                    self.CALL.format(init=f"{project.settings.package}/__init__.py", func=call.func, function=function,
                                     target=target),
                    subject=f"{target} via {function}",
                )
