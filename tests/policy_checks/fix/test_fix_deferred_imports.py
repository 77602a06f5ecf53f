"""EXP001 fix: module-level experimental imports become deferred imports in entry points."""

from __future__ import annotations

import sys
import textwrap

import pytest

from policy_checks.fix.apply import write

KERNELS = "fxpkg.experimental.feat.kernels"


def _fix_and_write(tree, rel, line):
    result = tree.fix("EXP001", rel, line)
    assert write(tree.project, result)
    return result


def test_from_import_moves_into_each_entry_point_and_everything_else_stays(tree):
    tree.write(
        {
            "fxpkg/gemm.py": '''\
                """Stable gemm."""

                import os  # a comment that stays

                from .api_logging import flashinfer_api
                # the experimental kernels
                from .experimental.feat.kernels import run, scale as times_ten
                from .utils import backend_requirement

                NAME = 'gemm'  # single quotes stay


                @flashinfer_api
                def mm(x):
                    """Docstring stays first."""
                    return run(x)


                @flashinfer_api(trace=None)
                def mm_scaled(x):
                    # comment inside
                    return times_ten(run(x))
                '''
        }
    )
    result = _fix_and_write(tree, "fxpkg/gemm.py", 7)
    assert result.left == [] and len(result.fixed) == 1
    assert tree.read("fxpkg/gemm.py").decode() == textwrap.dedent(
        '''\
        """Stable gemm."""

        import os  # a comment that stays

        from .api_logging import flashinfer_api
        # the experimental kernels
        from .utils import backend_requirement

        NAME = 'gemm'  # single quotes stay


        @flashinfer_api
        def mm(x):
            """Docstring stays first."""
            from .experimental.feat.kernels import run

            return run(x)


        @flashinfer_api(trace=None)
        def mm_scaled(x):
            from .experimental.feat.kernels import run, scale as times_ten

            # comment inside
            return times_ten(run(x))
        '''
    )
    gemm = tree.imported("fxpkg.gemm")
    assert KERNELS not in sys.modules  # importing core no longer imports experimental code
    assert gemm.mm(1) == 2 and gemm.mm_scaled(1) == 20
    assert KERNELS in sys.modules


@pytest.mark.parametrize(
    "statement, use, moved",
    [
        # `import a.b.c` binds `a`; the function gets the same statement
        ("import fxpkg.experimental.feat.kernels", "fxpkg.experimental.feat.kernels.run(x)", "import fxpkg.experimental.feat.kernels"),
        ("import fxpkg.experimental.feat.kernels as k", "k.run(x)", "import fxpkg.experimental.feat.kernels as k"),
        ("from fxpkg.experimental.feat import kernels", "kernels.run(x)", "from fxpkg.experimental.feat import kernels"),
        ("from ..experimental.feat import kernels as kk", "kk.run(x)", "from ..experimental.feat import kernels as kk"),
        ("from ..experimental.feat.kernels import run as r", "r(x)", "from ..experimental.feat.kernels import run as r"),
        ("from .. import experimental", "experimental.feat.kernels.run(x)", "from .. import experimental"),
    ],
)
def test_every_import_form_moves_and_the_module_still_works(tree, statement, use, moved):
    # a module one package down, so relative imports need two dots
    source = f"""\
        from ..api_logging import flashinfer_api
        {statement}


        class Ops:
            @flashinfer_api
            def apply(self, x):
                return {use}
        """
    tree.write({"fxpkg/ops/__init__.py": "", "fxpkg/ops/linear.py": source})
    if statement == "from .. import experimental":
        tree.write({"fxpkg/experimental/__init__.py": "from . import feat\nfrom .feat import kernels\n"})
    result = _fix_and_write(tree, "fxpkg/ops/linear.py", 2)
    assert result.left == []
    text = tree.read("fxpkg/ops/linear.py").decode()
    assert text.splitlines()[1] == ""  # the statement's line is gone, the blank lines stay
    assert f"    def apply(self, x):\n        {moved}\n\n        return {use}\n" in text
    linear = tree.imported("fxpkg.ops.linear")
    assert KERNELS not in sys.modules
    assert linear.Ops().apply(4) == 5


