"""After a graduation nothing stable reaches experimental code without the user being told.

- The moved code importing another experimental feature at module level (EXP001 once it
  is core) refuses, naming the feature to graduate first.
- Reach at call time, from the moved code or from an entry point, is listed for a person
  under step 3, which stays unticked; so is a gate call left in either.
- A gate call in a hand-off that reaches nothing else experimental goes, with its import.
- Imports of the old path elsewhere (other features, tests, examples, the repository's
  other packages) point at the new home, or are listed.
"""

from __future__ import annotations

import os
import textwrap
import warnings

import pytest
from click.testing import CliRunner

from policy_checks.cli import main

from .test_graduate_invariants import graduate_checked

ENTRY = {
    "fxpkg/ops.py": """\
        from .api_logging import flashinfer_experimental_api


        @flashinfer_experimental_api(feature="feat")
        def fancy(x):
            from .experimental.feat.kernels import run

            return run(x)
        """,
}

OTHER = {  # a second experimental feature, which stays experimental
    "fxpkg/experimental/other/__init__.py": "",
    "fxpkg/experimental/other/kernels.py": "def assign(x):\n    return x * 2\n",
    "fxpkg/experimental/other/support.py": """\
        from ...utils import experimental_backend


        @experimental_backend
        def check_other(x):
            return True
        """,
}

GATES = """\
import warnings


def warn_experimental_backend_once(api, backend):
    warnings.warn(f"{api}: backend {backend} is experimental", UserWarning)
"""


def step(output: str, number: int) -> str:
    """The checklist line of one step: ``[x] 3. ...`` or ``[ ] 3. ...``."""
    return next(line for line in output.splitlines() if line[4:].startswith(f"{number}. "))


@pytest.mark.parametrize("source", [
    "from ..other.kernels import assign\n",
    "from .. import other\n",
    "import fxpkg.experimental.other.kernels as k\n",
    "import importlib\n\nK = importlib.import_module('fxpkg.experimental.other.kernels')\n",
    "try:\n    from ..other import kernels\nexcept ImportError:\n    kernels = None\n",
    "class Tower:\n    from ..other.kernels import assign\n",
])
def test_a_module_level_import_of_another_feature_refuses(tree, source):
    tree.write({**ENTRY, **OTHER, "fxpkg/experimental/feat/vision.py": source})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 1
    assert "once in fxpkg.fancy_ops, fxpkg/experimental/feat/vision.py:" in result.output
    assert "at module level" in result.output and "(EXP001)" in result.output
    assert "Graduate other first" in result.output


@pytest.mark.parametrize("source", [
    "from ..other.support import check_other\n",  # EXP001's exception: a support module's checker
    "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from ..other.kernels import assign\n",
])
def test_what_exp001_allows_graduates(tree, source):
    tree.write({**ENTRY, **OTHER, "fxpkg/experimental/feat/vision.py": source})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output


def test_the_moved_code_reaching_another_feature_when_called_is_listed(tree):
    tree.write({**ENTRY, **OTHER, "fxpkg/experimental/feat/vision.py": """\
        def tower(x):
            from ..other.kernels import assign

            return assign(x)
        """})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    assert ("for a person: fxpkg/fancy_ops/vision.py:2 (tower) still reaches fxpkg.experimental.other.kernels "
            "(experimental) when called") in result.output
    assert "graduate other first" in result.output
    assert step(result.output, 3).startswith("[ ]")
    assert tree.imported("fxpkg.fancy_ops.vision").tower(2) == 4


