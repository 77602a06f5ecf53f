"""Run-time compilation of CUDA kernels: NVRTC, a verified disk cache, driver launches.

- `JitSpec` (spec.py): what to compile; experimental when created under
  ``flashinfer.experimental``.
- `compile_spec` (nvrtc.py): NVRTC to a cubin for the exact architecture (PTX
  only when NVRTC does not know it).
- `build` (cache.py): the disk cache under ``FLASHINFER_JIT_CACHE_DIR``.
- `get_kernel` (launch.py): load into PyTorch's context, launch on its stream.

Nothing here imports ``cuda.bindings`` until a kernel is compiled or launched.
"""

from .cache import CACHE_DIR_ENV_VAR, CompiledImage, build, cache_dir, cache_key, entry_path
from .nvrtc import NvrtcCompileError, compile_spec, nvrtc_version, supported_archs
from .spec import CSRC_DIR, DEFAULT_ARCHS, JitSpec, common_headers, read_source

__all__ = [
    "CACHE_DIR_ENV_VAR",
    "CSRC_DIR",
    "CompiledImage",
    "DEFAULT_ARCHS",
    "JitSpec",
    "NvrtcCompileError",
    "build",
    "cache_dir",
    "cache_key",
    "common_headers",
    "compile_spec",
    "entry_path",
    "get_kernel",
    "nvrtc_version",
    "read_source",
    "supported_archs",
]


def __getattr__(name: str):
    # launch.py imports torch; keep `import flashinfer.jit` free of it until needed.
    if name == "get_kernel":
        from .launch import get_kernel

        return get_kernel
    raise AttributeError(f"module 'flashinfer.jit' has no attribute '{name}'")
