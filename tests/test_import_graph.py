"""The import-graph helper (`tests/import_graph.py`) finds every kind of cycle, on planted packages."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Dict

import pytest

from .import_graph import cycles, describe, import_graph


def plant(tmp_path: Path, files: Dict[str, str]) -> Path:
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path / "pkg"


def test_a_planted_cycle_through_a_function_level_import_is_found(tmp_path):
    package = plant(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/dispatch.py": """
                def first_auto_call():
                    from .tuning import tuner  # inside a function: still an edge
            """,
            "pkg/tuning/__init__.py": "",
            "pkg/tuning/tuner.py": "from .. import dispatch\n",
            "pkg/other.py": "import pkg.dispatch\n",
        },
    )
    graph = import_graph(package)
    assert cycles(graph) == [["pkg.dispatch", "pkg.tuning.tuner"]]
    assert describe(graph, ["pkg.dispatch", "pkg.tuning.tuner"]) == (
        "pkg.dispatch -> pkg.tuning.tuner (line 3); pkg.tuning.tuner -> pkg.dispatch (line 1)"
    )


@pytest.mark.parametrize(
    "back_edge",
    [
        "from ..a import helper\n",  # relative, two levels, from a module
        "from pkg import a\n",  # absolute, names the submodule
        "import importlib\nimportlib.import_module('pkg.a')\n",  # a literal dynamic import
        "import pkg.a.deep\n",  # importing a submodule runs its package
    ],
)
def test_every_kind_of_import_closes_a_planted_cycle(tmp_path, back_edge):
    package = plant(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a/__init__.py": "from ..b.c import thing\nhelper = 1\n",
            "pkg/a/deep.py": "",
            "pkg/b/__init__.py": "",
            "pkg/b/c.py": back_edge,
        },
    )
    assert cycles(import_graph(package)) == [["pkg.a", "pkg.b.c"]]


def test_an_acyclic_package_and_imports_of_own_packages_are_not_cycles(tmp_path):
    package = plant(
        tmp_path,
        {
            "pkg/__init__.py": "import importlib\n\ndef lazy(name):\n    return importlib.import_module(name)\n",
            "pkg/low.py": "import os\n",
            "pkg/high/__init__.py": "",
            "pkg/high/mod.py": "from .. import low\nfrom . import sibling\nimport pkg.high\n",
            "pkg/high/sibling.py": "from pkg.low import os\n",
        },
    )
    graph = import_graph(package)
    assert cycles(graph) == []
    assert graph["pkg.high.mod"] == {"pkg.low": 1, "pkg.high.sibling": 2}
