"""``policy-check remove``: entry-point shapes found in FlashInfer 0.7.4's tree
(see docs/fix.rst): a backend listed in a ``Literal[...]``
annotation, a feature served by a module's PEP 562 ``__getattr__``, and a module
left with only private tables and hooks, a top-level re-export by import and chains
of them (0.7.4's ``FP8MQATopKWrapper``), a backend branch written as a one-backend
list comparison (``if list(backends) == ["cake"]:``) or as an ``elif`` arm, and a
backend name another API of the module still serves."""

from __future__ import annotations

from click.testing import CliRunner

from policy_checks.cli import main

from .test_remove_repository import checked


def remove(tree):
    return CliRunner().invoke(main, ["remove", "feat", "--root", str(tree.root)])


def test_a_backend_listed_in_a_literal_annotation_goes_with_its_branch(tree):
    tree.write(
        {
            "fxpkg/ops.py": """\
                from typing import Literal


                def op(x, backend: Literal["auto", "plain", "feat"] = "auto"):
                    if backend not in ("auto", "plain", "feat"):
                        raise ValueError(backend)
                    if backend == "feat":
                        from .experimental.feat.kernels import run

                        return run(x)
                    return x


                def only(backend: Literal["feat"] = "feat"):
                    return backend
                """
        }
    )
    tree.write({"fxpkg/ops.py": tree.read("fxpkg/ops.py").decode().split("\n\n\ndef only")[0] + "\n"})
    result = remove(tree)
    assert result.exit_code == 0, result.output
    ops = tree.read("fxpkg/ops.py").decode()
    assert 'def op(x, backend: Literal["auto", "plain"] = "auto"):\n' in ops
    assert 'if backend not in ("auto", "plain"):\n' in ops and "feat" not in ops
    assert tree.imported("fxpkg.ops").op(2) == 2


def test_a_literal_of_a_retired_backend_elsewhere_refuses(tree):
    tree.write(
        {
            "fxpkg/ops.py": """\
                def op(x, backend="auto"):
                    if backend == "feat":
                        from .experimental.feat.kernels import run

                        return run(x)
                    return x
                """,
            "fxpkg/typing_aliases.py": 'from typing import Literal\n\nBackend = Literal["auto", "feat"]\n',
        }
    )
    result = remove(tree)
    assert result.exit_code == 1
    assert "fxpkg/typing_aliases.py:3: lists 'feat' in Literal[...], a backend the removal deletes" in result.output


LAZY_MODULE = """\
\"\"\"Thin entry points of the feature.\"\"\"

from .api_logging import flashinfer_experimental_api

_FEATURE_NAMES = (
    "LIMIT",
    "scale",
)


def __getattr__(name):
    if name in _FEATURE_NAMES:
        from .experimental.feat import kernels

        return getattr(kernels, name)
    raise AttributeError(name)


def __dir__():
    return sorted(set(globals()) | set(_FEATURE_NAMES))


@flashinfer_experimental_api
def fancy(x):
    from .experimental.feat.kernels import run

    return run(x)
"""


def test_a_module_serving_the_feature_through_getattr_goes_when_left_with_nothing(tree):
    tree.write({"fxpkg/fancy.py": LAZY_MODULE})
    result = remove(tree)
    assert result.exit_code == 0, result.output
    assert not (tree.root / "fxpkg/fancy.py").exists()
    assert "removed: fxpkg.fancy.LIMIT" in result.output and "removed: fxpkg.fancy.scale" in result.output


def test_a_kept_module_loses_its_lazy_branch_and_table(tree):
    module = LAZY_MODULE.replace("def __dir__():\n    return sorted(set(globals()) | set(_FEATURE_NAMES))\n", "def keep():\n    return 1\n")
    tree.write({"fxpkg/fancy.py": module, "fxpkg/user.py": "def use():\n    from .fancy import scale\n\n    return scale\n"})
    result = remove(tree)
    assert result.exit_code == 1 and "fxpkg/user.py:2: imports scale from fxpkg.fancy" in result.output
    tree.write({"fxpkg/user.py": "def use():\n    from .fancy import keep\n\n    return keep\n"})
    result = remove(tree)
    assert result.exit_code == 0, result.output
    text = tree.read("fxpkg/fancy.py").decode()
    assert "_FEATURE_NAMES" not in text and ".experimental" not in text
    assert "def __getattr__(name):\n    raise AttributeError(name)\n" in text
    fancy = tree.imported("fxpkg.fancy")
    assert fancy.keep() == 1 and not hasattr(fancy, "scale")


