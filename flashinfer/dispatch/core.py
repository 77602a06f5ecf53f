"""`BackendDispatch`: the object that stands in for an API decorated with `backend_requirement`.

It holds what is fixed at decoration (the checkers, the common check, the
heuristic, which backends are experimental), answers the introspection calls,
keeps the per-call state, and builds the errors the dispatch raises. The
per-call work itself is each API's generated ``__call__``
(`flashinfer.dispatch.codegen`).

Per-call state lives in a `contextvars.ContextVar`, one value per thread (and per
asyncio task): concurrent calls of one API never see each other's candidates,
which a value kept on the shared object would allow.

Imports only the standard library and light FlashInfer modules: tuning and
trace-apply import it (for `BackendDispatch` and `call_with_backend`), so it must
never import them back.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import types
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple

from ..api_logging import EXPERIMENTAL_AUTO_ENV_VAR, warn_experimental_backend_once
from ..capabilities import CPU_COMPUTE_CAPABILITY
from ..track import EXPERIMENTAL_PACKAGE, is_experimental_module

__all__ = ["BackendDispatch", "BackendSupportedError", "call_with_backend"]


class BackendSupportedError(Exception):
    """No backend can run this call (unknown name, capability, or gate)."""


# Per-call state: (suitable_auto_backends, dropped_experimental_backends).
NO_STATE: tuple = ((), ())


class BackendDispatch:
    """The callable that `~flashinfer.utils.backend_requirement` puts in place of an API.

    Attributes (FlashInfer's names): ``is_backend_supported``,
    ``is_compute_capability_supported``, ``has_backend``, ``has_backend_choices``,
    ``experimental_backends``; per call: ``suitable_auto_backends`` and
    ``dropped_experimental_backends``, which describe the calling thread's current
    (or, once it returned or failed, latest) call.

    Instances are created by `~flashinfer.utils.backend_requirement`, as an
    instance of a per-API subclass that carries the generated ``__call__``.
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
        #: (name, checker, capability predicate or None), in declaration order.
        self._checker_table = tuple(
            (name, c, getattr(c, "is_compute_capability_supported", None))
            for name, c in self._checks.items()
        )
        self.experimental_backends = frozenset(
            name for name, c in self._checks.items() if getattr(c, "is_experimental", False)
        )
        self._parameters: Optional[List[Tuple[str, Any]]] = None  # for call_with_backend
        for name, checker in self._checks.items():
            module = getattr(checker, "__module__", None) or ""
            if is_experimental_module(module) and name not in self.experimental_backends:
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
        return list(self._state.get(NO_STATE)[0])

    @property
    def dropped_experimental_backends(self) -> list:
        """Experimental backends the gate kept out of this thread's latest auto call."""
        return list(self._state.get(NO_STATE)[1])

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        return self if instance is None else types.MethodType(self, instance)

    if TYPE_CHECKING:  # the real __call__ is generated per API (codegen) and set on its subclass

        def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def __repr__(self) -> str:
        return f"<backend_requirement {self.__module__}.{self.__qualname__}>"

    # -- the slow paths of a call (the generated __call__ calls these) ------------

    def _warn_automatic(self, backend: str) -> None:
        """An experimental backend the gate let into an ``"auto"`` call's candidates."""
        warn_experimental_backend_once(self._name, backend, automatic=True, stacklevel=3)

    def _dispatch_other(self, backend: Any, cc: Optional[int], bound: dict) -> None:
        """A call without backend choices (common check only), or an unknown backend."""
        self._state.set(NO_STATE)
        if self._checks:
            raise self._unknown_backend(backend)
        self._check_common_only(cc, bound)

    def _run_pinned(self, backend: str, bound: dict) -> Any:
        """Run a trace-apply pin (the hook validated and gated it) as an explicit ``backend=``.

        The pin is the call's only candidate, and the body gets it as ``backend``.
        """
        if backend in self.experimental_backends:
            warn_experimental_backend_once(self._name, backend, stacklevel=3)
        self._state.set(((backend,), ()))
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


def call_with_backend(dispatch: BackendDispatch, arguments: Dict[str, Any], backend: str) -> Any:
    """Call the undecorated API with its bound ``arguments``, ``backend`` replaced.

    Used to run trace-apply pins and to time candidates: the function body then
    runs ``backend`` as if the caller had named it.
    """
    parameters = dispatch._parameters
    if parameters is None:
        signature = inspect.signature(dispatch.__wrapped__)
        parameters = dispatch._parameters = [(p.name, p.kind) for p in signature.parameters.values()]
    args: list = []
    kwargs: Dict[str, Any] = {}
    for name, kind in parameters:
        value = backend if name == "backend" else arguments[name]
        if kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            args.append(value)
        elif kind == inspect.Parameter.VAR_POSITIONAL:
            args.extend(value)
        elif kind == inspect.Parameter.VAR_KEYWORD:
            kwargs.update(value)
        else:
            kwargs[name] = value
    return dispatch.__wrapped__(*args, **kwargs)
