"""``policy-check remove``: the whole repository, not only the checked package.

A kept Python file anywhere (another top-level package, a script, a test, an example)
that imports the feature, uses what the removal deletes, or loads the feature by its
module name or by a path into its directory refuses the removal with its file and
line; a test's string naming the feature is data, listed for a person. A link or a
special file in the feature or its tests refuses before anything is planned.

`checked` runs the command as a user would (``--diff``, then for real) and asserts
what every removal promises: refused => the tree byte for byte as it was; done => the
``--diff`` applied with ``git apply`` to a copy is the tree the run leaves; every
module that imported still imports; the checker finds nothing new.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_checks.cli import main

from .invariants import Outcome, importable, run_checked, snapshot

OPS = """\
from .api_logging import flashinfer_experimental_api


@flashinfer_experimental_api
def fancy(x):
    from .experimental.feat.kernels import run

    return run(x)


def keep():
    return 1
"""

def checked(tree, feature: str = "feat") -> Outcome:
    """``remove FEATURE --diff``, then the real run, asserting the invariants
    (`invariants.run_checked`) and that nothing was lost."""
    outcome = run_checked(tree.root, ["remove", feature])
    assert outcome.lost_imports == [], f"no longer import: {outcome.lost_imports}"
    assert outcome.new_findings == set(), "new checker findings"
    return outcome


def reasons(output: str) -> list:
    """The refusal's file:line reasons."""
    return [line.strip() for line in output.splitlines()[1:] if line.startswith("  ")]


# other top-level packages and scripts -------------------------------------------------

LOADERS = {
    "pathlib": """\
        import importlib.util
        from pathlib import Path

        _root = Path(__file__).resolve().parent.parent / "fxpkg" / "experimental" / "feat"
        _spec = importlib.util.spec_from_file_location("kernels", _root / "kernels.py")
        kernels = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(kernels)
        """,
    "os.path.join": """\
        import importlib.util
        import os

        _here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        _path = os.path.join(_here, "fxpkg", "experimental", "feat", "kernels.py")
        _spec = importlib.util.spec_from_file_location("kernels", _path)
        kernels = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(kernels)
        """,
    "sys.path": """\
        import os
        import sys

        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/fxpkg/experimental/feat")
        import kernels
        """,
    "import_module": """\
        import importlib

        kernels = importlib.import_module("fxpkg.experimental." + "feat.kernels")
        run = importlib.import_module(f"fxpkg.experimental.feat.{'kernels'}").run
        """,
}


@pytest.mark.parametrize("shape", sorted(LOADERS))
def test_a_top_level_package_loading_the_feature_refuses(tree, shape):
    tree.write({"fxpkg/ops.py": OPS, "toplevel/__init__.py": LOADERS[shape]})
    assert "toplevel" in importable(tree.root)
    outcome = checked(tree)
    assert outcome.exit_code == 1
    assert all(reason.startswith("toplevel/__init__.py:") for reason in reasons(outcome.output)), outcome.output
    expected = {
        "pathlib": "toplevel/__init__.py:4: builds a path into fxpkg/experimental/feat/",
        "os.path.join": "toplevel/__init__.py:5: builds a path into fxpkg/experimental/feat/",
        "sys.path": "toplevel/__init__.py:4: loads a path into fxpkg/experimental/feat/",
        "import_module": "toplevel/__init__.py:3: loads fxpkg.experimental.feat.kernels,",
    }[shape]
    assert expected in outcome.output
    if shape == "import_module":
        assert "toplevel/__init__.py:4: loads fxpkg.experimental.feat," in outcome.output


