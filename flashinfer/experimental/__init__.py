"""FlashInfer's experimental namespace: one folder per experimental feature.

Everything below this package carries no compatibility guarantee and may change
or be removed without deprecation. Importing it is always allowed and enforces
nothing; using it is the opt-in. This module re-exports exactly the six gating
primitives, so feature code can write ``from flashinfer.experimental import ...``.
"""

from ..api_logging import (
    ExperimentalWarning,
    experimental_auto_backends_allowed,
    experimental_backend,
    flashinfer_experimental_api,
    require_experimental_auto_backends,
    warn_experimental_backend_once,
)

__all__ = [
    "ExperimentalWarning",
    "experimental_auto_backends_allowed",
    "experimental_backend",
    "flashinfer_experimental_api",
    "require_experimental_auto_backends",
    "warn_experimental_backend_once",
]
