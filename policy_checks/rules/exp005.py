"""EXP005 aot-registers-experimental."""

from __future__ import annotations

from ..analysis.needs import ALWAYS, AOT_MODULE
from ..model.project import DefTarget
from .base import Example, Rule, experimental_targets


class AotRegistersExperimental(Rule):
    """An AOT module imports from ``flashinfer.experimental`` or uses a JIT spec defined there.

    Experimental kernels are JIT-only. Pre-building them into the AOT package would ship them
    as if they were stable. Removing a feature would also break the AOT build. So an AOT
    module (``flashinfer/aot.py`` by default) may not import the experimental package at any
    scope: module level, function bodies, ``TYPE_CHECKING``. Nor may it import a name that,
    followed through re-exports, is defined under it. An example is a spec generator
    re-exported by a core module. In AOT modules this rule replaces EXP001 and EXP007.
    """

    id = "EXP005"
    name = "aot-registers-experimental"
    summary = "the AOT module imports or registers experimental JIT specs"
    # the messages: an import of experimental code, a use of an experimental spec factory
    IMPORT = "AOT module imports {target}; experimental kernels are JIT-only"
    USE = "AOT module uses {name}, defined in {module}; experimental kernels are JIT-only"
    # The AOT modules are few and read whole; what they import is loaded on demand
    # (computed up front in the pool: `prefetch`).
    reads = (AOT_MODULE,)
    triggers = (ALWAYS,)

    _TREE = {
        "flashinfer/__init__.py": "",
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/experimental/feat/__init__.py": "",
        "flashinfer/experimental/feat/jit.py": "def gen_feat_module():\n    return 'spec'\n",
        "flashinfer/gemm.py": (
            "def gen_gemm_module():\n    return 'spec'\n"
            "from .experimental.feat.jit import gen_feat_module as gen_fast\n"
        ),
    }
    VALID = [Example({**_TREE, "flashinfer/aot.py": "from .gemm import gen_gemm_module\nSPECS = [gen_gemm_module()]\n"})]
    INVALID = [
        Example(
            {
                **_TREE,
                "flashinfer/aot.py": (
                    "from .gemm import gen_fast\n"  # 1
                    "def specs():\n"
                    "    from .experimental.feat.jit import gen_feat_module\n"  # 3
                    "    return [gen_feat_module()]\n"
                ),
            },
            expect=(("flashinfer/aot.py", 1), ("flashinfer/aot.py", 3)),
        )
    ]

    def prefetch(self, project):
        """The package modules the AOT modules import names from.

        The rule follows each name to its definition."""
        wanted = set()
        for module in project.settings.aot_modules:
            facts = project.known_facts(project.rel_of(module) or "")
            if facts is None or not facts.complete:
                continue
            for imp in facts.imports:
                for target in project.import_targets(imp):
                    if project.is_module(target):
                        wanted.add(project.rel_of(target))
        return sorted(wanted)

    def check(self, project):
        for module in project.settings.aot_modules:
            rel = project.rel_of(module)
            facts = project.module_facts(module) if rel else None
            if facts is None:
                continue
            for imp in facts.imports:
                targets = experimental_targets(project, imp)
                if targets:
                    yield self.finding(
                        rel, imp.line, imp.column,
                        self.IMPORT.format(target=targets[-1]),
                        subject=targets[-1],
                    )
                    continue
                for name, _ in imp.names:
                    target = project.resolve(imp.module, name) if name != "*" and imp.module else None
                    if isinstance(target, DefTarget) and project.settings.is_experimental_module(target.module):
                        yield self.finding(
                            rel, imp.line, imp.column,
                            self.USE.format(name=name, module=target.module),
                            subject=f"{target.module}.{target.definition.qualname}",
                        )
                        break