def test_a_script_importing_the_feature_or_a_removed_api_refuses(tree):
    tree.write({"fxpkg/ops.py": OPS, "tools/bench.py": "import fxpkg.experimental.feat.kernels as k\n\nprint(k.run(1))\n"})
    outcome = checked(tree)
    assert reasons(outcome.output) == [
        "tools/bench.py:1: imports fxpkg.experimental.feat.kernels, which the removal deletes",
        "tools/bench.py:3: uses k.run, which the removal deletes",
    ]
    # the feature's imports refuse before the plan of core; then the removed API does
    tree.write({"tools/bench.py": "from fxpkg.ops import fancy, keep\n\nprint(fancy(1), keep())\n"})
    outcome = checked(tree)
    assert reasons(outcome.output) == ["tools/bench.py:1: imports fancy from fxpkg.ops, which the removal deletes"]
    tree.write({"tools/bench.py": "from fxpkg.ops import keep\n\nprint(keep())\n"})
    assert checked(tree).exit_code == 0


def test_a_string_naming_the_feature_refuses_in_code_and_is_data_in_a_test(tree):
    tree.write(
        {
            "fxpkg/ops.py": OPS,
            "fxpkg/registry.py": 'KERNELS = "fxpkg.experimental.feat.kernels"\n',
            "tests/test_names.py": """\
                import pytest


                def test_names(tmp_path):
                    assert "fxpkg.experimental.feat.kernels".count(".") == 3
                    assert "fxpkg/experimental/feat/README.md".endswith(".md")
                    assert not (tmp_path / "fxpkg" / "experimental" / "feat").exists()


                def test_skips():
                    pytest.importorskip("fxpkg.experimental.feat")
                """,
        }
    )
    outcome = checked(tree)
    assert reasons(outcome.output) == [
        "fxpkg/registry.py:1: names fxpkg.experimental.feat.kernels, which the removal deletes",
        "tests/test_names.py:11: loads fxpkg.experimental.feat, which the removal deletes",
    ]
    tree.write({"fxpkg/registry.py": "KERNELS = None\n", "tests/test_names.py": tree.read("tests/test_names.py").decode()
                .split("\n\n\ndef test_skips")[0] + "\n"})
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    assert "left for a person: tests/test_names.py:5:" in outcome.output
    assert "left for a person: tests/test_names.py:6:" in outcome.output
    assert "left for a person: tests/test_names.py:7:" in outcome.output


def test_prose_and_other_names_do_not_refuse(tree):
    tree.write(
        {
            "fxpkg/ops.py": OPS,
            "tools/notes.py": '''\
                """See fxpkg/experimental/feat/README.md and fxpkg.experimental.feat."""
                # fxpkg.experimental.feat is experimental
                FEATURES = ["feat", "fxpkg.experimental.feature", "experimental/feature"]
                PATH = "experimental" + "/" + "other" + "/feat"
                EMPTY, HERE = f"", __import__("pathlib").Path()
                ''',
        }
    )
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output


def test_files_git_ignores_are_not_read(tree):
    tree.write({"fxpkg/ops.py": OPS, ".gitignore": "scratch/\n", "scratch/try.py": "import fxpkg.experimental.feat\n",
                "tools/new.py": "from fxpkg.experimental.feat import kernels\n"})
    subprocess.run(["git", "init", "-q", str(tree.root)], check=True)
    outcome = checked(tree)  # tools/new.py is untracked, but not ignored
    assert reasons(outcome.output) == [
        "tools/new.py:1: imports kernels from fxpkg.experimental.feat, which the removal deletes"]
    (tree.root / "tools/new.py").unlink()
    assert checked(tree).exit_code == 0
    assert (tree.root / "scratch/try.py").exists()


# links and special files --------------------------------------------------------------


def _link_feature(root: Path, outside: Path) -> None:
    feature = root / "fxpkg/experimental/feat"
    shutil.move(str(feature), str(outside / "feat"))
    os.symlink(outside / "feat", feature)