def test_a_lazy_table_still_used_by_a_kept_module_refuses(tree):
    tree.write({"fxpkg/fancy.py": LAZY_MODULE + "\n\ndef keep():\n    return len(_FEATURE_NAMES)\n"})
    result = remove(tree)
    assert result.exit_code == 1 and "_FEATURE_NAMES is still used after the removal" in result.output


def test_a_top_level_reexport_by_import_goes(tree):
    tree.write(
        {
            "fxpkg/__init__.py": """\
                from .ops import (
                    fancy as fancy,
                )
                from .ops import keep as keep, fancier as fancier

                __all__ = ["fancier", "fancy", "keep"]
                """,
            "fxpkg/ops.py": """\
                from .api_logging import flashinfer_experimental_api


                @flashinfer_experimental_api
                def fancy(x):
                    from .experimental.feat.kernels import run

                    return run(x)


                @flashinfer_experimental_api
                def fancier(x):
                    from .experimental.feat.kernels import scale

                    return scale(x)


                def keep():
                    return 1
                """,
        }
    )
    result = remove(tree)
    assert result.exit_code == 0, result.output
    assert tree.read("fxpkg/__init__.py").decode() == 'from .ops import keep as keep\n\n__all__ = ["keep"]\n'
    assert tree.imported("fxpkg").keep() == 1


CHAIN = {
    "fxpkg/__init__.py": """\
        from .sub import Wrapper as Wrapper
        from .sub import keep as keep
        from .compat import Wrapper as CompatWrapper

        __all__ = ["CompatWrapper", "Wrapper", "keep"]
        """,
    "fxpkg/sub/__init__.py": """\
        from .mid import Renamed as Wrapper, keep

        __all__ = ["Wrapper", "keep"]
        """,
    "fxpkg/sub/mid/__init__.py": "from .impl import Wrapper as Renamed, keep\n",
    "fxpkg/sub/mid/impl.py": """\
        from ...api_logging import flashinfer_experimental_api


        class Wrapper:
            @flashinfer_experimental_api(feature="feat")
            def run(self, x):
                from ...experimental.feat.kernels import run

                return run(x)


        def keep():
            return 1
        """,
    "fxpkg/facade.py": """\
        from .sub.mid import Renamed as Renamed
        from .sub.mid import keep

        __all__ = ["Renamed", "keep"]
        """,
    "fxpkg/compat/__init__.py": """\
        from ..sub import Wrapper


        class Wrapper:  # compat's own, which stays
            pass
        """,
    "fxpkg/cycle_a/__init__.py": "from ..sub import Wrapper\nfrom ..cycle_b import Wrapper as B\n",
    "fxpkg/cycle_b/__init__.py": "from ..cycle_a import Wrapper\n",
}


def test_a_reexport_chain_of_any_depth_goes_and_stops_where_the_name_still_exists(tree):
    """impl -> mid (renamed ``Renamed``) -> sub -> fxpkg, a module re-exporting it and
    a cycle: each re-export of the removed class goes with its ``__all__`` entry, and
    a package that still binds the name (compat's own class) keeps publishing it."""
    tree.write(CHAIN)
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    assert tree.read("fxpkg/__init__.py").decode() == (
        "from .sub import keep as keep\nfrom .compat import Wrapper as CompatWrapper\n\n"
        '__all__ = ["CompatWrapper", "keep"]\n')
    assert tree.read("fxpkg/sub/__init__.py").decode() == 'from .mid import keep\n\n__all__ = ["keep"]\n'
    assert tree.read("fxpkg/sub/mid/__init__.py").decode() == "from .impl import keep\n"
    assert tree.read("fxpkg/facade.py").decode() == 'from .sub.mid import keep\n\n__all__ = ["keep"]\n'
    assert "class Wrapper:  # compat's own" in tree.read("fxpkg/compat/__init__.py").decode()
    assert "import" not in tree.read("fxpkg/compat/__init__.py").decode()
    assert "Wrapper" not in tree.read("fxpkg/cycle_a/__init__.py").decode() + tree.read("fxpkg/cycle_b/__init__.py").decode()
    assert tree.imported("fxpkg").CompatWrapper.__module__ == "fxpkg.compat"


def test_a_module_using_a_reexported_name_that_goes_refuses_naming_it(tree):
    tree.write({**CHAIN, "fxpkg/facade.py": "from .sub import Wrapper\n\n\ndef make():\n    return Wrapper()\n"})
    outcome = checked(tree)
    assert outcome.exit_code == 1
    assert "fxpkg/facade.py:1: imports Wrapper from fxpkg.sub, which the removal deletes" in outcome.output


