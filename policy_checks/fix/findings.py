"""Where ``policy-check fix`` meets the checker: its findings in.

`check` runs the checker as ``policy-check run`` runs, with facts cache and
baseline. It returns its `Finding` records. The rewrites work from those and the
`policy_checks.editing.target.FixTarget`. They are `apply`, `deferred_imports`,
`lazy_exports`, `checker_marker` and `docs_pages`. So a change in the checker's
interface reaches them only through this module and `policy_checks.editing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

from ..engine import baseline as baseline_module
from ..model import config
from ..engine import context
from ..engine import runner
from ..editing.target import FixError, FixTarget, load_project
from ..rules.base import Finding

__all__ = ["Checked", "Finding", "FixError", "FixTarget", "check", "collect", "load_project", "read_baseline"]


@dataclass
class Checked:
    """What one run of the checker gives ``fix``.

    It gives the findings to fix. With a baseline, those are the new ones only, as
    ``policy-check run`` reports them. It also gives how many the baseline accepts.
    Those are left alone: they are debt a person chose to keep for now.
    """

    findings: List[Finding]
    baselined: int = 0
    baseline: Optional[str] = None  # the baseline's name, when one was applied


def read_baseline(root: Path, path: Optional[Path] = None) -> Optional[baseline_module.Baseline]:
    """The baseline ``policy-check run`` applies.

    It is ``path``, else the root's ``policy-check-baseline.json`` when something is
    there. A FIFO or a dangling link there is an error, not "no baseline". Raises
    `FixError` for a file that cannot be used, naming it and saying how to restore
    it.
    """
    try:
        return context.read_baseline(root, path)
    except baseline_module.BaselineError as error:
        raise FixError(str(error)) from error


def check(target: FixTarget, paths: Sequence[str], rules: Iterable[str], *, use_cache: bool = True,
          cache_dir: Optional[str] = None, baseline: Optional[baseline_module.Baseline] = None) -> Checked:
    """Run the checker over `paths`, keeping `rules`, the way ``policy-check run`` does.

    Empty `paths` means all of the project. It uses the facts cache, which lives
    outside the tree. With `use_cache` False, the cache is neither read nor written.
    Given a baseline, its findings are left out.
    """
    try:
        checking = context.Context(target.root, target.settings, baseline=baseline, use_cache=use_cache,
                                   cache_dir=cache_dir)
        result = runner.check(checking, paths=tuple(paths), select=tuple(rules), progress=False,
                              fingerprints=baseline is not None)
    except (config.ConfigError, ValueError) as error:
        raise FixError(str(error)) from error
    return Checked(list(result.findings), len(result.baselined), result.baseline)


def collect(target: FixTarget, paths: Sequence[str], rules: Iterable[str], use_cache: bool,
            baseline: Optional[baseline_module.Baseline] = None) -> List[Finding]:
    """The findings of `check`: every finding, unless a `baseline` is given."""
    return check(target, paths, rules, use_cache=use_cache, baseline=baseline).findings
