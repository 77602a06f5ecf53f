"""Backend dispatch: the parts behind `flashinfer.utils.backend_requirement`.

- `hooks`: what ``backend="auto"`` asks beyond the checkers; tuning and
  trace-apply register into it (standard library only).
- `core`: `BackendDispatch`, the object that stands in for an API, its per-call
  state and errors, and `call_with_backend`.
- `codegen`: each API's generated ``__call__``.
- `choice_log`: which backend ``backend="auto"`` picked and why the others were
  dropped (``FLASHINFER_LOG_BACKEND_CHOICE=1``); `choices` returns its record.

Dependencies run downward only (`codegen` -> `core` -> light modules); nothing
here imports tuning, trace-apply or `flashinfer.utils`. This ``__init__``
imports nothing (`choices` imports `choice_log` when called).
"""

from __future__ import annotations


def choices() -> list:
    """The automatic backend choices reported so far in this process
    (`flashinfer.dispatch.choice_log.BackendChoice` records; empty while reporting is off)."""
    from .choice_log import choices as reported

    return reported()
