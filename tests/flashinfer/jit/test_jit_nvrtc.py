"""NVRTC compilation without a GPU: cubins, the PTX fallback, compile errors, ELF symbols."""

import subprocess
import sys
from pathlib import Path

import pytest

from flashinfer.jit import JitSpec, NvrtcCompileError, compile_spec, supported_archs
from flashinfer.jit.elf import function_symbols
from flashinfer.jit.nvrtc import target_for

SOURCE = """
#include "scale.cuh"
extern "C" __global__ void scale_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= SCALE;
}
"""
HEADERS = {"scale.cuh": "#define SCALE 2.0f\n"}


@pytest.mark.parametrize("arch", [80, 90])
def test_cubin_for_exact_arch_exports_the_entry_point(arch):
    kind, image, _log = compile_spec(JitSpec("scale", SOURCE, ["scale_kernel"], headers=HEADERS), arch)
    assert kind == "cubin"
    assert "scale_kernel" in function_symbols(image)


def test_header_is_served_from_memory():
    spec = JitSpec("scale", SOURCE, ["scale_kernel"], headers={"scale.cuh": "#error from the header\n"})
    with pytest.raises(NvrtcCompileError, match="from the header"):
        compile_spec(spec, 90)


def test_compile_error_names_the_spec_and_carries_the_log():
    spec = JitSpec("broken_demo", 'extern "C" __global__ void k(float* x) { x[0] = undefined_name; }', ["k"])
    with pytest.raises(NvrtcCompileError) as info:
        compile_spec(spec, 90)
    message = str(info.value)
    assert "broken_demo" in message and "sm_90" in message
    assert "undefined_name" in message and "is undefined" in message


def test_target_for_prefers_cubin_and_falls_back_to_older_ptx():
    assert target_for(90, [80, 90, 100]) == ("cubin", "sm_90")
    assert target_for(95, [80, 90, 100]) == ("ptx", "compute_90")
    with pytest.raises(ValueError, match="sm_70"):
        target_for(70, [80, 90])


def test_unknown_arch_compiles_to_ptx_with_the_entry_point():
    known = supported_archs()
    arch = next(a for a in range(max(known) + 1, max(known) + 20) if a not in known)
    kind, image, _ = compile_spec(JitSpec("scale", SOURCE, ["scale_kernel"], headers=HEADERS), arch)
    assert kind == "ptx"
    text = image.rstrip(b"\0").decode()
    assert f".target sm_{max(known)}" in text and ".entry scale_kernel" in text


def test_function_symbols_rejects_non_elf():
    with pytest.raises(ValueError, match="ELF"):
        function_symbols(b"not an elf image at all")


def test_importing_the_kernel_modules_loads_no_nvrtc_and_compiles_nothing():
    code = (
        "import sys, flashinfer, flashinfer.aot; flashinfer.mm_bf16; flashinfer.rmsnorm\n"
        "from flashinfer.jit import cache\n"
        "print('cuda.bindings.nvrtc' in sys.modules, 'flashinfer.jit.launch' in sys.modules, len(cache._memo))\n"
    )
    repo = Path(__file__).resolve().parents[3]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={"PYTHONPATH": str(repo), "PATH": ""})
    assert result.stdout.split() == ["False", "False", "0"]
