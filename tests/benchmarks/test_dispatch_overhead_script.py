"""benchmarks/dispatch_overhead.py runs and prints every figure (no timing asserted), and
writes a record that benchmarks/measured.py can make its rows of."""

from __future__ import annotations

import importlib.util
import json
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
            "--flashinfer-src", str(tmp_path / "absent"), "--json", str(tmp_path / "record.json"),
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
    record = json.loads((tmp_path / "record.json").read_text())
    assert record["command"] == "python benchmarks/dispatch_overhead.py --number 200 --repeat 2 --import-runs 1 " \
        f"--flashinfer-src {tmp_path / 'absent'}"
    assert record["figures"]["flashinfer"] is None and record["figures"]["torch_loaded_by_import_flashinfer"] is False
    measured = sys.modules.get("measured")
    if measured is None:
        spec = importlib.util.spec_from_file_location("measured", ROOT / "benchmarks" / "measured.py")
        measured = sys.modules["measured"] = importlib.util.module_from_spec(spec)  # a dataclass looks its module up
        spec.loader.exec_module(measured)
    benchmark = measured.BY_NAME["dispatch_overhead"]
    rows = benchmark.rows(measured.check_record(record, benchmark, "record.json"))
    assert [row[0].split(" (")[0] for row in rows] == ["dispatch overhead, explicit / auto", "`import flashinfer`"]
