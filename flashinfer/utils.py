"""Backend dispatch: `backend_requirement` and the checker markers.

A stable API decorated with `backend_requirement` declares its backends as
``{name: checker}``; each checker takes the API's own arguments and says whether
it can run them. Explicit ``backend="<name>"`` runs that backend after its checks;
``backend="auto"`` collects the viable backends, drops experimental ones unless the
gate is set, orders them with the heuristic, and leaves them in
``<api>.suitable_auto_backends`` for the function body to pick from.

Per-call state lives in a `contextvars.ContextVar`, one value per thread (and per
asyncio task), so concurrent calls of one API never see each other's candidates
(FlashInfer 0.7 keeps it on the shared wrapper).

Compute capability comes from the first tensor argument: a CUDA tensor gives
``major * 10 + minor``; a tensor on any other device gives
`CPU_COMPUTE_CAPABILITY` (0), so host backends declare
``@supported_compute_capability([CPU_COMPUTE_CAPABILITY])`` and the whole dispatch
path runs on machines without a GPU. A call without tensor arguments skips the
capability check, as in FlashInfer.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import sys
import types
from typing import Any, Callable, Dict, Iterable, Mapping, Optional

import torch
from torch import Tensor

from . import api_logging
from .api_logging import (
    EXPERIMENTAL_AUTO_ENV_VAR,
    experimental_auto_backends_allowed,
    warn_experimental_backend_once,
)

__all__ = [
    "CPU_COMPUTE_CAPABILITY",
    "BackendSupportedError",
    "backend_requirement",
    "compute_capability",
    "experimental_backend",
    "supported_compute_capability",
]

EXPERIMENTAL_PACKAGE = "flashinfer.experimental"

#: The capability reported for tensors that are not on a CUDA device.
CPU_COMPUTE_CAPABILITY = 0


# Hooks installed by flashinfer.autotuner / flashinfer.trace_apply (None = off).
# - tuned_choice(dispatch, candidates, bound) -> backend name or None: the tuned
#   winner for this call's problem; ignored unless it is one of `candidates`, so
#   tuning can never bring in a backend the gate dropped.
# - pinned_backend(dispatch, bound) -> backend name or None: a deployer's
#   trace-apply pin, already validated like an explicit ``backend=`` and, if
#   experimental, let through by the gate (the hook reads it per call); run by
#   `BackendDispatch._run_pinned` (warns if experimental).
# Until those modules are imported, both hooks are one-shot stand-ins: the first
# automatic call imports each module whose environment variable is set
# (FLASHINFER_AUTOTUNE_CACHE, FLASHINFER_TRACE_APPLY), which loads the file and
# installs the real hook, so both variables work without code changes.
_HOOK_MODULES = (
    ("FLASHINFER_AUTOTUNE_CACHE", "flashinfer.autotuner"),
    ("FLASHINFER_TRACE_APPLY", "flashinfer.trace_apply"),
)


def _install_hooks_from_environment() -> None:
    global tuned_choice_hook, pinned_backend_hook
    if getattr(tuned_choice_hook, "stand_in", False):
        tuned_choice_hook = None
    if getattr(pinned_backend_hook, "stand_in", False):
        pinned_backend_hook = None
    import importlib
    import os

    for env_var, module in _HOOK_MODULES:
        if os.environ.get(env_var):
            try:
                importlib.import_module(module)
            except Exception as error:  # never raise inside a dispatch
                import warnings

                warnings.warn(f"{env_var} ignored: cannot import {module}: {error}", RuntimeWarning)


def _stand_in(hook: str) -> Callable[..., Optional[str]]:
    def first_use(*args: Any) -> Optional[str]:
        _install_hooks_from_environment()
        real = globals()[hook]
        return real(*args) if real is not None else None

    first_use.stand_in = True  # type: ignore[attr-defined]
    return first_use


tuned_choice_hook: Optional[Callable[..., Optional[str]]] = _stand_in("tuned_choice_hook")
pinned_backend_hook: Optional[Callable[..., Optional[str]]] = _stand_in("pinned_backend_hook")


class BackendSupportedError(Exception):
    """No backend can run this call (unknown name, capability, or gate)."""


_cuda_capabilities: Dict[int, int] = {}


def compute_capability(tensor: torch.Tensor) -> int:
    """``major * 10 + minor`` of the tensor's CUDA device, or 0 off CUDA."""
    if not tensor.is_cuda:
        return CPU_COMPUTE_CAPABILITY
    index = tensor.get_device()
    cc = _cuda_capabilities.get(index)
    if cc is None:
        major, minor = torch.cuda.get_device_capability(index)
        cc = _cuda_capabilities[index] = major * 10 + minor
    return cc


