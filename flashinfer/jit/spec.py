"""`JitSpec`: everything NVRTC needs to build one CUDA module, and nothing else.

A spec is plain data (source text, in-memory headers, options, target
architectures, entry points), so it can be hashed for the disk cache and listed
for ahead-of-time builds without touching CUDA. Whether a spec is experimental is
decided by where it was created: a spec built by code under
``flashinfer.experimental`` is experimental whatever its ``experimental=``
argument says, so an experimental kernel cannot slip into the AOT registry by
claiming to be stable.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Iterable, Mapping, Optional, Tuple

from ..track import EXPERIMENTAL_PACKAGE, is_experimental_module

__all__ = ["CSRC_DIR", "DEFAULT_ARCHS", "EXPERIMENTAL_PACKAGE", "JitSpec", "common_headers", "read_source"]

#: Compute capabilities a spec targets unless it says otherwise (all have bf16 mma.sync).
DEFAULT_ARCHS: Tuple[int, ...] = (80, 86, 89, 90, 100, 120)

#: The stable CUDA sources shipped with the package.
CSRC_DIR = Path(__file__).resolve().parent.parent / "csrc"


def read_source(path: Path) -> str:
    """The text of a ``.cu``/``.cuh`` file shipped with the package."""
    return Path(path).read_text(encoding="utf-8")


def common_headers() -> dict:
    """``{"common.cuh": text}``: the shared device helpers, for a spec's ``headers``."""
    return {"common.cuh": read_source(CSRC_DIR / "common.cuh")}


class JitSpec:
    """One CUDA module to compile with NVRTC.

    Parameters
    ----------
    name:
        A file-name-safe identifier, used in cache file names and error messages.
    source:
        The CUDA C++ translation unit.
    kernels:
        The ``extern "C"`` entry points the module must export.
    headers:
        ``{include name: text}`` served to ``#include "name"`` from memory.
    options:
        Extra NVRTC options, in order (``-DNAME=VALUE`` and the like).
    archs:
        Compute capabilities (``90`` for sm_90) the spec supports.
    experimental:
        A claim; forced to True when the creating module is experimental.
    """

    __slots__ = ("name", "source", "kernels", "headers", "options", "archs",
                 "experimental", "created_in", "digest")

    def __init__(
        self,
        name: str,
        source: str,
        kernels: Iterable[str],
        *,
        headers: Optional[Mapping[str, str]] = None,
        options: Iterable[str] = (),
        archs: Iterable[int] = DEFAULT_ARCHS,
        experimental: bool = False,
        _creator: Optional[str] = None,
    ) -> None:
        if not name or not all(c.isalnum() or c in "_-." for c in name):
            raise ValueError(f"JitSpec name must be a non-empty file-name-safe string, got {name!r}")
        kernels = tuple(kernels)
        if not kernels:
            raise ValueError(f"JitSpec '{name}' names no kernels")
        # The module that called JitSpec(...); `_creator` exists for tests only.
        creator = _creator or sys._getframe(1).f_globals.get("__name__", "")
        self.name = name
        self.source = source
        self.kernels = kernels
        self.headers = dict(sorted((headers or {}).items()))
        self.options = tuple(options)
        self.archs = tuple(sorted(set(int(a) for a in archs)))
        self.created_in = creator
        self.experimental = bool(experimental) or is_experimental_module(creator)
        self.digest = self._content_digest()

    def _content_digest(self) -> str:
        """sha256 over everything that shapes the code: name, source, headers, options."""
        h = hashlib.sha256()
        for part in (self.name, self.source, *self.options):
            h.update(part.encode())
            h.update(b"\0")
        for include, text in self.headers.items():  # sorted by name at init
            h.update(include.encode() + b"\0" + text.encode() + b"\0")
        return h.hexdigest()

    def __repr__(self) -> str:
        kind = "experimental" if self.experimental else "stable"
        return f"JitSpec({self.name!r}, {kind}, kernels={list(self.kernels)}, archs={list(self.archs)})"
