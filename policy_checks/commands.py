"""The checker's click commands: ``run``, ``rules`` and ``explain``.

`policy_checks/cli.py` imports this module only when one of them is invoked. Rule
metadata comes from the rule table (`rules.registry`); only ``run`` imports the
runner.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import click

from .config import ConfigError, find_root, load
from .report import FORMATS
from .rules.registry import ALL_IDS, unknown_rule

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _ids(value: str) -> tuple:
    return tuple(v.strip().upper() for v in value.split(",") if v.strip()) if value else ()


def _doc(rule) -> str:
    import inspect  # only for ``explain``

    return inspect.cleandoc(getattr(rule, "doc", None) or type(rule).__doc__ or "")


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option("--format", "output_format", type=click.Choice(sorted(FORMATS)), default="text", show_default=True)
@click.option("--select", default="", help="Comma-separated rule ids or prefixes to check (default: all).")
@click.option("--ignore", default="", help="Comma-separated rule ids or prefixes to skip.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: CPUs).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the facts cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Keep the facts cache under DIR (default: $POLICY_CHECK_CACHE_DIR, else the user's cache "
                   "directory). Inside the project only if git ignores it and tracks nothing in it.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--statistics", is_flag=True, help="Also count findings per rule.")
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Project root (default: nearest pyproject.toml with [tool.policy-check], or a flashinfer checkout).")
def run(paths, output_format, select, ignore, jobs, no_cache, cache_dir, exit_zero, statistics, root):
    """Check the project (or only report findings under PATHS)."""
    from .runner import run as run_checks

    try:
        root = root.resolve() if root else find_root(Path(paths[0]) if paths else Path.cwd())
        settings = load(root)
        unknown = unknown_rule(_ids(select) + _ids(ignore))
        if unknown is not None:
            raise ConfigError(f"--select/--ignore: unknown rule id {unknown!r}")
        result = run_checks(
            root, settings, paths=paths, select=_ids(select), ignore=_ids(ignore),
            jobs=jobs, use_cache=not no_cache, cache_dir=cache_dir,
        )
    except (ConfigError, ValueError) as error:
        click.echo(f"policy-check: error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    except Exception:  # a bug: exit 2, never 1 (which means "findings")
        click.echo(f"policy-check: internal error:\n{traceback.format_exc()}", err=True)
        sys.exit(EXIT_ERROR)
    for warning in result.warnings:
        click.echo(f"policy-check: warning: {warning}", err=True)
    names = {i: r.name for i, r in ALL_IDS.items()}
    click.echo(FORMATS[output_format](result, names, statistics), nl=False)
    sys.exit(EXIT_FINDINGS if result.findings and not exit_zero else EXIT_CLEAN)


@click.command()
def rules():
    """List every rule: id, name and what it finds."""
    width = max(len(r.name) for r in ALL_IDS.values())
    for rule_id, rule in sorted(ALL_IDS.items()):
        click.echo(f"{rule_id}  {rule.name:<{width}}  {rule.summary}")


@click.command()
@click.argument("rule_id")
def explain(rule_id):
    """Explain one rule: what it finds, why, and examples."""
    rule = ALL_IDS.get(rule_id.upper())
    if rule is None:
        click.echo(f"policy-check: error: unknown rule {rule_id!r}; see `policy-check rules`", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(f"{rule.id} {rule.name}: {rule.summary}\n")
    click.echo(_doc(rule))
    reads = getattr(rule, "reads", ())
    if reads:
        click.echo(f"\nReads: {', '.join(kind.name for kind in reads)}.")
    for label, examples in (("Valid", getattr(rule, "VALID", ())), ("Invalid", getattr(rule, "INVALID", ()))):
        for example in examples[:1]:
            click.echo(f"\n{label} example{' (' + example.note + ')' if example.note else ''}:")
            for path, content in example.files.items():
                if content and isinstance(content, str) and path.endswith((".py", ".rst", ".ini", ".toml", ".cfg")):
                    click.echo(f"  # {path}")
                    click.echo("".join(f"    {line}\n" for line in content.splitlines()), nl=False)