def supported_compute_capability(supported_ccs: Iterable[int]) -> Callable:
    """Attach ``is_compute_capability_supported(cc)`` for the given capabilities."""
    try:
        ccs = list(supported_ccs)
    except TypeError:
        raise TypeError(
            f"supported_ccs must be an iterable, got {type(supported_ccs).__name__}"
        ) from None
    for i, cc in enumerate(ccs):
        if isinstance(cc, bool) or not isinstance(cc, int):
            raise TypeError(
                f"supported_ccs[{i}] must be an integer, got {type(cc).__name__}: {cc!r}"
            )
    frozen = frozenset(ccs)

    def decorate(func: Callable) -> Callable:
        func._supported_ccs = set(frozen)
        func.is_compute_capability_supported = frozen.__contains__
        return func

    return decorate


def experimental_backend(checker: Callable) -> Callable:
    """Mark a `backend_requirement` checker as an experimental backend's.

    Its backend joins ``backend="auto"`` only with the gate set, warns
    `ExperimentalWarning` once per (API, backend) when used, and is listed in
    ``<api>.experimental_backends``. Stacks with `supported_compute_capability`.
    """
    checker.is_experimental = True
    return checker


def _is_under_experimental(module: str) -> bool:
    return module == EXPERIMENTAL_PACKAGE or module.startswith(EXPERIMENTAL_PACKAGE + ".")


# -- the generated __call__ --------------------------------------------------------
# Each API gets a subclass of BackendDispatch whose __call__ is generated with the
# API's own parameter list: the interpreter binds the arguments (no `inspect` per
# call), checkers and the heuristic get them as keywords without building a dict,
# and the explicit and auto paths run without method calls. `_fi_auto` collects
# the candidates of ``"auto"``: viable backends, minus experimental ones unless the
# gate is set, in heuristic order. `_fi_` names come from the namespace built in
# `_generated_call`; errors, warnings and hooks are methods of BackendDispatch.

