"""Autotuning's public names (docs/autotuning.rst); the implementation is `flashinfer.tuning`.

``with flashinfer.autotune():`` times the candidates of ``backend="auto"`` calls
and remembers the fastest per (API, problem key); `save_autotune_cache` and
`load_autotune_cache` keep the winners in a file. Importing this module (or
`flashinfer.tuning.tuner`) registers the dispatch's tuned-choice hook and loads
the cache ``FLASHINFER_AUTOTUNE_CACHE`` names, if set.
"""

from __future__ import annotations

from .tuning import AUTOTUNE_CACHE_ENV_VAR
from .tuning.cache_format import CACHE_SCHEMA_VERSION
from .tuning.files import LoadSummary, TuningConfigWarning
from .tuning.keys import default_problem_key
from .tuning.registry import register_api
from .tuning.tuner import autotune, load_autotune_cache, problem_key, register_problem_key, save_autotune_cache

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
