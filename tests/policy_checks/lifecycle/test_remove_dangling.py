"""``policy-check remove``: kept files that would still use what the removal deletes.

Every kept Python file (core modules, stable tests, other features, examples) is
read after the plan: an import or attribute use of a removed API or module, and a
removed backend named where a backend is meant, refuse the whole removal with
file:line reasons; other mentions of a retired backend are listed for a person.
"""

from __future__ import annotations

import textwrap

from click.testing import CliRunner

from policy_checks.cli import main

INIT = """\
import importlib

_LAZY_EXPORTS = {"fancy": "ops", "op": "ops"}


def __getattr__(name):
    return getattr(importlib.import_module(f"fxpkg.{_LAZY_EXPORTS[name]}"), name)
"""

OPS = """\
from .api_logging import flashinfer_experimental_api
from .experimental.feat.support import check_feat
from .utils import backend_requirement


def _check_plain(x, backend="auto"):
    return True


@backend_requirement({"plain": _check_plain, "feat": check_feat})
def op(x, backend="auto"):
    return x


@flashinfer_experimental_api
def fancy(x):
    from .experimental.feat.kernels import run

    return run(x)
"""

SUPPORT = """\
from ...utils import experimental_backend


@experimental_backend
def check_feat(x, backend="auto"):
    return True
"""


def reasons(output: str) -> list:
    """The refusal's file:line reasons, one a line."""
    return [line.strip() for line in output.splitlines()[1:] if line.startswith("  ")]


def remove(tree, files):
    tree.write({"fxpkg/__init__.py": INIT, "fxpkg/ops.py": OPS, "fxpkg/experimental/feat/support.py": SUPPORT, **files})
    before = {p: p.read_bytes() for p in tree.root.rglob("*") if p.is_file()}
    result = CliRunner().invoke(main, ["remove", "feat", "--root", str(tree.root)])
    if result.exit_code != 0:
        assert {p: p.read_bytes() for p in tree.root.rglob("*") if p.is_file()} == before, "written although refused"
    return result


def test_a_removed_api_imported_or_used_through_the_package_refuses(tree):
    test = """\
        import fxpkg
        from fxpkg import fancy as f, op


        def test_it():
            assert fxpkg.fancy(1) == 2
        """
    result = remove(tree, {"tests/test_ops.py": test})
    assert result.exit_code == 1
    assert "refused, nothing written: kept files would use what the removal deletes:" in result.output
    assert "  tests/test_ops.py:2: imports fancy from fxpkg, which the removal deletes\n" in result.output
    assert "  tests/test_ops.py:6: uses fxpkg.fancy, which the removal deletes\n" in result.output


def test_an_example_or_another_feature_using_the_removed_code_refuses(tree):
    result = remove(
        tree,
        {
            "examples/demo.py": "from fxpkg.ops import fancy\n",
            "fxpkg/experimental/other/__init__.py": "def go():\n    from ..feat.kernels import run\n\n    return run\n",
        },
    )
    # an import of the feature itself, found before the plan of core, and a use of what
    # the plan takes away, found after it, are named in one refusal
    assert result.exit_code == 1
    assert reasons(result.output) == [
        "examples/demo.py:1: imports fancy from fxpkg.ops, which the removal deletes",
        "fxpkg/experimental/other/__init__.py:2: imports run from fxpkg.experimental.feat.kernels, which the "
        "removal deletes",
    ]
    (tree.root / "fxpkg/experimental/other/__init__.py").unlink()
    result = remove(tree, {"examples/demo.py": "from fxpkg.ops import fancy\n"})
    assert result.exit_code == 1
    assert "examples/demo.py:1: imports fancy from fxpkg.ops" in result.output


def test_a_retired_backend_named_where_a_backend_is_meant_refuses(tree):
    test = """\
        import pytest

        from fxpkg import op


        @pytest.mark.parametrize("x,backend", [(1, "plain"), (2, "feat")])
        def test_each(x, backend):
            assert op(x, backend=backend) == x


        def test_by_name():
            assert op(1, backend="feat") == 1
            assert "feat" in op.backend_checks
            assert op.backend_checks["feat"] is not None
            assert sorted(op.backend_checks) != ["feat"]  # absence: a mention, not a refusal
            assert str(op).count("feat") >= 0
        """
    result = remove(tree, {"tests/test_ops.py": test})
    assert result.exit_code == 1
    reasons = [line.strip() for line in result.output.splitlines()[1:]]
    assert reasons == [
        "tests/test_ops.py:6: parametrizes a backend with 'feat', a backend the removal deletes",
        "tests/test_ops.py:12: passes backend='feat', a backend the removal deletes",
        "tests/test_ops.py:13: compares with 'feat', a backend the removal deletes",
        "tests/test_ops.py:14: looks up 'feat', a backend the removal deletes",
    ]


def test_other_mentions_of_a_retired_backend_are_left_for_a_person(tree):
    test = """\
        def test_messages():
            \"\"\"Mentions "feat" only in prose.\"\"\"
            assert "feat" != "plain"
            labels = {"feat": 1}
        """
    result = remove(tree, {"tests/test_labels.py": test})
    assert result.exit_code == 0, result.output
    assert "left for a person: tests/test_labels.py:3: assert \"feat\" != \"plain\"" in result.output
    assert "left for a person: tests/test_labels.py:4: labels = {\"feat\": 1}" in result.output
    assert "test_labels.py:2" not in result.output


