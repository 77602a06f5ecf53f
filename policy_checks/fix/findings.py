"""The one place where ``fix`` meets the checker: findings in, a project model out.

Everything else in `policy_checks.fix` works from the small records defined here, so
a change in the checker's interface changes only this module.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

from .. import config
from .. import project as checker_project


class FixError(Exception):
    """The checker could not produce findings (bad settings, bad paths, a crash)."""


@dataclass(frozen=True)
class Finding:
    """One checker finding, as in the JSON report (SPEC 2.1)."""

    rule: str
    path: str  # relative to the project root, "/" separators
    line: int  # 1-based
    column: int  # 1-based
    message: str


@dataclass(frozen=True)
class Project:
    """What the rewrites need to know about the checked tree."""

    root: Path
    package: str  # "flashinfer"
    experimental_package: str  # "flashinfer.experimental"

    def module_of(self, path: str) -> Tuple[str, bool]:
        """Dotted module name of a root-relative ``.py`` path, and whether it is a package."""
        return checker_project.module_name(path)

    def is_experimental(self, module: str) -> bool:
        return module == self.experimental_package or module.startswith(self.experimental_package + ".")

    def is_marked_checker(self, module: str, name: str) -> bool:
        """Does `module` define `name` as an ``@experimental_backend`` function? Such a
        name may stay imported at module level (EXP001's support-module exception)."""
        base = self.root.joinpath(*module.split("."))
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            try:
                tree = ast.parse(path.read_bytes())
            except (OSError, SyntaxError, ValueError):
                continue
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    return any(_last_name(d) == "experimental_backend" for d in node.decorator_list)
        return False


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def load_project(root: Optional[Path]) -> Project:
    """The project at `root`, or the one the checker finds from the current directory."""
    root = root.resolve() if root else config.find_root(Path.cwd())
    try:
        settings = config.load(root)
    except config.ConfigError as error:
        raise FixError(str(error)) from error
    return Project(root, settings.package, settings.experimental_package)


def collect(project: Project, paths: Sequence[str], rules: Iterable[str]) -> List[Finding]:
    """Run the checker over `paths` (all of the project when empty), keeping `rules`."""
    command = [
        sys.executable,
        "-c",
        "from policy_checks.cli import main; main()",
        "run",
        "--format",
        "json",
        "--exit-zero",
        "--no-cache",
        "--root",
        str(project.root),
        "--select",
        ",".join(rules),
        *paths,
    ]
    package_parent = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
    completed = subprocess.run(command, capture_output=True, text=True, env=env)
    if completed.returncode not in (0, 1):
        raise FixError(f"policy-check run failed (exit {completed.returncode}): {completed.stderr.strip()}")
    try:
        report = json.loads(completed.stdout)
        return [
            Finding(f["rule"], f["path"], f["line"], f["column"], f["message"])
            for f in report["findings"]
        ]
    except (ValueError, KeyError, TypeError) as error:
        raise FixError(f"policy-check run gave an unreadable report: {error}") from error
