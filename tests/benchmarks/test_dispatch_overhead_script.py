"""benchmarks/dispatch_overhead.py runs and prints every figure (no timing asserted), and
writes a record that benchmarks/measured.py can make its rows of.

The script's ``main`` runs in this process, as ``python benchmarks/dispatch_overhead.py ARGS``
would run it (its folder first on ``sys.path``, those arguments, the gate unset): a fresh
interpreter would import torch once more, for nothing. The import times it prints are still
taken in fresh interpreters of their own."""

from __future__ import annotations

import json
import sys
from ..benchmark_modules import BENCHMARKS, load_benchmark


def test_dispatch_overhead_benchmark_prints_every_case(tmp_path, monkeypatch, capsys):
    # The gate is unset by the autouse fixture (tests/conftest.py); the script restores what it sets.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(BENCHMARKS), *sys.path])  # undone after the test
    arguments = ["--number", "200", "--repeat", "2", "--import-runs", "1",
                 "--flashinfer-src", str(tmp_path / "absent"), "--json", str(tmp_path / "record.json")]
    monkeypatch.setattr(sys, "argv", [str(BENCHMARKS / "dispatch_overhead.py"), *arguments])
    load_benchmark("dispatch_overhead").main()
    out = capsys.readouterr().out
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
    measured = load_benchmark("measured")
    benchmark = measured.BY_NAME["dispatch_overhead"]
    rows = benchmark.rows(measured.check_record(record, benchmark, "record.json"))
    assert [row[0].split(" (")[0] for row in rows] == ["dispatch overhead, explicit / auto", "`import flashinfer`"]
