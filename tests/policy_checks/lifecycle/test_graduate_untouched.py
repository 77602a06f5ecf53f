"""A graduation hands to libcst only the moved files it rewrites: the others (most of
a big feature, megabytes of generated kernels among them) are judged with ``ast`` and
move byte for byte. The judgement must agree with the rewrite: a file it passes by is
one the rewrite would leave as it is."""

from __future__ import annotations

import pytest

from policy_checks.editing import cst_tools
from policy_checks.lifecycle.graduate.untouched import keeps_its_bytes

from .test_graduate_invariants import graduate_checked

OLD, HOME = "fxpkg.experimental.feat", "fxpkg.feat_ops"

CASES = {
    "plain code": ("def f(x):\n    return x\n", True),
    "an import inside the feature": ("from .kernels import run\n", True),
    "a stdlib import": ("import os\nfrom typing import Any\n", True),
    "the path in a string only": ('NOTE = "see fxpkg.experimental.feat"\n', True),
    "an import reaching out of the feature": ("from ...utils import supported_compute_capability\n", False),
    "an absolute import of the feature": ("from fxpkg.experimental.feat.kernels import run\n", False),
    "import of the feature by name": ("from fxpkg.experimental import feat\n", False),
    "a marker": ("from ...api_logging import flashinfer_api as api\n\n@flashinfer_experimental_api\ndef f():\n    pass\n",
                 False),
    "a keyword": ("spec = JitSpec(name='x', experimental=True)\n", False),
    "a class attribute": ("class Op:\n    is_experimental = True\n", False),
    "does not parse": ("def (:\n", False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_what_keeps_its_bytes(case):
    source, keeps = CASES[case]
    assert keeps_its_bytes(source.encode(), OLD, HOME, f"{OLD}.helpers", f"{HOME}.helpers", False) is keeps


def test_only_the_files_that_change_are_parsed_with_libcst(tree, monkeypatch):
    big = "".join(f"def kernel_{n}(x):\n    return x + {n}\n\n\n" for n in range(2000))
    tree.write({
        "fxpkg/ops.py": """\
            from .api_logging import flashinfer_experimental_api


            @flashinfer_experimental_api(feature="feat")
            def fancy(x):
                from .experimental.feat.kernels import run

                return run(x)
            """,
        "fxpkg/experimental/feat/generated.py": big,
    })
    parsed = []
    real_parse = cst_tools.parse

    def recording(source, module_name, is_package):
        parsed.append(module_name)
        return real_parse(source, module_name, is_package)

    monkeypatch.setattr("policy_checks.lifecycle.graduate.rewrite.parse", recording)
    outcome = graduate_checked(tree, "feat", "--to", "fxpkg.feat_ops")
    assert outcome.exit_code == 0, outcome.output
    assert tree.read("fxpkg/feat_ops/generated.py").decode() == big
    assert f"{OLD}.generated" not in parsed and "fxpkg.ops" in parsed
