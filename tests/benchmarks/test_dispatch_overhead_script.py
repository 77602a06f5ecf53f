"""benchmarks/dispatch_overhead.py runs and prints every figure (no timing asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_dispatch_overhead_benchmark_prints_every_case(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"}
    out = subprocess.run(
        [
            sys.executable, str(ROOT / "benchmarks" / "dispatch_overhead.py"),
            "--number", "200", "--repeat", "2", "--import-runs", "1",
            "--flashinfer-src", str(tmp_path / "absent"),
        ],
        capture_output=True, text=True, check=True, env=env, cwd=tmp_path,
    ).stdout
    for label in [
        "plain function call",
        "explicit stable backend",
        "explicit experimental backend",
        "auto, gate unset",
        "auto, gate set",
        "skip_check=True, explicit",
        "FlashInfer comparison skipped",
        "import flashinfer ",
        "import torch ",
        "torch loaded: False",
    ]:
        assert label in out, label
