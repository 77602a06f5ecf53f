"""``policy-check fix`` runs the checker as ``policy-check run`` does: the baseline's findings
are neither fixed nor listed, the facts cache (outside the tree) is used, libcst parses only
the files it rewrites, and ``--diff`` exits 1 exactly when it would change a file."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

from click.testing import CliRunner

from policy_checks.cli import main
from policy_checks.fix.cli import fix, run_fix
from policy_checks.fix.findings import collect, read_baseline

from .test_fix_cli import EXPECTED, PROJECT, _checker_findings, _snapshot

GEMM_MOVABLE = (
    "from .api_logging import flashinfer_api\n"
    "from .experimental.feat.kernels import run\n"
    "\n\n"
    "@flashinfer_api\n"
    "def mm(x):\n"
    "    return run(x)\n"
)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def accept_today(root, *extra: str) -> dict:
    """``policy-check baseline``: today's findings become the baseline; its entries."""
    result = invoke("baseline", "--root", str(root), *extra)
    assert result.exit_code == 0, result.output
    return json.loads((root / "policy-check-baseline.json").read_text())


def test_baselined_findings_are_neither_fixed_nor_listed(tree):
    tree.write(PROJECT)
    accept_today(tree.root)
    before = _snapshot(tree.root)
    result = CliRunner().invoke(fix, ["--root", str(tree.root)])
    assert result.exit_code == 0, result.output
    assert _snapshot(tree.root) == before
    assert "needs a person" not in result.output
    assert "fixed 0 finding(s) in 0 file(s); 0 need(s) a person; 6 baselined finding(s) left alone" in result.output

    # --no-baseline: every finding, as before there was a baseline
    assert run_fix([], root=str(tree.root), no_baseline=True) == 1  # the scratch feature's EXP009 are left
    assert _checker_findings(tree) == set()


def test_only_a_new_finding_is_fixed(tree):
    tree.write({"fxpkg/gemm.py": GEMM_MOVABLE})
    tree.write({"fxpkg/legacy.py": GEMM_MOVABLE.replace("def mm", "def legacy_mm")})
    accept_today(tree.root)
    tree.write({"fxpkg/ops.py": GEMM_MOVABLE.replace("def mm", "def ops_mm")})  # new debt
    result = CliRunner().invoke(fix, ["--diff", "--root", str(tree.root)])
    assert result.exit_code == 1, result.output  # a file would change
    assert "+++ b/fxpkg/ops.py" in result.output
    assert "fxpkg/gemm.py" not in result.output and "fxpkg/legacy.py" not in result.output
    assert "2 baselined finding(s) left alone" in result.output
    assert run_fix([], root=str(tree.root)) == 0
    assert b"def ops_mm(x):\n    from .experimental.feat.kernels import run\n" in tree.read("fxpkg/ops.py")
    assert tree.read("fxpkg/gemm.py").decode() == GEMM_MOVABLE  # baselined: left as it was


def test_diff_exits_1_only_when_it_would_change_a_file(tree):
    tree.write(PROJECT)
    assert CliRunner().invoke(fix, ["--diff", "--root", str(tree.root)]).exit_code == 1
    assert run_fix([], root=str(tree.root)) == 1  # the scratch feature's EXP009 are left
    again = CliRunner().invoke(fix, ["--diff", "--root", str(tree.root)])
    assert (again.exit_code, again.stdout) == (0, "")

    # only findings left for a person: nothing to change, so 0 (plain `fix` says 1: they are left)
    tree.write({"fxpkg/held.py": "from .experimental.feat.kernels import run\n\nCONSTANT = run(1)\n"})
    held = CliRunner().invoke(fix, ["--diff", "--root", str(tree.root)])
    assert held.exit_code == 0 and "needs a person: fxpkg/held.py:1:1: EXP001" in held.output
    assert run_fix([], root=str(tree.root)) == 1


def test_diff_writes_nothing_in_the_tree_and_keeps_the_cache_outside(tree, private_cache):
    tree.write(PROJECT)
    before = _snapshot(tree.root)
    assert run_fix([], root=str(tree.root), diff=True) == 1
    assert _snapshot(tree.root) == before
    stored = [p for p in (private_cache / "policy-check").rglob("*") if p.is_file()]
    assert stored, "fix --diff runs the checker with its facts cache, as run does"
    assert all(tree.root not in p.parents for p in stored)
    # --no-cache: neither read nor written
    for path in stored:
        path.unlink()
    assert run_fix([], root=str(tree.root), diff=True, use_cache=False) == 1
    assert not [p for p in (private_cache / "policy-check").rglob("*") if p.is_file()]


