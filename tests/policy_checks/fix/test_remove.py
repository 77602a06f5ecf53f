"""``policy-check remove FEATURE``: the removal path of an experimental feature.

Unit tests on the fixture package (``fxpkg``, conftest.py) for each shape the command
removes, and a round trip on a copy of this repository: remove both features, then
the checker is clean, the package imports and both test lanes pass.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from click.testing import CliRunner

from policy_checks.cli import main
from policy_checks.facts import docstring_ids



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


def test_an_import_of_another_shape_refuses(tree):
    tree.write({"fxpkg/ops.py": "def helper():\n    from .experimental.feat.kernels import run\n\n    return run\n"})
    result = remove(tree)
    assert result.exit_code == 1 and "neither an @flashinfer_experimental_api function" in result.output
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


# the round trip on this repository ---------------------------------------------------


def _code_mentions(path: Path, words) -> list:
    """Mentions of `words` in names and non-docstring strings (comments and docstrings
    are prose, left for a person)."""
    tree = ast.parse(path.read_bytes())
    docstrings = docstring_ids(list(ast.walk(tree)))
    found = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, ast.alias):
            text = node.name
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            text = node.name
        if text and any(word in text for word in words):
            found.append(f"{path}:{getattr(node, 'lineno', '?')}: {text!r}")
    return found


def test_removing_both_features_from_this_repository(repo_copy):
    copy, run = repo_copy
    policy_check = [sys.executable, "-m", "policy_checks"]
    run(*policy_check, "remove", "splitk_gemm", "--root", str(copy))
    run(*policy_check, "remove", "gated_rmsnorm", "--root", str(copy))
    for gone in ("flashinfer/experimental/splitk_gemm", "flashinfer/experimental/gated_rmsnorm",
                 "tests/experimental/splitk_gemm", "tests/experimental/gated_rmsnorm",
                 "examples/splitk_gemm_demo.py", "examples/gated_rmsnorm_demo.py"):
        assert not (copy / gone).exists(), gone

    checked = run(*policy_check, "run", "--root", str(copy), check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "splitk" not in checked.stdout and "gated_rmsnorm" not in checked.stdout

    imported = run(
        sys.executable, "-c",
        "import sys; sys.path.insert(0, sys.argv[1]); import flashinfer, flashinfer.gemm, flashinfer.norm; "
        "print(flashinfer.__file__); print(hasattr(flashinfer.norm, 'gated_rmsnorm'), "
        "sorted(flashinfer.gemm.mm_bf16.backend_checks))",
        str(copy),
    )
    lines = imported.stdout.splitlines()
    assert Path(lines[0]).resolve() == (copy / "flashinfer/__init__.py").resolve()
    assert lines[1:] == ["False ['nvrtc', 'torch']"]

    mentions = [m for path in sorted((copy / "flashinfer").rglob("*.py")) for m in _code_mentions(path, ("splitk", "gated_rmsnorm"))]
    assert mentions == []

    # both test lanes of what is left pass (the experimental lane is empty: exit 5)
    run(sys.executable, "-m", "pytest", "tests/", "-q", "-x")
    empty = run(sys.executable, "-m", "pytest", "tests/experimental/", "-q", check=False)
    assert empty.returncode == 5, empty.stdout[-3000:]
