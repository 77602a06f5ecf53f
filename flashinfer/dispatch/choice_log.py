"""Which backend ``backend="auto"`` picked, and why the others were dropped.

Off by default. ``FLASHINFER_LOG_BACKEND_CHOICE=1`` (read on the first automatic call
of the process) or `enable` turns it on: each (API, backend) choice is then logged once
per process on the ``flashinfer.dispatch`` logger (INFO; a stderr handler is added when
logging is not configured) and kept in a record that `choices` returns. The picked
backend is the first of the call's ``suitable_auto_backends`` (the one a body that
follows the heuristic's order runs); ``None`` when no backend could run the call.

Each dropped backend comes with its reason: ``unsuitable`` with the check that failed
(the compute capability, the common check, the backend's checker returning False or
raising), ``experimental`` when the gate kept it out, or ``ordered out`` when the
heuristic left it off the list.

Zero cost when off: the dispatch reads one hook slot (`DispatchHooks.chose`) per
automatic call and calls nothing while it is None. When on, the reasons are worked out
only for a choice not reported before, by asking each backend's checks again (checkers
are predicates of the arguments). Standard library only.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, List, NamedTuple, Optional, Tuple

from ..api_logging import EXPERIMENTAL_AUTO_ENV_VAR, experimental_auto_backends_allowed
from .hooks import hooks

__all__ = ["BACKEND_CHOICE_ENV_VAR", "BackendChoice", "choices", "disable", "enable", "reset"]

BACKEND_CHOICE_ENV_VAR = "FLASHINFER_LOG_BACKEND_CHOICE"
logger = logging.getLogger("flashinfer.dispatch")


class BackendChoice(NamedTuple):
    """One automatic choice: the API, the backend picked (None: none could run), the
    candidates in order, and ``(backend, reason)`` for each backend dropped."""

    api: str
    backend: Optional[str]
    candidates: Tuple[str, ...]
    dropped: Tuple[Tuple[str, str], ...]


_lock = threading.Lock()
_seen: set = set()  # (api, backend) already reported
_record: List[BackendChoice] = []


def choices() -> List[BackendChoice]:
    """The choices reported so far in this process, in order (a copy)."""
    with _lock:
        return list(_record)


def reset() -> None:
    """Forget the reported choices (each will be reported again)."""
    with _lock:
        _seen.clear()
        _record.clear()


def enable() -> None:
    """Report automatic choices from now on (as ``FLASHINFER_LOG_BACKEND_CHOICE=1`` does)."""
    if not logger.hasHandlers():  # nothing would show an INFO record: give it a home
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[flashinfer.dispatch] %(message)s"))
        logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    hooks.set_chose(_observe)


def disable() -> None:
    """Stop reporting (the record is kept)."""
    hooks.set_chose(None)


def _observe(dispatch: Any, viable: list, cc: Optional[int], arguments: dict) -> None:
    """The hook: called by each automatic call while reporting is on. Never raises."""
    chosen = viable[0] if viable else None
    key = (dispatch._name, chosen)
    if key in _seen:  # the common case: reported already
        return
    with _lock:
        if key in _seen:
            return
        _seen.add(key)
    try:
        dropped = tuple(_why_dropped(dispatch, viable, cc, arguments))
    except Exception as error:  # a reason must never break the call
        dropped = (("?", f"reasons unavailable: {type(error).__name__}: {error}"),)
    choice = BackendChoice(dispatch._name, chosen, tuple(viable), dropped)
    with _lock:
        _record.append(choice)
    reasons = "; ".join(f"{name}: {why}" for name, why in dropped) or "none"
    logger.info("%s: backend='auto' chose %s (candidates: %s); dropped: %s", choice.api,
                repr(chosen) if chosen else "nothing", ", ".join(viable) or "none", reasons)


def _why_dropped(dispatch: Any, viable: list, cc: Optional[int], arguments: dict):
    """``(backend, reason)`` for each declared backend that is not a candidate."""
    from .codegen import capabilities_of  # the one reading of a checker's capabilities

    common = dispatch._common
    if common is not None and not _passes(common, arguments):
        yield from ((name, f"unsuitable: the common check {_name(common)} rejected the arguments")
                    for name, _, _ in dispatch._checker_table)
        return
    gate_open = experimental_auto_backends_allowed()
    for name, checker, supported in dispatch._checker_table:
        if name in viable:
            continue
        if cc is not None and cc not in capabilities_of(supported):
            yield name, f"unsuitable: compute capability {cc} is not supported"
            continue
        try:
            suitable = bool(checker(**arguments))
            failure = f"its checker {_name(checker)} returned False"
        except ValueError as error:
            suitable, failure = False, f"its checker {_name(checker)} raised ValueError: {error}"
        if not suitable:
            yield name, f"unsuitable: {failure}"
        elif name in dispatch.experimental_backends and not gate_open:
            yield name, f"experimental, and {EXPERIMENTAL_AUTO_ENV_VAR} is not 1"
        else:
            yield name, "ordered out by the heuristic (or the autotuner)"


def _passes(check: Any, arguments: dict) -> bool:
    try:
        return bool(check(**arguments))
    except ValueError:
        return False


def _name(function: Any) -> str:
    return getattr(function, "__qualname__", None) or repr(function)
