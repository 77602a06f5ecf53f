"""The real FlashInfer 0.7.4 source, when it is unpacked at $FLASHINFER_SRC
(default /tmp/fi/src): no finding falls into one of its traps. Skipped elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from policy_checks.model.config import Settings
from policy_checks.engine.runner import run

TREE = Path(os.environ.get("FLASHINFER_SRC", "/tmp/fi/src"))

pytestmark = pytest.mark.skipif(
    not (TREE / "flashinfer" / "experimental" / "__init__.py").is_file(), reason="FlashInfer source not unpacked"
)


def test_traps_in_the_real_tree():
    result = run(TREE, Settings(), progress=False)
    assert result.files_checked > 3000
    for finding in result.findings:
        assert "gdn_kernels" not in finding.message, finding
        assert "cutlass" not in finding.message and "cuda.core" not in finding.message, finding
    located = {(f.path, f.line) for f in result.findings}
    # core imports a support-module checker on purpose
    assert ("flashinfer/gemm/gemm_base.py", 76) not in located
    # ... and a module-level import of experimental implementation code is found
    assert ("flashinfer/mega_moe_v3.py", 3) in located
    assert not [f for f in result.findings if f.rule in ("EXP000", "EXP002", "EXP003", "EXP004", "EXP005")]
