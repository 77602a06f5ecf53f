"""Where the fix commands meet the checker: findings and its project model in.

``policy-check fix`` sees the checker only through this module: `collect` runs the
checker and returns its `Finding` records, and the rewrites (`apply`,
`deferred_imports`, `lazy_exports`, `checker_marker`, `docs_pages`) work from those
and the small `FixTarget` defined here, so a change in the checker's interface
reaches them only through this module.

The lifecycle commands, ``policy-check remove`` and ``policy-check graduate``, share
much more of the checker, on purpose: they must find exactly what reaches a feature
as the containment rules see it, so they read the checker's own model of the tree
rather than a second one. `project_model` gives them a `policy_checks.project.Project`
(facts extracted by `policy_checks.facts.extract` when first asked for, no cache),
and both import from the checker directly: resolution targets from
`policy_checks.project`, fact kinds and helpers from `policy_checks.facts`, and the
module-path helpers of `policy_checks.config`. ``graduate`` also reads the feature
record through `policy_checks.features` (as EXP009 and ``policy-check features`` do)
and its checklist from `policy_checks.graduation` (as the bot does). A change to those
interfaces can break ``remove`` and ``graduate``; their tests run both on a copy of
this repository.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

from .. import baseline as baseline_module
from .. import config, markers
from .. import project as checker_project
from .. import runner
from ..facts import extract
from ..rules.base import Finding

__all__ = ["Checked", "Finding", "FixError", "FixTarget", "check", "collect", "load_project", "project_model",
           "read_baseline"]


class FixError(Exception):
    """The checker could not produce findings (bad settings, bad paths, a crash)."""


@dataclass(frozen=True)
class FixTarget:
    """The tree ``policy-check fix`` rewrites: its root and settings, and the few
    questions the rewrites ask of it on disk, one file at a time, after the
    checker's run. Not the checker's `policy_checks.project.Project`, which is the
    indexed model of one run (every file's module name and facts, resolution
    across modules)."""

    root: Path
    settings: config.Settings = field(default_factory=config.Settings)

    @property
    def package(self) -> str:
        return self.settings.package  # "flashinfer"

    @property
    def experimental_package(self) -> str:
        return self.settings.experimental_package  # "flashinfer.experimental"

    def module_of(self, path: str) -> Tuple[str, bool]:
        """Dotted module name of a root-relative ``.py`` path, and whether it is a package."""
        return checker_project.module_name(path)

    def package_files(self) -> List[str]:
        """Root-relative paths of the package's Python files, excluded ones too, as the
        checker walks them: regular files with UTF-8 names (never a FIFO to block on)."""
        walk = checker_project.walk_python_files(self.root, self.package.replace(".", "/"), (), [])
        return sorted(source.rel for source in walk)

    def is_marked_checker(self, module: str, name: str) -> bool:
        """Does `module` define `name` as an ``@experimental_backend`` function? Such a
        name may stay imported at module level (EXP001's support-module exception)."""
        base = self.root.joinpath(*module.split("."))
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            try:
                tree = ast.parse(path.read_bytes())
            except (OSError, SyntaxError, ValueError):
                continue
            names = markers.file_names(tree)
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    return any(markers.KIND_EXPERIMENTAL_BACKEND in names.of_decorator(d) for d in node.decorator_list)
        return False




def load_project(root: Optional[Path], start: Optional[Path] = None) -> FixTarget:
    """The project at `root`, or the one the checker finds from `start` (default: here)."""
    root = root.resolve() if root else config.find_root(start or Path.cwd())
    try:
        settings = config.load(root)
    except config.ConfigError as error:
        raise FixError(str(error)) from error
    return FixTarget(root, settings)


@dataclass
class Checked:
    """What one run of the checker gives ``fix``: the findings to fix (with a baseline, the
    new ones only, as ``policy-check run`` reports them), and how many the baseline
    accepts (left alone: they are debt a person chose to keep for now)."""

    findings: List[Finding]
    baselined: int = 0
    baseline: Optional[str] = None  # the baseline's name, when one was applied


def read_baseline(root: Path, path: Optional[Path] = None) -> Optional[baseline_module.Baseline]:
    """The baseline ``policy-check run`` applies: ``path``, else the root's
    ``policy-check-baseline.json`` when something is there (a FIFO or a dangling link
    there is an error, not "no baseline"). Raises `FixError` for a file that cannot be
    used, naming it and saying how to restore it."""
    if path is None:
        path = baseline_module.default_path(root)
        if not os.path.lexists(path):
            return None
    path = Path(path)
    try:
        name = (path.parent.resolve() / path.name).relative_to(root).as_posix()
    except (ValueError, OSError):
        name = str(path)
    try:
        return baseline_module.read(path, name)
    except baseline_module.BaselineError as error:
        raise FixError(str(error)) from error


def check(target: FixTarget, paths: Sequence[str], rules: Iterable[str], *, use_cache: bool = True,
          cache_dir: Optional[str] = None, baseline: Optional[baseline_module.Baseline] = None) -> Checked:
    """Run the checker over `paths` (all of the project when empty), keeping `rules`, the
    way ``policy-check run`` does: with its facts cache (outside the tree; `use_cache`
    False: neither read nor written) and, given one, the baseline, whose findings are
    left out."""
    try:
        result = runner.run(
            target.root, target.settings, paths=tuple(paths), select=tuple(rules), use_cache=use_cache,
            progress=False, cache_dir=cache_dir, baseline=baseline, fingerprints=baseline is not None,
        )
    except (config.ConfigError, ValueError) as error:
        raise FixError(str(error)) from error
    return Checked(list(result.findings), len(result.baselined), result.baseline)


def collect(target: FixTarget, paths: Sequence[str], rules: Iterable[str], use_cache: bool,
            baseline: Optional[baseline_module.Baseline] = None) -> List[Finding]:
    """The findings of `check` (every finding, unless a `baseline` is given)."""
    return check(target, paths, rules, use_cache=use_cache, baseline=baseline).findings


def project_model(target: FixTarget) -> checker_project.Project:
    """The checker's project model of the tree, each file's facts extracted when first
    asked for. ``remove`` and ``graduate`` read the facts of the few files that spell
    the feature, so they need no cache."""

    def load(source: checker_project.SourceFile):
        return extract((target.root / source.rel).read_bytes(), source.module, source.is_package)

    return checker_project.Project(target.root, target.settings, load)
