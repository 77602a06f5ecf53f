"""mm_bf16 with automatic backend selection; runs on a GPU or, with the torch backend, on the CPU.

    python examples/mm_bf16_demo.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import flashinfer  # noqa: E402


def main() -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(300, 1024, device=device, dtype=torch.bfloat16)
    b = torch.randn(1024, 520, device=device, dtype=torch.bfloat16)
    out = flashinfer.mm_bf16(a, b)
    ref = a.double() @ b.double()
    error = ((out.double() - ref).norm() / ref.norm()).item()
    print(f"device {device}: candidates {flashinfer.mm_bf16.suitable_auto_backends}, "
          f"ran {flashinfer.mm_bf16.suitable_auto_backends[0]!r}, relative error {error:.2e}")


if __name__ == "__main__":
    main()
