"""Autotuning of ``backend="auto"`` and the cache that remembers its winners.

Inside ``with flashinfer.autotune():`` the first call of an API for a new problem
times every candidate of that call, ``<api>.suitable_auto_backends``, and remembers
the fastest per (API, problem key). Later ``backend="auto"`` calls of that problem
run the remembered winner first. The candidates are what the dispatch left after
the experimental gate, so tuning never considers a backend the gate keeps out, and
a remembered winner that is not a candidate of the current call (the gate was
unset since, or the backend's checker rejects this call) is ignored.

Winners are saved to and loaded from a JSON cache file. Loading is defensive: an
entry is skipped (and the call falls back to the stable choice) when its API,
backend or feature no longer exists, when its backend is experimental while the
gate is unset, or when it is malformed; a file that cannot be read or parsed
(also one nested too deeply, larger than `MAX_CONFIG_BYTES`, or not a regular
file) is ignored. Each load reports what it skipped in one `TuningConfigWarning`.
Nothing here raises inside a dispatch, and loading never raises on bad content.

The tuning hook is `flashinfer.utils.tuned_choice_hook`; this module installs it
when imported. ``FLASHINFER_AUTOTUNE_CACHE=<path>`` loads a cache at that moment
(the dispatch imports this module on the first automatic choice when the variable
is set).
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import gc
import importlib
import inspect
import json
import math
import os
import stat
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch
from torch import Tensor

from . import utils
from .api_logging import EXPERIMENTAL_AUTO_ENV_VAR, _OnceRegistry, experimental_auto_backends_allowed
from .safe_io import read_regular_file
from .utils import BackendDispatch

__all__ = [
    "AUTOTUNE_CACHE_ENV_VAR",
    "CACHE_SCHEMA_VERSION",
    "LoadSummary",
    "TuningConfigWarning",
    "autotune",
    "default_problem_key",
    "load_autotune_cache",
    "problem_key",
    "register_api",
    "register_problem_key",
    "save_autotune_cache",
]

AUTOTUNE_CACHE_ENV_VAR = "FLASHINFER_AUTOTUNE_CACHE"
CACHE_FORMAT = "flashinfer-autotune-cache"
CACHE_SCHEMA_VERSION = 1
#: The most bytes read from an autotune cache or trace-apply file (64 MiB, about
#: 250,000 cache entries); a longer file is ignored whole.
MAX_CONFIG_BYTES = 64 << 20

#: Untimed runs, then timed runs, per candidate; the median timed run decides.
WARMUP_RUNS = 2
TIMED_RUNS = 5


class TuningConfigWarning(UserWarning):
    """An autotune cache or trace-apply configuration (or an entry of it) was skipped."""


# -- problem keys ---------------------------------------------------------------
# Key functions run on every tuned lookup, where each tensor attribute read costs
# 40-80 ns (``tensor.device`` over 200 ns), so they read each attribute once. A
# key holds ``tensor.shape`` as is: a ``torch.Size`` is a tuple, equal to and
# hashing like the plain tuple that the same key read back from JSON holds, so
# keys computed for calls and keys loaded from files match without conversion.


class _DtypeNames(dict):
    """``torch.bfloat16 -> "bfloat16"``, remembered per dtype (``str(dtype)`` is slow)."""

    def __missing__(self, dtype: torch.dtype) -> str:
        name = self[dtype] = str(dtype).rpartition(".")[2]
        return name


_DTYPE_NAMES = _DtypeNames()


def _device_type(tensor: Tensor) -> str:
    """``tensor.device.type``, from flags that are several times cheaper to read."""
    if tensor.is_cuda:
        return "cuda"
    return "cpu" if tensor.is_cpu else tensor.device.type


# Argument types that are never tensors: skipped without the (slow) isinstance
# check that torch.Tensor's metaclass makes of them.
_PLAIN_TYPES = frozenset({type(None), str, int, float, bool})


def default_problem_key(arguments: Dict[str, Any]) -> tuple:
    """``(device type, (name, shape, dtype), ...)`` of the call's tensor arguments.

    ``arguments`` maps the API's parameter names to the call's values. The device
    type is the first tensor's (a call's tensors share a device). Non-tensor
    arguments (scalars, ``None``, ``backend``) are not part of the key.
    """
    key: list = []
    for name, value in arguments.items():
        kind = value.__class__
        if kind is Tensor or (kind not in _PLAIN_TYPES and isinstance(value, Tensor)):
            if not key:
                key.append(_device_type(value))
            key.append((name, value.shape, _DTYPE_NAMES[value.dtype]))
    return tuple(key)


def _mm_bf16_key(arguments: Dict[str, Any]) -> tuple:
    """``(M, N, K, dtype, device type)`` of ``a`` (M x K) times ``b`` (K x N)."""
    a = arguments["a"]
    m, k = a.shape  # 2-D: the dispatch checked the arguments before the lookup
    return (m, arguments["b"].shape[1], k, _DTYPE_NAMES[a.dtype], _device_type(a))


def _rmsnorm_key(arguments: Dict[str, Any]) -> tuple:
    """``(rows, hidden, dtype, device type)``; rows is the product of the leading dims."""
    x = arguments["x"]
    shape = x.shape
    return (math.prod(shape[:-1]), shape[-1], _DTYPE_NAMES[x.dtype], _device_type(x))


# The stable ops' keys; other APIs use `default_problem_key` unless registered.
_BUILTIN_KEY_FUNCTIONS = {
    "flashinfer.gemm.mm_bf16": _mm_bf16_key,
    "flashinfer.norm.rmsnorm": _rmsnorm_key,
}
_key_functions: Dict[str, Callable[[Dict[str, Any]], tuple]] = dict(_BUILTIN_KEY_FUNCTIONS)


def register_problem_key(api: Any, key_function: Callable[[Dict[str, Any]], tuple]) -> None:
    """Use ``key_function(arguments) -> tuple`` as the problem key of ``api``.

    ``api`` is a `BackendDispatch` or its dotted name. ``arguments`` maps parameter
    names to the call's values; the key must be a tuple of ints, floats, strings,
    bools, ``None`` and nested tuples, so that it survives a JSON round trip.
    """
    name = api if isinstance(api, str) else api_name(api)
    _key_functions[name] = key_function
    for table in _tables.values():
        if table.name == name:
            table.key_function = key_function


def freeze_key(value: Any) -> Any:
    """A problem key read from JSON or TOML (lists) in the hashable tuple form.

    Raises `TypeError` for a key holding a table (a dict), which no key function
    returns, or nested too deeply to convert; loaders count such an entry as
    malformed.
    """
    try:
        frozen = _tuples(value)
    except RecursionError:
        raise TypeError("problem key nested too deeply") from None
    hash(frozen)
    return frozen


def _tuples(value: Any) -> Any:
    if value.__class__ is list:
        return tuple([_tuples(item) if item.__class__ is list else item for item in value])
    return value


# -- APIs by name ---------------------------------------------------------------------

_registered: Dict[str, BackendDispatch] = {}


def api_name(dispatch: BackendDispatch) -> str:
    """The dotted name an API is known by in caches and trace configs."""
    return f"{dispatch.__module__}.{dispatch.__qualname__}"


def register_api(dispatch: BackendDispatch) -> None:
    """Make ``dispatch`` resolvable by name for caches and trace configs.

    Not needed for APIs under ``flashinfer`` nor for module-level APIs of modules
    already imported: those are found by name. Needed for others (say, one
    defined inside a function) that a cache or trace config names before their
    first ``backend="auto"`` call.
    """
    if not isinstance(dispatch, BackendDispatch):
        raise TypeError(
            f"register_api expects a @backend_requirement function, got {type(dispatch).__name__}"
        )
    _registered[api_name(dispatch)] = dispatch


def resolve_api(name: str) -> Optional[BackendDispatch]:
    """The API called ``name``, or None when no such API exists (any more).

    Registered APIs come first. Otherwise the name is looked up in the modules
    already imported; only modules under ``flashinfer`` (not under
    ``flashinfer.experimental``) are imported for it, so a cache file never makes
    us import arbitrary modules, nor experimental code.
    """
    found = _registered.get(name)
    if found is not None:
        return found
    importable = name.startswith("flashinfer.") and not utils._is_under_experimental(name)
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):  # the longest module prefix first
        module_name = ".".join(parts[:split])
        obj: Any = sys.modules.get(module_name)
        if obj is None and importable:
            try:
                obj = importlib.import_module(module_name)
            except ImportError:
                continue
            except Exception:  # a module that fails to import is as good as absent
                return None
        if obj is None:
            continue
        for attribute in parts[split:]:
            obj = getattr(obj, attribute, None)
        if isinstance(obj, BackendDispatch):
            _registered[name] = obj
            return obj
        return None
    return None


def backend_feature(dispatch: BackendDispatch, backend: str) -> Optional[str]:
    """The experimental feature a backend belongs to; None for a stable backend.

    A checker defined in ``flashinfer.experimental.<feature>...`` belongs to
    ``<feature>``; an experimental checker defined elsewhere to its module's name.
    """
    if backend not in dispatch.experimental_backends:
        return None
    module = getattr(dispatch.backend_checks[backend], "__module__", None) or ""
    prefix = utils.EXPERIMENTAL_PACKAGE + "."
    if module.startswith(prefix):
        return module[len(prefix):].split(".", 1)[0]
    return module or None


# -- remembered winners -----------------------------------------------------------------
# A winner is kept as its cache-file record (a dict with the fields of
# `_CACHE_FIELDS`), so that saving writes the records as they are.


class _TunedApi:
    """What the tuner holds for one API: its key function and its records by key."""

    __slots__ = ("dispatch", "name", "key_function", "entries")

    def __init__(self, dispatch: BackendDispatch) -> None:
        self.dispatch = dispatch
        self.name = api_name(dispatch)
        self.key_function = _key_functions.get(self.name, default_problem_key)
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
        _registered[table.name] = dispatch  # the latest definition of a name wins
    return table


def _remember(table: _TunedApi, key: Any, backend: str, tuned_at: str) -> None:
    dispatch = table.dispatch
    table.entries[key] = {
        "api": table.name,
        "key": key,
        "backend": backend,
        "tactic": None,  # no backend takes tactics yet
        "experimental": backend in dispatch.experimental_backends,
        "feature": backend_feature(dispatch, backend),
        "tuned_at": tuned_at,
    }
    _dormant.pop((table.name, key), None)


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


# API -> its parameters as (name, kind), for `call_with_backend`.
_parameters: Dict[BackendDispatch, List[Tuple[str, Any]]] = {}


def call_with_backend(dispatch: BackendDispatch, arguments: Dict[str, Any], backend: str) -> Any:
    """Call the undecorated API with its bound ``arguments``, ``backend`` replaced.

    Used to time candidates and to run trace-apply pins: the function body then
    runs ``backend`` as if the caller had named it.
    """
    parameters = _parameters.get(dispatch)
    if parameters is None:
        signature = inspect.signature(dispatch.__wrapped__)
        parameters = _parameters[dispatch] = [(p.name, p.kind) for p in signature.parameters.values()]
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


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _warn_once(key: Any, message: str) -> None:
    if _warned.first(key):
        warnings.warn(message, TuningConfigWarning, stacklevel=4)


# -- the lookup and tuning -----------------------------------------------------------


def tuned_choice(dispatch: BackendDispatch, candidates: tuple, arguments: dict) -> Optional[str]:
    """`flashinfer.utils.tuned_choice_hook`: the winner to run first, or None.

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


