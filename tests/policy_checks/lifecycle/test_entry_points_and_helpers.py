"""Entry points of every shape and their helpers (docs/lifecycle.rst, "Entry points and
helpers"), through ``remove`` and ``graduate`` with the lifecycle invariants checked
(`invariants.run_checked`): an experimental API class shaped like FlashInfer 0.7.x's
``RecurrentKDAPrefillWrapper`` (``__init__`` imports the feature, ``plan``/``run``
carry the marker, ``is_experimental = True``), a helper only the feature's entry
points call, its twin also called by stable code, and a marker graduate cannot swap."""

from __future__ import annotations

from click.testing import CliRunner

from policy_checks.cli import main

from .invariants import run_checked

GRADUATE = ["graduate", "feat", "--to", "fxpkg.feat_ops"]
MOVED = {"fxpkg.experimental.feat": "fxpkg.feat_ops"}

WRAPPER = {
    "fxpkg/__init__.py": '"""The fixture package."""\nfrom .wrap import Wrapper as Wrapper\nfrom .wrap import keep as keep\n',
    "fxpkg/wrap.py": """\
        from .api_logging import flashinfer_api, flashinfer_experimental_api

        __all__ = ["Wrapper", "keep"]


        @flashinfer_api
        def keep(x):
            return x


        class Wrapper:
            \"\"\"Plan-and-run wrapper, experimental.\"\"\"

            #: Mechanical identification: the decorators only mark plan and run.
            is_experimental = True

            def __init__(self, device):
                from .experimental.feat.kernels import run

                self._run = run
                self.device = device

            @flashinfer_experimental_api(feature="a plan-and-run wrapper")
            def plan(self, x):
                self.x = x

            @flashinfer_experimental_api(feature="a plan-and-run wrapper")
            def run(self):
                return self._run(self.x)
        """,
}


def test_remove_deletes_an_experimental_api_class_whole_with_its_exports(tree):
    tree.write(WRAPPER)
    outcome = run_checked(tree.root, ["remove", "feat"])
    assert outcome.exit_code == 0, outcome.output
    wrap = tree.read("fxpkg/wrap.py").decode()
    assert "class Wrapper" not in wrap and "is_experimental" not in wrap
    assert '__all__ = ["keep"]' in wrap and "def keep(x):" in wrap
    assert tree.read("fxpkg/__init__.py").decode() == '"""The fixture package."""\nfrom .wrap import keep as keep\n'
    assert tree.imported("fxpkg").keep(3) == 3


def test_graduate_swaps_every_mark_of_an_experimental_api_class(tree):
    tree.write(WRAPPER)
    outcome = run_checked(tree.root, GRADUATE, MOVED)
    assert outcome.exit_code == 0, outcome.output
    wrap = tree.read("fxpkg/wrap.py").decode()
    assert "flashinfer_experimental_api" not in wrap and "is_experimental" not in wrap
    assert wrap.count("    @flashinfer_api\n    def ") == 2
    assert "from .feat_ops.kernels import run" in wrap
    assert "[x] 3." in outcome.output, outcome.output
    assert "still marked" not in outcome.output and "still sets" not in outcome.output


HELPERS = {
    "fxpkg/ops.py": """\
        from .api_logging import flashinfer_api, flashinfer_experimental_api

        _FEATURE = "packed training kernels"  # a description, as FlashInfer's markers hold


        def _pkg():
            from .experimental.feat import kernels

            return kernels


        def _twin():
            from .experimental.feat import kernels

            return kernels


        @flashinfer_experimental_api(feature=_FEATURE)
        def fancy(x):
            return _pkg().run(x)


        @flashinfer_experimental_api(feature=_FEATURE)
        def fancier(x):
            return _pkg().scale(x) + _twin().LIMIT


        @flashinfer_api
        def stable(x):
            return x
        """,
}


def test_a_helper_only_the_entry_points_call_goes_with_them(tree):
    tree.write(HELPERS)
    outcome = run_checked(tree.root, ["remove", "feat"])
    assert outcome.exit_code == 0, outcome.output
    ops = tree.read("fxpkg/ops.py").decode()
    assert "_pkg" not in ops and "_twin" not in ops and "fancy" not in ops and "fancier" not in ops
    assert "def stable(x):" in ops and "experimental" not in ops.replace("flashinfer_experimental_api", "")
    assert tree.imported("fxpkg.ops").stable(5) == 5


