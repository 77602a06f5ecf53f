"""The experimental gate, end to end, on CPU tensors.

A toy stable API ``scale`` has a stable backend ``reference`` (inputs up to 1024
elements) and an experimental backend ``fast`` (even lengths only). The demo
calls it:

1. with ``backend="auto"`` and the gate unset: only ``reference`` is a candidate;
2. the same with an input only ``fast`` can run: `BackendSupportedError`, whose
   message names the gate and suggests ``backend=``;
3. with ``FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1``: ``fast`` joins the
   candidates and the heuristic prefers it (one ExperimentalWarning);
4. with ``backend="fast"`` and the gate unset: naming the backend is the opt-in.
   No second warning: it is once per (API, backend) pair, and step 3 gave it.

Run: ``python examples/gate_demo.py``
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import torch  # noqa: E402

from flashinfer import (  # noqa: E402
    CPU_COMPUTE_CAPABILITY,
    BackendSupportedError,
    ExperimentalWarning,
    backend_requirement,
    experimental_backend,
    supported_compute_capability,
)

GATE = "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"
REFERENCE_LIMIT = 1024  # the stable backend refuses longer inputs, for the demo


@supported_compute_capability([CPU_COMPUTE_CAPABILITY, 80, 90])
def _reference_check(x, factor, backend="auto"):
    return x.numel() <= REFERENCE_LIMIT


@experimental_backend
@supported_compute_capability([CPU_COMPUTE_CAPABILITY])
def _fast_check(x, factor, backend="auto"):
    return x.numel() % 2 == 0


def _prefer_fast(candidates, x, factor, backend="auto"):
    return sorted(candidates, key=lambda name: name != "fast")


@backend_requirement(
    {"reference": _reference_check, "fast": _fast_check}, heuristic_func=_prefer_fast
)
def scale(x: torch.Tensor, factor: float, backend: str = "auto") -> torch.Tensor:
    """Multiply ``x`` by ``factor``."""
    if backend == "auto":
        backend = scale.suitable_auto_backends[0]
    print(
        f"    ran '{backend}' (candidates {scale.suitable_auto_backends}, "
        f"kept out by the gate {scale.dropped_experimental_backends})"
    )
    if backend == "fast":
        return x.mul(factor)  # an experimental feature would import its kernel here
    return x * factor


def main() -> None:
    warnings.simplefilter("always", ExperimentalWarning)
    warnings.showwarning = lambda message, category, *args, **kwargs: print(
        f"    {category.__name__}: {message}"
    )
    short, long = torch.ones(8), torch.ones(2 * REFERENCE_LIMIT)
    os.environ.pop(GATE, None)

    print("1. backend='auto', gate unset: stable backends only")
    scale(short, 2.0)

    print("2. backend='auto', gate unset, only the experimental backend can run it")
    try:
        scale(long, 2.0)
    except BackendSupportedError as error:
        print(f"    BackendSupportedError: {error}")

    print(f"3. backend='auto' with {GATE}=1: experimental backends join")
    os.environ[GATE] = "1"
    scale(short, 2.0)
    scale(long, 2.0)  # no second warning for the same (API, backend)
    del os.environ[GATE]

    print("4. backend='fast' explicitly, gate unset: naming it is the opt-in")
    out = scale(long, 3.0, backend="fast")
    assert torch.equal(out, long * 3)


if __name__ == "__main__":
    main()
