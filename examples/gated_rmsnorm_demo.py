"""The experimental gated_rmsnorm API: RMSNorm(x) * weight * SiLU(z).

On a GPU with bf16 inputs it runs the NVRTC kernel; elsewhere the torch path.
Calling the API is the opt-in (one ExperimentalWarning per process).

    python examples/gated_rmsnorm_demo.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import flashinfer  # noqa: E402


def main() -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(8, 4096, device=device, dtype=torch.bfloat16)
    z = torch.randn(8, 4096, device=device, dtype=torch.bfloat16)
    weight = torch.ones(4096, device=device, dtype=torch.bfloat16)
    out = flashinfer.gated_rmsnorm(x, z, weight, eps=1e-6)
    xd, zd = x.double(), z.double()
    ref = xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + 1e-6) * zd * torch.sigmoid(zd)
    error = ((out.double() - ref).norm() / ref.norm()).item()
    print(f"device {device}: gated_rmsnorm {tuple(out.shape)} {out.dtype}, relative error {error:.2e}")


if __name__ == "__main__":
    main()