def test_graduate_swaps_the_entry_points_reached_through_a_helper_which_stays_retargeted(tree):
    tree.write(HELPERS)
    outcome = run_checked(tree.root, GRADUATE, MOVED)
    assert outcome.exit_code == 0, outcome.output
    ops = tree.read("fxpkg/ops.py").decode()
    assert "def _pkg():\n    from .feat_ops import kernels\n" in ops
    assert "@flashinfer_experimental_api" not in ops
    assert "@flashinfer_api\ndef fancy(x):" in ops and "@flashinfer_api\ndef fancier(x):" in ops
    assert "[x] 3." in outcome.output, outcome.output


def test_a_helper_also_called_by_stable_code_refuses_naming_both_lines(tree):
    files = dict(HELPERS)
    files["fxpkg/ops.py"] = files["fxpkg/ops.py"].replace(
        "        def stable(x):\n            return x\n", "        def stable(x):\n            return _twin().LIMIT + x\n")
    tree.write(files)
    outcome = run_checked(tree.root, ["remove", "feat"])
    assert outcome.exit_code == 1
    assert ("fxpkg/ops.py:13: helper `_twin` leads to the feature and is also used by `stable` (fxpkg/ops.py:30), "
            "which the removal keeps: move that use into an entry point of the feature") in outcome.output
    assert "or mark `stable` @flashinfer_experimental_api(feature=...)" in outcome.output


def test_a_helper_used_at_module_level_refuses(tree):
    files = dict(HELPERS)
    files["fxpkg/ops.py"] += "\n\n        LOADERS = [_twin]\n"
    tree.write(files)
    outcome = run_checked(tree.root, ["remove", "feat"])
    assert outcome.exit_code == 1
    assert "helper `_twin` leads to the feature and is also used by module-level code (fxpkg/ops.py:33)" in outcome.output


def test_a_mark_graduate_cannot_swap_keeps_step_3_unticked_and_names_its_place(tree):
    tree.write(
        {
            "fxpkg/ops.py": """\
                from .api_logging import flashinfer_api, flashinfer_experimental_api


                @flashinfer_experimental_api(feature="feat")
                def fancy(x):
                    from .experimental.feat.kernels import run

                    return run(x)


                fancy_alias = flashinfer_experimental_api(feature="feat")(fancy)
                """
        }
    )
    outcome = run_checked(tree.root, GRADUATE, MOVED)
    assert outcome.exit_code == 0, outcome.output
    assert "[ ] 3." in outcome.output
    assert ("for a person: fxpkg/ops.py:11: fancy_alias is still marked @flashinfer_experimental_api; "
            "make it @flashinfer_api") in outcome.output
    ops = tree.read("fxpkg/ops.py").decode()
    assert "@flashinfer_api\ndef fancy(x):" in ops


def test_explain_exp007_states_the_shared_definition():
    text = CliRunner().invoke(main, ["explain", "EXP007"]).output
    for shape in ("``is_experimental = True``", "``__init__`` included", "``if backend == \"<name>\":``",
                  "``if list(backends) == [\"<name>\"]:``", "never ``\"<name>\" in backends``",
                  "removed or graduated whole", "``remove`` takes it along only when the"):
        assert shape in " ".join(text.split()), shape


def test_a_method_helper_a_base_class_calls_refuses(tree):
    """``self._build()`` in a base class reaches the subclass's ``_build``: removing it
    would leave the runner calling the base's."""
    tree.write(
        {
            "fxpkg/runners.py": """\
                class Base:
                    def setup(self):
                        self._build()

                    def _build(self):
                        raise NotImplementedError


                class FeatRunner(Base):
                    def _build(self):
                        from .experimental.feat import kernels

                        self.kernels = kernels
                """
        }
    )
    outcome = run_checked(tree.root, ["remove", "feat"])
    assert outcome.exit_code == 1
    assert ("fxpkg/runners.py:11: helper `FeatRunner._build` leads to the feature and is also used by `Base.setup` "
            "(fxpkg/runners.py:3)") in outcome.output


