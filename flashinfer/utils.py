"""Backend dispatch: `backend_requirement` and the checker markers.

A stable API decorated with `backend_requirement` declares its backends as
``{name: checker}``; each checker takes the API's own arguments and says whether
it can run them. Explicit ``backend="<name>"`` runs that backend after its checks;
``backend="auto"`` collects the viable backends, drops experimental ones unless the
gate is set, orders them with the heuristic, and leaves them in
``<api>.suitable_auto_backends`` for the function body to pick from.

Per-call state lives in thread-local storage, so concurrent calls of one API never
see each other's candidates (FlashInfer 0.7 keeps it on the shared wrapper).

Compute capability comes from the first tensor argument: a CUDA tensor gives
``major * 10 + minor``; a tensor on any other device gives
`CPU_COMPUTE_CAPABILITY` (0), so host backends declare
``@supported_compute_capability([CPU_COMPUTE_CAPABILITY])`` and the whole dispatch
path runs on machines without a GPU.
"""

from __future__ import annotations

import functools
import inspect
import contextvars
import types
from typing import Any, Callable, Dict, Iterable, Mapping, Optional

import torch
from torch import Tensor

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
#   trace-apply pin, treated as an explicit choice (validated, warns if experimental).
tuned_choice_hook: Optional[Callable[..., Optional[str]]] = None
pinned_backend_hook: Optional[Callable[..., Optional[str]]] = None


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


def _make_binder(func: Callable) -> Callable[..., dict]:
    """A function taking the API's arguments and returning them as a dict, defaults applied.

    Equivalent to ``sig.bind(*args, **kwargs).apply_defaults()``, but lets the
    interpreter do the binding: a generated function with the API's own parameter
    list returns them as a dict. A bad call raises the interpreter's `TypeError`,
    named after the API. Signatures with ``*args``/``**kwargs`` use `inspect`.
    """
    sig = inspect.signature(func)
    params = list(sig.parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):

        def bind_slow(*args: Any, **kwargs: Any) -> dict:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            return dict(bound.arguments)

        return bind_slow

    namespace: Dict[str, Any] = {}
    parts, seen_kw_only = [], False
    for i, p in enumerate(params):
        if p.kind == p.KEYWORD_ONLY and not seen_kw_only:
            parts.append("*")
            seen_kw_only = True
        text = p.name
        if p.default is not p.empty:
            namespace[f"_default{i}"] = p.default
            text += f"=_default{i}"
        parts.append(text)
        if p.kind == p.POSITIONAL_ONLY and (
            i + 1 == len(params) or params[i + 1].kind != p.POSITIONAL_ONLY
        ):
            parts.append("/")
    body = ", ".join(f"{p.name!r}: {p.name}" for p in params)
    exec(f"def bind({', '.join(parts)}):\n    return {{{body}}}\n", namespace)
    bind = namespace["bind"]
    qualname = getattr(func, "__qualname__", func.__name__)
    code = bind.__code__.replace(co_name=func.__name__)
    if hasattr(code, "co_qualname"):  # Python 3.11+: TypeErrors use the qualname
        code = code.replace(co_qualname=qualname)
    bind.__code__ = code
    bind.__name__, bind.__qualname__ = func.__name__, qualname
    return bind


# Per-call state: (suitable_auto_backends, dropped_experimental_backends).
_NO_STATE: tuple = ((), ())