# -- reading cache files and trace configs (shared with trace_apply) -------------------


@dataclass
class LoadSummary:
    """What one load of a cache or trace config did.

    ``skipped`` maps a reason to the entries (``"api:backend"`` or a description)
    skipped for it; ``error`` is set when the whole file was ignored.
    """

    path: str
    loaded: int = 0
    skipped: Dict[str, List[str]] = field(default_factory=dict)
    error: Optional[str] = None

    def skip(self, reason: str, what: str) -> None:
        self.skipped.setdefault(reason, []).append(what)

    def warn(self, kind: str) -> None:
        """Emit the one warning of this load, if anything was skipped or ignored."""
        if self.error is not None:
            message = f"{kind} '{self.path}' ignored: {self.error}"
        elif self.skipped:
            count = sum(len(v) for v in self.skipped.values())
            reasons = "; ".join(
                f"{len(items)} {reason} ({', '.join(items[:3])}{', ...' if len(items) > 3 else ''})"
                for reason, items in self.skipped.items()
            )
            message = (
                f"{kind} '{self.path}': loaded {self.loaded} entries, skipped {count} "
                f"(those calls use automatic selection): {reasons}"
            )
        else:
            return
        warnings.warn(message, TuningConfigWarning, stacklevel=3)


#: Why an entry naming an experimental backend is skipped while the gate is unset.
GATE_UNSET_REASON = f"experimental, while {EXPERIMENTAL_AUTO_ENV_VAR} is unset"


