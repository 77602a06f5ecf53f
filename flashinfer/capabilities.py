"""Compute capabilities: the one rule for a call's capability, and the kernels' lists.

A call's capability is its first tensor argument's: ``major * 10 + minor`` on a
CUDA device, and `CPU_COMPUTE_CAPABILITY` (0) on any other device, so host
backends declare ``@supported_compute_capability([CPU_COMPUTE_CAPABILITY])`` and
the whole dispatch path runs on machines without a GPU (docs/experimental.rst,
"Behaviour at a glance").

Standard library only at import (torch is asked only about a CUDA tensor's
device), so support modules of experimental backends may import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, Iterable

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = [
    "CPU_COMPUTE_CAPABILITY",
    "NVRTC_CAPABILITIES",
    "compute_capability",
    "supported_compute_capability",
]

#: The capability reported for tensors that are not on a CUDA device.
CPU_COMPUTE_CAPABILITY = 0

#: Capabilities the NVRTC kernels (stable and experimental) build and run for:
#: those with bf16 ``mma.sync``, sm_80 and newer.
NVRTC_CAPABILITIES = (80, 86, 87, 89, 90, 100, 103, 110, 120, 121)

_cuda_capabilities: Dict[int, int] = {}


def compute_capability(tensor: "torch.Tensor") -> int:
    """``major * 10 + minor`` of the tensor's CUDA device, or `CPU_COMPUTE_CAPABILITY` off CUDA."""
    if not tensor.is_cuda:
        return CPU_COMPUTE_CAPABILITY
    index = tensor.get_device()
    cc = _cuda_capabilities.get(index)
    if cc is None:
        import torch

        major, minor = torch.cuda.get_device_capability(index)
        cc = _cuda_capabilities[index] = major * 10 + minor
    return cc


def supported_compute_capability(supported_ccs: Iterable[int]) -> Callable:
    """Attach ``is_compute_capability_supported(cc)`` for the given capabilities."""
    try:
        ccs = list(supported_ccs)
    except TypeError:
        raise TypeError(
            f"supported_ccs must be an iterable, got {type(supported_ccs).__name__}"
        ) from None
    for i, cc in enumerate(ccs):
        if isinstance(cc, bool) or not isinstance(cc, int):
            raise TypeError(
                f"supported_ccs[{i}] must be an integer, got {type(cc).__name__}: {cc!r}"
            )
    frozen = frozenset(ccs)

    def decorate(func: Callable) -> Callable:
        func._supported_ccs = set(frozen)
        func.is_compute_capability_supported = frozen.__contains__
        return func

    return decorate
