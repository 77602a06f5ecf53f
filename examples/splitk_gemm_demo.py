"""The experimental split-K backend of mm_bf16 on a decode shape (M = 4).

On a GPU it runs the NVRTC split-K kernel; on the CPU the backend runs its torch
emulation of the same split-K sum. Naming the backend is the opt-in (one
ExperimentalWarning); automatic selection needs
FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1, shown at the end.

    python examples/splitk_gemm_demo.py
"""

import os
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import flashinfer  # noqa: E402


def main() -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(4, 4096, device=device, dtype=torch.bfloat16)
    b = torch.randn(4096, 1024, device=device, dtype=torch.bfloat16)
    ref = a.double() @ b.double()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = flashinfer.mm_bf16(a, b, backend="splitk")  # explicit: the opt-in
    error = ((out.double() - ref).norm() / ref.norm()).item()
    print(f"device {device}: backend='splitk', relative error {error:.2e}")
    for w in caught:
        print(f"  {type(w.message).__name__}: {w.message}")

    flashinfer.mm_bf16(a, b)
    print(f"auto, gate unset: candidates {flashinfer.mm_bf16.suitable_auto_backends}, "
          f"excluded {flashinfer.mm_bf16.dropped_experimental_backends}")
    os.environ["FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"] = "1"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", flashinfer.ExperimentalWarning)
        flashinfer.mm_bf16(a, b)
    print(f"auto, gate set:   candidates {flashinfer.mm_bf16.suitable_auto_backends}")


if __name__ == "__main__":
    main()
