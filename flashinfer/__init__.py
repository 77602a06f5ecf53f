"""FlashInfer's experimental-track runtime: stable ops, gated experimental ones.

Every public name is exported lazily (PEP 562): ``import flashinfer`` imports no
submodule, no torch, no CUDA bindings and never ``flashinfer.experimental``. A
name is resolved, and its module imported, on first attribute access. Type
checkers read the ``if TYPE_CHECKING:`` imports instead, which never run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

# The typed face of _LAZY_EXPORTS: type checkers see each name's own signature, and
# nothing here runs. Generated from the table (policy_checks/editing/exports.py);
# `policy-check remove` and `graduate` keep the two in step.
if TYPE_CHECKING:
    from .api_logging import ExperimentalWarning as ExperimentalWarning
    from .api_logging import experimental_auto_backends_allowed as experimental_auto_backends_allowed
    from .api_logging import flashinfer_api as flashinfer_api
    from .api_logging import flashinfer_experimental_api as flashinfer_experimental_api
    from .api_logging import require_experimental_auto_backends as require_experimental_auto_backends
    from .api_logging import warn_experimental_backend_once as warn_experimental_backend_once
    from .api_logging import experimental_backend as experimental_backend
    from .capabilities import CPU_COMPUTE_CAPABILITY as CPU_COMPUTE_CAPABILITY
    from .capabilities import supported_compute_capability as supported_compute_capability
    from .utils import BackendSupportedError as BackendSupportedError
    from .utils import backend_requirement as backend_requirement
    from .gemm import mm_bf16 as mm_bf16
    from .norm import rmsnorm as rmsnorm
    from .norm import gated_rmsnorm as gated_rmsnorm
    from .autotuner import autotune as autotune
    from .autotuner import TuningConfigWarning as TuningConfigWarning
    from .autotuner import load_autotune_cache as load_autotune_cache
    from .autotuner import save_autotune_cache as save_autotune_cache
    from .trace_apply import apply_trace_config as apply_trace_config


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flashinfer' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY_EXPORTS))