def test_branch_backend_reads_one_backend_selections_only():
    import ast

    from policy_checks.model.entry_points import branch_backend

    def read(test):
        return branch_backend(ast.parse(test, mode="eval").body)

    for test in ('backend == "x"', '"x" == backend', 'list(backends) == ["x"]', 'backends == ["x"]',
                 'backends == ("x",)', 'tuple(backends) == ("x",)', '["x"] == list(backends)'):
        assert read(test) == "x", test
    for test in ('"x" in backends', 'backends == ["x", "y"]', 'list(backends) == ("x",)', 'tuple(b) == ["x"]',
                 'backend != "x"', 'list(backends) == "x"', 'f(backend) == "x"', 'list(a, b) == ["x"]',
                 'backend == "x" == other', 'list(backends) == [name]'):
        assert read(test) is None, test


LIST_BRANCH = """\
    from .api_logging import flashinfer_api


    @flashinfer_api
    def op(x, backends=("plain",)):
        if list(backends) == ["feat"]:
            from .experimental.feat.kernels import run

            return run(x)
        if tuple(backends) == ("feat",):
            return -1
        return x
    """


def test_a_single_backend_list_comparison_is_a_backend_branch(tree):
    tree.write({"fxpkg/ops.py": LIST_BRANCH})
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    assert tree.read("fxpkg/ops.py").decode() == (
        "from .api_logging import flashinfer_api\n\n\n@flashinfer_api\ndef op(x, backends=(\"plain\",)):\n"
        "    return x\n")


def test_a_membership_test_is_no_backend_branch_and_an_else_part_is_named(tree):
    tree.write({"fxpkg/ops.py": LIST_BRANCH.replace('list(backends) == ["feat"]', '"feat" in backends')})
    outcome = checked(tree)
    assert outcome.exit_code == 1
    assert "fxpkg/ops.py:7: imports the feature inside op, a public API, outside an `if backend ==" in outcome.output
    tree.write({"fxpkg/ops.py": LIST_BRANCH.replace("        if tuple(", "        else:\n            pass\n        if tuple(")})
    outcome = checked(tree)
    assert outcome.exit_code == 1
    assert "fxpkg/ops.py:7: the `if list(backends) == [\"feat\"]:` branch has an else part that would take its place; remove it by hand" in outcome.output


ELIF_ARMS = """\
    from .api_logging import flashinfer_api


    @flashinfer_api
    def middle(x, backend="auto"):
        if backend == "plain":
            return x
        # the feature's arm
        elif backend == "feat":
            from .experimental.feat.kernels import run

            return run(x)
        else:
            raise ValueError(backend)


    @flashinfer_api
    def first(x, backend="auto"):
        if backend == "feat":
            from .experimental.feat.kernels import scale

            return scale(x)
        elif backend == "plain":
            return x
        raise ValueError(backend)
    """


def test_an_elif_arm_goes_alone_and_the_chain_keeps_its_other_arms(tree):
    tree.write({"fxpkg/ops.py": ELIF_ARMS})
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    ops = tree.read("fxpkg/ops.py").decode()
    assert ('    if backend == "plain":\n        return x\n    else:\n        raise ValueError(backend)\n' in ops)
    assert ('    if backend == "plain":\n        return x\n    raise ValueError(backend)\n' in ops)
    assert "feat" not in ops
    module = tree.imported("fxpkg.ops")
    assert module.middle(3, "plain") == 3 and module.first(4, "plain") == 4


SHARED_BACKEND = """\
    from typing import Literal

    from .api_logging import flashinfer_api

    _TARGETS = {("feat", 10): "a", ("plain", 10): "b"}


    @flashinfer_api
    def op(x, backend: Literal["plain", "feat"] = "plain"):
        if backend == "feat":
            from .experimental.feat.kernels import run

            return run(x)
        return x


    @flashinfer_api
    def other(x, backend: Literal["plain", "feat"] = "feat"):
        if backend == "feat":  # its own backend of that name, not the feature
            return -x
        return x
    """


def test_a_backend_name_another_api_still_serves_is_edited_only_in_the_api_that_loses_it(tree):
    tree.write({"fxpkg/ops.py": SHARED_BACKEND})
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    ops = tree.read("fxpkg/ops.py").decode()
    assert 'def op(x, backend: Literal["plain"] = "plain"):\n    return x\n' in ops
    assert 'def other(x, backend: Literal["plain", "feat"] = "feat"):\n    if backend == "feat":' in ops
    assert '_TARGETS = {("feat", 10): "a", ("plain", 10): "b"}' in ops  # a key, not a list of names
    assert tree.imported("fxpkg.ops").other(2) == -2
