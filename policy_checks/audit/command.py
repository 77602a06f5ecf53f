"""``policy-check audit``: the click command, its baseline and its report.

The report goes out in ``run``'s formats (`policy_checks.report`). The text report
adds note lines: stand-ins used, what was left out, counts. The JSON report adds an
``"audit"`` object with the same.

The baseline is ``run``'s file. The audit reads and writes only its AUDnnn entries.
``run`` and ``policy-check baseline`` leave them as they are.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import traceback
from pathlib import Path

import click

from ..report import click_options as shared
from ..engine import baseline as baseline_module
from ..model.config import ConfigError
from ..engine.context import Context, baseline_name
from ..report.output import emit
from ..report import FORMATS, Options
from ..rules.registry import matches
from .rules import AUDIT_RULES

from ..report.click_options import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS


def _ids(value: str) -> tuple:
    return tuple(v.strip().upper() for v in value.split(",") if v.strip()) if value else ()


def _progress(done: int, total: int) -> None:
    if done == total or done % 50 == 0:
        click.echo(f"policy-check audit: {done}/{total} requests", err=True)


@click.command(epilog="""\b
It runs the code of the tree: run it only in an unprivileged job (docs/audit.rst).
Exit status:
  0  no findings (with a baseline: no new ones)
  1  findings
  2  a usage, configuration or baseline error, or an internal error""")
@shared.root()
@shared.output_format(FORMATS)
@shared.output_file()
@click.option("-q", "--quiet", is_flag=True, help="Print the findings and nothing else (no notes, no progress).")
@click.option("--select", default="", help="Comma-separated AUD ids or prefixes to report (default: all).")
@click.option("--ignore", default="", help="Comma-separated AUD ids or prefixes not to report.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker interpreters (default: CPUs).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Seconds one module's import (or the AOT listing) may take.")
@click.option("--exclude", "excluded", multiple=True, metavar="GLOB",
              help="Also leave out of the imports the paths GLOB matches (as the exclude setting; repeatable). "
              "What core imports from them is still traced.")
@click.option("--no-stand-ins", is_flag=True, help="Do not replace missing third-party packages by stand-ins.")
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="Report only findings this baseline's AUD entries do not accept (default: "
              "policy-check-baseline.json at the root, when it exists).")
@click.option("--no-baseline", is_flag=True, help="Ignore the baseline: report every finding.")
@click.option("--update-baseline", is_flag=True, help="Write today's AUD findings into the baseline file (its "
              "other entries kept) instead of reporting them.")
@click.option("--policy-from", metavar="REV", default=None,
              help="Audit with the policy of the git revision REV: its settings (which package, which is "
              "experimental, what is excluded) and its baseline.")
@click.option("--python", "python", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              metavar="PATH", help="Run the tree's code (the imports, the AOT listing, the stable lane's "
              "collection) in this interpreter, whose environment is audited (FlashInfer's), while the checker "
              "runs from its own (default: the checker's interpreter).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
def audit(root, output_format, output_file, quiet, select, ignore, jobs, timeout, excluded, no_stand_ins, baseline_file,
          no_baseline, update_baseline, policy_from, python, exit_zero):
    """Import flashinfer and every core module, and call the AOT listing, in isolated interpreters.

    Report what loaded experimental code (AUD000-AUD003).
    """
    from ..engine.runner import Result
    from .tree import audit_tree

    try:
        context = Context.build(root, baseline_file=baseline_file, read=False)  # its baseline: AUD entries only
        root, settings, path = context.root, context.settings, context.baseline_path
        for value in _ids(select) + _ids(ignore):
            if not any(rule_id.startswith(value) for rule_id in AUDIT_RULES):
                raise ConfigError(f"--select/--ignore: {value!r} names no audit rule (AUD000-AUD003)")
        if baseline_file is not None and no_baseline:
            raise ConfigError("--baseline and --no-baseline exclude each other")
        name = baseline_name(root, path)
        accepted, policy_from_pair, judge = None, None, None
        if policy_from is not None:
            from ..engine.policy_change import Revision, SuppressionJudge, baseline_at_base, read_policy

            at = Revision(root, policy_from)
            rel, outside = baseline_at_base(root, None if no_baseline else path)
            policy = read_policy(at, rel)
            settings = policy.settings
            accepted = policy.baseline if not outside else _read(path)
            policy_from_pair = (policy_from, at.commit)
            judge = SuppressionJudge(root, at)
        elif not no_baseline and not update_baseline:
            accepted = _read(path) if (baseline_file is not None or os.path.lexists(path)) else None
        if excluded:
            settings = dataclasses.replace(settings, exclude=settings.exclude + tuple(excluded))
        found = audit_tree(context.with_policy(settings, accepted), jobs=jobs, timeout=timeout,
                           stand_ins=not no_stand_ins, progress=None if quiet else _progress,
                           python=None if python is None else str(python), judge=judge)
    except (ConfigError, ValueError) as error:
        click.echo(f"policy-check: error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    except Exception:
        click.echo(f"policy-check: internal error:\n{traceback.format_exc()}", err=True)
        sys.exit(EXIT_ERROR)
    chosen = _ids(select) or tuple(AUDIT_RULES)
    findings = [f for f in found.findings if matches(f.rule, chosen) and not matches(f.rule, _ids(ignore))]
    findings = _unsuppressed(findings, found.suppressions)
    prints = [baseline_module.fingerprint(found.project, f, frozenset()) for f in findings]
    if update_baseline:
        _update(path, name, prints)
        return
    result = Result(findings, found.modules, fingerprints=prints)
    result.policy_from = policy_from_pair
    if accepted is not None:
        baseline_module.accept(result, {fp: n for fp, n in accepted.counts.items() if fp.rule in AUDIT_RULES},
                               accepted.name)
    names = {i: r.name for i, r in AUDIT_RULES.items()}
    report = FORMATS[output_format](result, names, Options(False, quiet, False))
    if output_format == "json":
        document = json.loads(report)
        document["audit"] = _summary(found)
        report = json.dumps(document, indent=2) + "\n"
    elif output_format == "text" and not quiet:
        report += "".join(f"note: {line}\n" for line in _notes(found))
    elif not quiet:
        for line in _notes(found):
            click.echo(f"policy-check audit: note: {line}", err=True)
    emit(report, output_file, EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if result.findings and not exit_zero else EXIT_CLEAN)


def _unsuppressed(findings: list, suppressions: dict) -> list:
    """The findings no ``# policy: ignore[AUDnnn] reason`` on their line silences.

    The comments are read as they were before the audit ran. With
    ``--policy-from``, only those the base revision already had count. They are
    never read as the code under test may have left the tree.
    """
    from ..rules.registry import ALL_IDS
    from ..engine.suppressions import apply

    return [f for f in apply(findings, suppressions, set(ALL_IDS), set()) if f.rule in AUDIT_RULES]


def _read(path: Path):
    return baseline_module.read(path, str(path))


def _update(path: Path, name: str, prints: list) -> None:
    """Replace the baseline's AUD entries by today's findings, keeping every other entry."""
    try:
        kept = {}
        if os.path.lexists(path):
            kept = {fp: n for fp, n in _read(path).counts.items() if fp.rule not in AUDIT_RULES}
        counts = {**kept, **baseline_module.counted(prints)}
        baseline_module.write(path, counts)
    except (ValueError, OSError) as error:
        click.echo(f"policy-check: error: cannot update the baseline: {error}", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(f"{name}: wrote {len(prints)} audit finding(s); {len(kept)} other entries kept")


def _summary(found) -> dict:
    return {
        "modules": found.modules, "audited": found.audited, "not_audited": found.not_audited,
        "stand_ins": found.stand_ins, "collection_stand_ins": found.collection_stand_ins, "skipped": [{"path": p, "why": why} for p, why in found.skipped],
        "support_modules": sorted(found.support), "notes": found.notes,
        "processes": found.processes, "network_namespace": found.network_namespace,
        "python": _python(found), "protections": found.protections,
    }


def _python(found) -> dict:
    """The interpreter the tree's code ran in, and the environment it audited."""
    used = found.interpreter
    return {} if used is None else {"path": used.path, "version": used.version, "prefix": used.prefix}


def _notes(found) -> list:
    lines = [f"{found.audited} of {found.modules} core modules imported; {found.not_audited} not audited (AUD000)"]
    if found.interpreter is not None:
        used = found.interpreter
        lines.append(f"interpreter: {used.path} (Python {used.version}, environment {used.prefix})")
    if found.stand_ins:
        lines.append("stand-ins (third-party packages not installed, replaced by permissive stand-ins): "
                     + ", ".join(found.stand_ins))
    if found.collection_stand_ins:
        lines.append("stand-ins in the stable lane's collection (asked for by its conftests and tests): "
                     + ", ".join(found.collection_stand_ins))
    lines += [f"skipped {path}: {why}" for path, why in found.skipped]
    if found.support:
        lines.append("support modules allowed: " + ", ".join(sorted(found.support)))
    if found.processes:
        shown = "; ".join(found.processes[:3]) + (f"; and {len(found.processes) - 3} more" if len(found.processes) > 3 else "")
        lines.append(f"processes started by imports ({len(found.processes)}): {shown}")
    from .sandbox import PROTECTIONS

    for kind, on in sorted(found.protections.items()):
        if not on:
            lines.append(f"protection off (unshare could not make it here): {PROTECTIONS[kind]}")
    return lines + list(found.notes)
