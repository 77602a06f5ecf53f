"""The project one command checks, built once by the command layer and handed down.

A `Context` holds what every stage of a run would otherwise work out again from a
bare root: the root itself, its settings, which files git selects (`gitfiles`), the
baseline applied (and the file it came from) and how the facts cache is kept. The
runner, the ``--policy-from`` comparison and the project model read these from it;
the comparison's second evaluation is the same context under the base revision's
policy (`with_policy`).

The settings module imports nothing of the checker, so this module sits above it;
it never imports the runner, so the commands that edit a tree may take it too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from . import baseline as baseline_module
from ..model import gitfiles
from ..model.config import Settings, find_root, load


def baseline_name(root: Path, path: Path) -> str:
    """How reports name the baseline file: relative to the root when inside it."""
    try:
        return (path.parent.resolve() / path.name).relative_to(root).as_posix()  # the link, not its target
    except (ValueError, OSError):
        return str(path)


def read_baseline(root: Path, path=None) -> Optional[baseline_module.Baseline]:
    """The baseline to apply: `path`, else the root's baseline file when something
    is there (a FIFO or a dangling link there is an error, not "no baseline")."""
    if path is None:
        path = baseline_module.default_path(root)
        if not os.path.lexists(path):
            return None
    return baseline_module.read(path, baseline_name(root, Path(path)))


@dataclass(frozen=True)
class Context:
    """One project as a command checks it."""

    root: Path  # resolved
    settings: Settings
    # the baseline applied (None: report every finding), and the file a run reads it
    # from (None with ``--no-baseline``; the default file even when it is absent)
    baseline: Optional[baseline_module.Baseline] = None
    baseline_path: Optional[Path] = None
    use_cache: bool = True  # False: the facts cache is neither read nor written
    cache_dir: Optional[Path] = None  # None: `cache.location`'s default
    files: Optional[str] = None  # `gitfiles` selection; None: `gitfiles.mode()` when the model is built

    @classmethod
    def build(cls, root: Optional[Path] = None, *, start: Optional[Path] = None, baseline_file=None,
              no_baseline: bool = False, read: bool = True, use_cache: bool = True, cache_dir=None,
              staged: bool = False) -> "Context":
        """The project at `root`, or the one found from `start` (default: here): its
        settings (`config.ConfigError`), and unless `no_baseline` its baseline
        (`reading_baseline`; `read` False: only where it is, for a command that checks
        its options first or reads the file its own way)."""
        root = Path(root).resolve() if root else find_root(start or Path.cwd())
        settings = load(root)
        path = None if no_baseline else Path(baseline_file or baseline_module.default_path(root))
        built = cls(root, settings, None, path, use_cache, cache_dir, gitfiles.STAGED if staged else gitfiles.mode())
        return built.reading_baseline(baseline_file) if read else built

    def reading_baseline(self, baseline_file=None) -> "Context":
        """This context with its baseline read (`baseline_file`, else the root's file
        when something is there); unchanged with ``--no-baseline``."""
        if self.baseline_path is None:
            return self
        return replace(self, baseline=read_baseline(self.root, baseline_file))

    def with_policy(self, settings: Settings, accepted) -> "Context":
        """The same tree judged under other settings and another baseline."""
        return replace(self, settings=settings, baseline=accepted)

    def facts_cache(self, vocabulary: str = ""):
        """The facts cache of a run (`cache.FactsCache`), as this context keeps it."""
        from .cache import FactsCache  # here: a replayed run loads no facts

        return FactsCache(self.root, enabled=self.use_cache, directory=self.cache_dir, vocabulary=vocabulary)

    def project(self, load_facts):
        """The checker's project model of the tree, facts from `load_facts`."""
        from ..model.project import Project

        return Project(self.root, self.settings, load_facts, files=self.files)
