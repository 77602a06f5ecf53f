"""Compile a `JitSpec` with NVRTC (``cuda.bindings.nvrtc``); no GPU needed.

The output is a cubin for the exact architecture when this NVRTC knows it, and
PTX for the newest architecture it knows below that otherwise (the driver then
finishes the job at load time). ``cuda.bindings`` is imported inside functions,
so importing this module costs nothing.
"""

from __future__ import annotations

from typing import Sequence, Tuple

from .spec import JitSpec

__all__ = ["NvrtcCompileError", "compile_spec", "nvrtc_version", "supported_archs", "target_for"]


class NvrtcCompileError(RuntimeError):
    """NVRTC rejected a spec's source; the message holds its name and NVRTC's log."""


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "JIT compilation needs the 'cuda-bindings' and 'nvidia-cuda-nvrtc' packages "
            "(pip install fi-experimental-track-runtime)"
        ) from exc
    return nvrtc


def _check(result, what: str):
    err = result[0]
    if int(err) != 0:
        nvrtc = _nvrtc()
        _, text = nvrtc.nvrtcGetErrorString(err)
        raise RuntimeError(f"{what} failed: {text.decode(errors='replace')}")
    return result[1] if len(result) == 2 else result[1:]


_version_memo: list = []
_archs_memo: list = []


def nvrtc_version() -> Tuple[int, int]:
    """(major, minor) of the NVRTC library in use; part of every cache key."""
    if not _version_memo:
        major, minor = _check(_nvrtc().nvrtcVersion(), "nvrtcVersion")
        _version_memo.append((int(major), int(minor)))
    return _version_memo[0]


def supported_archs() -> Tuple[int, ...]:
    """The real architectures this NVRTC can emit cubins for."""
    if not _archs_memo:
        archs = _check(_nvrtc().nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs")
        _archs_memo.append(tuple(sorted(int(a) for a in archs)))
    return _archs_memo[0]


def target_for(arch: int, known: Sequence[int]) -> Tuple[str, str]:
    """``("cubin", "sm_XX")`` for a known arch, else ``("ptx", "compute_YY")`` below it."""
    if arch in known:
        return "cubin", f"sm_{arch}"
    older = [a for a in known if a < arch]
    if not older:
        raise ValueError(f"NVRTC cannot target sm_{arch}: it supports {sorted(known)}")
    return "ptx", f"compute_{max(older)}"


def compile_spec(spec: JitSpec, arch: int, extra_options: Sequence[str] = ()) -> Tuple[str, bytes, str]:
    """Compile ``spec`` for ``arch``; returns ``(kind, image, log)``, kind "cubin" or "ptx".

    Raises `NvrtcCompileError` naming the spec, with NVRTC's log, when the source
    does not compile.
    """
    nvrtc = _nvrtc()
    kind, target = target_for(arch, supported_archs())
    names = [n.encode() for n in spec.headers]
    texts = [t.encode() for t in spec.headers.values()]
    prog = _check(
        nvrtc.nvrtcCreateProgram(spec.source.encode(), f"{spec.name}.cu".encode(),
                                 len(names), texts, names),
        f"nvrtcCreateProgram({spec.name})",
    )
    try:
        options = ["--std=c++17", f"--gpu-architecture={target}", *spec.options, *extra_options]
        encoded = [o.encode() for o in options]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        # Output buffers are bytearrays: NVRTC writes into them, and a 1-byte
        # `bytes` object would be CPython's shared singleton for that character.
        buf = bytearray(size)
        _check((nvrtc.nvrtcGetProgramLog(prog, buf)[0], None), "nvrtcGetProgramLog")
        log = bytes(buf).rstrip(b"\x00 ").decode(errors="replace")
        if int(status) != 0:
            raise NvrtcCompileError(
                f"NVRTC failed to compile JIT spec '{spec.name}' for {target} "
                f"(options {options}):\n{log}"
            )
        if kind == "cubin":
            size = _check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
            image = bytearray(size)
            _check((nvrtc.nvrtcGetCUBIN(prog, image)[0], None), "nvrtcGetCUBIN")
        else:
            size = _check(nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
            image = bytearray(size)
            _check((nvrtc.nvrtcGetPTX(prog, image)[0], None), "nvrtcGetPTX")
        return kind, bytes(image), log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
