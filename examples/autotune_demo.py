"""Autotuning, its cache and trace-apply around the gate, with ``mm_bf16`` on CPU tensors.

On the CPU ``mm_bf16`` has a stable backend ``torch`` and, in this repository, the
experimental ``splitk`` (a reference emulation of the split-K kernel, for decode
shapes). The demo reads the experimental backend from ``mm_bf16.backend_checks``
rather than naming it, so that it still runs, showing step 1 only, in a tree
where no experimental backend is left (``policy-check remove``). The demo:

1. tunes a decode-shaped problem with the gate unset: only ``torch`` is a
   candidate, so there is nothing to time;
2. tunes it with ``FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1``: both
   backends are timed, the winner is remembered and saved to a cache file;
3. loads, with the gate unset, a cache whose winner is ``splitk`` (as a machine
   with the gate set would save it): the entry is skipped with one warning and
   ``torch`` runs;
4. applies, with the gate unset, a trace-apply configuration pinning the
   problem to ``splitk`` and every other problem to ``nvrtc``: the ``splitk``
   pin is skipped with one warning naming the gate, so ``torch`` runs; the
   ``nvrtc`` pin cannot run on a CPU and falls back to automatic selection with
   a warning;
5. applies the same configuration with the gate set: now the ``splitk`` pin runs
   (no second ExperimentalWarning: it is once per (API, backend) pair, and step
   2 gave it).

Run: ``python examples/autotune_demo.py``
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import torch  # noqa: E402

import flashinfer  # noqa: E402
from flashinfer.autotuner import problem_key  # noqa: E402

GATE = "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"


def show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"    [{category.__name__}] {message}")


def ran(api) -> str:
    return f"candidates of the call, first runs: {api.suitable_auto_backends}"


def experimental_backend(api) -> tuple:
    """The first experimental backend of `api` and its feature (the package under
    ``flashinfer.experimental`` its checker comes from), or None."""
    for name, checker in api.backend_checks.items():
        if getattr(checker, "is_experimental", False):
            parts = checker.__module__.split(".")
            return name, parts[2] if parts[:2] == ["flashinfer", "experimental"] and len(parts) > 2 else None
    return None


def main() -> None:
    warnings.simplefilter("always")
    warnings.showwarning = show_warning
    os.environ.pop(GATE, None)
    a = torch.randn(4, 2048, dtype=torch.bfloat16)  # M = 4: a decode shape
    b = torch.randn(2048, 256, dtype=torch.bfloat16)
    mm = flashinfer.mm_bf16
    key = list(problem_key(mm, a, b))
    print(f"problem key of mm_bf16(a, b): {key}")
    folder = Path(tempfile.mkdtemp(prefix="autotune_demo_"))

    print("\n1. autotune with the gate unset")
    with flashinfer.autotune():
        mm(a, b)
    print(f"   {ran(mm)}")

    found = experimental_backend(mm)
    if found is None:
        print("\nmm_bf16 has no experimental backend in this tree: nothing for the gate to hold back")
        return
    backend, feature = found

    print("\n2. autotune with the gate set, saved to a cache")
    os.environ[GATE] = "1"
    with flashinfer.autotune(cache=folder / "tuned.json"):
        mm(a, b)
    (entry,) = json.loads((folder / "tuned.json").read_text())["entries"]
    print(f"   winner: {entry['backend']} (experimental: {entry['experimental']}); {ran(mm)}")
    del os.environ[GATE]

    print(f"\n3. a cache with a {backend} winner, loaded with the gate unset")
    entry.update(backend=backend, experimental=True, feature=feature)
    document = json.loads((folder / "tuned.json").read_text())
    document["entries"] = [entry]
    (folder / "experimental.json").write_text(json.dumps(document))
    flashinfer.load_autotune_cache(folder / "experimental.json")
    mm(a, b)
    print(f"   {ran(mm)}")

    print(f"\n4. trace-apply with the gate unset: pin the problem to {backend}, every other one to nvrtc")
    (folder / "pins.toml").write_text(
        f'[[pin]]\napi = "flashinfer.gemm.mm_bf16"\nkey = {json.dumps(key)}\nbackend = "{backend}"\n\n'
        '[[pin]]\napi = "flashinfer.gemm.mm_bf16"\nbackend = "nvrtc"\n'
    )
    flashinfer.apply_trace_config(folder / "pins.toml")
    mm(a, b)
    print(f"   {ran(mm)}")
    mm(a[:2], b)
    print(f"   another problem (M = 2): {ran(mm)}")

    print("\n5. the same trace-apply configuration, applied with the gate set")
    os.environ[GATE] = "1"
    flashinfer.apply_trace_config(folder / "pins.toml")
    mm(a, b)
    print(f"   {ran(mm)}")
    del os.environ[GATE]


if __name__ == "__main__":
    main()
