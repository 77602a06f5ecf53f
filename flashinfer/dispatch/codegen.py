"""The ``__call__`` of each API, generated once at decoration time.

Why generate: the ``__call__`` takes the API's own parameter list, so the
interpreter binds the arguments (no `inspect` work per call) and checkers, the
heuristic and the body get them without building a dict; and it is specialised
to what the API declared, so a call does not test at run time what decoration
already knew (no common check, no heuristic, no experimental backend) and each
backend's checker is called from its own line. That keeps a dispatch under
1 us (``benchmarks/dispatch_overhead.py``).

Why it stays readable: the source is assembled from the small pieces below, one
function per part of a call (skip_check, capability, explicit backend, automatic
selection with its candidates, heuristic, hooks and warnings, anything else).
Each piece is a template whose ``{slots}`` the API's `Spelling` fills. The source
is compiled under a unique file name, ``<flashinfer generated __call__ of
module.qualname>``, registered with `linecache` (as dataclasses and attrs do), so
tracebacks through an API show the generated lines, and `generated_source`
returns the whole text.

What a call does is the flow of docs/architecture.rst ("Data flow of a
dispatch"). Names the generated code uses start with ``_fi_``; they come from the
namespace `build_call` makes, and anything slow or rare (errors, pins, automatic
warnings) is a method of `BackendDispatch`. The capability rule is
`flashinfer.capabilities.compute_capability`, the gate
`flashinfer.api_logging.experimental_auto_backends_allowed`: both called, never
restated.
"""

from __future__ import annotations

import inspect
import itertools
import linecache
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from torch import Tensor

from .. import api_logging
from ..api_logging import experimental_auto_backends_allowed, warn_experimental_backend_once
from ..capabilities import compute_capability
from .core import NO_STATE, BackendDispatch
from .hooks import hooks

__all__ = ["build_call", "generated_source"]

_FILENAME = "<flashinfer generated __call__ of {}>"
_serial = itertools.count(2)


@dataclass(frozen=True)
class Spelling:
    """How the generated code spells one API's arguments (the templates' slots)."""

    parameters: str  # the __call__'s parameter list, skip_check included
    prologue: str  # a line that runs first ("" if none)
    backend: str  # the expression of the ``backend`` argument
    keywords: str  # the arguments as keywords, for checkers and the heuristic
    bound: str  # the arguments as a {name: value} dict, for hooks and errors
    call: str  # the arguments as the body takes them
    tensors: Optional[List[str]]  # parameters to scan for the first tensor; None: scan all values


def spelling(name: str, signature: inspect.Signature, namespace: dict) -> Spelling:
    """The `Spelling` of a signature (defaults and helpers go into ``namespace``).

    Signatures with ``*args``/``**kwargs`` (or parameter names that clash with the
    generated code's) get the generic form: `inspect` binds the arguments (for
    ``backend``, hooks and errors), and checkers are called exactly as the API was.
    """
    params = list(signature.parameters.values())
    names = [p.name for p in params]
    if "skip_check" in names:
        raise ValueError(
            f"@backend_requirement on {name}: the parameter name 'skip_check' is reserved"
        )
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params) or any(
        n.startswith("_fi_") for n in names
    ):
        return _generic_spelling(signature, namespace)
    declared, call = [], []
    for i, p in enumerate(params):
        text = p.name
        if p.default is not p.empty:
            namespace[f"_fi_default{i}"] = p.default
            text += f"=_fi_default{i}"
        if p.kind == p.KEYWORD_ONLY:
            if "*" not in declared:
                declared.append("*")
            call.append(f"{p.name}={p.name}")
        else:
            call.append(p.name)
        declared.append(text)
        if p.kind == p.POSITIONAL_ONLY and (
            i + 1 == len(params) or params[i + 1].kind != p.POSITIONAL_ONLY
        ):
            declared.append("/")
    skip_check = ["skip_check=False"] if "*" in declared else ["*", "skip_check=False"]
    return Spelling(
        parameters=", ".join(declared + skip_check),
        prologue="",
        backend="backend" if "backend" in names else "None",
        keywords=", ".join(f"{n}={n}" for n in names),
        bound="{" + ", ".join(f"{n!r}: {n}" for n in names) + "}",
        call=", ".join(call),
        tensors=names,
    )


