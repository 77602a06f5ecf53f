"""What every rule is made of, and the helpers several rules share.

A rule is a small class. It has:

- its id, its name and a one-line summary;
- a docstring that explains the rule and why it exists;
- what it reads (`reads`, `triggers`: see `policy_checks.analysis.needs`);
- VALID / INVALID examples.

Each example is a tiny project: a mapping of paths to file contents. The test suite runs
every rule over every example, in the manner of Fixit's rule examples.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, NamedTuple, Optional

from ..analysis import import_time
from ..model import markers
from ..analysis.needs import CORE_MODULE
from ..model.finding import Finding


@dataclass
class Example:
    """A tiny project.

    For INVALID examples, `expect` lists the ``(path, line)`` of every finding of this rule
    the project must produce."""

    files: dict
    expect: tuple = ()
    note: str = ""
    settings: dict = field(default_factory=dict)  # [tool.policy-check] overrides


class Configuration(NamedTuple):
    """Files beside the code that a rule reads, which a pull request can change.

    ``run --policy-from REV`` reads them at REV too (`engine.policy_change`). When a
    finding of the rule is hidden and they changed, the report names the change. The
    tree's files are still the ones checked: they are what runs once it merges.
    """

    what: str  # in words: "pytest configuration"
    code: str  # the cause code in the JSON report: "pytest-config"
    files: tuple  # names at the root, read at a revision
    read: Callable  # text_of (name -> text or None) -> a comparable value, None for none
    words: Callable  # that value -> words for a person


class Rule:
    id = ""
    name = ""
    summary = ""
    # What the rule reads (`needs.Kind` values), and what a Python file of one of
    # those kinds must contain for the rule to need its complete facts up front
    # (`needs` triggers; none: the rule needs no file's facts up front). The runner
    # composes these declarations into its prefilter; each rule says why its
    # triggers occur in every file it inspects through `Project.primary_facts`.
    reads: tuple = ()
    triggers: tuple = ()
    VALID: list = []
    INVALID: list = []
    # True when findings are about a directory or a record rather than Python code:
    # their fingerprint then names the path and no enclosing definition, even when
    # they point at a ``.py`` file (EXP009 at a feature's ``__init__.py``).
    fingerprint_by_path: bool = False
    # Functions of the project (`project -> None`) that make primary the files the rule
    # needs beyond its triggers, run once each after the first pass while the prefilter
    # is on (`import_time.follow_calls`: callers of functions that reach something).
    follow_ups: tuple = ()
    # What the rule reads besides the code that a pull request may change (`Configuration`).
    configuration: Optional[Configuration] = None

    def check(self, project) -> Iterator[Finding]:
        raise NotImplementedError

    def prefetch(self, project) -> Iterable[str]:
        """Files (relative paths) whose facts the rule will certainly ask for.

        The answer depends on the primary files' facts. The runner computes them in its worker
        pool rather than one by one on demand. It is an optimisation only."""
        return ()

    def finding(self, path: str, line: int, column: int, message: str, subject: str = "") -> Finding:
        return Finding(path, line, column, self.id, message, subject)


# shared helpers ---------------------------------------------------------------------

STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}

# decorators that sanction or mark things (the track's vocabulary: `policy_checks.model.markers`)
EXPERIMENTAL_API = markers.EXPERIMENTAL_API
PUBLIC_API = markers.STABLE_API
BACKEND_REQUIREMENT = markers.BACKEND_REQUIREMENT
EXPERIMENTAL_BACKEND = markers.EXPERIMENTAL_BACKEND


def runs_at_import(project, scope: str) -> bool:
    """`policy_checks.analysis.import_time.runs_at_import`, for the rules."""
    return import_time.runs_at_import(project.settings, scope)


def experimental_targets(project, imp) -> list:
    """The modules under the experimental package that `imp` imports."""
    return import_time.of(project).experimental_targets(imp)


def calls_importing(project, facts) -> Iterator:
    """``(call, chain, experimental module)`` for each risky call `facts`' module runs at import.

    A call counts when it reaches an import of experimental code
    (`import_time.ImportTime.calls_importing`)."""
    return import_time.of(project).calls_importing(facts)


def describe_chain(chain) -> str:
    """A chain of `import_time.ImportTime.tainted_excluded`, in words.

    For example: ``a (line 3) -> b (line 7) -> flashinfer.experimental.x``."""
    return " -> ".join(f"{module} (line {line})" if line else module for module, line in chain)


def describe_calls(chain) -> str:
    """``a.f -> b.g``: the functions a call run at import goes through."""
    return " -> ".join(chain)


def checker_import(project, imp) -> bool:
    """`policy_checks.analysis.import_time.ImportTime.is_checker_import`.

    It is the support-module exception."""
    return import_time.of(project).is_checker_import(imp)


def excluded_imports(project, imp) -> list:
    """`policy_checks.analysis.import_time.ImportTime.excluded_imports`."""
    return import_time.of(project).excluded_imports(imp)


def memo(project, name: str, compute):
    """Compute a whole-project value once per run; several rules share it."""
    cache = project.__dict__.setdefault("_memo", {})
    if name not in cache:
        cache[name] = compute(project)
    return cache[name]


def is_init(project, facts) -> bool:
    return facts.module == project.settings.package and facts.is_package


def is_aot(project, facts) -> bool:
    return facts.module in project.settings.aot_modules


def core_primary(project) -> Iterator:
    """``(rel, facts)`` of every core module the runner parsed up front.

    The triggers of a rule that reads core modules for experimental imports select them. That
    is every core module that can import experimental code, the package ``__init__``
    included."""
    return project.primary_facts(CORE_MODULE)
