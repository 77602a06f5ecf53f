"""Refusals are decided before the move is planned, and leave the tree byte-identical.

A graduation that cannot happen (nothing reaches the feature, a bad or shadowing home,
the moved code importing other experimental code at module level, a link or a FIFO in
the feature or its tests, the tests' destination taken) says so without planning the
move: on FlashInfer 0.7.4, ``graduate b12x`` planned 515 files before refusing.
"""

from __future__ import annotations

import os

import pytest

from policy_checks.editing.target import Refused, load_project
from policy_checks.lifecycle.graduate import planner

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


def _unreached(tree):
    return "fxpkg.fancy_ops", "no core module reaches feat"


def _shadowing(tree):
    tree.write({**ENTRY, "fxpkg/__init__.py": "from .ops import *\n"})
    return "fxpkg.fancy", "fxpkg exports a name 'fancy'"


def _module_level_reach(tree):
    tree.write({**ENTRY, "fxpkg/experimental/other/__init__.py": "",
                "fxpkg/experimental/feat/vision.py": "from ..other import kernels\n"})
    return "fxpkg.fancy_ops", "would import fxpkg.experimental.other at module level"


def _tests_destination_taken(tree):
    tree.write({**ENTRY, "tests/experimental/feat/test_feat.py": "def test_it():\n    pass\n",
                "tests/fancy_ops/test_old.py": "def test_old():\n    pass\n"})
    return "fxpkg.fancy_ops", "the tests would move to tests/fancy_ops, which already exists"


def _linked_file(tree):
    tree.write(ENTRY)
    outside = tree.root.parent / f"{tree.root.name}-secret.txt"
    outside.write_text("TOKEN=hunter2\n")
    os.symlink(outside, tree.root / "fxpkg/experimental/feat/secret.py")
    return "fxpkg.fancy_ops", "fxpkg/experimental/feat/secret.py is a symbolic link; refusing to touch it"


def _linked_feature_dir(tree):
    tree.write(ENTRY)
    feature = tree.root / "fxpkg/experimental/feat"
    outside = tree.root.parent / f"{tree.root.name}-feature"
    feature.rename(outside)
    os.symlink(outside, feature, target_is_directory=True)
    return "fxpkg.fancy_ops", "fxpkg/experimental/feat is a symbolic link, not a directory"


def _fifo(tree):
    tree.write(ENTRY)
    os.mkfifo(tree.root / "fxpkg/experimental/feat/pipe.py")
    return "fxpkg.fancy_ops", "fxpkg/experimental/feat/pipe.py is a FIFO; refusing to touch it"


def _linked_test(tree):
    tree.write({**ENTRY, "tests/experimental/feat/test_feat.py": "def test_it():\n    pass\n"})
    os.symlink("/proc/self/environ", tree.root / "tests/experimental/feat/conftest.py")
    return "fxpkg.fancy_ops", "tests/experimental/feat/conftest.py is a symbolic link; refusing to touch it"


REFUSALS = {f.__name__.lstrip("_"): f for f in (_unreached, _shadowing, _module_level_reach, _tests_destination_taken,
                                                  _linked_file, _linked_feature_dir, _fifo, _linked_test)}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refusal_leaves_the_tree_byte_identical_and_reads_no_link(tree, case):
    home, reason = REFUSALS[case](tree)
    result = graduate_checked(tree, "feat", "--to", home)
    assert result.exit_code == 1 and reason in result.output, result.output
    assert "hunter2" not in result.output and "PATH=" not in result.output


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refusal_is_decided_before_the_move_is_planned(tree, monkeypatch, case):
    home, reason = REFUSALS[case](tree)

    def planned(*args, **kwargs):
        raise AssertionError("the move was planned before the refusal")

    monkeypatch.setattr(planner, "move_feature", planned)
    monkeypatch.setattr(planner, "swap_core", planned)
    with pytest.raises(Refused) as refused:
        planner.plan_graduation(load_project(tree.root), "feat", home)
    assert reason in str(refused.value)


# each refusal says what to do next ---------------------------------------------------------


def test_a_feature_without_init_is_told_to_add_one(tree):
    """FlashInfer 0.7.2.post1's ``deepgemm_kgroup_gemm`` holds modules but no
    ``__init__.py``: adding one is the whole fix, so the refusal says so."""
    tree.write(ENTRY)
    (tree.root / "fxpkg/experimental/feat/__init__.py").unlink()
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 1, result.output
    assert "fxpkg/experimental/feat has no __init__.py" in result.output
    assert "add fxpkg/experimental/feat/__init__.py (it may be empty), then run graduate again" in result.output


def test_a_feature_reached_only_from_outside_core_names_what_reaches_it(tree):
    """FlashInfer 0.7.2.post1's ``b12x`` is loaded by the wheel's top-level ``b12x``
    package (a module prefix and a path into the feature), never by core: the refusal
    names that package and its file."""
    tree.write({"shim/__init__.py": (
        "import importlib\nfrom pathlib import Path\n\n"
        "PREFIX = 'fxpkg.experimental.feat.'\n"
        "ROOT = Path(__file__).parent.parent / 'fxpkg' / 'experimental' / 'feat'\n"
    )})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 1, result.output
    assert "no core module reaches feat" in result.output
    assert "reached from outside core by package shim (shim/__init__.py)" in result.output, result.output
    assert "@flashinfer_experimental_api(feature='feat')" in result.output


def test_every_module_level_import_of_other_experimental_code_is_named(tree):
    """The moved code would import other experimental code at module level in two
    places: one refusal names both, so that one pass fixes them."""
    tree.write({**ENTRY, "fxpkg/experimental/other/__init__.py": "",
                "fxpkg/experimental/other/kernels.py": "",
                "fxpkg/experimental/feat/vision.py": "from ..other import kernels\n",
                "fxpkg/experimental/feat/audio.py": "import fxpkg.experimental.other.kernels\n"})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 1, result.output
    assert "fxpkg/experimental/feat/audio.py:1" in result.output and "fxpkg/experimental/feat/vision.py:1" in result.output


def test_every_refusal_that_needs_no_plan_is_named_in_one_answer(tree):
    """A home that exists, no core module reaching the feature, and moved code that
    imports other experimental code at module level: one answer names all three."""
    tree.write({"fxpkg/fancy_ops.py": "", "fxpkg/experimental/other/__init__.py": "",
                "fxpkg/experimental/feat/vision.py": "from ..other import kernels\n"})
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 1, result.output
    assert "--to fxpkg.fancy_ops: fxpkg/fancy_ops.py already exists" in result.output, result.output
    assert "no core module reaches feat" in result.output
    assert "would import fxpkg.experimental.other at module level" in result.output
