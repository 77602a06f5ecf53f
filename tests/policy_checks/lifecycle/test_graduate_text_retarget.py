"""A moved module whose only change is its imports of the feature is edited as text,
not through libcst (minutes on a feature of hundreds of files): the bytes must be
exactly those the libcst rewrite writes, and any form the text edit cannot trust goes
to libcst."""

from __future__ import annotations

import ast

import pytest

from policy_checks.editing import cst_tools
from policy_checks.lifecycle.graduate.rewrite import retarget_or_refuse
from policy_checks.lifecycle.graduate import text_retarget
from policy_checks.lifecycle.graduate.text_retarget import retargeted_text

from .test_graduate_invariants import graduate_checked

OLD, HOME = "fxpkg.experimental.feat", "fxpkg.feat_ops"
MODULE, NEW_MODULE = f"{OLD}.sub.helpers", f"{HOME}.sub.helpers"

TEXT_EDITED = {
    "an absolute from-import": "from fxpkg.experimental.feat.kernels import run\n",
    "the feature's package": "from fxpkg.experimental.feat import run as go\n",
    "parenthesized, in a function": ("def f():\n    from  fxpkg.experimental.feat.kernels\timport (\n        a,  # one\n"
                                     "        b,\n    )\n    return a, b\n"),
    "a relative import reaching out": "from ...utils import x\nfrom .k import y\nfrom .. import kernels\n",
    "import as, beside another": "import fxpkg.experimental.feat.k as k, os\n",
    "two on one line, non-ASCII text": ("NAME = 'réseau'\nfrom fxpkg.experimental.feat.k import run; "
                                        "import fxpkg.experimental.feat.j as j\n"),
    "names that spell experimental but no mark": ("from ._experimental_warnings import warn_experimental_api_once\n"
                                                  "from fxpkg.experimental.feat.k import z\n\n\nclass Op:\n"
                                                  "    def run(self):\n        self._warn_experimental_api()\n"),
    "another feature's path stays": "from fxpkg.experimental.other import y\nfrom fxpkg.experimental.feat.k import z\n",
}

LEFT_TO_LIBCST = {
    "nothing to change": "from .k import y\nimport os\n",
    "the feature by its name": "from fxpkg.experimental import feat\n",
    "import without as": "import fxpkg.experimental.feat.k\n",
    "a marker": "from fxpkg.experimental.feat.k import run\n\n@flashinfer_experimental_api\ndef f():\n    pass\n",
    "a JitSpec keyword": "from fxpkg.experimental.feat.k import z\nspec = JitSpec(name='x', experimental=True)\n",
    "a backend marker": "from fxpkg.experimental.feat.k import z\n\n@experimental_backend\ndef check():\n    pass\n",
    "a marker imported": "from fxpkg.experimental.feat.k import run\nfrom fxpkg.api_logging import flashinfer_experimental_api\n",
    "a blank inside the name": "from fxpkg .experimental.feat.k import run\n",
    "a continuation line": "from \\\n    fxpkg.experimental.feat.k import run\n",
    "import with odd blanks": "import  fxpkg.experimental.feat.k as k\n",
    "latin-1": "# -*- coding: latin-1 -*-\nNAME = 'r\xe9seau'\nfrom fxpkg.experimental.feat.k import run\n",
    "does not parse": "from fxpkg.experimental.feat.k import (\n",
}


def _via_libcst(data: bytes) -> bytes:
    file = cst_tools.parse(data, MODULE, False)
    edits: dict = {}
    retarget_or_refuse(file, OLD, HOME, NEW_MODULE, edits)
    return cst_tools.apply_edits(file, edits)


@pytest.mark.parametrize("case", sorted(TEXT_EDITED))
def test_a_text_edit_writes_the_bytes_libcst_writes(case):
    data = TEXT_EDITED[case].encode("utf-8")
    edited = retargeted_text(data, OLD, HOME, MODULE, NEW_MODULE, False)
    assert edited is not None and edited != data
    assert edited == _via_libcst(data)


@pytest.mark.parametrize("case", sorted(LEFT_TO_LIBCST))
def test_what_a_text_edit_cannot_trust_goes_to_libcst(case):
    data = LEFT_TO_LIBCST[case].encode("latin-1" if case == "latin-1" else "utf-8")
    assert retargeted_text(data, OLD, HOME, MODULE, NEW_MODULE, False) is None


def test_a_graduation_parses_with_libcst_only_the_files_a_text_edit_cannot_do(tree, monkeypatch):
    tree.write({
        "fxpkg/ops.py": """\
            from .api_logging import flashinfer_experimental_api


            @flashinfer_experimental_api(feature="feat")
            def fancy(x):
                from .experimental.feat.kernels import run

                return run(x)
            """,
        "fxpkg/experimental/feat/user.py": "from fxpkg.experimental.feat.kernels import run\n\nVALUE = run\n",
    })
    parsed = []
    real_parse = cst_tools.parse

    def recording(source, module_name, is_package):
        parsed.append(module_name)
        return real_parse(source, module_name, is_package)

    monkeypatch.setattr("policy_checks.lifecycle.graduate.rewrite.parse", recording)
    outcome = graduate_checked(tree, "feat", "--to", "fxpkg.feat_ops")
    assert outcome.exit_code == 0, outcome.output
    assert tree.read("fxpkg/feat_ops/user.py") == b"from fxpkg.feat_ops.kernels import run\n\nVALUE = run\n"
    assert f"{OLD}.user" not in parsed and "fxpkg.ops" in parsed


def test_the_reparse_catches_an_edit_that_went_wrong():
    data = b"from fxpkg.experimental.feat.k import z\nX = [1]\n"
    tree = ast.parse(data)
    nodes = sum(1 for _ in ast.walk(tree))
    expected = text_retarget._imports_moved(tree, OLD, HOME, f"{OLD}.sub", f"{HOME}.sub")
    assert text_retarget._same_but_imports(b"from fxpkg.feat_ops.k import z\nX = [1]\n", nodes, expected)
    assert not text_retarget._same_but_imports(b"from fxpkg.feat_ops.j import z\nX = [1]\n", nodes, expected)
    assert not text_retarget._same_but_imports(b"from fxpkg.feat_ops.k import z\nX = [1, 2]\n", nodes, expected)
    assert not text_retarget._same_but_imports(b"from fxpkg.feat_ops.k import (z\nX = [1]\n", nodes, expected)
