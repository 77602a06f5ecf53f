"""Autotuning of ``backend="auto"``, and the winners it remembers.

Inside ``with autotune():`` the first call of an API for a new problem times
every candidate of that call, ``<api>.suitable_auto_backends``, and remembers the
fastest per (API, problem key). Later ``backend="auto"`` calls of that problem
run the remembered winner first. The candidates are what the dispatch left after
the experimental gate, so tuning never considers a backend the gate keeps out,
and a remembered winner that is not a candidate of the current call (the gate
was unset since, or the backend's checker rejects this call) is ignored
(docs/autotuning.rst, "What each gate state allows").

Winners are saved to and loaded from the cache file of `cache_format`. Loading is
defensive: an entry is skipped (and the call falls back to the stable choice)
when its API, backend or feature no longer exists, when its backend is
experimental while the gate is unset, or when it is malformed; a file that
cannot be read (see `files`) is ignored. Each load reports what it skipped in
one `TuningConfigWarning`. Nothing here raises inside a dispatch, and loading
never raises on bad content.

Importing this module registers `tuned_choice` as the dispatch's tuned-choice
hook (`flashinfer.dispatch.hooks`) and loads the cache that
``FLASHINFER_AUTOTUNE_CACHE`` names, if set (the first automatic call imports
this module when it is).
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import gc
import inspect
import os
import statistics
import time
import warnings
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

import torch
from torch import Tensor

from ..api_logging import EXPERIMENTAL_AUTO_ENV_VAR, _OnceRegistry, experimental_auto_backends_allowed
from ..dispatch.core import BackendDispatch, call_with_backend
from ..dispatch.hooks import hooks
from . import AUTOTUNE_CACHE_ENV_VAR, keys, registry
from .cache_format import cache_entries, cache_record, is_well_formed, write_cache
from .files import GATE_UNSET_REASON, LoadSummary, TuningConfigWarning, describe, load_entries, load_from_environment, resolve_entry
from .keys import freeze_key
from .registry import api_name, backend_feature

__all__ = [
    "TIMED_RUNS",
    "WARMUP_RUNS",
    "autotune",
    "key_of",
    "load_autotune_cache",
    "problem_key",
    "register_problem_key",
    "save_autotune_cache",
    "tuned_choice",
]

#: Untimed runs, then timed runs, per candidate; the median timed run decides.
WARMUP_RUNS = 2
TIMED_RUNS = 5


# -- remembered winners -----------------------------------------------------------------
# A winner is kept as its cache-file record (`cache_format.cache_record`), so that
# saving writes the records as they are.


class _TunedApi:
    """What the tuner holds for one API: its key function and its records by key."""

    __slots__ = ("dispatch", "name", "key_function", "entries")

    def __init__(self, dispatch: BackendDispatch) -> None:
        self.dispatch = dispatch
        self.name = api_name(dispatch)
        self.key_function = keys.key_function(self.name)
        self.entries: Dict[Any, dict] = {}


_tables: Dict[BackendDispatch, _TunedApi] = {}
# Records skipped at load only because the gate was unset, by (API, key): written
# back on save, so that saving in a gate-unset process does not lose them.
_dormant: Dict[Tuple[str, Any], dict] = {}
# True inside `with autotune():` in this thread / task (False while timing).
_tuning: contextvars.ContextVar = contextvars.ContextVar("flashinfer_autotuning", default=False)
_warned = _OnceRegistry()


def _table(dispatch: BackendDispatch) -> _TunedApi:
    table = _tables.get(dispatch)
    if table is None:
        table = _tables[dispatch] = _TunedApi(dispatch)
        registry.remember_api(table.name, dispatch)  # the latest definition of a name wins
    return table


def _remember(table: _TunedApi, key: Any, backend: str, tuned_at: str) -> None:
    dispatch = table.dispatch
    table.entries[key] = cache_record(
        table.name,
        key,
        backend,
        backend in dispatch.experimental_backends,
        backend_feature(dispatch, backend),
        tuned_at,
    )
    _dormant.pop((table.name, key), None)


def register_problem_key(api: Any, key_function: Callable[[Dict[str, Any]], tuple]) -> None:
    """Use ``key_function(arguments) -> tuple`` as the problem key of ``api``.

    ``api`` is a `BackendDispatch` or its dotted name. ``arguments`` maps parameter
    names to the call's values; the key must be a tuple of ints, floats, strings,
    bools, ``None`` and nested tuples, so that it survives a JSON round trip.
    """
    name = api if isinstance(api, str) else api_name(api)
    keys.set_key_function(name, key_function)
    for table in _tables.values():
        if table.name == name:
            table.key_function = key_function


def key_of(dispatch: BackendDispatch, arguments: Dict[str, Any]) -> tuple:
    """The problem key of a call of ``dispatch`` with bound ``arguments``."""
    return _table(dispatch).key_function(arguments)


def problem_key(api: BackendDispatch, *args: Any, **kwargs: Any) -> tuple:
    """The problem key of calling ``api(*args, **kwargs)``, as caches and pins spell it.

    Handy for writing a trace-apply config: ``problem_key(flashinfer.mm_bf16, a, b)``.
    """
    bound = inspect.signature(api.__wrapped__).bind(*args, **kwargs)
    bound.apply_defaults()
    return key_of(api, dict(bound.arguments))


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _warn_once(key: Any, message: str) -> None:
    if _warned.first(key):
        warnings.warn(message, TuningConfigWarning, stacklevel=4)


# -- the lookup and tuning -----------------------------------------------------------


def tuned_choice(dispatch: BackendDispatch, candidates: tuple, arguments: dict) -> Optional[str]:
    """The dispatch's tuned-choice hook: the winner to run first, or None.

    Never raises: any failure means "no tuned choice" and the heuristic order stands.
    """
    try:
        table = _tables.get(dispatch)
        if table is None or not table.entries:  # nothing remembered for this API
            if not _tuning.get():
                return None
            table = _table(dispatch)
        key = table.key_function(arguments)
        entry = table.entries.get(key)
        if entry is not None:
            backend = entry["backend"]
            return backend if backend in candidates else _skip_at_use(table, backend)
        return _tune(table, key, candidates, arguments) if _tuning.get() else None
    except Exception as error:  # the hot path never raises
        _warn_once(
            ("lookup", dispatch),
            f"autotuner: no tuned choice for {api_name(dispatch)} ({type(error).__name__}: "
            f"{error}); using the default order",
        )
        return None


def _skip_at_use(table: _TunedApi, backend: str) -> None:
    """A remembered winner that is not a candidate now: say why once, use the default."""
    if backend in table.dispatch.experimental_backends and not experimental_auto_backends_allowed():
        why = f"it is experimental and {EXPERIMENTAL_AUTO_ENV_VAR} is not set"
    else:
        why = "its checks reject this call"
    _warn_once(
        ("use", table.name, backend, why),
        f"autotuner: tuned backend '{backend}' for {table.name} skipped because {why}; "
        f"using the stable automatic choice",
    )


def _tune(table: _TunedApi, key: Any, candidates: tuple, arguments: dict) -> Optional[str]:
    """Time every candidate, remember and return the fastest."""
    token = _tuning.set(False)  # APIs called by a candidate are not tuned meanwhile
    try:
        timings, failures = {}, []
        for backend in candidates:
            try:
                timings[backend] = _time_backend(table.dispatch, arguments, backend)
            except Exception as error:
                failures.append(f"{backend}: {type(error).__name__}: {error}")
    finally:
        _tuning.reset(token)
    if failures:
        _warn_once(
            ("tune", table.name, key),
            f"autotuner: while tuning {table.name}, candidates failed and were left out: "
            + "; ".join(failures),
        )
    if not timings:
        return None
    winner = min(timings, key=timings.__getitem__)
    _remember(table, key, winner, _now())
    return winner


def _time_backend(dispatch: BackendDispatch, arguments: dict, backend: str) -> float:
    """Median seconds of one call of ``backend`` on copies of the tensor arguments."""
    copies = {k: v.clone() if isinstance(v, Tensor) else v for k, v in arguments.items()}
    on_cuda = any(isinstance(v, Tensor) and v.is_cuda for v in copies.values())
    for _ in range(WARMUP_RUNS):
        call_with_backend(dispatch, copies, backend)
    times = []
    for _ in range(TIMED_RUNS):
        if on_cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call_with_backend(dispatch, copies, backend)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e-3)
        else:
            began = time.perf_counter()
            call_with_backend(dispatch, copies, backend)
            times.append(time.perf_counter() - began)
    return statistics.median(times)


@contextlib.contextmanager
def autotune(tune_mode: bool = True, cache: Optional[str | os.PathLike] = None) -> Iterator[None]:
    """Tune the APIs called inside the block over their automatic candidates.

    With ``tune_mode=True`` the first ``backend="auto"`` call of each new (API,
    problem key) times every candidate and remembers the fastest; remembered
    problems are not tuned again. With ``cache=path`` the cache is loaded on entry
    (if the file exists) and, when tuning, saved on exit. Tuning is per thread:
    other threads only use what was remembered.
    """
    if cache is not None and os.path.exists(cache):
        load_autotune_cache(cache)
    token = _tuning.set(bool(tune_mode))
    try:
        yield
    finally:
        _tuning.reset(token)
        if cache is not None and tune_mode:
            save_autotune_cache(cache)


# -- saving and loading ------------------------------------------------------------------


def save_autotune_cache(path: str | os.PathLike) -> int:
    """Write every remembered winner to ``path``, atomically; returns the entry count.

    The file is written beside ``path`` under a temporary name and renamed over
    it, so readers and concurrent writers only ever see a complete file.
    """
    from .. import __version__

    records = dict(_dormant)
    for table in list(_tables.values()):
        for key, record in list(table.entries.items()):
            records[(table.name, key)] = record
    write_cache(path, records.values(), __version__, _now())
    return len(records)


def load_autotune_cache(path: str | os.PathLike) -> LoadSummary:
    """Merge the winners of a cache file into the tuner; never raises on bad content.

    Skipped, each reason counted in the one warning of this load: malformed
    entries; entries whose API, backend or feature no longer exists; entries whose
    backend is experimental while ``FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS``
    is unset; entries with a tactic the backend does not know. A file that is not
    readable, not JSON, or of another format or schema version is ignored whole.
    When the file and memory hold the same (API, problem key), the newer wins.
    """
    summary = LoadSummary(os.fspath(path))
    with _gc_paused():
        load_entries(path, summary, cache_entries, _load_entry)
    summary.warn("autotune cache")
    return summary


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic GC meanwhile: a load allocates many acyclic objects, and the passes
    they trigger over a large heap would otherwise triple a large load's time."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _load_entry(record: Any, gate_set: bool, summary: LoadSummary) -> None:
    if not is_well_formed(record):
        summary.skip("malformed entries", describe(record))
        return
    name, backend, tuned_at = record["api"], record["backend"], record["tuned_at"]
    what = f"{name}:{backend}"
    try:
        key = freeze_key(record["key"])
    except TypeError:
        summary.skip("malformed entries", what)
        return
    dispatch = resolve_entry(name, backend, summary)
    if dispatch is None:
        return
    feature = backend_feature(dispatch, backend)
    recorded = record["feature"]
    if record["experimental"] and isinstance(recorded, str) and feature not in (None, recorded):
        summary.skip("of an experimental feature that no longer exists", what)
    elif backend in dispatch.experimental_backends and not gate_set:
        _dormant[(name, key)] = record
        summary.skip(GATE_UNSET_REASON, what)
    elif record["tactic"] is not None:
        summary.skip("with a tactic the backend does not take", what)
    else:
        table = _table(dispatch)
        current = table.entries.get(key)
        if current is None or current["tuned_at"] <= tuned_at:
            _remember(table, key, backend, tuned_at)
        summary.loaded += 1


def _reset_for_tests() -> None:
    """Forget every winner, registration, key function and one-time warning (tests only)."""
    _tables.clear()
    _dormant.clear()
    registry._reset_for_tests()
    keys._reset_for_tests()
    _warned.clear()


hooks.set_tuned_choice(tuned_choice)
load_from_environment(AUTOTUNE_CACHE_ENV_VAR, load_autotune_cache)