def test_an_entry_point_still_routing_to_another_feature_is_listed(tree):
    tree.write({**OTHER, "fxpkg/ops.py": """\
        from .api_logging import flashinfer_experimental_api


        @flashinfer_experimental_api(feature="feat")
        def fancy(x, rubin=False):
            if rubin:
                from .experimental.other.kernels import assign

                return assign(x)
            from .experimental.feat.kernels import run

            return run(x)
        """})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    assert "@flashinfer_api on fancy" in result.output
    assert ("for a person: fxpkg/ops.py:7 (fancy): a stable entry point still routes to "
            "fxpkg.experimental.other.kernels (experimental) without telling the user") in result.output
    assert step(result.output, 3).startswith("[ ]")
    ops = tree.imported("fxpkg.ops")
    assert ops.fancy(1) == 2 and ops.fancy(1, rubin=True) == 2


RUNNER = """\
    class Runner:
        def _build(self):
            from .api_logging import warn_experimental_backend_once
            from .experimental.feat import kernels
            {more}
            self._kernels = kernels
            warn_experimental_backend_once("fused_moe", "cake")

        def run(self, x):
            self._build()
            return self._kernels.run(x)
    """


def test_a_gate_call_in_a_hand_off_goes_with_its_import(tree):
    tree.write({**ENTRY, "fxpkg/api_logging.py": tree.read("fxpkg/api_logging.py").decode() + "\n\n" + GATES,
                "fxpkg/runner.py": RUNNER.format(more="")})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    runner = tree.read("fxpkg/runner.py").decode()
    assert "warn_experimental_backend_once" not in runner and "from .fancy_ops import kernels" in runner
    assert "fxpkg/runner.py: imports point at fxpkg.fancy_ops; 1 gate call(s) dropped" in result.output
    assert step(result.output, 3).startswith("[x]")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tree.imported("fxpkg.runner").Runner().run(1) == 2


def test_a_gate_call_in_a_hand_off_that_reaches_another_feature_stays_listed(tree):
    more = "from .experimental.other import kernels as other_kernels\n"
    tree.write({**ENTRY, **OTHER, "fxpkg/api_logging.py": tree.read("fxpkg/api_logging.py").decode() + "\n\n" + GATES,
                "fxpkg/runner.py": RUNNER.format(more=more)})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    assert 'warn_experimental_backend_once("fused_moe", "cake")' in tree.read("fxpkg/runner.py").decode()
    assert "for a person: fxpkg/runner.py:8 (Runner._build) still calls an experimental gate or warning" in result.output
    assert "fxpkg/runner.py:5 (Runner._build): a stable entry point still routes to fxpkg.experimental.other" \
        in result.output
    assert step(result.output, 3).startswith("[ ]")


def test_a_gate_call_or_warning_left_in_the_moved_code_is_listed(tree):
    tree.write({**ENTRY, "fxpkg/experimental/feat/kernels.py": """\
        import warnings

        from ...api_logging import warn_experimental_backend_once


        class ExperimentalWarning(UserWarning):
            pass


        def run(x):
            warnings.warn("run is experimental", ExperimentalWarning)
            return x + 1


        def scale(x):
            warn_experimental_backend_once("scale", "feat")
            return x * 10
        """, "fxpkg/api_logging.py": tree.read("fxpkg/api_logging.py").decode() + "\n\n" + GATES})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    assert "fxpkg/fancy_ops/kernels.py:11 (run) still calls an experimental gate or warning" in result.output
    assert "fxpkg/fancy_ops/kernels.py:16 (scale) still calls an experimental gate or warning" in result.output
    assert step(result.output, 3).startswith("[ ]")


def test_the_moved_code_s_own_experimental_apis_become_stable(tree):
    tree.write({**ENTRY, "fxpkg/experimental/feat/__init__.py": """\
        from ...api_logging import flashinfer_experimental_api


        @flashinfer_experimental_api(feature="feat.op")
        def op(x):
            return x
        """})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    moved = tree.read("fxpkg/fancy_ops/__init__.py").decode()
    assert moved.startswith("from ..api_logging import flashinfer_api\n\n\n@flashinfer_api\ndef op(x):")
    assert "fxpkg/fancy_ops/__init__.py: @flashinfer_api on op" in result.output
    assert step(result.output, 3).startswith("[x]")
    assert not getattr(tree.imported("fxpkg.fancy_ops").op, "is_experimental", False)


