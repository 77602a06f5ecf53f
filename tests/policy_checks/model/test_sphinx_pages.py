"""The docs pages as Sphinx builds them (`policy_checks.model.sphinx_pages`): the ``docs``
setting's globs, and every page below their directories that a toctree reaches from
the root document, read by EXP006 and by the lifecycle's docs steps alike."""

from __future__ import annotations

from dataclasses import replace

from policy_checks.model.config import Settings
from policy_checks.engine.runner import run

from ..conftest import write_tree

EXPERIMENTAL_NORM = {
    "flashinfer/__init__.py": "",
    "flashinfer/api_logging.py": "def flashinfer_experimental_api(func=None, *, feature=None):\n    return func\n",
    "flashinfer/norm.py": (
        "from .api_logging import flashinfer_experimental_api\n"
        "@flashinfer_experimental_api(feature='fast')\ndef fast_norm(x):\n    return x\n"
    ),
}

DOCS = {
    "docs/conf.py": "extensions = ['sphinx.ext.autodoc']\n",
    "docs/index.rst": (
        "Docs\n====\n\n.. toctree::\n   :maxdepth: 2\n\n   guide\n   Gemm <api/gemm>\n   api/ops/norm\n"
    ),
    "docs/guide.rst": "Guide\n=====\n\n.. toctree::\n   :glob:\n\n   /api/more/*\n",
    "docs/api/gemm.rst": "Gemm\n====\n",
    "docs/api/ops/norm.rst": "Norm\n====\n\n.. autofunction:: flashinfer.norm.fast_norm\n",  # hostile, one folder down
    "docs/api/more/extra.rst": "Extra\n=====\n\n.. autofunction:: flashinfer.norm.fast_norm\n",  # through a glob
    "docs/api/unreached/other.rst": "Other\n=====\n",
    "docs/notes.rst": "Notes\n=====\n\n.. autofunction:: flashinfer.norm.fast_norm\n",  # prose, not an API page
}


def test_the_toctree_reaches_pages_below_the_api_directory(tmp_path):
    from policy_checks.model.sphinx_pages import reached_pages

    write_tree(tmp_path, DOCS)
    assert reached_pages(tmp_path, "docs") == {
        "docs/index.rst", "docs/guide.rst", "docs/api/gemm.rst", "docs/api/ops/norm.rst", "docs/api/more/extra.rst"}


def test_a_page_one_folder_down_listed_by_the_toctree_is_checked_by_exp006(tmp_path):
    write_tree(tmp_path, {**EXPERIMENTAL_NORM, **DOCS})
    settings = replace(Settings(), docs=("docs/api/*.rst",))
    result = run(tmp_path, settings, select=["EXP006"], progress=False)
    assert {(f.path, f.line) for f in result.findings} == {("docs/api/ops/norm.rst", 4), ("docs/api/more/extra.rst", 4)}