def test_an_import_in_a_public_api_outside_a_branch_refuses_naming_the_edit(tree):
    tree.write(
        {
            "fxpkg/ops.py": """\
                from .api_logging import flashinfer_api


                @flashinfer_api
                def op(x, backend="auto"):
                    from .experimental.feat.kernels import run

                    return run(x)
                """
        }
    )
    outcome = run_checked(tree.root, ["remove", "feat"])
    assert outcome.exit_code == 1
    assert ("fxpkg/ops.py:6: imports the feature inside op, a public API, outside an `if backend == \"<name>\":` "
            "branch") in outcome.output
    assert "move the import into such a branch without an else part" in outcome.output


def test_a_gate_call_for_the_feature_left_elsewhere_keeps_step_3_unticked(tree):
    tree.write(
        {
            "fxpkg/ops.py": """\
                from .api_logging import flashinfer_experimental_api


                @flashinfer_experimental_api(feature="feat")
                def fancy(x):
                    from .experimental.feat.kernels import run

                    return run(x)
                """,
            "fxpkg/routing.py": """\
                def require_experimental_auto_backends(feature):
                    return feature


                def pick():
                    require_experimental_auto_backends("feat")
                    return "feat"
                """,
        }
    )
    outcome = run_checked(tree.root, GRADUATE, MOVED)
    assert outcome.exit_code == 0, outcome.output
    assert "[ ] 3." in outcome.output
    assert ("for a person: fxpkg/routing.py:6 still calls require_experimental_auto_backends for feat, which is "
            "stable now; drop the call") in outcome.output


SHARED = {
    "fxpkg/experimental/other/__init__.py": "",
    "fxpkg/experimental/other/kernels.py": "def run(x):\n    return x - 1\n",
    "fxpkg/ops.py": """\
        from .api_logging import flashinfer_experimental_api


        @flashinfer_experimental_api(feature="two features")
        def fancy(x, backend="other"):
            if backend == "feat":
                from .experimental.feat.kernels import run

                return run(x)
            if backend == "other":
                from .experimental.other.kernels import run

                return run(x)
            raise ValueError(backend)
        """,
}


def test_an_experimental_api_serving_two_features_loses_only_the_removed_ones_branch(tree):
    tree.write(SHARED)
    outcome = run_checked(tree.root, ["remove", "feat"])
    assert outcome.exit_code == 0, outcome.output
    ops = tree.read("fxpkg/ops.py").decode()
    assert "def fancy(x, backend=\"other\"):" in ops and "experimental.feat" not in ops
    assert tree.imported("fxpkg.ops").fancy(5) == 4


def test_an_experimental_api_serving_two_features_refuses_an_import_outside_a_branch(tree):
    files = dict(SHARED)
    files["fxpkg/ops.py"] = files["fxpkg/ops.py"].replace('if backend == "feat":', 'if backend == "feat" and x:')
    tree.write(files)
    outcome = run_checked(tree.root, ["remove", "feat"])
    assert outcome.exit_code == 1
    assert ("fxpkg/ops.py:7: fancy also hands off to another experimental feature, so only this feature's part of it "
            "may go") in outcome.output



def test_a_helper_in_another_module_followed_through_its_import(tree):
    tree.write(
        {
            "fxpkg/_loader.py": """\
                def _kernels():
                    from .experimental.feat import kernels

                    return kernels


                def stable_default():
                    return 1
                """,
            "fxpkg/ops.py": """\
                from . import _loader
                from ._loader import _kernels
                from .api_logging import flashinfer_experimental_api


                @flashinfer_experimental_api(feature="feat")
                def fancy(x):
                    return _kernels().run(x)


                @flashinfer_experimental_api(feature="feat")
                def scaled(x):
                    return _loader._kernels().scale(x)


                def plain(x):
                    return _loader.stable_default() + x
                """,
        }
    )
    outcome = run_checked(tree.root, ["remove", "feat"])
    assert outcome.exit_code == 0, outcome.output
    assert "_kernels" not in tree.read("fxpkg/_loader.py").decode()
    ops = tree.read("fxpkg/ops.py").decode()
    assert "fancy" not in ops and "scaled" not in ops and "def plain(x):" in ops
    assert tree.imported("fxpkg.ops").plain(1) == 2
