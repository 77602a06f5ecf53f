"""Kernel parameters and loading (CPU), and a launch on PyTorch's current stream (GPU)."""

import ctypes

import pytest
import torch

from flashinfer.jit import JitSpec, get_kernel
from flashinfer.jit.launch import _pack

ADD = 'extern "C" __global__ void add_scalar(float* x, int n, float v) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += v; }'


def test_pack_maps_tensors_ints_floats_and_none():
    t = torch.arange(4.0)
    holders, pointers = _pack([t, 7, 2.5, None])
    assert len(pointers) == 4
    assert ctypes.cast(pointers[0], ctypes.POINTER(ctypes.c_void_p))[0] == t.data_ptr()
    assert ctypes.cast(pointers[1], ctypes.POINTER(ctypes.c_int32))[0] == 7
    assert ctypes.cast(pointers[2], ctypes.POINTER(ctypes.c_float))[0] == 2.5
    assert not ctypes.cast(pointers[3], ctypes.POINTER(ctypes.c_void_p))[0]


@pytest.mark.parametrize("bad", [True, "x", [1]])
def test_pack_rejects_other_types(bad):
    with pytest.raises(TypeError, match="unsupported kernel argument"):
        _pack([bad])


def test_unknown_kernel_name_is_refused_before_any_cuda_call():
    spec = JitSpec("add_scalar", ADD, ["add_scalar"])
    with pytest.raises(ValueError, match="has no kernel 'nope'"):
        get_kernel(spec, "nope", torch.device("cuda", 0))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_launch_orders_with_torch_work_on_the_current_stream():
    kernel = get_kernel(JitSpec("add_scalar", ADD, ["add_scalar"]), "add_scalar", torch.device("cuda"))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.zeros(1 << 20, device="cuda")
        torch.cuda._sleep(1_000_000)  # keep the stream busy so a wrong stream would race
        x.fill_(1.0)
        kernel.launch((x.numel() // 256,), (256,), [x, x.numel(), 2.0])
        x.mul_(2.0)
    side.synchronize()
    assert (x == 6.0).all()