ELSEWHERE = {
    "fxpkg/experimental/other/__init__.py": "",
    "fxpkg/experimental/other/use.py": """\
        from fxpkg.experimental.feat import kernels

        from ..feat.kernels import run


        def twice(x):
            return run(kernels.run(x))
        """,
    "tests/test_stable_uses.py": "from fxpkg.experimental.feat.kernels import run\n\n\ndef test_run():\n    assert run(1) == 2\n",
    "tests/experimental/other/test_other.py": """\
        import fxpkg.experimental.feat.kernels


        def test_it():
            assert fxpkg.experimental.feat.kernels.run(1) == 2
        """,
    "tests/experimental/other/test_loads.py": "import fxpkg.experimental.feat.kernels\n",
    "examples/demo.py": "from fxpkg.experimental.feat.kernels import run\n\nprint(run(1))\n",
    "tools/__init__.py": "from fxpkg.experimental.feat import kernels\n",
    "build_helper.py": "import fxpkg.experimental.feat.kernels as k\n",
}


def test_imports_of_the_old_path_elsewhere_point_at_the_new_home(tree):
    tree.write({**ENTRY, **ELSEWHERE})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    use = tree.read("fxpkg/experimental/other/use.py").decode()
    assert use.startswith("from fxpkg.fancy_ops import kernels\n\nfrom ...fancy_ops.kernels import run\n")
    assert tree.read("tests/test_stable_uses.py").startswith(b"from fxpkg.fancy_ops.kernels import run\n")
    assert tree.read("examples/demo.py").startswith(b"from fxpkg.fancy_ops.kernels import run\n")
    assert tree.read("tools/__init__.py") == b"from fxpkg.fancy_ops import kernels\n"
    assert tree.read("build_helper.py") == b"import fxpkg.fancy_ops.kernels as k\n"
    assert tree.read("tests/experimental/other/test_loads.py") == b"import fxpkg.fancy_ops.kernels\n"
    for rel in ("fxpkg/experimental/other/use.py", "tests/test_stable_uses.py", "examples/demo.py",
                "tools/__init__.py", "build_helper.py", "tests/experimental/other/test_loads.py"):
        assert f"{rel}: imports point at fxpkg.fancy_ops" in result.output
    assert ("for a person: tests/experimental/other/test_other.py:1: an import of fxpkg.experimental.feat that a "
            "rewrite cannot move (`import fxpkg.experimental.feat...` binds the top package's name, and the file "
            "reaches fxpkg.experimental.feat through it); point it at fxpkg.fancy_ops by hand") in result.output
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no shim on the way: no DeprecationWarning
        assert tree.imported("fxpkg.experimental.other.use").twice(1) == 3


def test_the_moved_tests_importing_another_feature_are_listed(tree):
    tree.write({**ENTRY, **OTHER, "tests/experimental/feat/test_feat.py": """\
        from fxpkg.experimental.feat.kernels import run
        from fxpkg.experimental.other.kernels import assign


        def test_both():
            assert assign(run(1)) == 4
        """})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    assert ("for a person: tests/fancy_ops/test_feat.py:2 still imports fxpkg.experimental.other.kernels; a stable "
            "test may not (EXP008)") in result.output
    assert step(result.output, 6).startswith("[ ]")


