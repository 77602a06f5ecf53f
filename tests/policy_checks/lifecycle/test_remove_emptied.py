"""``policy-check remove``: a core module left holding nothing a user could call goes.

Nothing is: strings (a docstring and more, as 25 core modules of FlashInfer 0.7.4 open
with a licence string and a docstring), ``pass``, imports nothing uses any more
(``from __future__`` too), an ``__all__`` left empty, private constants, and PEP 562
hooks that neither import nor use an imported name. A module re-exporting an import
still holds it. A module that goes must be imported by nothing the removal keeps, as
the plan leaves it.
"""

from __future__ import annotations

import pytest

from .test_remove_repository import checked

ENTRY_POINT = '''

@flashinfer_experimental_api(feature="feat")
def fancy(x):
    from .experimental.feat.kernels import run

    return run(x)
'''

EMPTIED = {
    "two leading strings": '''\
"""
Copyright (c) 2026 by the fixture team.
"""

"""The feature's thin entry point."""

from typing import Any, Optional

from .api_logging import flashinfer_experimental_api
''' + ENTRY_POINT + '''

__all__ = ["fancy"]
''',
    "an empty tuple __all__ and a string between": '''\
"""Entry points."""
from .api_logging import flashinfer_experimental_api

"""More prose."""
__all__ = ("fancy",)
''' + ENTRY_POINT,
    "future import, unused imports, private constants": '''\
from __future__ import annotations

import os
import typing as t

from .api_logging import flashinfer_experimental_api

_FEATURE = "a feature"
_SIZES = frozenset({1, 2})
''' + ENTRY_POINT + '''
pass
''',
}


@pytest.mark.parametrize("shape", sorted(EMPTIED))
def test_a_module_left_with_nothing_goes(tree, shape):
    tree.write({"fxpkg/fancy_ops.py": EMPTIED[shape]})
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    assert "removed: fxpkg/fancy_ops.py" in outcome.output
    assert not (tree.root / "fxpkg/fancy_ops.py").exists()


KEPT = {
    "a re-exported import": ('from .utils import backend_requirement\nfrom .api_logging import flashinfer_experimental_api\n'
                             + ENTRY_POINT + '\n__all__ = ["backend_requirement", "fancy"]\n',
                             '__all__ = ["backend_requirement"]\n'),
    "a hook serving an import": ('from . import utils\nfrom .api_logging import flashinfer_experimental_api\n' + ENTRY_POINT
                                 + '\n\ndef __getattr__(name):\n    return getattr(utils, name)\n',
                                 "return getattr(utils, name)"),
    "a computed __all__": ('from .api_logging import flashinfer_experimental_api\n' + ENTRY_POINT
                           + '\n__all__ = sorted(["fancy"][:0])\n', "__all__ = sorted("),
    "a public constant": ('from .api_logging import flashinfer_experimental_api\n' + ENTRY_POINT + '\nLIMIT = 3\n',
                          "LIMIT = 3"),
}


@pytest.mark.parametrize("shape", sorted(KEPT))
def test_a_module_still_holding_something_stays(tree, shape):
    text, kept = KEPT[shape]
    tree.write({"fxpkg/fancy_ops.py": text})
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    left = tree.read("fxpkg/fancy_ops.py").decode()
    assert kept in left and "def fancy" not in left


def test_a_module_whose_only_importer_loses_the_import_goes(tree):
    tree.write(
        {
            "fxpkg/comm/__init__.py": "from .fancy_ops import fancy as fancy\nfrom .plain import keep as keep\n",
            "fxpkg/comm/plain.py": "def keep():\n    return 1\n",
            "fxpkg/comm/fancy_ops.py": EMPTIED["two leading strings"].replace("from .api_logging", "from ..api_logging")
            .replace("from .experimental", "from ..experimental"),
        }
    )
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    assert tree.read("fxpkg/comm/__init__.py") == b"from .plain import keep as keep\n"
    assert not (tree.root / "fxpkg/comm/fancy_ops.py").exists()


@pytest.mark.parametrize("user, reason", [
    ("def load():\n    import importlib\n\n    return importlib.import_module('fxpkg.fancy_ops')\n",
     "fxpkg/user.py:4: loads fxpkg.fancy_ops, which the removal deletes"),
    ("def load():\n    from . import fancy_ops\n\n    return fancy_ops\n",
     "fxpkg/user.py:2: imports fancy_ops from fxpkg, which the removal deletes"),
], ids=["import_module", "from . import"])
def test_a_module_left_with_nothing_but_imported_refuses(tree, user, reason):
    tree.write({"fxpkg/fancy_ops.py": EMPTIED["two leading strings"], "fxpkg/user.py": user})
    outcome = checked(tree)
    assert outcome.exit_code == 1 and reason in outcome.output, outcome.output
