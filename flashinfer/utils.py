"""Backend dispatch, the public surface: `backend_requirement` and the checker markers.

A stable API decorated with `backend_requirement` declares its backends as
``{name: checker}``; each checker takes the API's own arguments and says whether
it can run them. Explicit ``backend="<name>"`` runs that backend after its checks;
``backend="auto"`` collects the viable backends, drops experimental ones unless the
gate is set, orders them with the heuristic, and leaves them in
``<api>.suitable_auto_backends`` for the function body to pick from
(docs/experimental.rst, "Behaviour at a glance").

Per-call state lives in a `contextvars.ContextVar`, one value per thread (and per
asyncio task), so concurrent calls of one API never see each other's candidates,
which a value kept on the shared wrapper would allow.

Compute capability comes from the first tensor argument
(`flashinfer.capabilities.compute_capability`): a CUDA tensor gives
``major * 10 + minor``; a tensor on any other device gives
`CPU_COMPUTE_CAPABILITY` (0), so host backends declare
``@supported_compute_capability([CPU_COMPUTE_CAPABILITY])`` and the whole dispatch
path runs on machines without a GPU. A call without tensor arguments skips the
capability check.

Where the parts live: `flashinfer.dispatch.core` (the `BackendDispatch` object),
`flashinfer.dispatch.codegen` (each API's generated ``__call__``),
`flashinfer.dispatch.hooks` (what tuning and trace-apply register). This module
sits above them and above tuning: it wires the environment variables
``FLASHINFER_AUTOTUNE_CACHE`` and ``FLASHINFER_TRACE_APPLY`` (docs/autotuning.rst),
and ``FLASHINFER_LOG_BACKEND_CHOICE`` (docs/experimental.rst), into the hooks, loading the modules they need on the first automatic call.
"""

from __future__ import annotations

import os
from typing import Callable, Dict, Optional

from .api_logging import experimental_backend
from .capabilities import CPU_COMPUTE_CAPABILITY, compute_capability, supported_compute_capability
from .dispatch.choice_log import BACKEND_CHOICE_ENV_VAR
from .dispatch.codegen import build_call
from .dispatch.core import BackendDispatch, BackendSupportedError
from .dispatch.hooks import hooks
from .tuning import AUTOTUNE_CACHE_ENV_VAR, TRACE_APPLY_ENV_VAR

__all__ = [
    "CPU_COMPUTE_CAPABILITY",
    "BackendDispatch",
    "BackendSupportedError",
    "backend_requirement",
    "compute_capability",
    "experimental_backend",
    "supported_compute_capability",
]


def backend_requirement(
    backend_checks: Dict[str, Callable],
    common_check: Optional[Callable] = None,
    heuristic_func: Optional[Callable] = None,
) -> Callable[[Callable], BackendDispatch]:
    """Validate and route an API's backends; adds the ``skip_check=`` keyword.

    ``backend_checks`` maps backend names to checkers taking the API's arguments
    and returning whether they can run them
    (`~flashinfer.capabilities.supported_compute_capability` and
    `~flashinfer.api_logging.experimental_backend` annotate them).
    ``common_check`` runs for every backend. ``heuristic_func(candidates,
    **arguments)`` orders the viable candidates for ``backend="auto"``; without
    it, declaration order is used.

    Raises `ValueError` at decoration time when a checker defined under
    ``flashinfer.experimental`` lacks `~flashinfer.api_logging.experimental_backend`;
    at call time `BackendSupportedError` (unknown backend, unsupported capability,
    no viable auto candidate) or `ValueError` (problem size not supported).
    """

    def decorate(func: Callable) -> BackendDispatch:
        dispatch = BackendDispatch(func, backend_checks, common_check, heuristic_func)
        # A per-API subclass, so that the generated __call__ sits on the type.
        dispatch.__class__ = type(
            f"{func.__name__}_dispatch",
            (BackendDispatch,),
            {"__call__": build_call(dispatch), "__module__": __name__},
        )
        return dispatch

    return decorate


def _load_from_environment() -> None:
    """Load what ``FLASHINFER_AUTOTUNE_CACHE`` and ``FLASHINFER_TRACE_APPLY`` name, and
    turn backend-choice reporting on if ``FLASHINFER_LOG_BACKEND_CHOICE`` is 1.

    Importing each module registers its hook and loads its file; neither module
    imports this one. Runs once, inside the first automatic call, so it never raises.
    """
    if os.environ.get(AUTOTUNE_CACHE_ENV_VAR):
        try:
            from .tuning import tuner  # noqa: F401
        except Exception as error:
            _ignored(AUTOTUNE_CACHE_ENV_VAR, "flashinfer.tuning.tuner", error)
    if os.environ.get(BACKEND_CHOICE_ENV_VAR) == "1":
        from .dispatch import choice_log

        choice_log.enable()
    if os.environ.get(TRACE_APPLY_ENV_VAR):
        try:
            from . import trace_apply  # noqa: F401
        except Exception as error:
            _ignored(TRACE_APPLY_ENV_VAR, "flashinfer.trace_apply", error)


def _ignored(env_var: str, module: str, error: Exception) -> None:
    import warnings

    warnings.warn(f"{env_var} ignored: cannot import {module}: {error}", RuntimeWarning)


hooks.load_lazily(_load_from_environment)
