"""``policy-check graduate FEATURE --to MODULE``: the mechanical graduation steps.

Unit tests on the fixture package (``fxpkg``, conftest.py) for each shape the command
rewrites and each refusal; the round trip on a copy of this repository is in the
round-trip lane (tests/round_trips/).
"""

from __future__ import annotations

import warnings

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_checks.cli import main


API_FEATURE = {
    "fxpkg/__init__.py": """\
        import importlib

        _LAZY_EXPORTS = {
            "stable": "ops",
        }


        def __getattr__(name):
            return getattr(importlib.import_module(f"fxpkg.{_LAZY_EXPORTS[name]}"), name)
        """,
    "fxpkg/ops.py": """\
        from .api_logging import flashinfer_api, flashinfer_experimental_api


        @flashinfer_api
        def stable(x):
            return x


        @flashinfer_experimental_api(feature="feat", trace=None)
        def fancy(x):
            \"\"\"The fancy op.\"\"\"
            from .experimental.feat.kernels import run

            return run(x)
        """,
    "fxpkg/experimental/feat/FEATURE.toml": 'kind = "api"\ntracking_issue = 12\n',
    "fxpkg/experimental/feat/README.md": "# feat\n",
    "fxpkg/experimental/feat/helpers.py": """\
        import importlib

        from ...utils import supported_compute_capability
        from .kernels import LIMIT


        def limit():
            return LIMIT


        def dynamic():
            return importlib.import_module("fxpkg.experimental.feat.kernels")
        """,
    "docs/api/ops.rst": """\
        Ops
        ===

        .. currentmodule:: fxpkg

        .. autosummary::
           :nosignatures:

           stable

        .. autofunction:: stable
        """,
    "docs/guide.rst": "Guide\n=====\n\nCall ``fxpkg.fancy`` (experimental) to try it.\n",
    "tests/fxpkg/test_ops.py": "def test_ops():\n    pass\n",
    "tests/experimental/feat/test_feat.py": """\
        import warnings

        import pytest

        from fxpkg import fancy
        from fxpkg.experimental.feat import kernels


        class ExperimentalWarning(UserWarning):
            pass


        def test_is_marked_experimental():
            assert fancy.is_experimental


        def test_runs():
            with pytest.warns(ExperimentalWarning):
                warnings.warn("first call", ExperimentalWarning)
                assert fancy(1) == 2
            assert fancy.is_experimental and kernels.run(2) == 3


        def test_the_record(tmp_path):
            assert "FEATURE.toml"


        def test_where_it_lives():
            assert kernels.__name__ == "fxpkg.experimental.feat.kernels"
        """,
}


def graduate(tree, *args):
    return CliRunner().invoke(main, ["graduate", *args, "--root", str(tree.root)])


