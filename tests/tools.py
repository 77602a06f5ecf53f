"""Command-line tools some tests run (actionlint, shellcheck, zizmor), found on PATH or
beside the running interpreter: ``.venv/bin/python -m pytest`` without an activated
venv finds the tools the dev extra installed there too."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Optional

BESIDE = Path(sys.executable).parent  # where a venv's console scripts lie


def tool(name: str) -> Optional[str]:
    """The path of the tool `name`, on PATH or beside the interpreter; None if neither."""
    return shutil.which(name) or shutil.which(name, path=str(BESIDE))


def tool_env() -> dict:
    """The environment for running a tool that runs others (actionlint runs shellcheck):
    PATH with the interpreter's directory added last."""
    path = os.environ.get("PATH", "")
    return {**os.environ, "PATH": f"{path}{os.pathsep}{BESIDE}" if path else str(BESIDE)}