HAZARDS = {
    "linked feature": (_link_feature, "fxpkg/experimental/feat is a symbolic link, not a directory"),
    "link in the feature": (lambda root, outside: os.symlink(outside / "secret.py", root / "fxpkg/experimental/feat/s.py"),
                            "fxpkg/experimental/feat/s.py is a symbolic link"),
    "fifo in the feature": (lambda root, outside: os.mkfifo(root / "fxpkg/experimental/feat/pipe"),
                            "fxpkg/experimental/feat/pipe is a FIFO"),
    "link in the tests": (lambda root, outside: os.symlink(outside / "secret.py", root / "tests/experimental/feat/s.py"),
                          "tests/experimental/feat/s.py is a symbolic link"),
    "linked tests": (lambda root, outside: os.symlink(outside, root / "tests/experimental/feat"),
                     "tests/experimental/feat is a symbolic link, not a directory"),
}


@pytest.mark.parametrize("hazard", sorted(HAZARDS))
def test_a_link_or_special_file_refuses_before_anything_is_written(tree, tmp_path_factory, hazard):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.py").write_text("SECRET = 1\n")
    tree.write({"fxpkg/ops.py": OPS})
    if hazard != "linked tests":
        tree.write({"tests/experimental/feat/test_feat.py": "def test_it():\n    pass\n"})
    (tree.root / "tests/experimental").mkdir(parents=True, exist_ok=True)
    plant, message = HAZARDS[hazard]
    plant(tree.root, outside)
    outside_before = snapshot(outside)
    outcome = checked(tree)
    assert outcome.exit_code == 1 and message in outcome.output, outcome.output
    assert snapshot(outside) == outside_before


# refusing early ---------------------------------------------------------------------------

EARLY = {
    "a core import_module": ({"fxpkg/dyn.py": "def f():\n    import importlib\n\n"
                              "    return importlib.import_module('fxpkg.experimental.feat.kernels')\n"},
                             "fxpkg/dyn.py:4: loads the feature with importlib.import_module"),
    "a core TYPE_CHECKING import": ({"fxpkg/typed.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                     "    from .experimental.feat.kernels import run\n"},
                                    "fxpkg/typed.py:4: an import of the feature under `if TYPE_CHECKING:`"),
}


@pytest.mark.parametrize("shape", sorted(EARLY))
def test_a_refusal_that_needs_no_edit_comes_before_any_edit_is_planned(tree, monkeypatch, shape):
    def no_edit(*args):
        raise AssertionError("an edit was planned before the refusal")

    monkeypatch.setattr("policy_checks.lifecycle.remove.model.parse", no_edit)
    files, reason = EARLY[shape]
    tree.write({"fxpkg/ops.py": OPS, **files})
    result = CliRunner().invoke(main, ["remove", "feat", "--root", str(tree.root)])
    assert result.exit_code == 1 and reason in result.output, result.output


def test_a_refusal_names_every_kept_use_found_before_and_after_the_plan(tree):
    """A script importing the feature (found before any edit) and one using what the
    edits take away (found after them) are one refusal, not two in turn."""
    tree.write({"fxpkg/ops.py": OPS, "tools/bench.py": "import fxpkg.experimental.feat\n",
                "tools/use.py": "from fxpkg.ops import fancy\n"})
    result = CliRunner().invoke(main, ["remove", "feat", "--root", str(tree.root)])
    assert result.exit_code == 1
    assert reasons(result.output) == [
        "tools/bench.py:1: imports fxpkg.experimental.feat, which the removal deletes",
        "tools/use.py:1: imports fancy from fxpkg.ops, which the removal deletes",
    ]


def test_core_imports_no_edit_removes_are_named_together_with_the_kept_uses(tree):
    """Two core imports that no edit removes and a script importing the feature: one
    answer names all three, so a person fixes them in one pass."""
    files = {path: text for shape in sorted(EARLY) for path, text in EARLY[shape][0].items()}
    tree.write({"fxpkg/ops.py": OPS, **files, "tools/bench.py": "import fxpkg.experimental.feat\n"})
    result = CliRunner().invoke(main, ["remove", "feat", "--root", str(tree.root)])
    assert result.exit_code == 1
    for _, reason in EARLY.values():
        assert reason in result.output, result.output
    assert "tools/bench.py:1: imports fxpkg.experimental.feat, which the removal deletes" in result.output
    assert tree.read("fxpkg/ops.py") == OPS.encode("utf-8")
