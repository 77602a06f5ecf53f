"""``policy-check fix`` says what it fixed and what is left, a count per rule, and exits 1
while the next ``policy-check run`` would report anything (as ``ruff check --fix``);
``--exit-zero`` opts out."""

from __future__ import annotations

from click.testing import CliRunner

from policy_checks.cli import main

from .test_fix_cli import PROJECT

# a module-level use of an experimental import (EXP001 that no rewrite can defer) and a core helper that is no
# entry point importing experimental code (EXP007): neither has an automatic fix
UNFIXABLE = {
    "fxpkg/aot.py": "from .experimental.feat.kernels import gen_feat_module\n\nSPECS = [gen_feat_module]\n",
    "fxpkg/sparse.py": "def _plan(x):\n    from .experimental.feat.kernels import run\n    return run(x)\n",
    "fxpkg/experimental/feat/kernels.py": "def run(x):\n    return x\n\n\ndef gen_feat_module():\n    return None\n",
}


def fix(root, *args):
    return CliRunner().invoke(main, ["fix", "--root", str(root), *args])


def test_fix_counts_what_is_left_per_rule_and_fails_until_the_run_would_pass(tree):
    tree.write(PROJECT)
    tree.write(UNFIXABLE)
    done = fix(tree.root)
    assert done.exit_code == 1, done.output
    assert "fixed 5 finding(s) in 4 file(s)" in done.output
    [left] = [line for line in done.output.splitlines() if line.startswith("Left: ")]
    assert "(EXP001 1, EXP007 1, EXP009 " in left, left  # EXP001: one the fixer leaves to a person
    run = CliRunner().invoke(main, ["run", "--root", str(tree.root), "--no-cache"])
    assert run.exit_code == 1 and f"{left.split()[1]} finding(s)" in run.output  # fix's count is run's

    assert fix(tree.root, "--exit-zero").exit_code == 0  # the opt-out: the same report, status 0
    selected = fix(tree.root, "--select", "EXP004")
    assert selected.exit_code == 0 and "Left: no finding" in selected.output  # --select: that rule's findings only
