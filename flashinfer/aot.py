"""Ahead-of-time builds of the stable kernels: ``python -m flashinfer.aot``.

The registry holds the stable `JitSpec`s worth pre-building. Experimental
kernels are JIT-only, so that the packages users install never carry code
without a compatibility guarantee and removing a feature needs no rebuild
(docs/experimental.rst, "Packaging: JIT only"): `register` refuses any spec that
is experimental, including one created under ``flashinfer.experimental`` that
claims otherwise. A build writes ordinary JIT cache entries (plus a
``manifest.json``) into the output directory, so pointing
``FLASHINFER_JIT_CACHE_DIR`` at it makes the first call warm for the user who
built it, and for every user when root built it (the cache loads only entries
owned by its own user or root, writable by nobody else; see
`flashinfer.jit.cache`). NVRTC needs no GPU, so this runs on any machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .jit import JitSpec, build
from .jit.elf import function_symbols

__all__ = ["AotRefusedError", "build_all", "main", "parse_arch", "register", "registered_specs"]


class AotRefusedError(ValueError):
    """An experimental spec was offered to the AOT registry."""


_registry: Dict[str, JitSpec] = {}


def register(spec: JitSpec) -> JitSpec:
    """Add a stable spec to the AOT registry; experimental specs are refused."""
    if spec.experimental:
        raise AotRefusedError(
            f"JitSpec '{spec.name}' (created in {spec.created_in}) is experimental and "
            f"cannot be registered for ahead-of-time builds: experimental kernels are "
            f"JIT-only (policy EXP005; docs/experimental.rst, 'Packaging: JIT only')."
        )
    _registry[spec.name] = spec
    return spec


def _register_builtin() -> None:
    from .gemm import GEMM_PIPELINES, SM90_PIPELINE, gemm_bf16_spec
    from .norm import rmsnorm_spec

    gemms = (gemm_bf16_spec(*p) for p in (SM90_PIPELINE, *GEMM_PIPELINES))
    for spec in (*gemms, rmsnorm_spec()):
        register(spec)


def registered_specs() -> List[JitSpec]:
    """The stable specs to pre-build, the built-in ones first."""
    if not _registry:
        _register_builtin()
    return list(_registry.values())


def parse_arch(text: str) -> int:
    """``"sm_90"``, ``"90"`` or ``"9.0"`` -> 90."""
    value = text.strip().lower()
    value = value[3:] if value.startswith("sm_") else value
    if "." in value:
        major, _, minor = value.partition(".")
        value = major + minor
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"not an architecture: {text!r} (expected e.g. sm_90)")
    return int(value)


def build_all(archs: Sequence[int], out_dir: Path, specs: Optional[Sequence[JitSpec]] = None) -> List[dict]:
    """Compile every spec for every arch it supports into ``out_dir``; returns the manifest."""
    manifest = []
    for spec in registered_specs() if specs is None else specs:
        for arch in archs:
            if arch not in spec.archs:
                continue
            compiled = build(spec, arch, root=out_dir)
            entry = {"spec": spec.name, "arch": f"sm_{arch}", "kind": compiled.kind,
                     "file": compiled.path.name, "kernels": list(spec.kernels)}
            if compiled.kind == "cubin":
                missing = set(spec.kernels) - set(function_symbols(compiled.image))
                if missing:
                    raise RuntimeError(f"{spec.name} for sm_{arch} lacks entry points {sorted(missing)}")
            manifest.append(entry)
    return manifest


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flashinfer.aot", description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=parse_arch, action="append", required=True,
                        help="target architecture, e.g. sm_90 (repeatable)")
    parser.add_argument("--out", type=Path, required=True, help="output directory (a JIT cache directory)")
    args = parser.parse_args(argv)
    manifest = build_all(args.arch, args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for entry in manifest:
        print(f"{entry['spec']:<16} {entry['arch']:<7} {entry['kind']:<5} {entry['file']}")
    print(f"{len(manifest)} module(s) written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