def read_document(path: str | os.PathLike, summary: LoadSummary) -> Optional[dict]:
    """The file's top-level JSON (or, for ``.toml``, TOML) table, or None with ``summary.error`` set.

    The file is untrusted: at most `MAX_CONFIG_BYTES` are read, a FIFO or device
    is refused without blocking, and no parse failure escapes.
    """
    try:
        data = read_regular_file(path, MAX_CONFIG_BYTES)
    except OSError as error:  # also RefusedFileError: not a regular file, too large
        summary.error = f"cannot be read ({error.strerror or error})"
        return None
    is_toml = os.fspath(path).endswith(".toml")
    language = "TOML" if is_toml else "JSON"
    try:
        if is_toml:
            try:
                import tomllib
            except ImportError:  # Python 3.10
                import tomli as tomllib

            document = tomllib.loads(data.decode("utf-8"))
        else:
            document = json.loads(data)
    except ValueError as error:  # JSON, TOML and UTF-8 decoding errors alike
        summary.error = f"not valid {language} (truncated or corrupt?): {error}"
        return None
    except RecursionError:  # the parsers recurse once per level of nesting
        summary.error = f"not loadable: its {language} is nested too deeply"
        return None
    except Exception as error:  # whatever else a parser raises
        summary.error = f"not loadable {language} ({type(error).__name__}: {error})"
        return None
    if not isinstance(document, dict):
        summary.error = f"expected a JSON object at the top level, found {type(document).__name__}"
        return None
    return document


