"""Per-call dispatch state under concurrency (flashinfer/utils.py).

A ``suitable_auto_backends`` kept on the shared wrapper would let a thread read
another thread's candidates. Here many threads call one API with
different arguments at once and each must read its own call's state, inside the
body and after the call, also after a failed call.
"""

from __future__ import annotations

import asyncio
import threading
import warnings

import pytest
import torch

from flashinfer.utils import (
    CPU_COMPUTE_CAPABILITY,
    BackendSupportedError,
    backend_requirement,
    experimental_backend,
    supported_compute_capability,
)

THREADS = 24


# Viability by `size`: 'small' below 6, 'large' from 10, experimental 'exp' for even
# sizes. Sizes 6..9 have no stable candidate, so without the gate the even ones fail
# with 'exp' dropped and the odd ones fail with nothing dropped.
@supported_compute_capability([CPU_COMPUTE_CAPABILITY])
def _small(x, size, backend="auto"):
    return size < 6


@supported_compute_capability([CPU_COMPUTE_CAPABILITY])
def _large(x, size, backend="auto"):
    return size >= 10


@experimental_backend
@supported_compute_capability([CPU_COMPUTE_CAPABILITY])
def _exp(x, size, backend="auto"):
    return size % 2 == 0


def _heuristic(candidates, x, size, backend="auto"):
    return sorted(candidates, reverse=size % 3 == 0)  # an order that depends on the call


def expected(size: int, gate: bool) -> tuple:
    viable = [name for name, ok in (("small", size < 6), ("large", size >= 10), ("exp", size % 2 == 0)) if ok]
    dropped = [] if gate else [b for b in viable if b == "exp"]
    kept = [b for b in viable if b not in dropped]
    return sorted(kept, reverse=size % 3 == 0), dropped


def make_api(barrier: threading.Barrier, log: dict):
    @backend_requirement(
        {"small": _small, "large": _large, "exp": _exp}, heuristic_func=_heuristic
    )
    def op(x, size, backend="auto"):
        barrier.wait()  # every successful call is inside its body at the same time
        log[("inside", size)] = (op.suitable_auto_backends, op.dropped_experimental_backends)
        return size

    return op


def run_threads(gate: bool, monkeypatch) -> None:
    if gate:
        monkeypatch.setenv("FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS", "1")
    sizes = list(range(THREADS))
    failing = {s for s in sizes if not expected(s, gate)[0]}
    inside = threading.Barrier(len(sizes) - len(failing), timeout=30)
    after = threading.Barrier(len(sizes), timeout=30)
    log: dict = {}
    errors: list = []
    op = make_api(inside, log)
    x = torch.zeros(2)

    def worker(size: int) -> None:
        try:
            try:
                assert op(x, size) == size
            except BackendSupportedError as exc:
                log[("error", size)] = str(exc)
            after.wait()  # all calls have finished; read the state of this thread's call
            log[("after", size)] = (op.suitable_auto_backends, op.dropped_experimental_backends)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append((size, exc))
            inside.abort()
            after.abort()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        threads = [threading.Thread(target=worker, args=(s,)) for s in sizes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert failing == {s for s in sizes if ("error", s) in log}
    for size in sizes:
        want = expected(size, gate)
        assert log[("after", size)] == want, size
        if size in failing:
            assert ("inside", size) not in log
            assert ("excluded" in log[("error", size)]) == bool(want[1]), size
        else:
            assert log[("inside", size)] == want, size


def test_each_thread_sees_its_own_candidates_without_gate(monkeypatch):
    run_threads(False, monkeypatch)


def test_each_thread_sees_its_own_candidates_with_gate(monkeypatch):
    run_threads(True, monkeypatch)


def test_the_test_would_catch_shared_state():
    """Sanity check of the harness: the expected states really differ between calls."""
    states = {tuple(map(tuple, expected(s, False))) for s in range(THREADS)}
    assert len(states) >= 5


def test_asyncio_tasks_see_their_own_candidates():
    @backend_requirement({"small": _small, "large": _large, "exp": _exp}, heuristic_func=_heuristic)
    def op(x, size, backend="auto"):
        return size

    async def task(size: int):
        try:
            op(None, size)
        except BackendSupportedError:
            pass
        await asyncio.sleep(0)  # let the other tasks make their calls
        await asyncio.sleep(0)
        return op.suitable_auto_backends, op.dropped_experimental_backends

    async def main():
        return await asyncio.gather(*(task(s) for s in range(THREADS)))

    results = asyncio.run(main())
    assert results == [expected(s, False) for s in range(THREADS)]


@pytest.mark.parametrize("round_", range(3))
def test_explicit_calls_reset_the_state_per_call(round_):
    @backend_requirement({"small": _small, "large": _large, "exp": _exp})
    def op(x, size, backend="auto"):
        return op.suitable_auto_backends

    assert op(None, 2) == ["small"]
    assert op(None, 2, backend="small") == []
    assert op.suitable_auto_backends == [] and op.dropped_experimental_backends == []
