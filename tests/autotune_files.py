"""Autotune cache files as the tests of both lanes write them (not a test module)."""

from __future__ import annotations

import json


def write_cache(path, entries):
    """Write a cache document holding `entries` (records as the cache format has them) to `path`."""
    path.write_text(json.dumps({"format": "flashinfer-autotune-cache", "schema_version": 1,
                                "flashinfer_version": "0.1.0", "entries": entries}))
    return path
