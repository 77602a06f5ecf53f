"""Trace-apply: a deployer's configuration that pins an API's problems to backends.

A pin replaces automatic selection (``backend="auto"``) for one (API, problem key),
or for every problem of the API when the entry has no key. It takes part in
automatic selection, so the experimental gate governs it as it governs a tuned
winner of the autotune cache: a pin of an experimental backend is skipped when
the file is applied while ``FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS`` is
unset, and ignored by calls made while the gate is unset since; with the gate
set it runs (warning `ExperimentalWarning` once per (API, backend)). Calls that
pass ``backend=`` themselves are not affected.

Format (TOML, or the same structure as JSON)::

    version = 1                        # optional; 1 is the only version
    [[pin]]
    api = "flashinfer.gemm.mm_bf16"    # the API's dotted name
    key = [16, 8192, 8192, "bfloat16", "cuda"]   # optional problem key
    backend = "splitk"

Problem keys are those of `flashinfer.autotuner` (see `problem_key`). An entry
whose API or backend no longer exists is skipped when the file is applied; a pin
that does not fit a call (capability or checks) is ignored for that call. Both
say so once, and the call falls back to automatic selection. A file is read as
autotune caches are (`flashinfer.tuning.files`): bad content never raises.

Importing this module registers `pinned_backend` as the dispatch's pin hook
(`flashinfer.dispatch.hooks`) and applies the configuration
``FLASHINFER_TRACE_APPLY=<path>`` names, if set (the first automatic call imports
this module when it is). The format and the gate's role are documented in
docs/autotuning.rst ("Trace-apply").
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Dict, Optional, Union

from torch import Tensor

from .api_logging import EXPERIMENTAL_AUTO_ENV_VAR, _OnceRegistry, experimental_auto_backends_allowed
from .capabilities import compute_capability
from .dispatch.core import BackendDispatch
from .dispatch.hooks import hooks
from .tuning import TRACE_APPLY_ENV_VAR
from .tuning.files import GATE_UNSET_REASON, LoadSummary, TuningConfigWarning, describe, load_entries, load_from_environment, resolve_entry
from .tuning.keys import freeze_key
from .tuning.tuner import key_of

__all__ = ["TRACE_APPLY_ENV_VAR", "apply_trace_config"]

CONFIG_VERSION = 1
_PIN_FIELDS = frozenset({"api", "key", "backend"})
_ANY_KEY = object()  # a pin without "key": every problem of its API


class _Pins:
    """One API's pins: by problem key, and the one for every other problem."""

    __slots__ = ("name", "by_key", "any_key")

    def __init__(self, name: str) -> None:
        self.name = name
        self.by_key: Dict[Any, str] = {}
        self.any_key: Optional[str] = None


_pins: Dict[BackendDispatch, _Pins] = {}
_warned = _OnceRegistry()


def apply_trace_config(path: str | os.PathLike) -> LoadSummary:
    """Add the pins of a trace-apply configuration (``.toml``, else JSON).

    Later pins of the same (API, key) replace earlier ones. Never raises on bad
    content: a file that cannot be read or parsed is ignored, and entries that
    are malformed, name an API or backend that no longer exists, or name an
    experimental backend while ``FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS`` is
    unset are skipped; one `TuningConfigWarning` says what was skipped.
    """
    summary = LoadSummary(os.fspath(path))
    load_entries(path, summary, _pin_entries, _add_pin)
    summary.warn("trace-apply config")
    return summary


def _pin_entries(document: dict) -> Union[list, str]:
    """The pins of a parsed configuration, or why it is not one this version reads."""
    version = document.get("version", CONFIG_VERSION)
    pins = document.get("pin", [])
    if version != CONFIG_VERSION:
        return f"version {describe(version)} is not supported (this FlashInfer reads version {CONFIG_VERSION})"
    if not isinstance(pins, list):
        return "'pin' must be a list of tables ([[pin]] in TOML)"
    return pins


def _add_pin(entry: Any, gate_set: bool, summary: LoadSummary) -> None:
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("api"), str)
        or not isinstance(entry.get("backend"), str)
        or not _PIN_FIELDS.issuperset(entry)
    ):
        summary.skip("malformed entries (need api and backend, optional key)", describe(entry))
        return
    name, backend = entry["api"], entry["backend"]
    try:
        key = freeze_key(entry["key"]) if "key" in entry else _ANY_KEY
    except TypeError:
        summary.skip("malformed entries (need api and backend, optional key)", f"{name}:{backend}")
        return
    dispatch = resolve_entry(name, backend, summary)
    if dispatch is None:
        return
    if backend in dispatch.experimental_backends and not gate_set:
        summary.skip(GATE_UNSET_REASON, f"{name}:{backend}")
        return
    pins = _pins.get(dispatch)
    if pins is None:
        pins = _pins[dispatch] = _Pins(name)
    if key is _ANY_KEY:
        pins.any_key = backend
    else:
        pins.by_key[key] = backend
    summary.loaded += 1


def _fits(dispatch: BackendDispatch, backend: str, arguments: dict) -> bool:
    """Whether an explicit ``backend=`` would be accepted for this call.

    The capability is the first tensor argument's, as the dispatch computes it.
    """
    for value in arguments.values():
        if isinstance(value, Tensor):
            if not dispatch.is_backend_supported(backend, compute_capability(value)):
                return False
            break
    common = dispatch.common_check  # applied to every backend
    try:
        return bool((common is None or common(**arguments)) and dispatch.backend_checks[backend](**arguments))
    except ValueError:
        return False


def pinned_backend(dispatch: BackendDispatch, arguments: dict) -> Optional[str]:
    """The dispatch's pin hook: the pinned backend of this call, or None.

    Never raises: a pin that cannot be looked up, does not fit, or is of an
    experimental backend while the gate is unset (read per call, as for a tuned
    winner) is ignored (said once per API, backend and reason) and the call uses
    automatic selection.
    """
    pins = _pins.get(dispatch)
    if pins is None:
        return None
    backend = None
    try:
        if pins.by_key:
            backend = pins.by_key.get(key_of(dispatch, arguments))
        if backend is None:
            backend = pins.any_key
        if backend is None:
            return None
        if backend in dispatch.experimental_backends and not experimental_auto_backends_allowed():
            problem = f"is skipped: the backend is experimental and {EXPERIMENTAL_AUTO_ENV_VAR} is not set"
        elif _fits(dispatch, backend, arguments):
            return backend
        else:
            problem = "does not fit this call (compute capability or the backend's checks)"
    except Exception as error:
        problem = f"could not be looked up ({type(error).__name__}: {error})"
    if _warned.first((pins.name, backend, problem)):
        warnings.warn(
            f"trace-apply: pin of {pins.name} to backend '{backend}' {problem}; "
            f"using automatic selection",
            TuningConfigWarning,
            stacklevel=3,
        )
    return None


def _reset_for_tests() -> None:
    """Forget every pin and one-time warning (tests only)."""
    _pins.clear()
    _warned.clear()


hooks.set_pinned_backend(pinned_backend)
load_from_environment(TRACE_APPLY_ENV_VAR, apply_trace_config)
