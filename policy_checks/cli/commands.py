"""The checker's click commands: ``run``, ``baseline``, ``rules`` and ``explain``.

`policy_checks/cli/__init__.py` imports this module only when one of them is invoked. Rule
metadata comes from the rule table (`rules.registry`); only ``run`` and
``baseline`` import the runner; they build the project's `context.Context` once
(root, settings, file selection, baseline, facts cache) and hand it down.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import click

from ..model import gitfiles
from ..model.config import ConfigError
from ..report import FORMATS, Options
from ..report.output import emit
from ..rules.registry import ALL_IDS, AUDIT_RULES, checked_elsewhere, unknown_rule

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
LIST_AT_MOST = 10  # `policy-check baseline` lists the entries it added and removed up to this many


def _ids(value: str) -> tuple:
    return tuple(v.strip().upper() for v in value.split(",") if v.strip()) if value else ()


def _work_options(command):
    """``--jobs``, ``--no-cache`` and ``--cache-dir``: how a command that runs the
    checker gets its facts."""
    options = (
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: CPUs)."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the facts cache."),
        click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
                     help="Keep the facts cache under DIR (default: $POLICY_CHECK_CACHE_DIR, else the user's cache "
                          "directory). Inside the project only if git ignores it and tracks nothing in it."),
    )
    for option in reversed(options):
        command = option(command)
    return command


@click.command(epilog="""\b
Exit status:
  0  no findings (with a baseline: no new ones)
  1  findings; with --policy-from, also findings the policy change hides
  2  a usage, configuration or baseline error, or an internal error""")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option("--format", "--output-format", "output_format", type=click.Choice(sorted(FORMATS)), default="text",
              show_default=True, help="Report format (--output-format is the same option).")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write the report to FILE instead of standard output.")
@click.option("-q", "--quiet", is_flag=True, help="Print the findings and nothing else (no summary, no warnings).")
@click.option("--select", default="", help="Comma-separated rule ids or prefixes to check (default: all).")
@click.option("--ignore", default="", help="Comma-separated rule ids or prefixes to skip.")
@_work_options
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--statistics", is_flag=True, help="Print a count per rule instead of the findings (json: adds "
              "\"statistics\").")
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Project root (default: nearest pyproject.toml with [tool.policy-check], or a flashinfer checkout).")
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
    from ..engine.runner import check

    try:
        with gitfiles.selecting(gitfiles.STAGED if staged else gitfiles.mode()):
            result = _checked(check, paths, select, ignore, jobs, no_cache, cache_dir, root, baseline_file,
                              no_baseline, output_format, sarif_suppressed, policy_from, approved_policy_change,
                              staged)
    except (ConfigError, ValueError) as error:
        click.echo(f"policy-check: error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    except Exception:  # a bug: exit 2, never 1 (which means "findings")
        click.echo(f"policy-check: internal error:\n{traceback.format_exc()}", err=True)
        sys.exit(EXIT_ERROR)
    if not quiet:
        for warning in result.warnings:
            click.echo(f"policy-check: warning: {warning}", err=True)
    names = {i: r.name for i, r in ALL_IDS.items()}
    options = Options(statistics, quiet, sarif_suppressed, _fix_command(no_baseline, baseline_file))
    report = FORMATS[output_format](result, names, options)
    emit(report, output_file, EXIT_ERROR)
    failing = result.findings or (result.hidden and not result.approved)
    sys.exit(EXIT_FINDINGS if failing and not exit_zero else EXIT_CLEAN)


def _fix_command(no_baseline: bool, baseline_file) -> str:
    """The ``policy-check fix`` that sees the findings this run reports: with the
    baseline it applied, or none (plain ``fix`` applies the default baseline and
    leaves what it accepts alone)."""
    if no_baseline:
        return "policy-check fix --no-baseline"
    if baseline_file is not None:
        import shlex

        return f"policy-check fix --baseline {shlex.quote(str(baseline_file))}"
    return "policy-check fix"


def _checked(check, paths, select, ignore, jobs, no_cache, cache_dir, root, baseline_file, no_baseline,
             output_format, sarif_suppressed, policy_from, approved_policy_change, staged=False):
    """The checker's result for `run`'s options; ConfigError or ValueError for bad ones."""
    from ..engine.context import Context

    context = Context.build(root, start=Path(paths[0]) if paths else None, baseline_file=baseline_file,
                            no_baseline=no_baseline, read=False, use_cache=not no_cache, cache_dir=cache_dir,
                            staged=staged)
    unknown = unknown_rule(_ids(select) + _ids(ignore))
    if unknown is not None:
        raise ConfigError(f"--select/--ignore: unknown rule id {unknown!r}")
    for value in _ids(select):
        command = checked_elsewhere(value)
        if command is not None:  # it would select nothing and say "All clear"
            raise ConfigError(f"--select: {value} is checked by `policy-check {command}`, not by `run`")
    if baseline_file is not None and no_baseline:
        raise ConfigError("--baseline and --no-baseline exclude each other")
    if approved_policy_change and policy_from is None:
        raise ConfigError("--approved-policy-change goes with --policy-from")
    if sarif_suppressed and output_format != "sarif":
        raise ConfigError("--sarif-suppressed goes with --format sarif")
    context = context.reading_baseline(baseline_file)
    options = dict(paths=paths, select=_ids(select), ignore=_ids(ignore), jobs=jobs)
    if policy_from is None:
        return check(context, **options)
    from ..engine.policy_change import judge

    return judge(context, policy_from, approved=approved_policy_change, **options)


@click.command("baseline")
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Project root (default: as for `policy-check run`).")
@click.option("--file", "baseline_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="The baseline file (default: policy-check-baseline.json at the root).")
@click.option("--prune", is_flag=True, help="Only remove what no finding uses any more; never add an entry "
              "nor raise a count.")
@_work_options
def baseline_command(root, baseline_file, prune, jobs, no_cache, cache_dir):
    """Write today's findings as the baseline (accepting them), or --prune it.

    Prints how many entries it wrote, and what it added and removed (the entries
    themselves when there are few)."""
    from ..engine import baseline
    from ..engine.context import Context, baseline_name
    from ..engine.runner import check

    try:
        context = Context.build(root, baseline_file=baseline_file, read=False, use_cache=not no_cache,
                                cache_dir=cache_dir)
        path = context.baseline_path
        name = baseline_name(context.root, path)
        previous, unreadable = None, None
        if prune:
            previous = baseline.read(path, name)
        elif os.path.lexists(path):
            try:
                previous = baseline.read(path, name)
            except baseline.BaselineError as error:  # replaced: say so, and what it was
                unreadable = error.problem
        result = check(context.with_policy(context.settings, previous if prune else None), jobs=jobs,
                       fingerprints=True)
        if prune:
            counts = baseline.pruned(previous.counts, result.fixed)
            removed = sum(n for _, n in result.fixed)
            summary = (f"{name}: pruned {removed} finding(s) no longer found "
                       f"({len(previous.counts) - len(counts)} entries removed); {len(counts)} entries kept")
            if result.findings:
                summary += f"; {len(result.findings)} new finding(s) not added (run `policy-check baseline` to accept them)"
        else:
            counts = baseline.counted(result.fingerprints)
            if previous is not None:  # `policy-check audit --update-baseline`'s entries are the audit's to keep
                counts.update({fp: n for fp, n in previous.counts.items() if fp.rule in AUDIT_RULES})
            summary = f"{name}: wrote {len(counts)} entries for {len(result.fingerprints)} finding(s)"
            if unreadable is not None:
                summary += f" (replacing a file that could not be read: {unreadable})"
            elif previous is None:
                summary += " (a new baseline)"
        baseline.write(path, counts)
    except (ConfigError, ValueError) as error:
        click.echo(f"policy-check: error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    except OSError as error:
        click.echo(f"policy-check: error: cannot write the baseline: {error}", err=True)
        sys.exit(EXIT_ERROR)
    except Exception:
        click.echo(f"policy-check: internal error:\n{traceback.format_exc()}", err=True)
        sys.exit(EXIT_ERROR)
    for warning in result.warnings:
        click.echo(f"policy-check: warning: {warning}", err=True)
    for line in _changes(baseline, previous.counts if previous is not None else {}, counts, name):
        summary += line if line.startswith(";") else "\n" + line
    click.echo(summary)


def _changes(baseline, old: dict, new: dict, name: str) -> list:
    """What `policy-check baseline` changed: ``; added ..., removed ...`` and, when
    there are at most `LIST_AT_MOST` changed entries, one line for each."""
    added, removed = baseline.changes(old, new)
    if not added and not removed:
        return ["; nothing added or removed"]

    def findings(changes) -> int:
        return sum(abs(c.after - c.before) for c in changes)

    words = [f"added {findings(added)} finding(s) in {len(added)} entries" if added else "added nothing",
             f"removed {findings(removed)} finding(s) in {len(removed)} entries" if removed else "removed nothing"]
    lines = ["; " + ", ".join(words)]
    if len(added) + len(removed) > LIST_AT_MOST:
        return lines + [f"  ({name} lists each entry)" if not old else f"  (`git diff {name}` shows each entry)"]
    for sign, changes in (("+", added), ("-", removed)):
        for change in changes:
            count = "" if {change.before, change.after} <= {0, 1} else f" (count {change.before} -> {change.after})"
            lines.append(f"  {sign} {baseline.describe(change.fingerprint)}{count}")
    return lines


@click.command()
@click.option("--format", "--output-format", "output_format", type=click.Choice(["text", "json", "rst"]),
              default="text", show_default=True,
              help="json: a list of {id, name, summary, fixable, help_uri}; rst: the rule table of the docs.")
def rules(output_format):
    """List every rule: id, name and what it finds ([*]: `policy-check fix` rewrites it)."""
    from ..report.rule_help import rst_table, rule_table  # not imported by `run`

    if output_format == "rst":
        click.echo(rst_table(), nl=False)
        return
    table = rule_table()
    if output_format == "json":
        import json

        click.echo(json.dumps(table, indent=2))
        return
    width = max(len(r["name"]) for r in table)
    for r in table:
        click.echo(f"{r['id']}  {'[*]' if r['fixable'] else '   '} {r['name']:<{width}}  {r['summary']}")
    click.echo("\n[*]: `policy-check fix` rewrites this rule's findings (`--diff` to preview); "
               "`policy-check explain ID` says what a rule finds and why.")


@click.command()
@click.argument("rule_id")
def explain(rule_id):
    """Explain one rule: what it finds, why, and examples."""
    rule = ALL_IDS.get(rule_id.upper())
    if rule is None:
        click.echo(f"policy-check: error: unknown rule {rule_id!r}; see `policy-check rules`", err=True)
        sys.exit(EXIT_ERROR)
    from ..report.rule_help import explanation

    click.echo(explanation(rule), nl=False)