@pytest.mark.parametrize("uses_the_chain", [False, True])
def test_an_import_of_the_old_path_without_as_in_the_moved_code(tree, uses_the_chain):
    """``import fxpkg.experimental.feat.kernels`` binds ``fxpkg``: rewritten when nothing in
    the file reaches the old path through it, refused when something does."""
    use = "fxpkg.experimental.feat.kernels.run(x)" if uses_the_chain else "kernels.run(x)"
    tree.write({**ENTRY, "fxpkg/experimental/feat/graph.py": f"""\
        def load(x):
            import fxpkg.experimental.feat.kernels
            from . import kernels

            return {use}
        """})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    if uses_the_chain:
        assert result.exit_code == 1
        assert ("fxpkg.experimental.feat.graph:2: an import of fxpkg.experimental.feat cannot be pointed at "
                "fxpkg.fancy_ops (`import fxpkg.experimental.feat...` binds the top package's name") in result.output
    else:
        assert result.exit_code == 0, result.output
        assert "    import fxpkg.fancy_ops.kernels\n" in tree.read("fxpkg/fancy_ops/graph.py").decode()
        assert tree.imported("fxpkg.fancy_ops.graph").load(1) == 2


def test_an_import_elsewhere_that_cannot_be_rewritten_is_listed(tree):
    """A test module that is a link (to a file outside the tree) is not written through."""
    tree.write(ENTRY)
    outside = tree.root.parent / f"{tree.root.name}-shared_test.py"
    outside.write_text("from fxpkg.experimental.feat.kernels import run\n")
    os.makedirs(tree.root / "tests/experimental/other")
    os.symlink(outside, tree.root / "tests/experimental/other/test_shared.py")
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    assert ("for a person: tests/experimental/other/test_shared.py imports fxpkg.experimental.feat but is not "
            "rewritten (tests/experimental/other/test_shared.py is a symbolic link") in result.output
    assert outside.read_text() == "from fxpkg.experimental.feat.kernels import run\n"


