"""Autotuning and trace-apply support, one job per module (docs/autotuning.rst).

- `keys`: problem keys, the identity of a call's problem in caches and pins.
- `registry`: APIs by dotted name, and the experimental feature of a backend.
- `files`: reading untrusted cache and configuration files; the load report.
- `cache_format`: the autotune cache file, written and validated.
- `tuner`: remembered winners, timing, and the dispatch's tuned-choice hook.

Dependencies run one way, down this list (`files` uses `registry`, `tuner` uses
all); `registry`, `files` and `tuner` use `flashinfer.dispatch`; nothing here imports
`flashinfer.utils`. `flashinfer.autotuner` is the public face of `tuner`;
`flashinfer.trace_apply` builds on `keys`, `registry`, `files` and `tuner`.
This package's ``__init__`` imports nothing; it names the environment variables
whose files the first automatic call loads (`flashinfer.utils` reads them).
"""

__all__ = ["AUTOTUNE_CACHE_ENV_VAR", "TRACE_APPLY_ENV_VAR"]

#: An autotune cache to load (`flashinfer.tuning.tuner`).
AUTOTUNE_CACHE_ENV_VAR = "FLASHINFER_AUTOTUNE_CACHE"
#: A trace-apply configuration to apply (`flashinfer.trace_apply`).
TRACE_APPLY_ENV_VAR = "FLASHINFER_TRACE_APPLY"
