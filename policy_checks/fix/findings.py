"""The one place where ``fix`` meets the checker: findings in, a project model out.

Everything else in `policy_checks.fix` works from the small records defined here, so
a change in the checker's interface changes only this module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Sequence, Tuple

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


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
        parts = path[: -len(".py")].split("/")
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        return ".".join(parts), is_package

    def is_experimental(self, module: str) -> bool:
        return module == self.experimental_package or module.startswith(
            self.experimental_package + "."
        )


def find_root(start: Path) -> Path:
    """The nearest directory at or above `start` holding a ``pyproject.toml``, else `start`."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if (directory / "pyproject.toml").is_file():
            return directory
    return start


def load_project(root: Path) -> Project:
    settings = {}
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise FixError(f"{pyproject}: cannot read [tool.policy-check]: {error}") from error
        settings = data.get("tool", {}).get("policy-check", {})
    package = settings.get("package", "flashinfer")
    return Project(
        root=root,
        package=package,
        experimental_package=settings.get("experimental-package", f"{package}.experimental"),
    )


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