def _generic_spelling(signature: inspect.Signature, namespace: dict) -> Spelling:
    def bind(*args: Any, **kwargs: Any) -> dict:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    namespace["_fi_bind"] = bind
    return Spelling(
        parameters="*_fi_args, skip_check=False, **_fi_kwargs",
        prologue="_fi_arguments = _fi_bind(*_fi_args, **_fi_kwargs)",
        backend='_fi_arguments.get("backend")',
        keywords="*_fi_args, **_fi_kwargs",
        bound="_fi_arguments",
        call="*_fi_args, **_fi_kwargs",
        tensors=None,
    )


# -- the pieces: each returns one part of __call__'s body, unindented ------------------


def _fill(template: str, s: Spelling, **more: str) -> str:
    return textwrap.dedent(template).format(**vars(s), **more).strip("\n")


def _header(s: Spelling) -> str:
    lines = [f"def __call__(_fi_self, {s.parameters}):"]
    if s.prologue:
        lines.append(f"    {s.prologue}")
    lines.append(f"    _fi_backend = {s.backend}")
    return "\n".join(lines)


def _skip_check(s: Spelling, api: BackendDispatch) -> str:
    """``skip_check=True`` runs the body at once, unless it is an automatic choice."""
    condition = 'skip_check and _fi_backend != "auto"' if api._checks else "skip_check"
    return _fill(
        """
        if {condition}:
            if _fi_backend in _fi_experimental:
                _fi_warn(_fi_api_name, _fi_backend)
            _fi_set(_fi_NO_STATE)
            return _fi_func({call})
        """,
        s,
        condition=condition,
    )


def _capability(s: Spelling) -> str:
    """The capability of the first tensor argument (`compute_capability`), or None."""
    if s.tensors is None:
        return "_fi_cc = _fi_first_capability((*_fi_args, *_fi_kwargs.values()))"
    lines = []
    for i, name in enumerate(s.tensors):  # `x.__class__ is T` first: cheaper than isinstance
        keyword = "if" if i == 0 else "elif"
        lines.append(f"{keyword} {name}.__class__ is _fi_Tensor or isinstance({name}, _fi_Tensor):")
        lines.append(f"    _fi_cc = _fi_capability({name})")
    if lines:
        lines.append("else:")
    lines.append(f"{'    ' if lines else ''}_fi_cc = None  # no tensor argument: no capability check")
    return "\n".join(lines)


def _explicit(s: Spelling, api: BackendDispatch) -> str:
    """``backend="<name>"``: that backend's capability and checks, a warning if experimental."""
    checks = f"_fi_check({s.keywords})"
    if api._common is not None:
        checks = f"(_fi_common({s.keywords}) and {checks})"
    return _fill(
        """
        _fi_entry = _fi_explicit.get(_fi_backend)
        if _fi_entry is not None:
            if _fi_get(_fi_NO_STATE) is not _fi_NO_STATE:
                _fi_set(_fi_NO_STATE)
            _fi_check, _fi_capabilities, _fi_warning_key = _fi_entry
            if _fi_cc is not None and _fi_cc not in _fi_capabilities:
                raise _fi_self._capability_error(_fi_backend, _fi_cc)
            if not {checks}:
                raise ValueError(_fi_size_message)
            if _fi_warning_key is not None and _fi_warning_key not in _fi_warned:
                _fi_warn(_fi_api_name, _fi_backend)  # experimental, first time
        """,
        s,
        checks=checks,
    )


def _automatic(s: Spelling, api: BackendDispatch) -> str:
    """``backend="auto"``: a pin if one applies, else the candidates, ordered and published."""
    parts = [
        _fill(
            """
            elif _fi_backend == "auto":
                _fi_set(_fi_NO_STATE)  # until this call's candidates are known
                _fi_bound = None  # the arguments by name, built once if a hook wants them
                if _fi_hooks.pinned_backend is not None and not skip_check:
                    _fi_bound = {bound}
                    _fi_pin = _fi_hooks.pinned_backend(_fi_self, _fi_bound)
                    if _fi_pin is not None:  # a trace-apply pin (the hook applied the gate)
                        return _fi_self._run_pinned(_fi_pin, _fi_bound)
            """,
            s,
        ),
        _indent(_candidates(s, api), 1),
    ]
    if api._heuristic is not None:
        parts.append(_indent(_heuristic(s), 1))
    parts.append(_indent(_tuned_choice(s), 1))
    parts.append(_indent(_publish(s, api), 1))
    return "\n".join(parts)