def load_each(entries: list, load_entry: Callable[[Any], None], summary: LoadSummary) -> None:
    """``load_entry(entry)`` for each entry; one it fails on is skipped as malformed.

    The loaders check entries field by field; this is the net for what no check
    foresaw, so that one odd entry neither stops a load nor escapes it.
    """
    for entry in entries:
        try:
            load_entry(entry)
        except Exception as error:  # a failure no check foresaw: skip, never raise
            summary.skip("malformed entries", f"{describe(entry)} ({type(error).__name__})")


def describe(value: Any, limit: int = 60) -> str:
    """The start of ``repr(value)`` for a message; a value too deep to repr is named by type."""
    try:
        return repr(value)[:limit]
    except Exception:  # RecursionError for deeply nested input
        return f"<a deeply nested {type(value).__name__}>"


def resolve_entry(name: str, backend: str, summary: LoadSummary) -> Optional[BackendDispatch]:
    """The API an entry names, or None (the reason counted) when it or its backend is gone."""
    dispatch = resolve_api(name)
    if dispatch is None:
        summary.skip("of an unknown API", f"{name}:{backend}")
    elif not dispatch.has_backend(backend):
        summary.skip("of a backend that no longer exists", f"{name}:{backend}")
    else:
        return dispatch
    return None