def test_split_import_moves_what_it_can_and_keeps_the_rest(tree):
    tree.write(
        {
            "fxpkg/norm.py": """\
                from .api_logging import flashinfer_api
                from .experimental.feat.kernels import (
                    LIMIT,  # used at import time
                    run,
                    scale,
                )

                DEFAULT = LIMIT


                @flashinfer_api
                def norm(x):
                    return scale(run(x)) + DEFAULT
                """
        }
    )
    result = _fix_and_write(tree, "fxpkg/norm.py", 2)
    assert result.fixed == []
    [(finding, reason)] = result.left
    assert reason == "partly fixed; 'LIMIT' is used at module level (line 8)"
    assert tree.read("fxpkg/norm.py").decode() == textwrap.dedent(
        """\
        from .api_logging import flashinfer_api
        from .experimental.feat.kernels import (
            LIMIT,  # used at import time
        )

        DEFAULT = LIMIT


        @flashinfer_api
        def norm(x):
            from .experimental.feat.kernels import run, scale

            return scale(run(x)) + DEFAULT
        """
    )
    assert tree.imported("fxpkg.norm").norm(1) == 27


@pytest.mark.parametrize(
    "module_body, reason",
    [
        ("@backend_requirement({'feat': run})\ndef api(x):\n    return x\n", "is used at module level (line 4)"),
        ("CHECKS = {'feat': run}\n", "is used at module level (line 4)"),
        ("class Table:\n    entry = run\n", "is used at module level (line 5)"),
        ("def api(x, f=run):\n    return f(x)\n", "is used at module level (line 4)"),
        ("__all__ = ['run']\n", "is listed in __all__ (a re-export)"),
        ("", "is not used in this module (a re-export, or imported for its side effects)"),
        ("def helper(x):\n    return run(x)\n", "is used in helper() (line 4), which is not an entry point: a deferred import there would be EXP007"),
        ("try:\n    pass\nexcept ImportError:\n    run = None\n", "is also bound at line 7"),
    ],
    ids=["decorator-argument", "backend-checks-dict", "class-body", "default-argument", "all", "unused", "helper", "rebound"],
)
def test_names_that_cannot_move_are_left_for_a_person(tree, module_body, reason):
    original = (
        "from .utils import backend_requirement\nfrom .experimental.feat.kernels import run\n\n" + module_body
    ).encode()
    tree.write({"fxpkg/core.py": original})
    result = tree.fix("EXP001", "fxpkg/core.py", 2)
    assert result.after == original and result.fixed == []
    assert [r for _, r in result.left] == [f"'run' {reason}"]


def test_a_name_other_modules_import_from_here_stays(tree):
    tree.write(
        {
            "fxpkg/core.py": "from .api_logging import flashinfer_api\nfrom .experimental.feat.kernels import run\n\n\n@flashinfer_api\ndef api(x):\n    return run(x)\n",
            "fxpkg/user.py": "from fxpkg.core import run\n",
        }
    )
    result = tree.fix("EXP001", "fxpkg/core.py", 2)
    assert not result.changed
    assert [r for _, r in result.left] == ["'run' is imported from this module by fxpkg/user.py:1"]


def test_crlf_one_line_bodies_and_semicolons_keep_their_bytes(tree):
    original = (
        b"import os; from .experimental.feat.kernels import run\r\n"
        b"from .api_logging import flashinfer_api\r\n"
        b"\r\n"
        b"@flashinfer_api\r\n"
        b"def api(x): return run(x)  # one-liner\r\n"
        b"\r\n"
        b"\r\n"
        b"@flashinfer_api\r\n"
        b"def other(x):\r\n"
        b"\tif x:\r\n"
        b"\t\treturn run(x)\r\n"
        b"\treturn os.sep\r\n"
    )
    tree.write({"fxpkg/crlf.py": original})
    result = tree.fix("EXP001", "fxpkg/crlf.py", (1, 12))
    assert result.left == []
    assert result.after == (
        b"import os\r\n"
        b"from .api_logging import flashinfer_api\r\n"
        b"\r\n"
        b"@flashinfer_api\r\n"
        b"def api(x): from .experimental.feat.kernels import run; return run(x)  # one-liner\r\n"
        b"\r\n"
        b"\r\n"
        b"@flashinfer_api\r\n"
        b"def other(x):\r\n"
        b"\tfrom .experimental.feat.kernels import run\r\n"
        b"\r\n"
        b"\tif x:\r\n"
        b"\t\treturn run(x)\r\n"
        b"\treturn os.sep\r\n"
    )
    assert write(tree.project, result)
    crlf = tree.imported("fxpkg.crlf")
    assert crlf.api(1) == 2 and crlf.other(2) == 3


