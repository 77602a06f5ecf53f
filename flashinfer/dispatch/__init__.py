"""Backend dispatch: the parts behind `flashinfer.utils.backend_requirement`.

- `hooks`: what ``backend="auto"`` asks beyond the checkers; tuning and
  trace-apply register into it (standard library only).
- `core`: `BackendDispatch`, the object that stands in for an API, its per-call
  state and errors, and `call_with_backend`.
- `codegen`: each API's generated ``__call__``.

Dependencies run downward only (`codegen` -> `core` -> light modules); nothing
here imports tuning, trace-apply or `flashinfer.utils`. This ``__init__``
imports nothing.
"""