_CALL_TEMPLATE = """\
def _fi_auto(_fi_cc, {params}):
    {prologue}
    if _fi_common is not None and not _fi_common({keywords}):
        return [], ()
    _fi_viable = []
    for _fi_backend, _fi_check, _fi_supported in _fi_table:
        if _fi_cc is not None and (_fi_supported is None or not _fi_supported(_fi_cc)):
            continue
        try:
            if _fi_check({keywords}):
                _fi_viable.append(_fi_backend)
        except ValueError:  # a checker may reject by raising, as in FlashInfer
            continue
    _fi_dropped = ()
    if _fi_experimental and not _fi_experimental.isdisjoint(_fi_viable) and not _fi_gate():
        _fi_kept, _fi_removed = [], []
        for _fi_backend in _fi_viable:
            (_fi_removed if _fi_backend in _fi_experimental else _fi_kept).append(_fi_backend)
        _fi_viable, _fi_dropped = _fi_kept, tuple(_fi_removed)
    if _fi_heuristic is not None and _fi_viable:
        # the heuristic may reorder or shorten the list, never add to it
        _fi_ordered = []
        for _fi_backend in _fi_heuristic(_fi_viable, {keywords}):
            if _fi_backend in _fi_viable and _fi_backend not in _fi_ordered:
                _fi_ordered.append(_fi_backend)
        _fi_viable = _fi_ordered
    return _fi_viable, _fi_dropped

def __call__(_fi_self, {call_params}):
    {prologue}
    _fi_backend = {backend}
    if skip_check and (_fi_backend != "auto" or not _fi_table):
        if _fi_backend in _fi_experimental:
            _fi_warn(_fi_name, _fi_backend)
        _fi_set(_fi_NO_STATE)
        return _fi_func({call})
    _fi_cc = None
    for _fi_value in {scan}:
        if isinstance(_fi_value, _fi_Tensor):
            _fi_cc = _fi_capability(_fi_value) if _fi_value.is_cuda else 0  # CPU: 0
            break
    _fi_entry = _fi_explicit.get(_fi_backend)
    if _fi_entry is not None:
        _fi_set(_fi_NO_STATE)
        _fi_check, _fi_supported, _fi_warning_key = _fi_entry
        if _fi_cc is not None and (_fi_supported is None or not _fi_supported(_fi_cc)):
            raise _fi_self._capability_error(_fi_backend, _fi_cc)
        if not ((_fi_common is None or _fi_common({keywords})) and _fi_check({keywords})):
            raise ValueError(_fi_size_message)
        if _fi_warning_key is not None and _fi_warning_key not in _fi_warned:
            _fi_warn(_fi_name, _fi_backend)  # experimental, first time
    elif _fi_backend == "auto" and _fi_table:
        _fi_set(_fi_NO_STATE)  # until this call's candidates are known
        _fi_bound = None  # the arguments by name, built once if a hook wants them
        if _fi_hooks.pinned_backend_hook is not None and not skip_check:
            _fi_bound = {bound}
            _fi_pin = _fi_hooks.pinned_backend_hook(_fi_self, _fi_bound)
            if _fi_pin is not None:  # a trace-apply pin (the hook applied the gate)
                return _fi_self._run_pinned(_fi_pin, _fi_cc, _fi_bound, {args}, {kwargs})
        _fi_viable, _fi_dropped = _fi_auto(_fi_cc, {call})
        if _fi_hooks.tuned_choice_hook is not None and len(_fi_viable) > 1:
            # the autotuner's winner runs first, if it is one of the candidates
            _fi_winner = _fi_hooks.tuned_choice_hook(_fi_self, tuple(_fi_viable), _fi_bound or {bound})
            if _fi_winner is not None and _fi_winner != _fi_viable[0] and _fi_winner in _fi_viable:
                _fi_viable.remove(_fi_winner)
                _fi_viable.insert(0, _fi_winner)
        _fi_set((tuple(_fi_viable), _fi_dropped))
        if not _fi_viable:
            if not skip_check:
                raise _fi_self._no_auto_backend(_fi_dropped)
        elif _fi_experimental and not _fi_experimental.isdisjoint(_fi_viable):
            for _fi_backend in _fi_viable:  # the gate is set: warn once per backend
                if _fi_backend in _fi_experimental and _fi_warning_keys[_fi_backend] not in _fi_warned:
                    _fi_self._warn_automatic(_fi_backend)
    else:
        _fi_self._dispatch_other(_fi_backend, _fi_cc, {bound})
    return _fi_func({call})
"""