def test_removed_import_keeps_the_comment_above_it_and_a_block_left_empty_gets_pass(tree):
    tree.write(
        {
            "fxpkg/guarded.py": """\
                from .api_logging import flashinfer_api

                try:
                    # optional experimental path
                    from .experimental.feat.kernels import run
                except ImportError:
                    pass


                @flashinfer_api
                def api(x):
                    return run(x)
                """
        }
    )
    result = _fix_and_write(tree, "fxpkg/guarded.py", 5)
    assert result.left == []
    assert tree.read("fxpkg/guarded.py").decode().startswith(
        "from .api_logging import flashinfer_api\n\ntry:\n    # optional experimental path\n    pass\nexcept ImportError:\n"
    )
    assert tree.imported("fxpkg.guarded").api(0) == 1


def test_a_removed_line_is_known_by_what_it_holds_not_by_its_address(tree, monkeypatch):
    """The cause of the test above failing now and then: the rewriter remembered a removed
    line's placeholder by ``id()``; once its block was rebuilt the placeholder was freed,
    and a statement built later (``return run(x)`` after the import moved in) could get
    its address and be dropped as well, so ``api`` returned None. Here every statement
    line shares one id, the worst case of address reuse: still only the import goes."""
    import builtins

    import libcst as cst

    from policy_checks.editing import cst_tools

    def shared_id(obj):
        return 0 if isinstance(obj, cst.SimpleStatementLine) else builtins.id(obj)

    monkeypatch.setattr(cst_tools, "id", shared_id, raising=False)
    tree.write(
        {
            "fxpkg/guarded.py": """\
                from .api_logging import flashinfer_api

                try:
                    from .experimental.feat.kernels import run
                except ImportError:
                    pass


                @flashinfer_api
                def api(x):
                    y = x
                    return run(y)
                """
        }
    )
    _fix_and_write(tree, "fxpkg/guarded.py", 4)
    assert tree.read("fxpkg/guarded.py").decode().endswith(
        "def api(x):\n    from .experimental.feat.kernels import run\n\n    y = x\n    return run(y)\n"
    )
    assert tree.imported("fxpkg.guarded").api(0) == 1


def test_a_marked_checker_from_a_support_module_stays_and_the_rest_moves(tree):
    tree.write(
        {
            "fxpkg/experimental/feat/support.py": """\
                from ...utils import experimental_backend


                @experimental_backend
                def feat_check(x):
                    return True


                def helper(x):
                    return x * 2
                """,
            "fxpkg/gemm.py": """\
                from .utils import backend_requirement
                from .experimental.feat.support import feat_check, helper


                @backend_requirement({"feat": feat_check})
                def mm(x):
                    return helper(x)
                """,
        }
    )
    result = _fix_and_write(tree, "fxpkg/gemm.py", 2)
    assert result.left == [] and len(result.fixed) == 1  # feat_check may stay: not a leftover
    assert tree.read("fxpkg/gemm.py").decode().splitlines()[1:7] == [
        "from .experimental.feat.support import feat_check",
        "",
        "",
        '@backend_requirement({"feat": feat_check})',
        "def mm(x):",
        "    from .experimental.feat.support import helper",
    ]
    gemm = tree.imported("fxpkg.gemm")
    assert gemm.mm(2) == 4 and gemm.mm.backend_checks["feat"].is_experimental


def test_an_import_in_a_class_body_is_left_for_a_person(tree):
    original = b"class Table:\n    from .experimental.feat.kernels import run\n"
    tree.write({"fxpkg/table.py": original})
    result = tree.fix("EXP001", "fxpkg/table.py", 2)
    assert result.after == original
    assert [r for _, r in result.left] == ["the import is in a class or function body"]


def test_a_rewrite_that_would_not_parse_is_never_kept(tree, monkeypatch):
    import libcst as cst

    from policy_checks.fix import apply

    def broken(file, finding, project, edits):  # renders "def" as a statement
        edits[file.tree] = lambda module: module.with_changes(body=[cst.SimpleStatementLine([cst.Expr(cst.Name("def"))])])

    monkeypatch.setitem(apply.PYTHON_REWRITES, "EXP001", broken)
    tree.write({"fxpkg/core.py": "from .experimental.feat.kernels import run\n"})
    result = tree.fix("EXP001", "fxpkg/core.py", 1)
    assert not result.changed and result.fixed == []
    assert result.left[0][1].startswith("internal error, nothing written: the rewrite does not parse")
