"""``policy-check run``: check the project and report its findings.

`policy_checks.cli` imports this module only when ``run`` is invoked. It builds the
project's `Context` once and hands it down. The context holds the root, settings, file
selection, baseline and facts cache. A run whose inputs are all unchanged prints the
stored result (`policy_checks.engine.replay`). The runner and the rule registry are
imported only when the checker runs, so ``rules`` and ``explain`` never start them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..model import gitfiles
from ..model.config import ConfigError
from ..report import FORMATS, Options
from ..report import click_options as shared
from ..report.click_options import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS
from ..report.output import emit


@click.command(epilog="""\b
Exit status:
  0  no findings (with a baseline: no new ones)
  1  findings; with --policy-from, also findings the policy change hides
  2  a usage, configuration or baseline error, or an internal error""")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@shared.output_format(FORMATS)
@shared.output_file()
@click.option("-q", "--quiet", is_flag=True, help="Print the findings and nothing else (no summary, no warnings).")
@click.option("--select", default="", help="Comma-separated rule ids or prefixes to check (default: all).")
@click.option("--ignore", default="", help="Comma-separated rule ids or prefixes to skip.")
@shared.work
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--statistics", is_flag=True, help="Print a count per rule instead of the findings (json: adds "
              "\"statistics\").")
@shared.root()
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=True, path_type=Path), default=None,
              metavar="FILE", help="Report only findings this baseline does not accept "
              "(default: policy-check-baseline.json at the root, when it exists).")
@click.option("--no-baseline", is_flag=True, help="Ignore the baseline: report every finding.")
@click.option("--sarif-suppressed", is_flag=True,
              help="SARIF: also list the baselined findings (suppressed) and the fixed baseline entries, for viewers "
              "that honour suppressions (GitHub code scanning does not: they would be open alerts).")
@click.option("--policy-from", metavar="REV", default=None,
              help="Also judge the tree with the policy of the git revision REV (its settings and baseline, and "
              "only the suppression comments it had): a finding that policy reports and the tree's hides fails.")
@click.option("--approved-policy-change", is_flag=True,
              help="With --policy-from: list the findings the policy change hides, but do not fail on them "
              "(for a change a maintainer approved).")
@click.option("--staged", is_flag=True,
              help="In a git work tree, read only the files in git's index: what the next commit holds (the "
              "pre-commit hook's mode; an untracked scratch file is not read).")
def run(paths, output_format, output_file, quiet, select, ignore, jobs, no_cache, cache_dir, exit_zero, statistics,
        root, baseline_file, no_baseline, sarif_suppressed, policy_from, approved_policy_change, staged):
    """Check the project (or only report findings under PATHS)."""
    try:
        with gitfiles.selecting(gitfiles.STAGED if staged else gitfiles.mode()):
            result, names = _result(paths, select, ignore, jobs, no_cache, cache_dir, root, baseline_file,
                                    no_baseline, output_format, sarif_suppressed, policy_from,
                                    approved_policy_change, staged)
    except (ConfigError, ValueError) as error:
        click.echo(f"policy-check: error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    except Exception:  # a bug: exit 2, never 1 (which means "findings")
        import traceback

        click.echo(f"policy-check: internal error:\n{traceback.format_exc()}", err=True)
        sys.exit(EXIT_ERROR)
    if not quiet:
        for warning in result.warnings:
            click.echo(f"policy-check: warning: {warning}", err=True)
    options = Options(statistics, quiet, sarif_suppressed, _fix_command(no_baseline, baseline_file))
    report = FORMATS[output_format](result, names, options)
    emit(report, output_file, EXIT_ERROR)
    failing = result.findings or (result.hidden and not result.approved)
    sys.exit(EXIT_FINDINGS if failing and not exit_zero else EXIT_CLEAN)


def _result(paths, select, ignore, jobs, no_cache, cache_dir, root, baseline_file, no_baseline, output_format,
            sarif_suppressed, policy_from, approved_policy_change, staged) -> tuple:
    """``(Result, rule id -> name)`` for `run`'s options.

    It is the stored result of a run on the same inputs (`replay`), when there is one:
    then neither the runner nor the rules are imported. Else it is the checker's, stored
    for the next run. Raises ConfigError or ValueError for bad options.
    """
    from ..engine import replay
    from ..engine.context import Context

    if baseline_file is not None and no_baseline:
        raise ConfigError("--baseline and --no-baseline exclude each other")
    if approved_policy_change and policy_from is None:
        raise ConfigError("--approved-policy-change goes with --policy-from")
    if sarif_suppressed and output_format != "sarif":
        raise ConfigError("--sarif-suppressed goes with --format sarif")
    context = Context.build(root, start=Path(paths[0]) if paths else None, baseline_file=baseline_file,
                            no_baseline=no_baseline, read=False, use_cache=not no_cache, cache_dir=cache_dir,
                            staged=staged)
    plan = replay.plan(context, shared.ids(select), shared.ids(ignore), paths) if policy_from is None else None
    stored = replay.replayed(plan) if plan is not None else None
    if stored is not None:
        return stored
    from ..engine.runner import check
    from ..rules.registry import ALL_IDS

    names = {i: r.name for i, r in ALL_IDS.items()}
    if plan is None:  # nothing will be stored: no hook, no known state
        return _checked(check, context, paths, select, ignore, jobs, baseline_file, policy_from,
                        approved_policy_change), names
    with replay.watching() as seen, gitfiles.known(plan.tree):
        result = _checked(check, context, paths, select, ignore, jobs, baseline_file, policy_from,
                          approved_policy_change)
    if seen is not None:
        replay.remember(plan, result, names, seen)
    return result, names


def _fix_command(no_baseline: bool, baseline_file) -> str:
    """The ``policy-check fix`` that sees the findings this run reports.

    It passes the baseline this run applied, or none. Plain ``fix`` applies the
    default baseline and leaves what it accepts alone.
    """
    if no_baseline:
        return "policy-check fix --no-baseline"
    if baseline_file is not None:
        import shlex

        return f"policy-check fix --baseline {shlex.quote(str(baseline_file))}"
    return "policy-check fix"


def _checked(check, context, paths, select, ignore, jobs, baseline_file, policy_from, approved_policy_change):
    """The checker's result for `run`'s options on `context`. Raises ConfigError or ValueError for bad ones."""
    from ..rules.registry import checked_elsewhere, unknown_rule

    unknown = unknown_rule(shared.ids(select) + shared.ids(ignore))
    if unknown is not None:
        raise ConfigError(f"--select/--ignore: unknown rule id {unknown!r}")
    for value in shared.ids(select):
        command = checked_elsewhere(value)
        if command is not None:  # it would select nothing and say "All clear"
            raise ConfigError(f"--select: {value} is checked by `policy-check {command}`, not by `run`")
    context = context.reading_baseline(baseline_file)
    options = dict(paths=paths, select=shared.ids(select), ignore=shared.ids(ignore), jobs=jobs)
    if policy_from is None:
        return check(context, **options)
    from ..engine.policy_change import judge

    return judge(context, policy_from, approved=approved_policy_change, **options)
