"""``policy-check remove FEATURE``: the removal path of an experimental feature.

Unit tests on the fixture package (``fxpkg``, conftest.py) for each shape the command
removes; the round trip on a copy of this repository is in the round-trip lane
(tests/round_trips/).
"""

from __future__ import annotations

from click.testing import CliRunner

from policy_checks.cli import main


def remove(tree, feature="feat", *extra):
    result = CliRunner().invoke(main, ["remove", feature, "--root", str(tree.root), *extra])
    return result


def test_experimental_api_entry_point_and_its_exports(tree):
    tree.write(
        {
            "fxpkg/__init__.py": """\
                import importlib

                _LAZY_EXPORTS = {
                    "stable": "ops",
                    "fancy": "ops",  # experimental
                    # the rest
                    "other": "ops",
                }
                __all__ = sorted(_LAZY_EXPORTS)


                def __getattr__(name):
                    return getattr(importlib.import_module(f"fxpkg.{_LAZY_EXPORTS[name]}"), name)
                """,
            "fxpkg/ops.py": """\
                from .api_logging import flashinfer_api, flashinfer_experimental_api

                __all__ = ["fancy", "other", "stable"]


                @flashinfer_api
                def stable(x):
                    return x


                # the experimental entry point
                @flashinfer_experimental_api(feature="feat")
                def fancy(x):
                    from .experimental.feat.kernels import run

                    return run(x)


                def other(x):
                    return x
                """,
            "tests/experimental/feat/test_feat.py": "def test_it():\n    pass\n",
            "examples/feat_demo.py": "import fxpkg\n",
            "examples/other_demo.py": "import fxpkg\n",
        }
    )
    result = remove(tree)
    assert result.exit_code == 0, result.output
    ops = tree.read("fxpkg/ops.py").decode()
    assert "fancy" not in ops and "experimental entry point" not in ops
    assert '__all__ = ["other", "stable"]' in ops
    assert ops.endswith('@flashinfer_api\ndef stable(x):\n    return x\n\n\ndef other(x):\n    return x\n')
    init = tree.read("fxpkg/__init__.py").decode()
    assert '"fancy"' not in init and "    # the rest\n" in init and '"stable": "ops",\n' in init
    assert not (tree.root / "fxpkg/experimental/feat").exists()
    assert not (tree.root / "tests/experimental/feat").exists()
    assert not (tree.root / "examples/feat_demo.py").exists()
    assert (tree.root / "examples/other_demo.py").exists()
    module = tree.imported("fxpkg")
    assert module.stable(1) == 1 and not hasattr(tree.imported("fxpkg.ops"), "fancy")


def test_class_left_without_methods_goes(tree):
    tree.write(
        {
            "fxpkg/ops.py": """\
                from .api_logging import flashinfer_experimental_api


                class Fancy:
                    @flashinfer_experimental_api
                    def run(self, x):
                        from .experimental.feat.kernels import run

                        return run(x)


                def keep():
                    return 1
                """
        }
    )
    assert remove(tree).exit_code == 0
    assert "class Fancy" not in tree.read("fxpkg/ops.py").decode()


def test_backend_checks_entry_support_import_and_branch(tree):
    tree.write(
        {
            "fxpkg/experimental/feat/support.py": """\
                from ...utils import experimental_backend


                @experimental_backend
                def check_feat(x, backend="auto"):
                    return True
                """,
            "fxpkg/ops.py": """\
                from .experimental.feat.support import check_feat  # the checker only
                from .utils import backend_requirement


                def _check_plain(x, backend="auto"):
                    return True


                def _order(candidates, x, backend="auto"):
                    return [n for n in ("feat", "plain") if n in candidates]


                @backend_requirement({"plain": _check_plain, "feat": check_feat}, heuristic_func=_order)
                def op(x, backend="auto"):
                    if backend == "feat":
                        from .experimental.feat.kernels import run

                        return run(x)
                    return x
                """,
        }
    )
    result = remove(tree)
    assert result.exit_code == 0, result.output
    assert "removed: backend 'feat'" in result.output
    ops = tree.read("fxpkg/ops.py").decode()
    assert "feat" not in ops
    assert '@backend_requirement({"plain": _check_plain}, heuristic_func=_order)' in ops
    assert 'for n in ("plain",) if' in ops
    assert ops.startswith("from .utils import backend_requirement\n")
    assert "    return x\n" in ops
    assert tree.imported("fxpkg.ops").op(3) == 3


def test_a_dangling_name_refuses_and_writes_nothing(tree):
    tree.write(
        {
            "fxpkg/ops.py": """\
                from .api_logging import flashinfer_experimental_api


                @flashinfer_experimental_api
                def fancy(x):
                    from .experimental.feat.kernels import run

                    return run(x)


                DEFAULT = fancy
                """,
            "fxpkg/user.py": "from .ops import fancy\n",
        }
    )
    before = {p: p.read_bytes() for p in tree.root.rglob("*") if p.is_file()}
    result = remove(tree)
    assert result.exit_code == 1
    assert "refused, nothing written" in result.output and "fancy is still used" in result.output
    tree.write({"fxpkg/ops.py": tree.read("fxpkg/ops.py").decode().replace("DEFAULT = fancy\n", "")})
    result = remove(tree)
    assert result.exit_code == 1 and "fxpkg/user.py:1: imports fancy from fxpkg.ops" in result.output
    assert (tree.root / "fxpkg/experimental/feat/kernels.py").read_bytes() == before[tree.root / "fxpkg/experimental/feat/kernels.py"]


def test_a_public_function_importing_the_feature_refuses(tree):
    """A public function that is no entry point may be called by users: a person
    decides whether it is part of the feature's API."""
    tree.write({"fxpkg/ops.py": "def helper():\n    from .experimental.feat.kernels import run\n\n    return run\n"})
    result = remove(tree)
    assert result.exit_code == 1, result.output
    assert ("fxpkg/ops.py:2: `helper` imports the feature but is a public function and no entry point: mark it "
            "@flashinfer_experimental_api(feature=...)") in result.output
    assert (tree.root / "fxpkg/experimental/feat").is_dir()


def test_a_module_left_holding_nothing_goes(tree):
    tree.write(
        {
            "fxpkg/fancy_ops.py": """\
                \"\"\"Only the entry point.\"\"\"
                from .api_logging import flashinfer_experimental_api

                __all__ = ["fancy"]


                @flashinfer_experimental_api
                def fancy(x):
                    from .experimental.feat.kernels import run

                    return run(x)
                """
        }
    )
    assert remove(tree).exit_code == 0
    assert not (tree.root / "fxpkg/fancy_ops.py").exists()


def test_diff_writes_nothing(tree):
    tree.write(
        {
            "fxpkg/ops.py": """\
                from .api_logging import flashinfer_experimental_api


                @flashinfer_experimental_api
                def fancy(x):
                    from .experimental.feat.kernels import run

                    return run(x)


                def keep():
                    return 1
                """
        }
    )
    before = {p: p.read_bytes() for p in tree.root.rglob("*") if p.is_file()}
    result = remove(tree, "feat", "--diff")
    assert result.exit_code == 0
    assert "--- a/fxpkg/ops.py\n+++ b/fxpkg/ops.py\n" in result.output
    assert "-def fancy(x):\n" in result.output
    assert "--- a/fxpkg/experimental/feat/kernels.py\n" in result.output
    assert {p: p.read_bytes() for p in tree.root.rglob("*") if p.is_file()} == before


def test_an_unknown_feature_refuses(tree):
    result = remove(tree, "nope")
    assert result.exit_code == 1 and "no feature directory fxpkg/experimental/nope" in result.output
