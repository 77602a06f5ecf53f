"""No import cycles among flashinfer's modules, counting imports inside functions, and the
layering of dispatch, tuning and trace-apply (docs/architecture.rst) as reachability on
the same graph (`tests/import_graph.py` builds it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..import_graph import Graph, cycles, describe, import_graph, reachable

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def flashinfer_graph() -> Graph:
    return import_graph(ROOT / "flashinfer")


def test_flashinfer_has_no_import_cycle(flashinfer_graph):
    found = cycles(flashinfer_graph)
    assert not found, "import cycles: " + " | ".join(describe(flashinfer_graph, c) for c in found)


def test_the_graph_sees_function_level_and_relative_imports(flashinfer_graph):
    # gemm.mm_bf16 imports the split-K kernel in its body; norm_rows is a relative import
    assert "flashinfer.experimental.splitk_gemm.kernel" in flashinfer_graph["flashinfer.gemm"]
    assert "flashinfer.norm_rows" in flashinfer_graph["flashinfer.norm"]
    # utils loads tuning and trace-apply inside a function, for the environment variables
    assert {"flashinfer.tuning.tuner", "flashinfer.trace_apply"} <= set(flashinfer_graph["flashinfer.utils"])


def test_dispatch_tuning_and_trace_apply_depend_one_way(flashinfer_graph):
    dispatch = [m for m in flashinfer_graph if m.startswith("flashinfer.dispatch")]
    tuning = [m for m in flashinfer_graph if m.startswith("flashinfer.tuning")] + ["flashinfer.trace_apply"]
    above_dispatch = {"flashinfer.utils", "flashinfer.autotuner", *tuning}
    for module in dispatch:
        assert not reachable(flashinfer_graph, module) & above_dispatch, module
    for module in tuning:
        assert "flashinfer.utils" not in reachable(flashinfer_graph, module), module
    # the stable norm and its experimental counterpart share a neutral module
    kernel = "flashinfer.experimental.gated_rmsnorm.kernel"
    assert "flashinfer.norm" not in reachable(flashinfer_graph, kernel)
