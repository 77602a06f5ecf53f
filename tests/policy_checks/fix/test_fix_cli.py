"""``policy-check fix`` end to end, against the real checker (``policy-check run``)."""

from __future__ import annotations

import os
import stat
import sys

import pytest
from click.testing import CliRunner

from policy_checks.fix.apply import FIXABLE_RULES
from policy_checks.fix.cli import fix, run_fix
from policy_checks.fix.findings import collect

from ..conftest import write_raw_name

GEMM = (
    b"from .api_logging import flashinfer_api  # stable markers\r\n"
    b"from .utils import backend_requirement\r\n"
    b"from .experimental.feat.support import feat_check\r\n"
    b"from .experimental.feat.kernels import run\r\n"
    b"\r\n"
    b"\r\n"
    b"@backend_requirement({'feat': feat_check})\r\n"
    b"def mm(x, backend='auto'):\r\n"
    b'    """Matrix multiply."""\r\n'
    b"    return run(x)\r\n"
)

PROJECT = {
    "fxpkg/__init__.py": '"""The package."""\n\nfrom .experimental.feat.kernels import scale\n\n__all__ = ["scale"]\n',
    "fxpkg/experimental/feat/support.py": """\
        from ...utils import supported_compute_capability


        @supported_compute_capability([0])
        def feat_check(x, backend="auto"):
            return True
        """,
    "fxpkg/experimental/feat/api.py": """\
        from ...api_logging import flashinfer_experimental_api


        @flashinfer_experimental_api
        def feat_api(x):
            return x
        """,
    "fxpkg/gemm.py": GEMM,
    "docs/api/ops.rst": """\
        Operators
        =========

        .. currentmodule:: fxpkg.gemm

        .. autosummary::
           :toctree: generated

           mm

        .. autofunction:: fxpkg.experimental.feat.api.feat_api

        .. autofunction:: fxpkg.experimental.feat.kernels.run
           :noindex:

        End.
        """,
}

# what the fixture must make the checker report, before any fix
EXPECTED = {
    ("EXP001", "fxpkg/gemm.py", 3),
    ("EXP001", "fxpkg/gemm.py", 4),
    ("EXP002", "fxpkg/__init__.py", 3),
    ("EXP004", "fxpkg/experimental/feat/support.py", 4),  # its first decorator
    ("EXP006", "docs/api/ops.rst", 11),
    ("EXP006", "docs/api/ops.rst", 13),
}


def _snapshot(root):
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def _checker_findings(tree, rules=FIXABLE_RULES + ("EXP007",)):
    return {(f.rule, f.path, f.line) for f in collect(tree.project, [], rules, use_cache=False)}


@pytest.fixture
def project(tree):
    tree.write(PROJECT)
    assert _checker_findings(tree) == EXPECTED
    return tree


def test_fix_clears_the_findings_keeps_the_code_working_and_is_idempotent(project):
    os.chmod(project.root / "fxpkg/gemm.py", 0o640)
    assert run_fix([], root=str(project.root)) == 1  # the scratch feature's EXP009 are left (no FEATURE.toml)
    assert _checker_findings(project) == set()  # nothing fixed comes back, no EXP007 appears

    gemm = project.read("fxpkg/gemm.py")
    assert b"\n" not in gemm.replace(b"\r\n", b"")  # CRLF stays CRLF
    assert gemm.startswith(b"from .api_logging import flashinfer_api  # stable markers\r\n")
    assert b"    \"\"\"Matrix multiply.\"\"\"\r\n    from .experimental.feat.kernels import run\r\n" in gemm
    assert stat.S_IMODE((project.root / "fxpkg/gemm.py").stat().st_mode) == 0o640
    assert project.read("docs/api/ops.rst").decode() == (
        "Operators\n=========\n\n.. currentmodule:: fxpkg.gemm\n\n"
        ".. autosummary::\n   :toctree: generated\n\n   mm\n\nEnd.\n"
    )

    before = _snapshot(project.root)
    assert run_fix([], root=str(project.root)) == 1
    assert _snapshot(project.root) == before  # a second run changes nothing

    package = project.imported("fxpkg")
    gemm_module = project.imported("fxpkg.gemm")
    assert "fxpkg.experimental.feat.kernels" not in sys.modules
    assert gemm_module.mm(1) == 2 and package.scale(1) == 10
    assert gemm_module.mm.backend_checks["feat"].is_experimental


@pytest.mark.timeout(120)  # reading a FIFO would wait forever
def test_fix_is_not_stopped_by_files_it_cannot_read_or_name(project):
    """Looking for other importers of a moved name, fix reads no FIFO (it would
    block) and counts no file whose name is not UTF-8 (no module has such a name)."""
    os.mkfifo(project.root / "fxpkg/fifo.py")
    write_raw_name(project.root, b"fxpkg/\xff\xfe.py", b"from fxpkg.gemm import run\n")
    assert run_fix([], root=str(project.root), rules=FIXABLE_RULES, selected=True) == 0
    assert b"    from .experimental.feat.kernels import run\r\n" in project.read("fxpkg/gemm.py")
    assert _checker_findings(project) == set()


def test_diff_shows_the_changes_and_writes_nothing(project):
    before = _snapshot(project.root)
    result = CliRunner().invoke(fix, ["--diff", "--root", str(project.root)])
    assert _snapshot(project.root) == before
    assert "+@experimental_backend\n" in result.output
    assert b"-from .experimental.feat.kernels import run\r\n" in result.stdout_bytes  # CRLF shown as it is
    assert "-.. autofunction:: fxpkg.experimental.feat.api.feat_api\n" in result.output
    # the import of the still unmarked checker can only go once the marker is there
    assert "needs a person: fxpkg/gemm.py:3:1: EXP001 'feat_check' is used at module level (line 7)" in result.output
    assert result.exit_code == 1


def test_nothing_is_written_over_a_file_that_changed_during_the_run(project, capsys):
    edited = project.root / "fxpkg/gemm.py"

    def someone_edits(path):
        if path == edited:
            path.write_bytes(path.read_bytes() + b"# edited meanwhile\r\n")

    assert run_fix([], root=str(project.root), rules=["EXP001"], before_replace=someone_edits) == 1
    assert edited.read_bytes() == GEMM + b"# edited meanwhile\r\n"
    assert not [p for p in edited.parent.iterdir() if p.name.startswith(".")]  # no temporary left
    out = capsys.readouterr().out
    assert "needs a person: fxpkg/gemm.py:4:1: EXP001 fxpkg/gemm.py changed on disk during the run; nothing written" in out
    assert "fixed 0 finding(s) in 0 file(s)" in out


def test_select_limits_the_rules_and_rejects_rules_without_a_fix(project):
    result = CliRunner().invoke(fix, ["--select", "EXP006", "--root", str(project.root)])
    assert result.exit_code == 0, result.output
    assert _checker_findings(project) == {f for f in EXPECTED if f[0] != "EXP006"}

    result = CliRunner().invoke(fix, ["--select", "EXP003", "--root", str(project.root)])
    assert result.exit_code == 2 and "EXP003: no automatic fix" in result.output


def test_a_bad_setting_is_a_clear_error(tree):
    (tree.root / "pyproject.toml").write_text('[tool.policy-check]\npackage = "not a module"\n')
    result = CliRunner().invoke(fix, ["--root", str(tree.root)])
    assert result.exit_code == 2 and "package" in result.output


def test_a_path_outside_the_project_is_a_clear_error(tree, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    result = CliRunner().invoke(fix, ["--root", str(tree.root), str(elsewhere)])
    assert result.exit_code == 2 and "outside the project root" in result.output
