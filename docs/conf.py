"""Sphinx configuration for the experimental-track documentation.

Build: ``sphinx-build -W --keep-going -n -b html docs docs/_build/html``: warnings
are errors and, with ``-n`` (nitpicky), so is every reference that does not resolve
(the test ``tests/docs/test_docs_build.py`` does the same into a temporary folder).
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))  # document the checkout, installed or not

project = "FlashInfer experimental track"
author = "FlashInfer contributors"
release = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]
# Stub pages are not generated into the source tree; API pages list what they need.
autosummary_generate = False
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_validation_checks: set = set()
default_role = "py:obj"
# The build is nitpicky (-n): every cross-reference must resolve. Two exceptions, both
# in the signatures autodoc renders from type hints, where an annotation cannot be
# written as a literal: torch.Tensor (PyTorch's inventory is not available offline;
# intersphinx would fetch it, and the build has no network), and the private type
# variable of the decorators' overloads, which keep a decorated function's signature
# for type checkers. Anything else that names no documented object is written as a
# ``literal`` in the text instead.
nitpick_ignore = [("py:class", "torch.Tensor"), ("py:class", "flashinfer.api_logging._Api")]

exclude_patterns = ["_build"]
html_theme = "alabaster"


def _add_api_pages(app, docname: str, source: list) -> None:
    """Append the stable API pages (``docs/api/*.rst``) to the index's contents.

    A glob toctree that matches nothing is a Sphinx warning, and the docs build
    runs with warnings as errors; so the toctree is only added when pages exist.
    """
    if docname == "index" and any((DOCS / "api").glob("*.rst")):
        source[0] += "\n\n.. toctree::\n   :glob:\n   :maxdepth: 1\n   :caption: Stable API\n\n   api/*\n"


def setup(app) -> None:
    app.connect("source-read", _add_api_pages)