def test_the_feature_imported_by_name_from_its_parent_follows_it(tree):
    """``from .experimental import feat`` (core) and ``from fxpkg.experimental import feat as f``
    (elsewhere) import the feature by name: the name moves, the binding stays."""
    tree.write({**ENTRY, "fxpkg/loader.py": """\
        def _pkg():
            from .experimental import feat

            return feat
        """, "tests/test_loader.py": "from fxpkg.experimental import feat as f\n\n\ndef test_it():\n    assert f\n"})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    assert "    from . import fancy_ops as feat\n" in tree.read("fxpkg/loader.py").decode()
    assert tree.read("tests/test_loader.py").startswith(b"from fxpkg import fancy_ops as f\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tree.imported("fxpkg.loader")._pkg().__name__ == "fxpkg.fancy_ops"


def test_the_feature_imported_by_name_beside_other_names_elsewhere_is_listed(tree):
    tree.write({**ENTRY, **OTHER, "fxpkg/experimental/other/use.py": "from .. import feat, other\n"})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    assert ("for a person: fxpkg/experimental/other/use.py:1: an import of fxpkg.experimental.feat that a rewrite "
            "cannot move (it imports feat beside other names of fxpkg.experimental)") in result.output


def test_the_feature_imported_by_name_beside_other_names_in_core_refuses(tree):
    tree.write({**ENTRY, **OTHER,
                "fxpkg/loader.py": "def _pkg():\n    from .experimental import feat, other\n\n    return feat, other\n"})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 1
    assert "fxpkg.loader:2: an import of fxpkg.experimental.feat cannot be pointed at fxpkg.fancy_ops" in result.output


def test_a_module_level_import_of_its_own_old_path_by_a_string_refuses(tree):
    """The move rewrites import statements, not strings: at module level, the string would
    import the shim (experimental) whenever the stable module is imported."""
    tree.write({**ENTRY, "fxpkg/experimental/feat/loader.py":
                "import importlib\n\nKERNELS = importlib.import_module('fxpkg.experimental.feat.kernels')\n"})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 1
    assert ("fxpkg/experimental/feat/loader.py:3 would import fxpkg.experimental.feat.kernels at module level" in
            result.output and "A string names that old path" in result.output)


def test_another_features_marked_module_keeps_its_marks_and_is_edited_as_text(tree, monkeypatch):
    """A module of a feature that stays experimental carries its own marks: its imports of
    the old path point at the new home as text, never through libcst, and the marks stay."""
    marked = """\
        from fxpkg.api_logging import flashinfer_experimental_api
        from fxpkg.experimental.feat.kernels import run


        @flashinfer_experimental_api(feature="other")
        def twice(x):
            return run(run(x))
        """
    parsed = []
    monkeypatch.setattr("policy_checks.lifecycle.graduate.elsewhere.parse_file",
                        lambda target, rel, data=None: parsed.append(rel))
    tree.write({**ENTRY, **OTHER, "fxpkg/experimental/other/marked.py": marked})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    assert parsed == []
    after = tree.read("fxpkg/experimental/other/marked.py").decode()
    assert after == textwrap.dedent(marked).replace("fxpkg.experimental.feat.kernels", "fxpkg.fancy_ops.kernels")
    assert tree.imported("fxpkg.experimental.other.marked").twice(1) == 3


def test_a_string_naming_a_longer_feature_name_is_not_listed(tree):
    """``fxpkg.experimental.feat_two`` is another feature's path, not ``feat``'s."""
    tree.write({**ENTRY, "fxpkg/paths.py": (
        "OTHER = 'fxpkg.experimental.feat_two.kernels'\n"
        "MINE = 'fxpkg.experimental.feat.kernels'\n"
        "RELATIVE = '.experimental.feat_two'\n")})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    listed = [line for line in result.output.splitlines() if "a string still names the experimental path" in line]
    assert len(listed) == 1 and "fxpkg/paths.py:2" in listed[0], listed


@pytest.mark.parametrize("depth", [1, 2])
def test_moved_code_calling_at_import_a_core_function_that_imports_experimental_code_refuses(tree, depth):
    """The moved code calls, when imported, a core function whose body (or a function it
    calls) imports another feature: EXP001 once it is core, so graduate refuses, naming the
    call chain (`policy_checks.analysis.import_time`, the analysis EXP001 reads)."""
    helper = ("def load_other():\n    from .experimental.other import kernels\n\n    return kernels\n"
              if depth == 1 else
              "def inner():\n    from .experimental.other import kernels\n\n    return kernels\n\n\n"
              "def load_other():\n    return inner()\n")
    tree.write({**ENTRY, **OTHER, "fxpkg/loader.py": helper,
                "fxpkg/experimental/feat/vision.py": "from ...loader import load_other\n\nOTHER = load_other()\n"})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 1, result.output
    assert "fxpkg/experimental/feat/vision.py:3, calling fxpkg.loader.load_other" in result.output
    assert "would import fxpkg.experimental.other.kernels at module level" in result.output


def test_moved_code_calling_a_core_function_only_when_called_graduates(tree):
    tree.write({**ENTRY, **OTHER,
                "fxpkg/loader.py": "def load_other():\n    from .experimental.other import kernels\n\n    return kernels\n",
                "fxpkg/experimental/feat/vision.py": "from ...loader import load_other\n\n\ndef later():\n"
                                                     "    return load_other()\n"})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output


def test_a_script_in_a_plain_folder_is_pointed_at_the_new_home_as_remove_refuses_over_it(tree):
    """The rest of the repository is one listing: a folder without ``__init__.py``
    (``benchmarks/``) counts for graduate as it counts for remove."""
    bench = "from fxpkg.experimental.feat.kernels import run\n\nprint(run(1))\n"
    tree.write({**ENTRY, "benchmarks/bench_feat.py": bench})
    refused = CliRunner().invoke(main, ["remove", "feat", "--diff", "--root", str(tree.root)])
    assert refused.exit_code == 1 and "benchmarks/bench_feat.py:1" in refused.output, refused.output
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    assert "benchmarks/bench_feat.py: imports point at fxpkg.fancy_ops" in result.output
    assert tree.read("benchmarks/bench_feat.py") == b"from fxpkg.fancy_ops.kernels import run\n\nprint(run(1))\n"