def _template_parts(name: str, sig: inspect.Signature, namespace: dict) -> Dict[str, str]:
    """The pieces of `_CALL_TEMPLATE` for one signature (defaults go into `namespace`).

    Signatures with ``*args``/``**kwargs`` (or parameter names that clash with the
    generated code's) get the generic form: `inspect` binds the arguments (for
    ``backend`` and the heuristic), and checkers are called exactly as the API was.
    """
    params = list(sig.parameters.values())
    names = [p.name for p in params]
    if "skip_check" in names:
        raise ValueError(
            f"@backend_requirement on {name}: the parameter name 'skip_check' is reserved"
        )
    generic = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params) or any(
        n.startswith("_fi_") for n in names
    )
    if generic:

        def bind(*args: Any, **kwargs: Any) -> dict:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            return dict(bound.arguments)

        namespace["_fi_bind"] = bind
        return {
            "params": "*_fi_args, **_fi_kwargs",
            "call_params": "*_fi_args, skip_check=False, **_fi_kwargs",
            "prologue": "_fi_arguments = _fi_bind(*_fi_args, **_fi_kwargs)",
            "backend": '_fi_arguments.get("backend")',
            "scan": "(*_fi_args, *_fi_kwargs.values())",
            "bound": "_fi_arguments",
            "keywords": "*_fi_args, **_fi_kwargs",
            "call": "*_fi_args, **_fi_kwargs",
            "args": "_fi_args",
            "kwargs": "_fi_kwargs",
        }

    declared, call, positional, keyword_only = [], [], [], []
    for i, p in enumerate(params):
        text = p.name
        if p.default is not p.empty:
            namespace[f"_fi_default{i}"] = p.default
            text += f"=_fi_default{i}"
        if p.kind == p.KEYWORD_ONLY:
            if not keyword_only:
                declared.append("*")
            keyword_only.append(p.name)
            call.append(f"{p.name}={p.name}")
        else:
            positional.append(p.name)
            call.append(p.name)
        declared.append(text)
        if p.kind == p.POSITIONAL_ONLY and (
            i + 1 == len(params) or params[i + 1].kind != p.POSITIONAL_ONLY
        ):
            declared.append("/")
    skip_check = ["skip_check=False"] if keyword_only else ["*", "skip_check=False"]
    return {
        "params": "".join(f"{d}, " for d in declared),
        "call_params": ", ".join(declared + skip_check),
        "prologue": "pass",
        "backend": "backend" if "backend" in names else "None",
        "scan": "(" + "".join(f"{n}, " for n in names) + ")",
        "bound": "{" + ", ".join(f"{n!r}: {n}" for n in names) + "}",
        "keywords": ", ".join(f"{n}={n}" for n in names),
        "call": ", ".join(call),
        "args": "(" + "".join(f"{n}, " for n in positional) + ")",
        "kwargs": "{" + ", ".join(f"{n!r}: {n}" for n in keyword_only) + "}",
    }


def _generated_call(dispatch: "BackendDispatch") -> Callable:
    """Build the `__call__` for one API (see `_CALL_TEMPLATE`)."""
    func = dispatch._func
    warning_keys = {
        name: api_logging.backend_warning_key(dispatch._name, name)
        for name in dispatch.experimental_backends
    }
    namespace: Dict[str, Any] = {
        "_fi_func": func,
        "_fi_hooks": sys.modules[__name__],  # the hooks as currently installed
        "_fi_table": dispatch._checker_table,
        "_fi_Tensor": Tensor,
        "_fi_capability": compute_capability,
        "_fi_explicit": {  # name -> (checker, capability test, warning key if experimental)
            name: (checker, supported, warning_keys.get(name))
            for name, checker, supported in dispatch._checker_table
        },
        "_fi_common": dispatch._common,
        "_fi_heuristic": dispatch._heuristic,
        "_fi_gate": experimental_auto_backends_allowed,
        "_fi_experimental": dispatch.experimental_backends,
        "_fi_warn": warn_experimental_backend_once,
        "_fi_warned": api_logging._warned_seen,
        "_fi_warning_keys": warning_keys,
        "_fi_name": dispatch._name,
        "_fi_set": dispatch._state.set,
        "_fi_NO_STATE": _NO_STATE,
        "_fi_size_message": f"Problem size is not supported for {dispatch._name}",
    }
    parts = _template_parts(dispatch._name, inspect.signature(func), namespace)
    exec(_CALL_TEMPLATE.format(**parts), namespace)
    call = namespace["__call__"]
    # Binding errors (missing or unexpected arguments) name the API.
    qualname = getattr(func, "__qualname__", func.__name__)
    code = call.__code__.replace(co_name=func.__name__)
    if hasattr(code, "co_qualname"):  # Python 3.11+: TypeErrors use the qualname
        code = code.replace(co_qualname=qualname)
    call.__code__ = code
    call.__name__, call.__qualname__ = func.__name__, qualname
    return call


# Per-call state: (suitable_auto_backends, dropped_experimental_backends).
_NO_STATE: tuple = ((), ())


