"""Files that loaders of caches and configurations must survive (shared by their tests)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

#: Nesting far past Python's recursion limit, which recursive parsers hit.
DEEP = 100_000


@pytest.fixture
def untrusted_file() -> Callable[[str, Path], Path]:
    """``make(kind, path)`` puts at ``path`` what ``kind`` names and returns ``path``.

    Kinds: ``"deep"``, arrays nested `DEEP` levels (``a = [[[...`` for a ``.toml``
    path, ``[[[...`` otherwise); ``"fifo"``, a named pipe nobody writes to (opening
    it for reading blocks); ``"dev-zero"``, a symlink to ``/dev/zero`` (reading
    it never ends).
    """

    def make(kind: str, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "deep":
            path.write_text(("a = " if path.suffix == ".toml" else "") + "[" * DEEP)
        elif kind == "fifo":
            if not hasattr(os, "mkfifo"):
                pytest.skip("needs os.mkfifo")
            os.mkfifo(path)
        elif kind == "dev-zero":
            if not os.path.exists("/dev/zero"):
                pytest.skip("needs /dev/zero")
            path.symlink_to("/dev/zero")
        else:
            raise ValueError(f"unknown kind {kind!r}")
        return path

    return make