def _candidates(s: Spelling, api: BackendDispatch) -> str:
    """The viable backends in declaration order; experimental ones only with the gate set."""
    lines = ["_fi_viable = []"]
    if api.experimental_backends:
        lines += ["_fi_dropped = ()", "_fi_unwarned = False"]
    body: List[str] = []
    if api.experimental_backends:
        body.append("_fi_gate_open = _fi_gate()")
    first_experimental = True
    for i, (name, _, _) in enumerate(api._checker_table):
        experimental = name in api.experimental_backends
        body.append(_candidate(s, i, name, experimental, first_experimental))
        first_experimental = first_experimental and not experimental
    if api._common is None:
        lines += body
    else:
        lines.append(_fill("if _fi_common({keywords}):", s))
        lines += [_indent(part, 1) for part in body]
    return "\n".join(lines)


class _Predicate:
    """A checker's own ``is_compute_capability_supported``, as a container (``cc in it``)."""

    __slots__ = ("test",)

    def __init__(self, test: Callable[[int], Any]) -> None:
        self.test = test

    def __contains__(self, cc: int) -> Any:
        return self.test(cc)


def capabilities_of(supported: Optional[Callable]) -> Any:
    """What ``_fi_cc in ...`` tests for a checker's capability predicate.

    The set of `supported_compute_capability` itself; an empty set for a checker
    without a predicate (it supports no capability); else the predicate, wrapped.
    """
    if supported is None:
        return frozenset()
    owner = getattr(supported, "__self__", None)
    if owner.__class__ is frozenset and getattr(supported, "__name__", None) == "__contains__":
        return owner
    return _Predicate(supported)


def _candidate(s: Spelling, i: int, name: str, experimental: bool, first_experimental: bool) -> str:
    """One backend's test: its capabilities, then its checker (which may raise ValueError)."""
    # The first experimental backend to drop finds _fi_dropped empty: a constant suffices.
    drop = f"_fi_dropped = ({name!r},)" if first_experimental else f"_fi_dropped += ({name!r},)"
    lines = [
        f"if _fi_cc is None or _fi_cc in _fi_capabilities{i}:",
        "    try:",
        f"        if _fi_check{i}({s.keywords}):  # backend {name!r}{', experimental' if experimental else ''}",
    ]
    if experimental:
        lines += [
            "            if _fi_gate_open:",
            f"                _fi_viable.append({name!r})",
            f"                if _fi_warning_key{i} not in _fi_warned:",
            "                    _fi_unwarned = True",
            "            else:",
            f"                {drop}",
        ]
    else:
        lines.append(f"            _fi_viable.append({name!r})")
    lines += [
        "    except ValueError:  # a checker may reject by raising, as in FlashInfer",
        "        pass",
    ]
    return "\n".join(lines)


def _heuristic(s: Spelling) -> str:
    return _fill(
        """
        if _fi_viable:  # the heuristic may reorder or shorten the list, never add to it
            _fi_ordered = _fi_heuristic(_fi_viable, {keywords})
            if _fi_ordered.__class__ is not list or _fi_ordered != _fi_viable:
                _fi_viable = _fi_order(_fi_viable, _fi_ordered)
        """,
        s,
    )


def _tuned_choice(s: Spelling) -> str:
    return _fill(
        """
        if _fi_hooks.tuned_choice is not None and len(_fi_viable) > 1:
            # the autotuner's winner runs first, if it is one of the candidates
            _fi_winner = _fi_hooks.tuned_choice(_fi_self, tuple(_fi_viable), _fi_bound or {bound})
            if _fi_winner is not None and _fi_winner != _fi_viable[0] and _fi_winner in _fi_viable:
                _fi_viable = list(_fi_viable)  # a copy: a heuristic may still hold this list
                _fi_viable.remove(_fi_winner)
                _fi_viable.insert(0, _fi_winner)
        """,
        s,
    )


def _publish(s: Spelling, api: BackendDispatch) -> str:
    """The call's state; the choice reported if asked; no candidate is an error;
    experimental candidates warn once."""
    dropped = "_fi_dropped" if api.experimental_backends else "()"
    lines = [
        f"_fi_set((tuple(_fi_viable), {dropped}))",
        "if _fi_hooks.chose is not None:  # backend-choice reporting (choice_log); None while off",
        f"    _fi_hooks.chose(_fi_self, _fi_viable, _fi_cc, _fi_bound or {s.bound})",
        "if not _fi_viable:",
        "    if not skip_check:",
        f"        raise _fi_self._no_auto_backend({dropped})",
    ]
    if api.experimental_backends:
        lines += [
            "elif _fi_unwarned:  # the gate let experimental candidates in: warn once per backend",
            "    for _fi_name in _fi_viable:",
            "        if _fi_name in _fi_experimental and _fi_warning_keys[_fi_name] not in _fi_warned:",
            "            _fi_self._warn_automatic(_fi_name)",
        ]
    return "\n".join(lines)