def test_a_baseline_that_cannot_be_used_is_an_error(tree):
    tree.write(PROJECT)
    (tree.root / "policy-check-baseline.json").write_text("{}")
    result = CliRunner().invoke(fix, ["--diff", "--root", str(tree.root)])
    assert result.exit_code == 2 and "policy-check-baseline.json" in result.output
    assert "git checkout -- policy-check-baseline.json" in result.output
    result = CliRunner().invoke(fix, ["--root", str(tree.root), "--baseline", "x.json", "--no-baseline"])
    assert result.exit_code == 2 and "exclude each other" in result.output
    # --no-baseline reads no file at all
    assert CliRunner().invoke(fix, ["--diff", "--no-baseline", "--root", str(tree.root)]).exit_code == 1


def test_an_explicit_baseline_file_is_used(tree, tmp_path_factory):
    tree.write(PROJECT)
    elsewhere = tmp_path_factory.mktemp("baselines") / "accepted.json"
    assert invoke("baseline", "--root", str(tree.root), "--file", str(elsewhere)).exit_code == 0
    assert read_baseline(tree.root) is None  # none at the root
    result = CliRunner().invoke(fix, ["--diff", "--root", str(tree.root), "--baseline", str(elsewhere)])
    assert result.exit_code == 0 and "6 baselined finding(s) left alone" in result.output
    accepted = read_baseline(tree.root, elsewhere)
    assert {(f.rule, f.path, f.line) for f in collect(tree.project, [], ["EXP001"], False, accepted)} == set()
    assert {(f.rule, f.path, f.line) for f in collect(tree.project, [], ["EXP001"], False)} == {
        f for f in EXPECTED if f[0] == "EXP001"}


def test_nothing_to_rewrite_imports_no_libcst(tree):
    """libcst is for the files fix rewrites: with every finding baselined it is not loaded."""
    tree.write(PROJECT)
    accept_today(tree.root)
    code = (
        "import sys\n"
        "from policy_checks.fix.cli import run_fix\n"
        f"status = run_fix([], root={str(tree.root)!r}, diff=True)\n"
        "assert status == 0, status\n"
        "assert not [m for m in sys.modules if m == 'libcst' or m.startswith('libcst.')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def _hinted_fix(output: str) -> tuple:
    """The ``fix`` command line the text report's "Next:" hint names, and the count it
    says that command rewrites."""
    match = re.search(r"`(policy-check fix[^`]*)` rewrites the (\d+) finding\(s\) marked \[\*\]", output)
    assert match, output
    return shlex.split(match[1])[1:], int(match[2])


def test_the_hint_after_a_baseline_names_the_fix_that_rewrites_what_it_marks(tree):
    """Run without the baseline lists [*] findings the baseline accepts: plain ``fix``
    would leave them alone as baselined, so the hint names ``fix --no-baseline``, and
    that command does take each one."""
    tree.write({**PROJECT, "fxpkg/gemm.py": GEMM_MOVABLE})
    accept_today(tree.root)
    plain = invoke("fix", "--diff", "--root", str(tree.root))
    assert "would fix 0 finding(s)" in plain.output and "baselined finding(s) left alone" in plain.output
    assert "Next:" not in invoke("run", "--root", str(tree.root)).output  # nothing new

    run = invoke("run", "--root", str(tree.root), "--no-baseline")
    command, count = _hinted_fix(run.output)
    assert command == ["fix", "--no-baseline"] and count >= 1
    done = invoke(*command, "--diff", "--root", str(tree.root))
    handled = len(re.findall(r"^(would fix|needs a person): \S+ EXP00[1246] ", done.output, re.M))
    assert handled == count and "left alone" not in done.output, done.output


def test_the_hint_with_another_baseline_file_names_it(tree, tmp_path_factory):
    tree.write(PROJECT)
    other = tmp_path_factory.mktemp("baselines") / "an older baseline.json"
    assert invoke("baseline", "--root", str(tree.root), "--file", str(other)).exit_code == 0
    tree.write({"fxpkg/ops.py": GEMM_MOVABLE.replace("def mm", "def ops_mm")})  # [*] findings it lacks
    accept_today(tree.root)  # the default baseline accepts them

    run = invoke("run", "--root", str(tree.root), "--baseline", str(other))
    command, count = _hinted_fix(run.output)
    assert command == ["fix", "--baseline", str(other)] and count >= 1
    done = invoke(*command, "--diff", "--root", str(tree.root))
    handled = len(re.findall(r"^(would fix|needs a person): \S+ EXP00[1246] ", done.output, re.M))
    assert handled == count, done.output