def test_an_experimental_api_graduates(tree):
    tree.write(API_FEATURE)
    result = graduate(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output

    # step 2: the code moved, relative imports out of the feature retargeted; shims stay
    assert not (tree.root / "fxpkg/experimental/feat/FEATURE.toml").exists()
    assert tree.read("fxpkg/fancy_ops/README.md") == b"# feat\n"
    helpers = tree.read("fxpkg/fancy_ops/helpers.py").decode()
    assert helpers.startswith("import importlib\n\nfrom ..utils import supported_compute_capability\nfrom .kernels import LIMIT\n")
    # a literal module path in the moved code names a module that moved with it
    assert 'importlib.import_module("fxpkg.fancy_ops.kernels")' in helpers
    assert "fxpkg/fancy_ops/helpers.py" not in result.output
    shim = tree.read("fxpkg/experimental/feat/__init__.py").decode()
    assert '__graduated_to__ = "fxpkg.fancy_ops"' in shim
    with pytest.warns(DeprecationWarning) as caught:  # the package's shim and the module's
        old = tree.imported("fxpkg.experimental.feat.kernels")
    assert sorted(str(w.message).split(" when ")[0] for w in caught) == [
        "fxpkg.experimental.feat moved to fxpkg.fancy_ops",
        "fxpkg.experimental.feat.kernels moved to fxpkg.fancy_ops.kernels",
    ]
    assert old.run(1) == 2 and old.LIMIT == 7

    # step 3: the entry point is stable and imports the new home
    ops = tree.read("fxpkg/ops.py").decode()
    assert "from .api_logging import flashinfer_api\n" in ops
    assert "@flashinfer_api(trace=None)\ndef fancy(x):" in ops
    assert "from .fancy_ops.kernels import run" in ops and "experimental" not in ops
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tree.imported("fxpkg").fancy(1) == 2

    # step 4: listed beside its neighbour, exported at the top level
    page = tree.read("docs/api/ops.rst").decode()
    assert "   stable\n   fancy\n" in page and page.endswith(".. autofunction:: stable\n\n.. autofunction:: fancy\n")
    assert '    "fancy": "ops",\n' in tree.read("fxpkg/__init__.py").decode()

    # step 6: the tests moved beside the package's, the contract's own test dropped
    assert not (tree.root / "tests/experimental/feat").exists()
    moved = tree.read("tests/fxpkg/fancy_ops/test_feat.py").decode()
    assert "from fxpkg.fancy_ops import kernels" in moved
    assert "test_is_marked_experimental" not in moved and "test_the_record" not in moved
    assert "test_where_it_lives" not in moved
    assert "def test_runs():\n    warnings.warn(\"first call\", ExperimentalWarning)\n    assert fancy(1) == 2\n" in moved
    assert "    assert kernels.run(2) == 3\n" in moved

    # the checklist: what was done, what a person does
    assert "[x] 2. Move the code" in result.output and "[x] 3. Replace" in result.output  # its module path moved too
    assert "[ ] 1. Settle the API contract" in result.output
    assert "close the tracking issue (#12)" in result.output
    assert "reread this docs line, written while it was experimental: docs/guide.rst:4: Call ``fxpkg.fancy``" in result.output
    assert "experimental: docs/api/ops.rst" not in result.output  # the page it was just listed on
    assert "dropped a test of the experimental contract: tests/fxpkg/fancy_ops/test_feat.py::test_the_record" in result.output


def test_a_backend_graduates_and_its_checker_loses_the_marker(tree):
    tree.write(
        {
            "fxpkg/experimental/feat/FEATURE.toml": 'kind = "backend"\nbackends = ["feat"]\n',
            "fxpkg/experimental/feat/support.py": """\
                from ...utils import experimental_backend, supported_compute_capability


                @experimental_backend
                @supported_compute_capability([90])
                def check_feat(x, backend="auto"):
                    return True
                """,
            "fxpkg/ops.py": """\
                from .api_logging import flashinfer_api, warn_experimental_backend_once
                from .experimental.feat.support import check_feat
                from .utils import backend_requirement


                @backend_requirement({"feat": check_feat})
                @flashinfer_api
                def op(x, backend="auto"):
                    if backend == "feat":
                        warn_experimental_backend_once("op", "feat")
                        from .experimental.feat.kernels import run

                        return run(x)
                    return x
                """,
        }
    )
    result = graduate(tree, "feat", "--to", "fxpkg.feat_backend")
    assert result.exit_code == 0, result.output
    support = tree.read("fxpkg/feat_backend/support.py").decode()
    assert support.startswith("from ...utils import supported_compute_capability\n".replace("...", ".."))
    assert "@experimental_backend" not in support and "@supported_compute_capability([90])\n" in support
    ops = tree.read("fxpkg/ops.py").decode()
    assert "from .feat_backend.support import check_feat\n" in ops
    assert "warn_experimental_backend_once(" not in ops.split("def op")[1]
    assert "from .feat_backend.kernels import run\n" in ops
    assert tree.imported("fxpkg.ops").op(1, backend="feat") == 2
    assert not getattr(tree.imported("fxpkg.feat_backend.support").check_feat, "is_experimental", False)


def test_aot_registers_the_spec_factories(tree):
    tree.write(
        {
            "fxpkg/aot.py": """\
                _registry = []


                def register(spec):
                    _registry.append(spec)


                def _register_builtin():
                    register("builtin")
                """,
            "fxpkg/ops.py": """\
                from .api_logging import flashinfer_api, flashinfer_experimental_api


                @flashinfer_experimental_api(feature="feat")
                def fancy(x):
                    from .experimental.feat.kernels import run

                    return run(x)
                """,
            "fxpkg/experimental/feat/spec.py": """\
                JitSpec = str


                def feat_spec(config: int = 1) -> JitSpec:
                    return f"feat{config}"


                def other_spec(config: int) -> JitSpec:
                    return "needs an argument"
                """,
        }
    )
    tree.write({"pyproject.toml": tree.read("pyproject.toml").decode() + 'aot-modules = ["fxpkg.aot"]\n'})
    result = graduate(tree, "feat", "--to", "fxpkg.feat", "--aot")
    assert result.exit_code == 0, result.output
    aot = tree.imported("fxpkg.aot")
    aot._register_builtin()
    assert aot._registry == ["builtin", "feat1"]
    assert "registers fxpkg.feat.spec.feat_spec()" in result.output


@pytest.mark.parametrize(
    "init, exported",
    [
        ("from .ops import stable as stable\n", "from .ops import stable as stable, fancy as fancy\n"),
        ("from .api_logging import flashinfer_api\nfrom .ops import stable\n", "from .ops import stable, fancy\n"),
        ("from .api_logging import flashinfer_api as flashinfer_api\n",
         "from .api_logging import flashinfer_api as flashinfer_api\n"),  # no name of ops is exported
    ],
)
def test_exported_like_its_neighbours_by_import(tree, init, exported):
    tree.write(API_FEATURE)
    tree.write({"fxpkg/__init__.py": init})
    result = graduate(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    assert exported in tree.read("fxpkg/__init__.py").decode()
    assert ("fancy not exported, as no name of fxpkg.ops is" in result.output) == ("fancy" not in exported)


@pytest.mark.parametrize(
    "home, reason",
    [
        ("fxpkg", "not a module under fxpkg"),
        ("other.place", "not a module under fxpkg"),
        ("fxpkg.experimental.feat2", "inside the experimental package"),
        ("fxpkg.utils", "fxpkg/utils.py already exists"),
        ("fxpkg.nowhere.feat", "its parent package fxpkg.nowhere has no __init__.py"),
        ("fxpkg.fancy", "exports a name 'fancy'"),
        ("fxpkg.9lives", "not a module under fxpkg"),
    ],
)
def test_a_bad_home_refuses_and_writes_nothing(tree, home, reason):
    tree.write(API_FEATURE)
    tree.write({"fxpkg/__init__.py": tree.read("fxpkg/__init__.py").decode().replace('"stable": "ops",', '"stable": "ops",\n    "fancy": "ops",')})
    before = {p: p.read_bytes() for p in tree.root.rglob("*") if p.is_file()}
    result = graduate(tree, "feat", "--to", home)
    assert result.exit_code == 1, result.output
    assert "feat: refused, nothing written" in result.output and reason in result.output
    assert {p: p.read_bytes() for p in tree.root.rglob("*") if p.is_file()} == before


def test_diff_writes_nothing_and_a_graduated_feature_refuses_a_second_time(tree):
    tree.write(API_FEATURE)
    before = {p: p.read_bytes() for p in tree.root.rglob("*") if p.is_file()}
    result = graduate(tree, "feat", "--to", "fxpkg.fancy_ops", "--diff")
    assert result.exit_code == 0, result.output
    assert "--- a/fxpkg/ops.py\n+++ b/fxpkg/ops.py\n" in result.output
    assert "copy to fxpkg/fancy_ops/kernels.py\n" in result.output and "would: moved" in result.output
    assert {p: p.read_bytes() for p in tree.root.rglob("*") if p.is_file()} == before
    assert graduate(tree, "feat", "--to", "fxpkg.fancy_ops").exit_code == 0
    again = graduate(tree, "feat", "--to", "fxpkg.elsewhere")
    assert again.exit_code == 1 and "feat already graduated to fxpkg.fancy_ops" in again.output


def test_the_shim_is_not_a_feature_for_the_checker(tree):
    tree.write(API_FEATURE)
    assert graduate(tree, "feat", "--to", "fxpkg.fancy_ops").exit_code == 0
    checked = CliRunner().invoke(main, ["run", "--root", str(tree.root), "--no-cache", "--select", "EXP009,EXP001"])
    assert checked.exit_code == 0, checked.output
    board = CliRunner().invoke(main, ["features", "--root", str(tree.root), "--format", "json"])
    assert board.exit_code == 0 and '"feat"' not in board.output


def test_an_unreached_feature_refuses(tree):
    result = graduate(tree, "feat", "--to", "fxpkg.feat")
    assert result.exit_code == 1 and "no core module reaches feat" in result.output
    assert graduate(tree, "nope", "--to", "fxpkg.nope").exit_code == 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record=st.one_of(
    st.text(max_size=300),
    st.builds(lambda issue, backends: f"tracking_issue = {issue}\nbackends = {backends}\n",
              st.one_of(st.integers(), st.text(max_size=20).map(repr)),
              st.lists(st.text(max_size=12), max_size=4).map(lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]")),
))
def test_a_hostile_record_never_crashes_the_plan_nor_reaches_the_output(tree, record):
    """FEATURE.toml is written by contributors: whatever it holds, the graduation is
    planned (or refused) with a message, and nothing of it but a validated tracking
    reference is printed."""
    tree.write(API_FEATURE)
    (tree.root / "fxpkg/experimental/feat/FEATURE.toml").write_text(record, encoding="utf-8")
    result = graduate(tree, "feat", "--to", "fxpkg.fancy_ops", "--diff")
    assert result.exit_code in (0, 1), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    checklist = result.output[result.output.index("Graduation checklist"):] if result.exit_code == 0 else result.output
    assert all(ch.isprintable() or ch == "\n" for ch in checklist)


def _files(root) -> dict:
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8", errors="replace")
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_what_graduate_writes_is_a_pure_shim_and_recognised_as_a_graduation(tree):
    """The shim `graduate` leaves passes `markers.is_pure_shim`, and the bot takes the change for a
    graduation when it reads it as a PR: the listing, the texts at base and head, the directory at head."""
    from policy_checks.bot.graduation_pr import Listed, recognise
    from policy_checks.bot.revisions import FileAtRevisions
    from policy_checks.model.config import load
    from policy_checks.model.markers import is_pure_shim

    tree.write(API_FEATURE)
    base = _files(tree.root)
    assert graduate(tree, "feat", "--to", "fxpkg.fancy_ops").exit_code == 0
    head = _files(tree.root)
    directory = "fxpkg/experimental/feat"
    shim = {p[len(directory) + 1:]: text for p, text in head.items() if p.startswith(directory + "/")}
    assert sorted(shim) == ["__init__.py", "helpers.py", "kernels.py"] and is_pure_shim(shim, "fxpkg.experimental")
    listing, texts = [], {}
    for path in sorted(set(base) | set(head)):
        old, new = base.get(path), head.get(path)
        if old != new:
            listing.append(Listed(path, "added" if old is None else "removed" if new is None else "modified", None, ""))
            texts[path] = FileAtRevisions(path, old, new)
    trees = {directory: [p for p in head if p.startswith(directory + "/")]}
    result = recognise(listing, settings=load(tree.root), texts=texts, trees=trees)
    assert result.not_recognised == []
    [graduation] = result
    assert graduation.feature == "feat" and graduation.new_home == "fxpkg.fancy_ops"
    assert {s.step.number for s in graduation.steps if s.done} == {2, 3, 6}


def test_a_shim_that_holds_other_code_is_still_a_feature(tree):
    tree.write(API_FEATURE)
    assert graduate(tree, "feat", "--to", "fxpkg.fancy_ops").exit_code == 0
    tree.write({"fxpkg/experimental/feat/fast.py": "def run():\n    return 1\n"})
    checked = CliRunner().invoke(main, ["run", "--root", str(tree.root), "--no-cache", "--select", "EXP009"])
    assert checked.exit_code == 1
    assert ("fxpkg/experimental/feat binds __graduated_to__ but the shim holds other code "
            "(fast.py line 1: holds code other than a re-export (FunctionDef))") in checked.output
    board = CliRunner().invoke(main, ["features", "--root", str(tree.root), "--format", "json"])
    assert board.exit_code == 0 and '"feature": "feat"' in board.output and "the shim holds other code" in board.output
    again = graduate(tree, "feat", "--to", "fxpkg.elsewhere")
    assert again.exit_code == 1 and "binds __graduated_to__ but is no pure re-export shim" in again.output
