"""``# policy: ignore[...]``: silencing, and the SUP meta findings."""

from __future__ import annotations

from ..conftest import located

BASE = {
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/experimental/feat/__init__.py": "",
}


def test_suppression_silences_its_rule_on_its_line(check):
    result = check({
        **BASE,
        "flashinfer/gemm.py": (
            "from .experimental import feat  # policy: ignore[EXP001] reviewed hand-off\n"
            "from .experimental.feat import x  # policy: ignore[EXP007] wrong rule\n"
            "import flashinfer.experimental.feat  # policy: ignore[EXP001]\n"
            "import os  # policy: ignore\n"
            "import sys  # policy: ignore[EXP003] nothing here\n"
            "import re  # policy: ignore[EXP077] no such rule\n"
        ),
    }, select=["EXP001", "EXP003", "SUP"])
    assert located(result, "EXP001") == [("flashinfer/gemm.py", 2), ("flashinfer/gemm.py", 3)]
    assert located(result, "SUP001") == [("flashinfer/gemm.py", 3), ("flashinfer/gemm.py", 4), ("flashinfer/gemm.py", 6)]
    # line 2 names EXP007, which this run did not check: not reported as unused
    assert located(result, "SUP002") == [("flashinfer/gemm.py", 5)]


def test_unused_is_not_reported_when_its_rule_was_not_checked(check):
    files = {**BASE, "flashinfer/gemm.py": "import os  # policy: ignore[EXP005] reason\n"}
    assert located(check(files, select=["EXP001", "SUP"]), "SUP002") == []
    assert located(check(files), "SUP002") == [("flashinfer/gemm.py", 1)]


def test_suppression_in_rst_and_config_files(check):
    result = check({
        **BASE,
        "flashinfer/norm.py": "from .api_logging import flashinfer_experimental_api\n@flashinfer_experimental_api\ndef fast():\n    pass\n",
        "docs/api/norm.rst": (
            ".. autofunction:: flashinfer.norm.fast  .. policy: ignore[EXP006] shown on purpose\n"
            ".. autofunction:: flashinfer.norm.fast\n"
        ),
        "tests/test_a.py": "",
        "pytest.ini": "[pytest]\nnorecursedirs = experimental  # policy: ignore[EXP008] ok here\n",
    }, select=["EXP006", "EXP008", "SUP"])
    assert located(result) == [("docs/api/norm.rst", 2)]


def test_per_file_ignores(check):
    files = {**BASE, "flashinfer/gemm.py": "from .experimental import feat\n"}
    assert located(check(files, {"per-file-ignores": {"flashinfer/*.py": ["EXP001"]}}), "EXP001") == []
    assert located(check(files, {"per-file-ignores": {"flashinfer/other.py": ["EXP001"]}}), "EXP001") == [("flashinfer/gemm.py", 1)]
