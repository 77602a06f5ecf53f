"""A new home never replaces a name its parent package serves.

Importing ``fxpkg.mla.decode`` binds ``decode`` on ``fxpkg.mla``: if the package served a
function ``decode`` (bound in its ``__init__``, brought by a star import, served lazily
by ``__getattr__`` from a table of any container type), calls of ``fxpkg.mla.decode``
would fail once the new package is imported. Such a ``--to`` refuses, naming how the
name is served and a free name to use instead.
"""

from __future__ import annotations

import pytest

from .test_graduate_invariants import graduate_checked

ENTRY = {
    "fxpkg/ops.py": """\
        from .api_logging import flashinfer_experimental_api


        @flashinfer_experimental_api(feature="feat")
        def fancy(x):
            from .experimental.feat.kernels import run

            return run(x)
        """,
    "fxpkg/mla/_core.py": "def decode(x):\n    return x\n",
}

GETATTR = """
def __getattr__(name):
    {read}
        from . import _core

        return getattr(_core, "decode")
    raise AttributeError(name)
"""

TABLES = {
    "dict": '_LAZY = {"decode": "._core"}\n',
    "set": '_LAZY = {"decode", "encode"}\n',
    "frozenset": '_LAZY = frozenset(\n    {\n        "decode",\n    }\n)\n',
    "frozenset of a list": '_LAZY = frozenset(["decode"])\n',
    "tuple": '_LAZY = ("decode",)\n',
    "list": '_LAZY = ["decode"]\n',
    "union of two tables": '_A = frozenset({"encode"})\n_B = frozenset({"decode"})\n_LAZY = _A | _B\n',
    "dict of module to names": '_LAZY = {"._core": ("decode",)}\n',
}

READS = {
    "in": "if name in _LAZY:",
    "get": "if _LAZY.get(name) is not None:",
    "subscript": "if _LAZY[name]:",
    "through a helper": "if _served(name):",
}


@pytest.mark.parametrize("table, read", [(t, r) for t in sorted(TABLES) for r in sorted(READS)
                                         if t != "dict of module to names" or r in ("in", "through a helper")])
def test_a_name_served_by_a_lazy_table_of_any_type_refuses(tree, table, read):
    helper = "\n\ndef _served(name):\n    return name in _LAZY\n" if read == "through a helper" else ""
    init = TABLES[table] + helper + GETATTR.format(read=READS[read])
    tree.write({**ENTRY, "fxpkg/mla/__init__.py": init})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.mla.decode")
    assert result.exit_code == 1
    assert "fxpkg.mla exports a name 'decode' (served lazily by its __getattr__)" in result.output
    assert "e.g. --to fxpkg.mla.decode_api" in result.output


def test_the_suggested_home_is_public_and_free(tree):
    """A graduated API gets a public home: never a name starting with ``_``, never one taken."""
    init = TABLES["tuple"] + GETATTR.format(read=READS["in"])
    tree.write({**ENTRY, "fxpkg/mla/__init__.py": init, "fxpkg/mla/decode_api.py": "X = 1\n"})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.mla.decode")
    assert result.exit_code == 1
    suggested = result.output.split("e.g. --to ")[1].split()[0]
    assert suggested == "fxpkg.mla.decode_impl"
    assert not any(part.startswith("_") for part in suggested.split("."))


@pytest.mark.parametrize("compare", ['if name == "decode":', 'if name in ("decode", "encode"):'])
def test_a_name_getattr_compares_with_refuses(tree, compare):
    tree.write({**ENTRY, "fxpkg/mla/__init__.py": GETATTR.format(read=compare)})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.mla.decode")
    assert result.exit_code == 1 and "served lazily by its __getattr__" in result.output


STAR = {
    "a def": ({"fxpkg/mla/_core.py": "def decode(x):\n    return x\n"}, "from ._core import *\n"),
    "an assignment": ({"fxpkg/mla/_core.py": "def _make():\n    return len\n\n\ndecode = _make()\n"},
                      "from ._core import *\n"),
    "__all__": ({"fxpkg/mla/_core.py": '__all__ = ["decode"]\n\n\ndef _make():\n    return len\n\n\ndecode = _make()\n'},
                "from ._core import *\n"),
    "an absolute star": ({"fxpkg/mla/_core.py": "def decode(x):\n    return x\n"}, "from fxpkg.mla._core import *\n"),
    "a star of a star": ({"fxpkg/mla/_core.py": "from ._inner import *\n",
                          "fxpkg/mla/_inner.py": "def decode(x):\n    return x\n"}, "from ._core import *\n"),
    "a guarded star": ({"fxpkg/mla/_core.py": "def decode(x):\n    return x\n"},
                       "try:\n    from ._core import *\nexcept ImportError:\n    pass\n"),
}


@pytest.mark.parametrize("shape", sorted(STAR))
def test_a_name_a_star_import_brings_refuses(tree, shape):
    files, init = STAR[shape]
    tree.write({**ENTRY, **files, "fxpkg/mla/__init__.py": init})
    assert tree.imported("fxpkg.mla").decode is not None
    result = graduate_checked(tree, "feat", "--to", "fxpkg.mla.decode")
    assert result.exit_code == 1
    assert "fxpkg.mla exports a name 'decode' (bound through `from fxpkg.mla._core import *`)" in result.output


@pytest.mark.parametrize("init", [
    "def _make():\n    return len\n\n\ndecode = _make()\n",  # a value the checker's facts do not follow
    "if True:\n    from ._core import decode\n",
    "for decode in (1,):\n    pass\n",
])
def test_a_name_the_init_binds_refuses(tree, init):
    tree.write({**ENTRY, "fxpkg/mla/__init__.py": init})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.mla.decode")
    assert result.exit_code == 1 and "(bound in its __init__)" in result.output


@pytest.mark.parametrize("files, init", [
    ({"fxpkg/mla/_core.py": '__all__ = ["encode"]\n\n\ndef encode(x):\n    return x\n\n\ndef decode(x):\n    return x\n'},
     "from ._core import *\n"),  # __all__ leaves decode out
    ({"fxpkg/mla/_core.py": "def _decode(x):\n    return x\n"}, "from ._core import *\n"),  # private: no star brings it
    ({}, '_DTYPES = ("decode",)\n\n\ndef __getattr__(name):\n    raise AttributeError(name)\n'),  # a table __getattr__ never reads
])
def test_a_name_the_package_does_not_serve_is_free(tree, files, init):
    tree.write({**ENTRY, **files, "fxpkg/mla/__init__.py": init})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.mla._decode" if "_decode" in str(files) else "fxpkg.mla.decode")
    assert result.exit_code == 0, result.output
