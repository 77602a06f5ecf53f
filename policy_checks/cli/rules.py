"""``policy-check rules`` and ``explain``: the rule table and one rule's help.

Both read only the registry's metadata: they never import the runner.
"""

from __future__ import annotations

import sys

import click

from ..report import click_options as shared
from ..report.click_options import EXIT_ERROR
from ..rules.registry import ALL_IDS


@click.command()
@shared.output_format(["text", "json", "rst"],
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