OTHER_SERVING = """\
from .utils import backend_requirement


def _check(x, backend="auto"):
    return True


@backend_requirement({"feat": _check})
def other_op(x, backend="auto"):
    return x
"""  # another API that keeps serving the backend "feat"


def test_a_backend_name_another_api_keeps_is_checked_per_api(tree):
    test = """\
        from fxpkg.other import other_op
        from fxpkg.ops import op


        def test_it():
            assert other_op(1, backend="feat") == 1
            assert "feat" in other_op.backend_checks
            assert op(1, backend="feat") == 1
        """
    result = remove(tree, {"fxpkg/other.py": OTHER_SERVING, "tests/test_ops.py": test})
    assert result.exit_code == 1
    reasons = [line.strip() for line in result.output.splitlines()[1:]]
    assert reasons == ["tests/test_ops.py:8: calls fxpkg.ops.op with backend='feat', a backend the removal deletes"]
    tree.write({"tests/test_ops.py": textwrap.dedent(test).replace('    assert op(1, backend="feat") == 1\n', "")})
    result = CliRunner().invoke(main, ["remove", "feat", "--root", str(tree.root)])
    assert result.exit_code == 0, result.output
    assert '"feat": _check' in tree.read("fxpkg/other.py").decode()


def test_a_served_backend_is_looked_for_only_beside_an_api_that_loses_it(tree):
    """A backend other APIs still serve is wrong only in a call of an API that loses it;
    such a call spells that API, and an alias's import does too."""
    aliased = """\
        from fxpkg.ops import op as run_it


        def test_it():
            assert run_it(1, backend="feat") == 1
        """
    result = remove(tree, {"fxpkg/other.py": OTHER_SERVING, "tests/test_alias.py": aliased})
    assert result.exit_code == 1
    assert "tests/test_alias.py:5: calls fxpkg.ops.op with backend='feat', a backend the removal deletes" in result.output


def test_a_file_spelling_a_served_backend_but_no_api_losing_it_is_not_read(tmp_path):
    from policy_checks.lifecycle.remove.kept import Lost
    from policy_checks.lifecycle.texts import GoneFiles
    from policy_checks.lifecycle.texts import Texts

    files = {"both.py": 'op(1, backend="cake")\n', "backend.py": 'x = "cake"\n', "api.py": "op(1)\n",
             "retired.py": 'y = "gone"\n'}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    lost = Lost(set(), {"cake": {"pkg.ops.op"}, "gone": {"pkg.ops.op"}}, {"gone"}, set(),
                GoneFiles(frozenset(), ("pkg", "experimental", "feat"), "pkg/experimental/feat"), {"gone"})
    texts = Texts(tmp_path)
    assert {name for name in files if lost.may_use(texts, name)} == {"both.py", "retired.py"}


SHARED_OPS = OPS.replace('''def op(x, backend="auto"):
    return x
''', '''def op(x, backend="auto", backends=("plain",)):
    """Runs on "plain"; the experimental "feat" backend is opt-in."""
    if list(backends) not in (["plain"], ["feat"]):
        raise ValueError(
            "op runs on the 'plain' and 'feat' backends only"
        )
    return x


def _check_other(x, backend="auto"):
    return True


@backend_requirement({"feat": _check_other})
def other_op(x, backend="auto"):
    """Its own "feat" backend stays."""
    return x
''')


def test_what_no_step_edits_in_an_api_losing_a_backend_is_listed_for_a_person(tree):
    """FlashInfer 0.7.x's ``mm_fp4`` after ``remove cake_nvfp4_per_token``: a backend
    list no edit can shorten, an error message and a docstring still name the backend
    the API lost, while another API of the module keeps serving it."""
    result = remove(tree, {"fxpkg/ops.py": SHARED_OPS})
    assert result.exit_code == 0, result.output
    after = tree.read("fxpkg/ops.py").decode()
    assert '"feat": _check_other' in after and '(["plain"], ["feat"])' in after
    lines = after.splitlines()
    for text in ('"""Runs on "plain"; the experimental "feat" backend is opt-in."""',
                 'if list(backends) not in (["plain"], ["feat"]):',
                 "\"op runs on the 'plain' and 'feat' backends only\""):
        line = next(n for n, written in enumerate(lines, 1) if written.strip() == text)
        assert f"left for a person: fxpkg/ops.py:{line}: {text}" in result.output, result.output
    assert "Its own" not in result.output


def test_a_refusal_says_the_next_step_for_each_kind_of_use_naming_its_files(tree):
    """One answer names every kept use and, for each kind, what a person does next:
    an import of what goes, and a removed backend passed to a kept API."""
    result = remove(tree, {"tools/bench.py": "from fxpkg.experimental.feat import kernels\n",
                           "tools/call.py": "from fxpkg.ops import op\n\nop(1, backend=\"feat\")\n"})
    assert result.exit_code == 1
    assert reasons(result.output) == [
        "tools/bench.py:1: imports kernels from fxpkg.experimental.feat, which the removal deletes",
        "tools/call.py:3: passes backend='feat', a backend the removal deletes",
    ], result.output
    head = result.output.splitlines()[0]
    assert ("next, in tools/bench.py, drop each import, use or load of what goes (or the file, if it serves "
            "only the feature); in tools/call.py, drop each branch, argument or list entry naming the removed "
            "backend; then run remove again") in head, head
