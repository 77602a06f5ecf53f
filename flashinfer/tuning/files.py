"""Reading autotune caches and trace-apply configurations: untrusted files, one report per load.

Both file kinds are read alike (docs/autotuning.rst, "The autotune cache"): at
most `MAX_CONFIG_BYTES`, regular files only, no parse failure escapes, and an
entry that cannot be understood is skipped and counted, never raised. A load
collects what it did in a `LoadSummary`, which emits the load's one
`TuningConfigWarning`.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

from ..api_logging import EXPERIMENTAL_AUTO_ENV_VAR, experimental_auto_backends_allowed
from ..dispatch.core import BackendDispatch
from ..safe_io import read_regular_file
from .registry import resolve_api

__all__ = [
    "GATE_UNSET_REASON",
    "MAX_CONFIG_BYTES",
    "LoadSummary",
    "TuningConfigWarning",
    "describe",
    "load_each",
    "load_entries",
    "load_from_environment",
    "read_document",
    "resolve_entry",
]

#: The most bytes read from an autotune cache or trace-apply file (64 MiB, about
#: 250,000 cache entries); a longer file is ignored whole.
MAX_CONFIG_BYTES = 64 << 20

#: Why an entry naming an experimental backend is skipped while the gate is unset.
GATE_UNSET_REASON = f"experimental, while {EXPERIMENTAL_AUTO_ENV_VAR} is unset"


class TuningConfigWarning(UserWarning):
    """An autotune cache or trace-apply configuration (or an entry of it) was skipped."""


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


def load_entries(
    path: str | os.PathLike,
    summary: LoadSummary,
    entries_of: Callable[[dict], Union[list, str]],
    load_entry: Callable[[Any, bool, LoadSummary], None],
) -> None:
    """Read the file at ``path`` and ``load_entry(entry, gate_set, summary)`` each entry.

    ``entries_of(document)`` gives the document's entries, or the reason (a string)
    it is not a file of its kind; then, as when the file cannot be read,
    ``summary.error`` says why and nothing loads. The gate is read once per load.
    """
    document = read_document(path, summary)
    if document is None:
        return
    entries = entries_of(document)
    if isinstance(entries, str):
        summary.error = entries
        return
    gate_set = experimental_auto_backends_allowed()
    load_each(entries, lambda entry: load_entry(entry, gate_set, summary), summary)


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
