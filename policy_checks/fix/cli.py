"""``policy-check fix``: apply the safe rewrites for EXP001, EXP002, EXP004 and EXP006."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Callable, Optional, Sequence

import click

from ..report import click_options as shared
from .apply import FIXABLE_RULES, plan, write
from ..editing.target import Refused
from .findings import FixError, check, load_project, read_baseline

MAX_ROUNDS = 3


def _rules(value: Optional[str]) -> Sequence[str]:
    if not value:
        return FIXABLE_RULES
    rules = [r.strip().upper() for r in value.split(",") if r.strip()]
    unknown = [r for r in rules if r not in FIXABLE_RULES]
    if unknown:
        raise click.BadParameter(
            f"{', '.join(unknown)}: no automatic fix (fixable: {', '.join(FIXABLE_RULES)})", param_hint="--select"
        )
    return rules


@click.command(epilog="Exit status: 0, no finding left (with --diff: nothing to change); 1, findings left, of any "
                       "rule, as `policy-check run` would report them (with --diff: files would change); 2, a usage, "
                       "configuration or baseline error. --exit-zero: 0 whatever is left.")
@click.argument("paths", nargs=-1, type=click.Path())
@shared.diff("the fixes")
@click.option("--select", default=None, help="Comma-separated rule ids to fix (default: all fixable).")
@shared.root()
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=True, path_type=Path), default=None,
              metavar="FILE", help="Leave the findings this baseline accepts alone "
              "(default: policy-check-baseline.json at the root, when it exists).")
@click.option("--no-baseline", is_flag=True, help="Ignore the baseline: fix (and list) every finding.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the checker's facts cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the facts cache under DIR (also $POLICY_CHECK_CACHE_DIR), as `policy-check run` does.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings are left (as `ruff check --fix --exit-zero`).")
def fix(paths: Sequence[str], diff: bool, select: Optional[str], root: Optional[str], baseline_file: Optional[Path],
        no_baseline: bool, no_cache: bool, cache_dir: Optional[Path], exit_zero: bool) -> None:
    """Fix what can be fixed safely; report what needs a person.

    Findings the baseline accepts are left alone, as `policy-check run` leaves them out.
    """
    if baseline_file is not None and no_baseline:
        raise click.UsageError("--baseline and --no-baseline exclude each other")
    status = run_fix(paths, diff=diff, rules=_rules(select), root=root, selected=bool(select), baseline_file=baseline_file,
                     no_baseline=no_baseline, use_cache=not no_cache, cache_dir=str(cache_dir) if cache_dir else None)
    raise SystemExit(0 if exit_zero and status == 1 else status)


def run_fix(
    paths: Sequence[str],
    *,
    diff: bool = False,
    rules: Sequence[str] = FIXABLE_RULES,
    root: Optional[str] = None,
    before_replace: Optional[Callable[[Path], None]] = None,
    baseline_file: Optional[Path] = None,
    no_baseline: bool = False,
    use_cache: bool = True,
    cache_dir: Optional[str] = None,
    selected: bool = False,
) -> int:
    """The command's work, callable from tests. Returns the exit status.

    The checker runs as ``policy-check run`` runs, with the facts cache and the
    baseline. The cache lives outside the tree. So ``--diff`` uses it too, and still
    writes nothing in the tree. `no_baseline` drops the baseline. The baseline's
    findings are neither fixed nor listed. Only the files of the findings left are
    parsed with libcst.

    Without ``--diff``, it checks again after writing and fixes what that uncovers.
    A checker marked in one round makes its import acceptable in the next. It runs at
    most `MAX_ROUNDS` rounds. Then it runs the checker once more with every
    configured rule. It says what is left, a count per rule. With `selected`, only
    `rules` are counted, as ``--select`` asks. Otherwise every rule the settings
    select is counted. The status is 1 while anything is left, since the next
    ``policy-check run`` would fail. ``ruff check --fix`` does the same.

    With ``--diff``, it shows one round. It exits 1 when it would change a file, and
    0 when not. What is left for a person does not change that.
    """
    verb = "would fix" if diff else "fixed"
    fixed, changed_files, baselined = 0, set(), 0
    try:
        target = load_project(Path(root) if root else None, Path(paths[0]) if paths else None)
        accepted = None if no_baseline else read_baseline(target.root, baseline_file)
        for _ in range(1 if diff else MAX_ROUNDS):
            checked = check(target, paths, rules, use_cache=use_cache, cache_dir=cache_dir, baseline=accepted)
            baselined = checked.baselined
            fixes = plan(target, checked.findings)
            for file_fix in fixes:
                if diff:
                    click.echo(file_fix.diff(), nl=False)
                elif file_fix.changed:
                    _write(target, file_fix, before_replace)
                for finding in file_fix.fixed:
                    click.echo(f"{verb}: {_where(finding)} {finding.message}", err=diff)
                fixed += len(file_fix.fixed)
                changed_files |= {file_fix.path} if file_fix.changed else set()
            if not any(f.changed for f in fixes):
                break
        remaining = [] if diff else check(target, paths, rules if selected else (), use_cache=use_cache, cache_dir=cache_dir,
                                          baseline=accepted).findings
    except FixError as error:
        click.echo(f"policy-check fix: {error}", err=True)
        return 2
    left = [item for file_fix in fixes for item in file_fix.left]
    for finding, reason in left:
        click.echo(f"needs a person: {_where(finding)} {reason}", err=diff)
    summary = f"{verb} {fixed} finding(s) in {len(changed_files)} file(s); {len(left)} need(s) a person"
    if baselined:
        summary += f"; {baselined} baselined finding(s) left alone (--no-baseline to fix them too)"
    click.echo(summary, err=diff)
    if diff:
        return 1 if changed_files else 0
    click.echo(left_line(remaining))
    return 1 if remaining or left else 0


def left_line(remaining: Sequence) -> str:
    """What the next ``policy-check run`` would still report, a count per rule."""
    if not remaining:
        return "Left: no finding; `policy-check run` is clean."
    counts = Counter(f.rule for f in remaining)
    per_rule = ", ".join(f"{rule} {n}" for rule, n in sorted(counts.items()))
    return (f"Left: {len(remaining)} finding(s) ({per_rule}); "
            f"`policy-check run` lists them, `policy-check explain ID` says what each rule wants.")


def _write(target, file_fix, before_replace) -> None:
    """Write one file. When that cannot be done, its findings all become leftovers."""
    try:
        write(target, file_fix, before_replace)
        problem = None
    except Refused as reason:
        problem = str(reason).removesuffix("; nothing written")
    except OSError as error:
        problem = f"cannot write the file: {error.strerror or error}"
    if problem:
        every = file_fix.fixed + [finding for finding, _ in file_fix.left]
        file_fix.left = [(finding, f"{problem}; nothing written") for finding in every]
        file_fix.fixed, file_fix.after = [], file_fix.before


def _where(finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.column}: {finding.rule}"