def load_from_environment(env_var: str, load: Callable[[str], Any]) -> None:
    """``load(path)`` for the path in ``env_var``, if set; reached from a dispatch, so never raises."""
    path = os.environ.get(env_var)
    if path:
        try:
            load(path)
        except Exception as error:
            warnings.warn(
                f"{env_var}={path!r} ignored: {type(error).__name__}: {error}",
                TuningConfigWarning,
                stacklevel=2,
            )


# -- the cache file -------------------------------------------------------------------

_CACHE_FIELDS = ("api", "key", "backend", "tactic", "experimental", "feature", "tuned_at")


def save_autotune_cache(path: str | os.PathLike) -> int:
    """Write every remembered winner to ``path``, atomically; returns the entry count.

    The file is written beside ``path`` under a temporary name and renamed over
    it, so readers and concurrent writers only ever see a complete file.
    """
    from . import __version__

    records = dict(_dormant)
    for table in list(_tables.values()):
        for key, record in list(table.entries.items()):
            records[(table.name, key)] = record
    document = {
        "format": CACHE_FORMAT,
        "schema_version": CACHE_SCHEMA_VERSION,
        "flashinfer_version": __version__,
        "saved_at": _now(),
        "entries": list(records.values()),
    }
    try:
        text = json.dumps(document, indent=1)
    except TypeError as error:
        raise TypeError(
            f"cannot save the autotune cache: a problem key is not made of JSON values ({error}); "
            f"see register_problem_key"
        ) from None
    path = os.fspath(path)
    descriptor, temporary = tempfile.mkstemp(
        prefix=os.path.basename(path) + ".", suffix=".tmp", dir=os.path.dirname(os.path.abspath(path))
    )
    try:
        if hasattr(os, "fchmod"):  # mkstemp makes the file private (0600); a cache is shared
            os.fchmod(descriptor, _mode_to_keep(path))
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return len(records)


def _mode_to_keep(path: str) -> int:
    """The permissions of the file being replaced; 0o644 for a new file or a non-file
    (a FIFO or a symlink to a device must not lend the cache its mode)."""
    try:
        info = os.stat(path)
    except OSError:
        return 0o644
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else 0o644


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
        document = read_document(path, summary)
        if document is not None:
            summary.error = _cache_header_problem(document)
        if summary.error is None:
            gate_set = experimental_auto_backends_allowed()
            load_each(document["entries"], lambda record: _load_entry(record, gate_set, summary), summary)
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


def _cache_header_problem(document: dict) -> Optional[str]:
    """Why a parsed file is not a cache this version reads, or None."""
    if document.get("format") != CACHE_FORMAT:
        return f"not a FlashInfer autotune cache (format {describe(document.get('format'))})"
    if document.get("schema_version") != CACHE_SCHEMA_VERSION:
        return (
            f"schema version {describe(document.get('schema_version'))} is not supported "
            f"(this FlashInfer reads version {CACHE_SCHEMA_VERSION})"
        )
    if not isinstance(document.get("entries"), list):
        return "its 'entries' is not a list"
    return None


def _load_entry(record: Any, gate_set: bool, summary: LoadSummary) -> None:
    if (
        not isinstance(record, dict)
        or not all(name in record for name in _CACHE_FIELDS)
        or not isinstance(record["api"], str)
        or not isinstance(record["backend"], str)
        or not isinstance(record["tuned_at"], str)
    ):
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
    """Forget every winner, registration and one-time warning (tests only)."""
    _tables.clear()
    _parameters.clear()
    _dormant.clear()
    _registered.clear()
    _key_functions.clear()
    _key_functions.update(_BUILTIN_KEY_FUNCTIONS)
    _warned.clear()


utils.tuned_choice_hook = tuned_choice
load_from_environment(AUTOTUNE_CACHE_ENV_VAR, load_autotune_cache)