class BackendDispatch:
    """The callable that `backend_requirement` puts in place of an API.

    Attributes (FlashInfer's names): ``is_backend_supported``,
    ``is_compute_capability_supported``, ``has_backend``, ``has_backend_choices``,
    ``experimental_backends``; per call: ``suitable_auto_backends`` and
    ``dropped_experimental_backends``, which describe the calling thread's current
    (or, once it returned or failed, latest) call.

    Instances are created by `backend_requirement`, as an instance of a per-API
    subclass that carries the generated ``__call__``.
    """

    def __init__(
        self,
        func: Callable,
        backend_checks: Mapping[str, Callable],
        common_check: Optional[Callable],
        heuristic_func: Optional[Callable],
    ) -> None:
        if not isinstance(backend_checks, Mapping):
            raise TypeError(
                f"@backend_requirement on {func.__name__}: backend_checks must be a "
                f"mapping of backend names to checkers, got {type(backend_checks).__name__}"
            )
        functools.update_wrapper(self, func)
        self._func = func
        self._name = func.__name__
        self._checks: Dict[str, Callable] = dict(backend_checks)
        self._common = common_check
        self._heuristic = heuristic_func
        self.common_check = common_check  # public: trace-apply validates pins with it
        for role, value in (("common_check", common_check), ("heuristic_func", heuristic_func)):
            if value is not None and not callable(value):
                raise TypeError(
                    f"@backend_requirement on {self._name}: {role} must be callable, "
                    f"got {type(value).__name__}"
                )
        if "auto" in self._checks:
            raise ValueError(
                f"@backend_requirement on {self._name}: 'auto' is reserved for "
                f"automatic selection and cannot name a backend"
            )
        for name, checker in self._checks.items():
            if not isinstance(name, str) or not callable(checker):
                raise TypeError(
                    f"@backend_requirement on {self._name}: backend_checks must map "
                    f"backend names to checker functions, got {name!r}: {checker!r}"
                )
        # One value per thread (and per asyncio task): concurrent calls never mix.
        self._state: contextvars.ContextVar = contextvars.ContextVar(
            f"{self._name}.dispatch_state"
        )
        self.backend_checks = types.MappingProxyType(self._checks)
        self._checker_table = tuple(
            (name, c, getattr(c, "is_compute_capability_supported", None))
            for name, c in self._checks.items()
        )
        self.experimental_backends = frozenset(
            name for name, c in self._checks.items() if getattr(c, "is_experimental", False)
        )
        for name, checker in self._checks.items():
            module = getattr(checker, "__module__", None) or ""
            if _is_under_experimental(module) and name not in self.experimental_backends:
                raise ValueError(
                    f"@backend_requirement on {self._name}: checker for backend "
                    f"'{name}' is defined under {EXPERIMENTAL_PACKAGE} but is not "
                    f"marked @experimental_backend"
                )

    # -- introspection -----------------------------------------------------------

    def has_backend_choices(self) -> bool:
        return bool(self._checks)

    def has_backend(self, backend: str) -> bool:
        return backend in self._checks

    def is_backend_supported(self, backend: str, cc: Optional[int] = None) -> bool:
        if not self._checks:
            raise ValueError(
                f"Invalid is_backend_supported call: no backend choices for {self._name}"
            )
        checker = self._checks.get(backend)
        if checker is None:
            return False
        if cc is None:
            return True
        supported = getattr(checker, "is_compute_capability_supported", None)
        return bool(supported and supported(cc))

    def is_compute_capability_supported(self, cc: int) -> bool:
        if not self._checks:
            supported = getattr(self._common, "is_compute_capability_supported", None)
            if supported is None:
                raise ValueError(
                    f"Invalid is_compute_capability_supported call: "
                    f"{getattr(self._common, '__name__', self._common)} does not have "
                    f"is_compute_capability_supported decorator"
                )
            return supported(cc)
        return any(
            supported is not None and supported(cc)
            for _, _, supported in self._checker_table
        )

    @property
    def suitable_auto_backends(self) -> list:
        """The heuristic-ordered candidates of this thread's current or latest call."""
        return list(self._state.get(_NO_STATE)[0])

    @property
    def dropped_experimental_backends(self) -> list:
        """Experimental backends the gate kept out of this thread's latest auto call."""
        return list(self._state.get(_NO_STATE)[1])

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        return self if instance is None else types.MethodType(self, instance)

    def __repr__(self) -> str:
        return f"<backend_requirement {self.__module__}.{self.__qualname__}>"

    # -- dispatch beyond the explicit path (see _CALL_TEMPLATE) -------------------

    def _warn_automatic(self, backend: str) -> None:
        """An experimental backend the gate let into an ``"auto"`` call's candidates."""
        warn_experimental_backend_once(self._name, backend, automatic=True, stacklevel=3)

    def _dispatch_other(self, backend: Any, cc: Optional[int], bound: dict) -> None:
        """A call without backend choices (common check only), or an unknown backend."""
        self._state.set(_NO_STATE)
        if self._checks:
            raise self._unknown_backend(backend)
        self._check_common_only(cc, bound)

    def _run_pinned(self, backend: str, cc: Optional[int], bound: dict, args: tuple, kwargs: dict) -> Any:
        """Run a trace-apply pin (the hook validated and gated it) as an explicit ``backend=``.

        The pin is the call's only candidate, and the body gets it as ``backend``.
        """
        if backend in self.experimental_backends:
            warn_experimental_backend_once(self._name, backend, stacklevel=3)
        self._state.set(((backend,), ()))
        from .autotuner import call_with_backend  # already imported by trace_apply

        return call_with_backend(self, bound, backend)

    def _capability_error(self, backend: str, cc: int) -> BackendSupportedError:
        ccs = getattr(self._checks[backend], "_supported_ccs", None)
        supported = f"; it supports {sorted(ccs)}" if ccs else ""
        return BackendSupportedError(
            f"{self._name} does not support backend '{backend}' with capability "
            f"{cc}{' (CPU)' if cc == CPU_COMPUTE_CAPABILITY else ''}{supported}"
        )

    def _unknown_backend(self, backend: Any) -> BackendSupportedError:
        return BackendSupportedError(
            f"Backend '{backend}' is not supported for {self._name}; available "
            f"backends: {', '.join(sorted(self._checks))} (or 'auto')"
        )

    def _no_auto_backend(self, dropped: tuple) -> BackendSupportedError:
        hint = ""
        if dropped:
            hint = (
                f" (experimental backend(s) {sorted(dropped)} were excluded from "
                f"automatic selection; set {EXPERIMENTAL_AUTO_ENV_VAR}=1 to include "
                f"them, or pass backend= explicitly)"
            )
        return BackendSupportedError(f"No suitable auto backends found for {self._name}{hint}")

    def _check_common_only(self, cc: Optional[int], bound: dict) -> None:
        common = self._common
        if common is None:
            raise ValueError(
                f"Invalid @backend_requirement decorator usage: no backend choices "
                f"and no common_check for {self._name}"
            )
        if cc is not None and not self.is_compute_capability_supported(cc):
            ccs = getattr(common, "_supported_ccs", None)
            extra = f"; supported compute capabilities: {sorted(ccs)}" if ccs else ""
            raise BackendSupportedError(
                f"{self._name} does not support compute capability {cc}{extra}"
            )
        if not common(**bound):
            raise ValueError(f"Problem size is not supported for {self._name}")


