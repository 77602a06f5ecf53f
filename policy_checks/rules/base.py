"""What every rule is made of, and the helpers several rules share.

A rule is a small class: its id, its name, a one-line summary, a docstring that
explains the rule and why it exists, and VALID / INVALID examples. Each example is
a tiny project (a mapping of paths to file contents); the test suite runs every
rule over every example, in the manner of Fixit's rule examples.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Iterator

from ..facts import MODULE, TYPE_CHECKING


@dataclass(frozen=True, order=True)
class Finding:
    path: str  # relative to the root, "/" separators
    line: int  # 1-based
    column: int  # 1-based
    rule: str
    message: str


@dataclass
class Example:
    """A tiny project. For INVALID examples, `expect` lists the ``(path, line)``
    of every finding of this rule the project must produce."""

    files: dict
    expect: tuple = ()
    note: str = ""
    settings: dict = field(default_factory=dict)  # [tool.policy-check] overrides


class Rule:
    id = ""
    name = ""
    summary = ""
    VALID: list = []
    INVALID: list = []

    def check(self, project) -> Iterator[Finding]:
        raise NotImplementedError

    def finding(self, path: str, line: int, column: int, message: str) -> Finding:
        return Finding(path, line, column, self.id, message)


# shared helpers ---------------------------------------------------------------------

STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}

# decorators that sanction or mark things
EXPERIMENTAL_API = "flashinfer_experimental_api"
PUBLIC_API = "flashinfer_api"
BACKEND_REQUIREMENT = "backend_requirement"
EXPERIMENTAL_BACKEND = "experimental_backend"


def runs_at_import(project, scope: str) -> bool:
    """SPEC "module level": the module body, not function bodies, and not
    ``if TYPE_CHECKING:`` blocks unless the settings say those count."""
    return scope == MODULE or (scope == TYPE_CHECKING and project.settings.type_checking_imports)


def experimental_targets(project, imp) -> list:
    """The modules under the experimental package that `imp` imports."""
    return [t for t in project.import_targets(imp) if project.settings.is_experimental(t)]


def checker_import(project, imp) -> bool:
    """Is `imp` a ``from <experimental module> import a, b`` whose every name is an
    ``@experimental_backend`` checker function (the support-module exception)?"""
    s = project.settings
    if imp.dynamic or not imp.names or imp.module == s.experimental_package:
        return False
    for name, _ in imp.names:
        if name == "*" or project.is_module(f"{imp.module}.{name}"):
            return False
        target = project.resolve(imp.module, name)
        if target is None or target[0] != "def":
            return False
        module, definition = target[1], target[2]
        if definition.kind != "function" or not s.is_experimental(module):
            return False
        if not project.decorated_with(module, definition, EXPERIMENTAL_BACKEND):
            return False
    return True


def memo(project, name: str, compute):
    """Compute a whole-project value once per run (shared by several rules)."""
    cache = project.__dict__.setdefault("_memo", {})
    if name not in cache:
        cache[name] = compute(project)
    return cache[name]


def is_init(project, facts) -> bool:
    return facts.module == project.settings.package and facts.is_package


def is_aot(project, facts) -> bool:
    return facts.module in project.settings.aot_modules


def core_primary(project) -> Iterator:
    """``(rel, facts)`` of every core module the runner parsed up front: by the
    prefilter's proof, every core module that can import experimental code."""
    for rel in sorted(project.primary):
        source = project.files[rel]
        if project.settings.is_core(source.module) and project.by_module.get(source.module) == rel:
            facts = project.facts(rel)
            if facts.syntax_error is None:
                yield rel, facts
