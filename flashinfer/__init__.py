"""FlashInfer's experimental-track runtime: stable ops, gated experimental ones.

Every public name is exported lazily (PEP 562): ``import flashinfer`` imports no
submodule, no torch, no CUDA bindings and never ``flashinfer.experimental``. A
name is resolved, and its module imported, on first attribute access.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> submodule that defines it
_LAZY_EXPORTS = {
    # markers and the gate (standard library only)
    "ExperimentalWarning": "api_logging",
    "experimental_auto_backends_allowed": "api_logging",
    "flashinfer_api": "api_logging",
    "flashinfer_experimental_api": "api_logging",
    "require_experimental_auto_backends": "api_logging",
    "warn_experimental_backend_once": "api_logging",
    "experimental_backend": "api_logging",
    # capabilities (standard library only)
    "CPU_COMPUTE_CAPABILITY": "capabilities",
    "supported_compute_capability": "capabilities",
    # dispatch (imports torch)
    "BackendSupportedError": "utils",
    "backend_requirement": "utils",
    # stable ops and thin experimental entry points
    "mm_bf16": "gemm",
    "rmsnorm": "norm",
    "gated_rmsnorm": "norm",
    # autotuning and trace-apply
    "autotune": "autotuner",
    "TuningConfigWarning": "autotuner",
    "load_autotune_cache": "autotuner",
    "save_autotune_cache": "autotuner",
    "apply_trace_config": "trace_apply",
}

__all__ = sorted(_LAZY_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flashinfer' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY_EXPORTS))
