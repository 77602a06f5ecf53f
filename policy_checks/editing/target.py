"""The tree a command edits, as the checker sees it: root, settings, project model.

`fix`, `remove` and `graduate` all start here. `load_project` reads the settings.
It raises `FixError` (exit 2) when they are unusable. `project_model` gives the
checker's own `policy_checks.model.project.Project` of the tree. Facts are extracted
when first asked for, with no cache. So the commands find what reaches a feature
exactly as the containment rules see it.

Nothing here runs the checker's rules. `policy_checks.fix.findings` does that for
``fix``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

from ..model import config, markers
from ..model import project as checker_project
from ..model.facts import extract

__all__ = ["FixError", "FixTarget", "Refused", "load_project", "project_model"]


class FixError(Exception):
    """The command cannot start (exit 2): bad settings, bad paths, a crash of the checker."""


class Refused(Exception):
    """A lifecycle command cannot do its work cleanly (exit 1).

    Nothing was written. The message says why.
    """


@dataclass(frozen=True)
class FixTarget:
    """The tree ``policy-check fix`` rewrites.

    It holds the root and settings. It answers the few questions the rewrites ask of
    it on disk, one file at a time, after the checker's run. It is not the checker's
    `policy_checks.model.project.Project`. That is the indexed model of one run:
    every file's module name and facts, and resolution across modules.
    """

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
        """Root-relative paths of the package's Python files, excluded ones too.

        They are found as the checker walks them: regular files with UTF-8 names.
        A FIFO is never read, so nothing blocks on one.
        """
        walk = checker_project.walk_python_files(self.root, self.package.replace(".", "/"), (), [])
        return sorted(source.rel for source in walk)

    def is_marked_checker(self, module: str, name: str) -> bool:
        """Does `module` define `name` as an ``@experimental_backend`` function?

        Such a name may stay imported at module level. That is EXP001's
        support-module exception.
        """
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
    """The project at `root`, or the one the checker finds from `start`. `start` defaults to here."""
    root = root.resolve() if root else config.find_root(start or Path.cwd())
    try:
        settings = config.load(root)
    except config.ConfigError as error:
        raise FixError(str(error)) from error
    return FixTarget(root, settings)


def project_model(target: FixTarget, sources=None) -> checker_project.Project:
    """The checker's project model of the tree.

    Each file's facts are extracted when first asked for. ``remove`` and
    ``graduate`` read the facts of the few files that spell the feature. So they
    need no cache. `sources` is the command's reader of the tree's files.
    ``read(rel)`` gives the bytes, and ``tree(rel)`` their ``ast`` or None. The
    model shares that reader, so a file is read and parsed once per command.
    """

    def load(source: checker_project.SourceFile):
        if sources is not None:
            tree = sources.tree(source.rel)
            return extract(sources.read(source.rel), source.module, source.is_package,
                           tree=tree if tree is not None else None)
        return extract((target.root / source.rel).read_bytes(), source.module, source.is_package)

    return checker_project.Project(target.root, target.settings, load)
