"""What type checkers see of ``flashinfer/__init__.py``: its lazy exports, by name.

The runtime resolves these names on first use (PEP 562); a type checker cannot follow
that, so each is re-exported here from its module (the same table as ``_LAZY_EXPORTS``;
tests/flashinfer/test_experimental_notice.py keeps the two equal). Through these, a call
such as ``flashinfer.gated_rmsnorm(...)`` carries the experimental API's notice.
"""

from .api_logging import ExperimentalWarning as ExperimentalWarning
from .api_logging import experimental_auto_backends_allowed as experimental_auto_backends_allowed
from .api_logging import experimental_backend as experimental_backend
from .api_logging import flashinfer_api as flashinfer_api
from .api_logging import flashinfer_experimental_api as flashinfer_experimental_api
from .api_logging import require_experimental_auto_backends as require_experimental_auto_backends
from .api_logging import warn_experimental_backend_once as warn_experimental_backend_once
from .autotuner import TuningConfigWarning as TuningConfigWarning
from .autotuner import autotune as autotune
from .autotuner import load_autotune_cache as load_autotune_cache
from .autotuner import save_autotune_cache as save_autotune_cache
from .capabilities import CPU_COMPUTE_CAPABILITY as CPU_COMPUTE_CAPABILITY
from .capabilities import supported_compute_capability as supported_compute_capability
from .gemm import mm_bf16 as mm_bf16
from .norm import gated_rmsnorm as gated_rmsnorm
from .norm import rmsnorm as rmsnorm
from .trace_apply import apply_trace_config as apply_trace_config
from .utils import BackendSupportedError as BackendSupportedError
from .utils import backend_requirement as backend_requirement

__version__: str
__all__: list[str]

def __dir__() -> list[str]: ...
