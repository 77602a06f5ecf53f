"""The autotune cache file: its records, its header, and writing it safely.

The format is documented in docs/autotuning.rst ("The autotune cache"): a JSON
object with ``format``, ``schema_version``, ``flashinfer_version``, ``saved_at``
and ``entries``, one record per (API, problem key) with the fields of
`CACHE_FIELDS`. This module knows the format; `flashinfer.tuning.tuner` decides
which records to keep and use.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from typing import Any, Iterable, Optional, Union

from .files import describe

__all__ = [
    "CACHE_FIELDS",
    "CACHE_FORMAT",
    "CACHE_SCHEMA_VERSION",
    "cache_entries",
    "cache_record",
    "is_well_formed",
    "write_cache",
]

CACHE_FORMAT = "flashinfer-autotune-cache"
CACHE_SCHEMA_VERSION = 1
CACHE_FIELDS = ("api", "key", "backend", "tactic", "experimental", "feature", "tuned_at")


def cache_record(api: str, key: Any, backend: str, experimental: bool, feature: Optional[str], tuned_at: str) -> dict:
    """One entry of the file, as the tuner also keeps it in memory."""
    return {
        "api": api,
        "key": key,
        "backend": backend,
        "tactic": None,  # no backend takes tactics yet
        "experimental": experimental,
        "feature": feature,
        "tuned_at": tuned_at,
    }


def is_well_formed(record: Any) -> bool:
    """Whether ``record`` has every field, and strings where names and times go."""
    return (
        isinstance(record, dict)
        and all(name in record for name in CACHE_FIELDS)
        and isinstance(record["api"], str)
        and isinstance(record["backend"], str)
        and isinstance(record["tuned_at"], str)
    )


def cache_entries(document: dict) -> Union[list, str]:
    """The entries of a parsed cache file, or why it is not a cache this version reads."""
    if document.get("format") != CACHE_FORMAT:
        return f"not a FlashInfer autotune cache (format {describe(document.get('format'))})"
    if document.get("schema_version") != CACHE_SCHEMA_VERSION:
        return (
            f"schema version {describe(document.get('schema_version'))} is not supported "
            f"(this FlashInfer reads version {CACHE_SCHEMA_VERSION})"
        )
    entries = document.get("entries")
    if not isinstance(entries, list):
        return "its 'entries' is not a list"
    return entries


def write_cache(path: str | os.PathLike, records: Iterable[dict], flashinfer_version: str, saved_at: str) -> None:
    """Write a cache file of ``records`` to ``path``, atomically.

    The file is written beside ``path`` under a temporary name and renamed over
    it, so readers and concurrent writers only ever see a complete file.
    """
    document = {
        "format": CACHE_FORMAT,
        "schema_version": CACHE_SCHEMA_VERSION,
        "flashinfer_version": flashinfer_version,
        "saved_at": saved_at,
        "entries": list(records),
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


def _mode_to_keep(path: str) -> int:
    """The permissions of the file being replaced; 0o644 for a new file or a non-file
    (a FIFO or a symlink to a device must not lend the cache its mode)."""
    try:
        info = os.stat(path)
    except OSError:
        return 0o644
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else 0o644
