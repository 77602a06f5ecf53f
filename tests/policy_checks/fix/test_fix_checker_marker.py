"""EXP004 fix: an unmarked experimental checker gets ``@experimental_backend``, outermost."""

from __future__ import annotations

import textwrap

import pytest

from policy_checks.fix.apply import write

SUPPORT = "fxpkg/experimental/feat/support.py"


def test_marker_goes_above_the_capability_decorator_and_joins_the_utils_import(tree):
    tree.write(
        {
            SUPPORT: '''\
                """Support checks of the feature."""

                from ...utils import (
                    backend_requirement,  # not used here
                    supported_compute_capability,
                )


                # checks shapes
                @supported_compute_capability([0, 90])
                def feat_check(x):
                    return x > 0
                '''
        }
    )
    result = tree.fix("EXP004", SUPPORT, 11)
    assert result.left == [] and write(tree.project, result)
    assert tree.read(SUPPORT).decode() == textwrap.dedent(
        '''\
        """Support checks of the feature."""

        from ...utils import (
            backend_requirement,  # not used here
            experimental_backend,
            supported_compute_capability,
        )


        # checks shapes
        @experimental_backend
        @supported_compute_capability([0, 90])
        def feat_check(x):
            return x > 0
        '''
    )
    checker = tree.imported("fxpkg.experimental.feat.support").feat_check
    assert checker.is_experimental is True and checker.ccs == [0, 90] and checker(1)


@pytest.mark.parametrize(
    "imports, marker",
    [
        ("from fxpkg.utils import experimental_backend as eb\n", "@eb"),
        ("from fxpkg import utils\n", "@utils.experimental_backend"),
        ("import fxpkg.utils as fu\n", "@fu.experimental_backend"),
        ("from fxpkg.experimental import experimental_backend\n", "@experimental_backend"),
    ],
)
def test_the_modules_own_name_for_the_marker_is_used(tree, imports, marker):
    tree.write({SUPPORT: imports + "\n\ndef feat_check(x):\n    return True\n"})
    result = tree.fix("EXP004", SUPPORT, 4)
    assert result.left == []
    assert result.after.decode() == imports + f"\n\n{marker}\ndef feat_check(x):\n    return True\n"
    assert write(tree.project, result)
    assert tree.imported("fxpkg.experimental.feat.support").feat_check.is_experimental


@pytest.mark.parametrize(
    "imports, added",
    [
        ("import os\nfrom .kernels import run\n", "from ...utils import experimental_backend\n"),
        ("import os\nfrom fxpkg.experimental.feat.kernels import run\n", "from fxpkg.utils import experimental_backend\n"),
    ],
    ids=["relative-style", "absolute-style"],
)
def test_a_new_import_follows_the_modules_style_and_is_added_once(tree, imports, added):
    body = "\n\ndef check_a(x):\n    return run(x)\n\n\ndef check_b(x):\n    return os.sep\n"
    tree.write({SUPPORT: '"""Doc."""\n' + imports + body})
    result = tree.fix("EXP004", SUPPORT, 6, 10)
    assert result.left == [] and len(result.fixed) == 2
    expected_body = body.replace("def check_a", "@experimental_backend\ndef check_a").replace(
        "def check_b", "@experimental_backend\ndef check_b"
    )
    assert result.after.decode() == '"""Doc."""\n' + imports + added + expected_body
    assert write(tree.project, result)
    support = tree.imported("fxpkg.experimental.feat.support")
    assert support.check_a.is_experimental and support.check_b.is_experimental and support.check_a(1) == 2


def test_a_finding_not_on_a_def_line_is_left_for_a_person(tree):
    tree.write({SUPPORT: "x = 1\n"})
    result = tree.fix("EXP004", SUPPORT, 1)
    assert not result.changed and [r for _, r in result.left] == ["no function definition at line 1"]