class BackendDispatch:
    """The callable that `backend_requirement` puts in place of an API.

    Attributes (FlashInfer's names): ``is_backend_supported``,
    ``is_compute_capability_supported``, ``has_backend``, ``has_backend_choices``,
    ``experimental_backends``; per call: ``suitable_auto_backends`` and
    ``dropped_experimental_backends``, which describe the calling thread's current
    (or, once it returned or failed, latest) call.
    """

    def __init__(
        self,
        func: Callable,
        backend_checks: Mapping[str, Callable],
        common_check: Optional[Callable],
        heuristic_func: Optional[Callable],
    ) -> None:
        functools.update_wrapper(self, func)
        self._func = func
        self._name = func.__name__
        self._checks: Dict[str, Callable] = dict(backend_checks)
        self._common = common_check
        self._heuristic = heuristic_func
        self._bind = _make_binder(func)
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
            getattr(c, "is_compute_capability_supported", None) is not None
            and c.is_compute_capability_supported(cc)
            for c in self._checks.values()
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

    # -- dispatch ----------------------------------------------------------------
    # The explicit path is written out inline: it is the hot path, and every
    # method call costs about 70 ns on a typical CPU (see benchmarks/).

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs.pop("skip_check", False):
            self._state.set(self._unchecked(args, kwargs))
            return self._func(*args, **kwargs)
        bound = self._bind(*args, **kwargs)
        cc = None
        for value in args:
            if isinstance(value, Tensor):
                cc = 0 if not value.is_cuda else compute_capability(value)
                break
        else:
            for value in kwargs.values():
                if isinstance(value, Tensor):
                    cc = compute_capability(value)
                    break
        backend = bound.get("backend")
        checker = self._checks.get(backend)
        if checker is not None:  # explicit backend
            if cc is not None:
                supported = getattr(checker, "is_compute_capability_supported", None)
                if supported is None or not supported(cc):
                    raise BackendSupportedError(
                        f"{self._name} does not support backend '{backend}' with capability {cc}"
                    )
            common = self._common
            if (common is not None and not common(**bound)) or not checker(**bound):
                raise ValueError(f"Problem size is not supported for {self._name}")
            if backend in self.experimental_backends:
                warn_experimental_backend_once(self._name, backend)
            self._state.set(_NO_STATE)
        elif not self._checks:
            self._check_common_only(cc, bound)
            self._state.set(_NO_STATE)
        elif backend == "auto":
            pinned = pinned_backend_hook(self, bound) if pinned_backend_hook else None
            if pinned is not None:  # a trace-apply pin: explicit, so no gate
                return self._run_pinned(pinned, cc, bound, args, kwargs)
            self._state.set(self._select_auto(cc, bound))
        else:
            raise self._unknown_backend(backend)
        return self._func(*args, **kwargs)

    def _run_pinned(self, backend: str, cc: Optional[int], bound: dict, args: tuple, kwargs: dict) -> Any:
        """Run a trace-apply pin as the call's only candidate (placeholder, see trace_apply)."""
        raise NotImplementedError("trace-apply pins are handled by flashinfer.trace_apply")

    def _unknown_backend(self, backend: Any) -> BackendSupportedError:
        return BackendSupportedError(
            f"Backend '{backend}' is not supported for {self._name}; available "
            f"backends: {', '.join(sorted(self._checks))} (or 'auto')"
        )

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

    def _candidates(self, cc: Optional[int], bound: dict) -> tuple:
        """(heuristic-ordered candidates, experimental backends the gate dropped).

        The heuristic may only reorder or shorten the viable list: a name it adds
        (say, an experimental backend the gate just dropped) is ignored.
        """
        if self._common is not None and not self._common(**bound):
            return _NO_STATE
        viable = []
        for name, checker, supported in self._checker_table:
            if cc is not None and (supported is None or not supported(cc)):
                continue
            try:
                if checker(**bound):
                    viable.append(name)
            except ValueError:
                continue
        dropped: tuple = ()
        experimental = self.experimental_backends
        if experimental and not experimental.isdisjoint(viable):
            if not experimental_auto_backends_allowed():
                dropped = tuple([b for b in viable if b in experimental])
                viable = [b for b in viable if b not in experimental]
        if self._heuristic is not None and viable:
            ordered = self._heuristic(viable, **bound)
            viable = [b for b in ordered if b in viable]
        return tuple(viable), dropped

    def _warn_automatic(self, candidates: tuple) -> None:
        experimental = self.experimental_backends
        if experimental and not experimental.isdisjoint(candidates):
            for backend in candidates:
                if backend in experimental:
                    warn_experimental_backend_once(self._name, backend, automatic=True)

    def _select_auto(self, cc: Optional[int], bound: dict) -> tuple:
        state = self._candidates(cc, bound)
        candidates, dropped = state
        if not candidates:
            self._state.set(state)  # readable after the failed call
            hint = ""
            if dropped:
                hint = (
                    f" (experimental backend(s) {sorted(dropped)} were excluded from "
                    f"automatic selection; set {EXPERIMENTAL_AUTO_ENV_VAR}=1 to include "
                    f"them, or pass backend= explicitly)"
                )
            raise BackendSupportedError(f"No suitable auto backends found for {self._name}{hint}")
        hook = tuned_choice_hook
        if hook is not None and len(candidates) > 1:
            winner = hook(self, candidates, bound)
            if winner is not None and winner != candidates[0] and winner in candidates:
                candidates = (winner,) + tuple(b for b in candidates if b != winner)
                state = (candidates, dropped)
        self._warn_automatic(candidates)
        return state

    def _unchecked(self, args: tuple, kwargs: dict) -> tuple:
        """``skip_check=True``: no validation, but the body still gets its candidates."""
        if not self._checks:
            return _NO_STATE
        bound = self._bind(*args, **kwargs)
        backend = bound.get("backend")
        if backend == "auto":
            cc = None
            for value in (*args, *kwargs.values()):
                if isinstance(value, Tensor):
                    cc = compute_capability(value)
                    break
            state = self._candidates(cc, bound)
            self._warn_automatic(state[0])
            return state
        if backend in self.experimental_backends:
            warn_experimental_backend_once(self._name, backend)
        return _NO_STATE


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
        return BackendDispatch(func, backend_checks, common_check, heuristic_func)

    return decorate
