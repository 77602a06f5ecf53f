"""``policy-check remove``: only the feature's own examples and docs pages go.

Its own: an example named ``<feature>.py``, ``<feature>_demo.py`` or
``<feature>_example.py``, a directory ``examples/<feature>/``, an example importing
it; a page named ``<feature>.rst``/``.md``, a docs directory named after it. Not its
own: an example whose name merely starts with the feature's (``gated_norm_demo.py``
for a feature ``gate``), or the directory the ``docs`` setting names (``docs/api``
for a feature ``api``).
"""

from __future__ import annotations

from .test_remove_repository import checked

EXAMPLE = "import fxpkg\n\nprint(fxpkg)\n"


def test_examples_named_exactly_after_the_feature_go_and_prefixed_ones_stay(tree):
    tree.write(
        {
            "fxpkg/experimental/gate/__init__.py": "def run(x):\n    return x\n",
            "examples/gate.py": EXAMPLE,
            "examples/gate_demo.py": EXAMPLE,
            "examples/gate_example.py": EXAMPLE,
            "examples/gate/data.txt": "rows\n",
            "examples/gate/run.py": EXAMPLE,
            "examples/uses_it.py": "from fxpkg.experimental import gate\n\nprint(gate.run(1))\n",
            "examples/gated_norm_demo.py": EXAMPLE,
            "examples/gate_keeper_demo.py": EXAMPLE,
            "examples/other/gate_demo.py": EXAMPLE,
        }
    )
    outcome = checked(tree, "gate")
    assert outcome.exit_code == 0, outcome.output
    for gone in ("gate.py", "gate_demo.py", "gate_example.py", "gate", "uses_it.py", "other/gate_demo.py"):
        assert not (tree.root / "examples" / gone).exists(), gone
    for kept in ("gated_norm_demo.py", "gate_keeper_demo.py"):
        assert (tree.root / "examples" / kept).exists(), kept


def test_the_docs_directory_of_the_settings_is_not_a_feature_s(tree):
    tree.write(
        {
            "fxpkg/experimental/api/__init__.py": "",
            "docs/index.rst": ".. toctree::\n\n   api/ops\n   api/api\n   experimental/api\n",
            "docs/api/ops.rst": "Ops\n===\n",
            "docs/api/api.rst": "The api feature\n===============\n",
            "docs/experimental/api.rst": "Api\n===\n",
            "docs/api/more/notes.rst": "Notes\n",
        }
    )
    outcome = checked(tree, "api")
    assert outcome.exit_code == 0, outcome.output
    assert (tree.root / "docs/api/ops.rst").exists() and (tree.root / "docs/api/more/notes.rst").exists()
    assert not (tree.root / "docs/api/api.rst").exists() and not (tree.root / "docs/experimental/api.rst").exists()
    assert tree.read("docs/index.rst") == b".. toctree::\n\n   api/ops\n"