def backend_requirement(
    backend_checks: Dict[str, Callable],
    common_check: Optional[Callable] = None,
    heuristic_func: Optional[Callable] = None,
) -> Callable[[Callable], BackendDispatch]:
    """Validate and route an API's backends; adds the ``skip_check=`` keyword.

    ``backend_checks`` maps backend names to checkers taking the API's arguments
    and returning whether they can run them (`supported_compute_capability` and
    `experimental_backend` annotate them). ``common_check`` runs for every
    backend. ``heuristic_func(candidates, **arguments)`` orders the viable
    candidates for ``backend="auto"``; without it, declaration order is used.

    Raises `ValueError` at decoration time when a checker defined under
    ``flashinfer.experimental`` lacks `experimental_backend`; at call time
    `BackendSupportedError` (unknown backend, unsupported capability, no viable
    auto candidate) or `ValueError` (problem size not supported).
    """

    def decorate(func: Callable) -> BackendDispatch:
        dispatch = BackendDispatch(func, backend_checks, common_check, heuristic_func)
        # A per-API subclass, so that the generated __call__ sits on the type.
        dispatch.__class__ = type(
            f"{func.__name__}_dispatch",
            (BackendDispatch,),
            {"__call__": _generated_call(dispatch), "__module__": __name__},
        )
        return dispatch

    return decorate
