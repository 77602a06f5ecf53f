"""What ``backend="auto"`` asks beyond the checkers and the heuristic, and who answers.

Two questions, each answered by at most one hook that a higher layer registers, and
one observer:

- ``pinned_backend(dispatch, arguments) -> name or None``: a deployer's
  trace-apply pin for this call (`flashinfer.trace_apply` registers it). The pin
  comes validated like an explicit ``backend=`` and, if experimental, let through
  by the gate; the dispatch runs it as the call's only candidate.
- ``tuned_choice(dispatch, candidates, arguments) -> name or None``: the tuned
  winner for this call's problem (`flashinfer.tuning.tuner` registers it). The
  dispatch moves it first only if it is one of ``candidates``, so tuning never
  brings in a backend the gate dropped.

- ``chose(dispatch, candidates, cc, arguments) -> None``: told each automatic call's
  candidates, first the one picked, while backend-choice reporting is on
  (`flashinfer.dispatch.choice_log` registers it; None, and so free, while off).

``arguments`` maps the API's parameter names to the call's values. A hook never
raises into a dispatch; None means "no answer", and is also what an absent hook
gives.

Dependencies run one way: this module imports nothing of FlashInfer; the
dispatch reads `hooks`; tuning and trace-apply register into it. The
environment variables that name a cache or a configuration
(``FLASHINFER_AUTOTUNE_CACHE``, ``FLASHINFER_TRACE_APPLY``, see
docs/autotuning.rst) need those modules loaded without code changes: the
module that builds APIs (`flashinfer.utils`) hands `DispatchHooks.load_lazily`
a loader, which runs once, on the first automatic call that would consult a
hook, and may register the real hooks.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

__all__ = ["DispatchHooks", "hooks"]

PinnedBackend = Callable[[Any, dict], Optional[str]]
TunedChoice = Callable[[Any, tuple, dict], Optional[str]]
Chose = Callable[[Any, list, Optional[int], dict], None]


class DispatchHooks:
    """The hooks of ``backend="auto"``; generated dispatch code reads the two slots.

    ``pinned_backend`` and ``tuned_choice`` are None when nothing answers (the
    dispatch then skips them at the cost of one attribute read). Register with
    `set_pinned_backend` and `set_tuned_choice`.
    """

    __slots__ = ("pinned_backend", "tuned_choice", "chose", "_loader")

    def __init__(self) -> None:
        self.pinned_backend: Optional[PinnedBackend] = None
        self.tuned_choice: Optional[TunedChoice] = None
        self.chose: Optional[Chose] = None
        self._loader: Optional[Callable[[], None]] = None

    def set_pinned_backend(self, hook: Optional[PinnedBackend]) -> None:
        """Answer ``pinned_backend`` with ``hook`` (None: no pins)."""
        self.pinned_backend = hook

    def set_tuned_choice(self, hook: Optional[TunedChoice]) -> None:
        """Answer ``tuned_choice`` with ``hook`` (None: no tuning)."""
        self.tuned_choice = hook

    def set_chose(self, hook: Optional[Chose]) -> None:
        """Tell ``hook`` each automatic call's candidates (None: report nothing)."""
        self.chose = hook

    def load_lazily(self, loader: Callable[[], None]) -> None:
        """Run ``loader()`` once, on the first call of an empty slot's hook.

        Until then each empty slot holds a stand-in that runs the loader (which
        may register real hooks) and then answers with whatever the slot holds.
        """
        self._loader = loader
        if self.pinned_backend is None:
            self.pinned_backend = self._pinned_stand_in
        if self.tuned_choice is None:
            self.tuned_choice = self._tuned_stand_in
        if self.chose is None:
            self.chose = self._chose_stand_in

    def _load(self) -> None:
        if self.pinned_backend == self._pinned_stand_in:
            self.pinned_backend = None
        if self.tuned_choice == self._tuned_stand_in:
            self.tuned_choice = None
        if self.chose == self._chose_stand_in:
            self.chose = None
        loader, self._loader = self._loader, None
        if loader is not None:
            loader()

    def _pinned_stand_in(self, dispatch: Any, arguments: dict) -> Optional[str]:
        self._load()
        hook = self.pinned_backend
        return None if hook is None else hook(dispatch, arguments)

    def _tuned_stand_in(self, dispatch: Any, candidates: tuple, arguments: dict) -> Optional[str]:
        self._load()
        hook = self.tuned_choice
        return None if hook is None else hook(dispatch, candidates, arguments)


    def _chose_stand_in(self, dispatch: Any, candidates: list, cc: Optional[int], arguments: dict) -> None:
        self._load()
        hook = self.chose
        if hook is not None:
            hook(dispatch, candidates, cc, arguments)


#: The process's hooks, read by every generated dispatch.
hooks = DispatchHooks()
