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
    # aot imports gemm and norm in a function body only; norm_rows is a relative import
    assert {"flashinfer.gemm", "flashinfer.norm"} <= set(flashinfer_graph["flashinfer.aot"])
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


def features() -> list:
    """The experimental features in this tree (none is a valid answer)."""
    experimental = ROOT / "flashinfer" / "experimental"
    return sorted(p.name for p in experimental.iterdir() if (p / "__init__.py").is_file())


def test_no_feature_reaches_back_to_the_core_modules_that_import_it(flashinfer_graph):
    """Core hands off to a feature through its entry point or support module (often a
    function-level import, which the graph sees); the feature's code never reaches those
    core modules back: what the two share lives in a neutral module (gemm_layout,
    norm_rows). The features are those in the tree; with none there is nothing to check."""
    for feature in features():
        package = f"flashinfer.experimental.{feature}"
        members = {m for m in flashinfer_graph if m == package or m.startswith(package + ".")}
        assert members, feature
        entry_points = {
            module for module, targets in flashinfer_graph.items()
            if not module.startswith("flashinfer.experimental") and members & set(targets)
        }
        for module in sorted(members):
            assert not reachable(flashinfer_graph, module) & entry_points, (module, entry_points)
