"""gated_rmsnorm's implementation: NVRTC kernel on CUDA (bf16), torch elsewhere."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import NamedTuple, Optional

import torch

from flashinfer.jit import JitSpec, common_headers, get_kernel, read_source
from flashinfer.norm_rows import rms_normalize_fp32, row_kernel_threads

__all__ = ["DEFAULT_CONFIG", "GatedConfig", "gated_rmsnorm_spec", "kernel_applies", "run", "run_torch"]

_KERNEL = "fi_gated_rmsnorm_bf16"


class GatedConfig(NamedTuple):
    """One compiled form of gated_rmsnorm.cu (its macros)."""

    cached_vecs: int = 4  # 16-byte vectors of x each thread keeps in registers
    max_threads: int = 1024  # block size bound
    z_first: bool = False  # load z's cached vectors in the first pass, beside x
    fast_silu: bool = False  # __fdividef instead of IEEE division in silu

    @property
    def name(self) -> str:
        return f"c{self.cached_vecs}_t{self.max_threads}_z{int(self.z_first)}_f{int(self.fast_silu)}"

    def threads(self, hidden_vecs: int) -> int:
        return min(self.max_threads, row_kernel_threads(hidden_vecs, self.cached_vecs))


#: The configuration `run` uses. On an H200 at 16384 x 8192 (benchmarks/kernel_sweep.py):
#: 190 us, 4.24 TB/s, against 237 us for (4, 1024, False, False); (2, 1024, True, True)
#: measured 189 us, within noise, but caches only half as long a row in registers.
DEFAULT_CONFIG = GatedConfig(4, 1024, z_first=True, fast_silu=True)


@functools.lru_cache(maxsize=None)
def gated_rmsnorm_spec(config: GatedConfig = DEFAULT_CONFIG) -> JitSpec:
    """The gated RMSNorm kernel in one configuration; experimental, so JIT-only."""
    source = read_source(Path(__file__).with_name("gated_rmsnorm.cu"))
    options = [f"-DCACHED_VECS={config.cached_vecs}", f"-DMAX_THREADS={config.max_threads}",
               f"-DZ_FIRST={int(config.z_first)}", f"-DFAST_SILU={int(config.fast_silu)}"]
    return JitSpec(f"gated_rmsnorm_bf16_{config.name}", source, [_KERNEL], headers=common_headers(),
                   options=options)


def kernel_applies(x: torch.Tensor, z: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether the NVRTC kernel can run these (validated) inputs."""
    tensors = (x, z, weight)
    return (
        x.is_cuda
        and torch.cuda.get_device_capability(x.device) >= (8, 0)
        and all(t.dtype == torch.bfloat16 and t.is_contiguous() and t.data_ptr() % 16 == 0 for t in tensors)
        and x.shape[-1] % 8 == 0
    )


def run_torch(x: torch.Tensor, z: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    y = rms_normalize_fp32(x, weight, eps) * torch.nn.functional.silu(z.float())
    return y.to(x.dtype)


def run(x: torch.Tensor, z: torch.Tensor, weight: torch.Tensor, eps: float,
        config: Optional[GatedConfig] = None) -> torch.Tensor:
    """``gated_rmsnorm`` on validated inputs; ``config`` picks a kernel variant."""
    if not kernel_applies(x, z, weight):
        return run_torch(x, z, weight, eps)
    out = torch.empty_like(x)
    if x.numel() == 0:
        return out
    hidden = x.shape[-1]
    config = config or DEFAULT_CONFIG
    kernel = get_kernel(gated_rmsnorm_spec(config), _KERNEL, x.device)
    kernel.launch(
        (x.numel() // hidden,), (config.threads(hidden // 8),),
        [x, z, weight, out, hidden // 8, 1.0 / hidden, eps],
    )
    return out