def _otherwise(s: Spelling) -> str:
    """No backend choices (common check only), or a backend name the API does not have."""
    return _fill(
        """
        else:
            _fi_self._dispatch_other(_fi_backend, _fi_cc, {bound})
        return _fi_func({call})
        """,
        s,
    )


def _indent(text: str, levels: int) -> str:
    return textwrap.indent(text, "    " * levels)


def _source(s: Spelling, api: BackendDispatch) -> str:
    body = [_skip_check(s, api), _capability(s), _explicit(s, api)]
    if api._checks:
        body.append(_automatic(s, api))
    body.append(_otherwise(s))
    return _header(s) + "\n" + _indent("\n".join(body), 1) + "\n"


# -- helpers the generated code calls ------------------------------------------------------


def first_tensor_capability(values: tuple) -> Optional[int]:
    """`compute_capability` of the first tensor among ``values``; None without one."""
    for value in values:
        if isinstance(value, Tensor):
            return compute_capability(value)
    return None


def heuristic_order(candidates: list, ordered: Any) -> list:
    """The heuristic's order of ``candidates``: what it names among them, each once.

    (The generated code takes a returned list equal to ``candidates`` as it is.)
    """
    result: list = []
    for backend in ordered:
        if backend in candidates and backend not in result:
            result.append(backend)
    return result


# -- building ----------------------------------------------------------------------------------


def _namespace(api: BackendDispatch) -> Dict[str, Any]:
    warning_keys = {
        name: api_logging.backend_warning_key(api._name, name) for name in api.experimental_backends
    }
    namespace: Dict[str, Any] = {
        "_fi_func": api._func,
        "_fi_hooks": hooks,
        "_fi_Tensor": Tensor,
        "_fi_capability": compute_capability,
        "_fi_first_capability": first_tensor_capability,
        "_fi_explicit": {  # name -> (checker, capabilities, warning key if experimental)
            name: (checker, capabilities_of(supported), warning_keys.get(name))
            for name, checker, supported in api._checker_table
        },
        "_fi_common": api._common,
        "_fi_heuristic": api._heuristic,
        "_fi_order": heuristic_order,
        "_fi_gate": experimental_auto_backends_allowed,
        "_fi_experimental": api.experimental_backends,
        "_fi_warn": warn_experimental_backend_once,
        "_fi_warned": api_logging._warned_seen,
        "_fi_warning_keys": warning_keys,
        "_fi_api_name": api._name,
        "_fi_get": api._state.get,
        "_fi_set": api._state.set,
        "_fi_NO_STATE": NO_STATE,
        "_fi_size_message": f"Problem size is not supported for {api._name}",
    }
    for i, (name, checker, supported) in enumerate(api._checker_table):
        namespace[f"_fi_check{i}"] = checker
        namespace[f"_fi_capabilities{i}"] = capabilities_of(supported)
        namespace[f"_fi_warning_key{i}"] = warning_keys.get(name)
    return namespace


def _register_source(qualified_name: str, source: str) -> str:
    """A file name new to `linecache` (the API's name, numbered if taken), with ``source`` registered."""
    filename = _FILENAME.format(qualified_name)
    while filename in linecache.cache:  # another definition of the name (tests, reloads)
        filename = _FILENAME.format(f"{qualified_name} #{next(_serial)}")
    # mtime None: linecache.checkcache() keeps the entry (there is no file to check).
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return filename


def build_call(api: BackendDispatch) -> Callable:
    """The ``__call__`` for one API: generated, compiled under its own file name."""
    func = api._func
    namespace = _namespace(api)
    source = _source(spelling(api._name, inspect.signature(func), namespace), api)
    qualname = getattr(func, "__qualname__", func.__name__)
    filename = _register_source(f"{func.__module__}.{qualname}", source)
    exec(compile(source, filename, "exec"), namespace)
    call = namespace["__call__"]
    # Binding errors (missing or unexpected arguments) and tracebacks name the API.
    code = call.__code__.replace(co_name=func.__name__)
    if hasattr(code, "co_qualname"):  # Python 3.11+: TypeErrors use the qualname
        code = code.replace(co_qualname=qualname)
    call.__code__ = code
    call.__name__, call.__qualname__ = func.__name__, qualname
    return call


def generated_source(api: BackendDispatch) -> str:
    """The source of an API's generated ``__call__`` (for reading and debugging)."""
    code = type(api).__call__.__code__
    return "".join(linecache.getlines(code.co_filename))
