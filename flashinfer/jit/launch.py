"""Load compiled modules and launch their kernels through ``cuda.bindings.driver``.

Modules are loaded into the primary context of the tensor's device (the one
PyTorch uses) and kernels run on PyTorch's current stream, so they order
correctly with the surrounding torch work. Loaded modules are memoised per
(cache entry, device). ``cuda.bindings`` is imported on first use only.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import Dict, Iterator, Sequence, Tuple

import torch

from .cache import build
from .spec import JitSpec

__all__ = ["Kernel", "device_arch", "get_kernel"]


def _driver():
    from cuda.bindings import driver

    return driver


def _check(result, what: str):
    """Unpack a ``cuda.bindings`` result tuple, raising on a non-success code."""
    err = result[0]
    if int(err) != 0:
        driver = _driver()
        _, name = driver.cuGetErrorName(err)
        label = name.decode() if isinstance(name, bytes) else str(err)
        raise RuntimeError(f"{what} failed: {label}")
    return result[1] if len(result) == 2 else None


_primary: Dict[int, object] = {}
_lock = threading.Lock()


@contextlib.contextmanager
def _context_of(device: int) -> Iterator[None]:
    """Make ``device``'s primary context current for the block (a no-op when it is)."""
    driver = _driver()
    ctx = _primary.get(device)
    if ctx is None:
        torch.cuda.init()
        dev = _check(driver.cuDeviceGet(device), "cuDeviceGet")
        ctx = _primary[device] = _check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    current = _check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(current) == int(ctx):
        yield
        return
    _check(driver.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
    try:
        yield
    finally:
        _check(driver.cuCtxPopCurrent(), "cuCtxPopCurrent")


def device_arch(device: torch.device) -> int:
    """The compute capability of a CUDA device as an integer (90 for sm_90)."""
    major, minor = torch.cuda.get_device_capability(device)
    return major * 10 + minor


def _pack(args: Sequence) -> Tuple[list, ctypes.Array]:
    """Kernel parameters: tensors as device pointers, ints as int32, floats as float32."""
    holders = []
    for value in args:
        if isinstance(value, torch.Tensor):
            holders.append(ctypes.c_void_p(value.data_ptr()))
        elif value is None:
            holders.append(ctypes.c_void_p(0))
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"unsupported kernel argument {value!r} ({type(value).__name__})")
        elif isinstance(value, int):
            holders.append(ctypes.c_int32(value))
        else:
            holders.append(ctypes.c_float(value))
    pointers = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
    return holders, pointers


class Kernel:
    """One entry point of a loaded module, on one device."""

    def __init__(self, function, name: str, device: int) -> None:
        self._function = function
        self.name = name
        self.device = device
        self._dynamic_smem_limit = 48 * 1024

    def launch(self, grid: Sequence[int], block: Sequence[int], args: Sequence, shared_mem: int = 0) -> None:
        """Launch on PyTorch's current stream of the kernel's device."""
        driver = _driver()
        grid = (tuple(grid) + (1, 1))[:3]
        block = (tuple(block) + (1, 1))[:3]
        holders, pointers = _pack(args)
        stream = driver.CUstream(torch.cuda.current_stream(self.device).cuda_stream)
        with _context_of(self.device):
            if shared_mem > self._dynamic_smem_limit:
                attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                _check(driver.cuFuncSetAttribute(self._function, attr, shared_mem), f"cuFuncSetAttribute({self.name})")
                self._dynamic_smem_limit = shared_mem
            _check(
                driver.cuLaunchKernel(self._function, *grid, *block, shared_mem, stream,
                                      ctypes.addressof(pointers), 0),
                f"cuLaunchKernel({self.name})",
            )
        del holders  # the driver copied the parameters at launch


_kernels: Dict[tuple, Kernel] = {}
_modules: Dict[tuple, object] = {}


def get_kernel(spec: JitSpec, name: str, device: torch.device) -> Kernel:
    """Entry point ``name`` of ``spec`` for ``device``: compiled (or cached) and loaded once."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    key = (spec.digest, name, index)
    kernel = _kernels.get(key)
    if kernel is not None:
        return kernel
    if name not in spec.kernels:
        raise ValueError(f"JitSpec '{spec.name}' has no kernel '{name}' (it has {list(spec.kernels)})")
    with _lock:
        arch = device_arch(torch.device("cuda", index))
        compiled = build(spec, arch)
        driver = _driver()
        with _context_of(index):
            module = _modules.get((compiled.path, index))
            if module is None:
                module = _check(driver.cuModuleLoadData(compiled.image), f"cuModuleLoadData({spec.name})")
                _modules[(compiled.path, index)] = module
            function = _check(driver.cuModuleGetFunction(module, name.encode()), f"cuModuleGetFunction({name})")
        kernel = _kernels[key] = Kernel(function, name, index)
    return kernel
