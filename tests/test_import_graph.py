"""The import-graph helper (`tests/import_graph.py`) sees every kind of import, and tells
what runs at import time from what runs later, on planted packages."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Dict

import pytest

from .import_graph import import_graph, reachable


def plant(tmp_path: Path, files: Dict[str, str]) -> Path:
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path / "pkg"


@pytest.mark.parametrize(
    "edge",
    [
        "from ..a import helper\n",  # relative, two levels, from a module
        "from pkg import a\n",  # absolute, names the submodule
        "import importlib\nimportlib.import_module('pkg.a')\n",  # a literal dynamic import
        "import pkg.a.deep\n",  # importing a submodule runs its package
    ],
)
def test_every_kind_of_import_is_an_edge(tmp_path, edge):
    package = plant(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a/__init__.py": "helper = 1\n",
            "pkg/a/deep.py": "",
            "pkg/b/__init__.py": "",
            "pkg/b/c.py": edge,
        },
    )
    for at_import_time in (False, True):
        assert "pkg.a" in import_graph(package, at_import_time)["pkg.b.c"]


def test_imports_that_run_later_are_edges_but_not_at_import_time(tmp_path):
    package = plant(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/commands.py": """
                from typing import TYPE_CHECKING
                from . import table
                if TYPE_CHECKING:
                    from .runner import Result
                else:
                    from . import shown
                def run():
                    from .runner import run  # loaded when the command runs
                lazy = lambda: __import__('pkg.other')
                class Command:
                    from . import in_class_body  # runs at import time
                    @staticmethod
                    def go(default=__import__('pkg.in_default')):
                        import pkg.in_body
            """,
            "pkg/table.py": "",
            "pkg/runner.py": "import pkg.table\n",
            "pkg/shown.py": "",
            "pkg/other.py": "",
            "pkg/in_class_body.py": "",
            "pkg/in_default.py": "",
            "pkg/in_body.py": "",
        },
    )
    everything = import_graph(package)
    assert set(everything["pkg.commands"]) == {
        "pkg.table", "pkg.runner", "pkg.shown", "pkg.other", "pkg.in_class_body", "pkg.in_default", "pkg.in_body"}
    at_import_time = import_graph(package, at_import_time=True)
    assert set(at_import_time["pkg.commands"]) == {"pkg.table", "pkg.shown", "pkg.in_class_body", "pkg.in_default"}
    assert "pkg.table" in reachable(at_import_time, "pkg.runner")
    assert "pkg.runner" not in reachable(at_import_time, "pkg.commands")
    assert "pkg.runner" in reachable(everything, "pkg.commands")


def test_imports_of_own_packages_are_not_edges(tmp_path):
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
    assert graph["pkg.high.mod"] == {"pkg.low": 1, "pkg.high.sibling": 2}
    assert reachable(graph, "pkg.high.mod") == {"pkg.low", "pkg.high.sibling"}
