"""API markers and the experimental gate.

`flashinfer_api` marks a stable public API; `flashinfer_experimental_api` marks an
experimental one; `experimental_backend` marks the checker of an experimental
backend of a stable API. The gate (`FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1`) governs
only *automatic* backend selection: calling an experimental API, or naming an
experimental backend with ``backend=``, is itself the opt-in.

This module imports only the standard library, so that support modules and
`import flashinfer` stay light.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
import warnings
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar, overload

__all__ = [
    "EXPERIMENTAL_AUTO_ENV_VAR",
    "ExperimentalWarning",
    "experimental_auto_backends_allowed",
    "experimental_backend",
    "experimental_notice",
    "flashinfer_api",
    "flashinfer_experimental_api",
    "require_experimental_auto_backends",
    "trace_registry",
    "warn_experimental_backend_once",
]

EXPERIMENTAL_AUTO_ENV_VAR = "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"
LOGLEVEL_ENV_VAR = "FLASHINFER_LOGLEVEL"

_logger = logging.getLogger("flashinfer.api")


class ExperimentalWarning(UserWarning):
    """Emitted on first use of experimental functionality.

    Once per experimental API, and once per (stable API, experimental backend)
    pair, per process. Experimental functionality carries no compatibility
    guarantee and may change or be removed without deprecation.
    """


class _OnceRegistry:
    """A set of keys that each fire exactly once, also under concurrent callers."""

    def __init__(self) -> None:
        self.seen: set = set()  # only ever added to under the lock, never replaced
        self._lock = threading.Lock()

    def first(self, key: Any) -> bool:
        """True for exactly one caller per key; cheap once the key is known.

        Hot paths may test ``key in registry.seen`` first, to skip the call.
        """
        if key in self.seen:  # fast path, no lock
            return False
        with self._lock:
            if key in self.seen:
                return False
            self.seen.add(key)
            return True

    def clear(self) -> None:
        with self._lock:
            self.seen.clear()


# Keys: ("api", feature) and ("backend", api_name, backend).
_warned = _OnceRegistry()
_warned_seen = _warned.seen


def _reset_warnings_for_tests() -> None:
    """Forget which experimental warnings were emitted (tests only)."""
    _warned.clear()


# `os.environ.get` costs about 0.5 us (it encodes the key each time); auto dispatch
# reads the gate on every call, so on POSIX the encoded mapping behind os.environ
# is read directly. It is the same mapping that `os.environ[...] = ...` updates.
_ENVIRON_DATA = getattr(os.environ, "_data", None)
if os.name == "posix" and isinstance(_ENVIRON_DATA, dict):
    _GATE_KEY: Any = os.fsencode(EXPERIMENTAL_AUTO_ENV_VAR)
    _GATE_ON: Any = b"1"
else:  # pragma: no cover - Windows keeps str keys, upper-cased
    _ENVIRON_DATA, _GATE_KEY, _GATE_ON = os.environ, EXPERIMENTAL_AUTO_ENV_VAR, "1"


def experimental_auto_backends_allowed() -> bool:
    """Whether ``backend="auto"`` may pick experimental backends.

    True exactly when ``FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS`` is ``"1"``.
    Read on every call, so the gate can be toggled at run time.
    """
    return _ENVIRON_DATA.get(_GATE_KEY) == _GATE_ON


def experimental_auto_backends_message(feature: str) -> str:
    """The hint shared by `require_experimental_auto_backends` and dispatch errors."""
    return (
        f"automatic backend selection for '{feature}' considers only stable "
        f'backends. Set {EXPERIMENTAL_AUTO_ENV_VAR}=1 to let backend="auto" '
        f"(dispatch and autotuning) include experimental backends, or select the "
        f"experimental backend explicitly with backend=. Experimental backends "
        f"provide no compatibility guarantees and may change or be removed "
        f"without deprecation."
    )


def require_experimental_auto_backends(feature: str) -> None:
    """Raise `RuntimeError` unless the gate allows automatic experimental picks.

    Only for the automatic branch of a stable API that routes ``"auto"`` by hand;
    never on an explicit ``backend="<experimental>"`` branch, which is the opt-in.
    """
    if not experimental_auto_backends_allowed():
        raise RuntimeError(experimental_auto_backends_message(feature))


def experimental_backend(checker: Callable) -> Callable:
    """Mark a `~flashinfer.utils.backend_requirement` checker as an experimental backend's.

    Its backend joins ``backend="auto"`` only with the gate set, warns
    `ExperimentalWarning` once per (API, backend) when used, and is listed in
    ``<api>.experimental_backends``. Stacks with
    `~flashinfer.capabilities.supported_compute_capability`.
    """
    checker.is_experimental = True
    return checker


def backend_warning_key(api_name: str, backend: str) -> tuple:
    """The once-registry key of an (API, experimental backend) warning.

    Hot paths precompute it and skip the call while ``key in _warned_seen``.
    """
    return ("backend", api_name, backend)


def warn_experimental_backend_once(
    api_name: str, backend: str, *, automatic: bool = False, stacklevel: int = 2
) -> None:
    """Emit `ExperimentalWarning` once per ``(api_name, backend)`` pair.

    ``stacklevel`` counts from the function calling this one (1 = that function,
    2 = its caller, usually the user's code calling the API).
    """
    key = backend_warning_key(api_name, backend)
    if key in _warned_seen or not _warned.first(key):  # the first test skips a call
        return
    how = "may be selected automatically for" if automatic else "selected for"
    warnings.warn(
        f"experimental backend '{backend}' {how} '{api_name}': it provides no "
        f"compatibility guarantees and may change or be removed without "
        f"deprecation.",
        ExperimentalWarning,
        stacklevel=stacklevel + 1,
    )


if TYPE_CHECKING:
    # For type checkers, PEP 702's marker: pyright (reportDeprecated) and mypy
    # (--enable-error-code deprecated) report each call site with the message.
    from typing_extensions import deprecated as experimental_notice
else:

    def experimental_notice(message: str, /) -> Callable[[Callable], Callable]:
        """Make calls of an experimental API visible to type checkers, at no cost at run time.

        Stacked on top of `flashinfer_experimental_api`::

            @experimental_notice("flashinfer.op is an experimental FlashInfer API: ...")
            @flashinfer_experimental_api(feature="op")
            def op(...): ...

        Type checkers read it as PEP 702's ``@deprecated(message)``: pyright (with
        ``reportDeprecated``) and mypy (with ``--enable-error-code deprecated``) report
        every call of ``op`` in the caller's code, with ``message``. At run time it
        returns the function unchanged: no ``__deprecated__`` attribute, no
        `DeprecationWarning` (not even on Python 3.13, whose ``warnings.deprecated``
        would emit one); the one `ExperimentalWarning` per process stays the only
        run-time signal. ``policy-check graduate`` removes it with the other marks.
        """
        if not isinstance(message, str) or not message:
            raise TypeError(f"experimental_notice needs a non-empty message string, got {message!r}")

        def unchanged(func: Callable) -> Callable:
            return func

        return unchanged


# Stable and experimental APIs that carry a trace template, by qualified name.
_TRACE_REGISTRY: dict[str, tuple[Callable, Any]] = {}


def trace_registry() -> dict[str, tuple[Callable, Any]]:
    """A copy of the registered ``{qualified name: (function, trace)}`` entries."""
    return dict(_TRACE_REGISTRY)


def _log_level() -> int:
    try:
        return int(os.environ.get(LOGLEVEL_ENV_VAR, "0"))
    except ValueError:
        return 0


# A decorated API keeps its own signature for type checkers: a call is checked.
_Api = TypeVar("_Api", bound=Callable[..., Any])


@overload
def flashinfer_api(func: _Api, *, trace: Any = None) -> _Api: ...


@overload
def flashinfer_api(func: None = None, *, trace: Any = None) -> Callable[[_Api], _Api]: ...


def flashinfer_api(func: Optional[Callable] = None, *, trace: Any = None) -> Callable:
    """Mark a public API: register its trace template and, if asked, log its calls.

    Usable bare (``@flashinfer_api``) or with arguments (``@flashinfer_api(trace=t)``).
    With ``FLASHINFER_LOGLEVEL`` unset or 0 at decoration time the function is
    returned unchanged, so a stable API pays nothing for the marker.
    """

    def decorate(f: Callable) -> Callable:
        f.is_flashinfer_api = True  # type: ignore[attr-defined]
        if trace is not None:
            f.trace = trace  # type: ignore[attr-defined]
            _TRACE_REGISTRY[f"{f.__module__}.{f.__qualname__}"] = (f, trace)
        if _log_level() <= 0:
            return f

        @functools.wraps(f)
        def logged(*args, **kwargs):
            _logger.info("FlashInfer API Call: %s", f.__qualname__)
            return f(*args, **kwargs)

        return logged

    return decorate if func is None else decorate(func)


def _banner(feature_name: str) -> str:
    return (
        ".. warning::\n\n"
        f"    ``{feature_name}`` is experimental: it provides no compatibility "
        f"guarantees and may change or be removed without deprecation."
    )


def with_experimental_banner(doc: Optional[str], feature_name: str) -> str:
    """Prepend the experimental admonition, keeping the docstring well formed.

    The original docstring is dedented first (as `inspect.cleandoc` does), so the
    banner and the sections after it share one indentation and numpydoc sections
    such as ``Parameters`` keep parsing as sections.
    """
    banner = _banner(feature_name)
    if not doc:
        return banner + "\n"
    return banner + "\n\n" + inspect.cleandoc(doc) + "\n"


@overload
def flashinfer_experimental_api(func: _Api, *, trace: Any = None, feature: Optional[str] = None) -> _Api: ...


@overload
def flashinfer_experimental_api(
    func: None = None, *, trace: Any = None, feature: Optional[str] = None
) -> Callable[[_Api], _Api]: ...


def flashinfer_experimental_api(
    func: Optional[Callable] = None,
    *,
    trace: Any = None,
    feature: Optional[str] = None,
) -> Callable:
    """Mark a public API as experimental.

    Composes with `flashinfer_api`, then: warns `ExperimentalWarning` once on the
    first call, sets ``is_experimental = True`` on the original function and the
    wrapper, sets ``wrapper.experimental_feature`` (default: the qualified name),
    and prepends a Sphinx ``.. warning::`` banner to the docstring. Calling the
    API is the opt-in: no environment variable is needed.
    """

    if feature is not None and (not isinstance(feature, str) or not feature):
        raise TypeError(f"feature must be a non-empty string, got {feature!r}")

    def decorate(f: Callable) -> Callable:
        f.is_experimental = True  # type: ignore[attr-defined]
        inner = flashinfer_api(f, trace=trace)
        feature_name = feature if feature is not None else f.__qualname__
        key = ("api", feature_name)
        message = (
            f"'{feature_name}' is an experimental FlashInfer API: it provides no "
            f"compatibility guarantees and may change or be removed without "
            f"deprecation."
        )

        @functools.wraps(inner)
        def wrapper(*args, **kwargs):
            if key not in _warned_seen and _warned.first(key):
                warnings.warn(message, ExperimentalWarning, stacklevel=2)
            return inner(*args, **kwargs)

        wrapper.is_experimental = True  # type: ignore[attr-defined]
        wrapper.experimental_feature = feature_name  # type: ignore[attr-defined]
        wrapper.__doc__ = with_experimental_banner(f.__doc__, feature_name)
        return wrapper

    return decorate if func is None else decorate(func)
