"""APIs by dotted name, as autotune caches and trace-apply configurations name them.

A file names an API ``"flashinfer.gemm.mm_bf16"``; `resolve_api` finds the
`BackendDispatch` it means, or None when it no longer exists, without ever
importing modules outside ``flashinfer`` or under ``flashinfer.experimental``
(docs/autotuning.rst, "The autotune cache"). `backend_feature` says which
experimental feature a backend belongs to, so that a cache entry of a removed
feature is recognised.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Dict, Optional

from ..dispatch.core import BackendDispatch
from ..track import experimental_feature, is_experimental_module

__all__ = ["api_name", "backend_feature", "register_api", "remember_api", "resolve_api"]

_registered: Dict[str, BackendDispatch] = {}


def api_name(dispatch: BackendDispatch) -> str:
    """The dotted name an API is known by in caches and trace configs."""
    return f"{dispatch.__module__}.{dispatch.__qualname__}"


def register_api(dispatch: BackendDispatch) -> None:
    """Make ``dispatch`` resolvable by name for caches and trace configs.

    Not needed for APIs under ``flashinfer`` nor for module-level APIs of modules
    already imported: those are found by name. Needed for others (say, one
    defined inside a function) that a cache or trace config names before their
    first ``backend="auto"`` call.
    """
    if not isinstance(dispatch, BackendDispatch):
        raise TypeError(
            f"register_api expects a @backend_requirement function, got {type(dispatch).__name__}"
        )
    _registered[api_name(dispatch)] = dispatch


def remember_api(name: str, dispatch: BackendDispatch) -> None:
    """Resolve ``name`` to ``dispatch`` from now on (the latest definition of a name wins)."""
    _registered[name] = dispatch


def resolve_api(name: str) -> Optional[BackendDispatch]:
    """The API called ``name``, or None when no such API exists (any more).

    Registered APIs come first. Otherwise the name is looked up in the modules
    already imported; only modules under ``flashinfer`` (not under
    ``flashinfer.experimental``) are imported for it, so a cache file never makes
    us import arbitrary modules, nor experimental code.
    """
    found = _registered.get(name)
    if found is not None:
        return found
    importable = name.startswith("flashinfer.") and not is_experimental_module(name)
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):  # the longest module prefix first
        module_name = ".".join(parts[:split])
        obj: Any = sys.modules.get(module_name)
        if obj is None and importable:
            try:
                obj = importlib.import_module(module_name)
            except ImportError:
                continue
            except Exception:  # a module that fails to import is as good as absent
                return None
        if obj is None:
            continue
        for attribute in parts[split:]:
            obj = getattr(obj, attribute, None)
        if isinstance(obj, BackendDispatch):
            _registered[name] = obj
            return obj
        return None
    return None


def backend_feature(dispatch: BackendDispatch, backend: str) -> Optional[str]:
    """The experimental feature a backend belongs to; None for a stable backend.

    A checker defined in ``flashinfer.experimental.<feature>...`` belongs to
    ``<feature>``; an experimental checker defined elsewhere to its module's name.
    """
    if backend not in dispatch.experimental_backends:
        return None
    module = getattr(dispatch.backend_checks[backend], "__module__", None) or ""
    return experimental_feature(module) or module or None


def _reset_for_tests() -> None:
    """Forget every registration (tests only)."""
    _registered.clear()
