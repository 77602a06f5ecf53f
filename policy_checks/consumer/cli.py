"""``policy-check consumer``: the command line of the consumer check (docs/consumer.rst).

``policy-check consumer PATH...`` judges downstream code. It is the same as
``consumer check PATH...``. ``policy-check consumer surface`` exports a FlashInfer
tree's experimental surface. It writes the JSON index a release can ship.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import click

from ..report import click_options as shared
from ..engine import baseline as baseline_module
from ..report.output import emit
from ..report import FORMATS, Options
from ..rules.registry import ALL_IDS
from . import surface as surface_module

from ..report.click_options import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS


class _DefaultCheck(click.Group):
    """A group whose first argument, when it names no subcommand, is a PATH of ``check``."""

    def parse_args(self, ctx: click.Context, args: list) -> list:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultCheck)
def consumer() -> None:
    """Check code that calls FlashInfer against FlashInfer's experimental surface.

    \b
    policy-check consumer [OPTIONS] PATH...   report experimental use (= `consumer check`)
    policy-check consumer surface [OPTIONS]   export a FlashInfer tree's surface as JSON
    """


def _surface(surface_file, flashinfer_root) -> surface_module.Surface:
    if surface_file is not None and flashinfer_root is not None:
        raise surface_module.SurfaceError("--surface and --flashinfer-root exclude each other")
    if surface_file is not None:
        return surface_module.read(surface_file)
    root = flashinfer_root or surface_module.installed_root()
    if root is None:
        raise surface_module.SurfaceError(
            "no FlashInfer to judge by: pass --surface FILE (the index a release ships) or --flashinfer-root DIR "
            "(a FlashInfer tree), or install flashinfer")
    return surface_module.from_tree(root)


@consumer.command("check", epilog="""\b
Exit status:
  0  no findings, or findings without --error (they are warnings)
  1  findings with --error (for release branches)
  2  a usage, surface or baseline error, or an internal error""")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--surface", "surface_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="The experimental surface to judge by (`consumer surface -o FILE` writes one).")
@click.option("--flashinfer-root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              metavar="DIR", help="Read the surface from this FlashInfer tree (default: the installed flashinfer, "
              "read as files, never imported).")
@shared.root("Where paths are reported from and the baseline lives (default: the current directory).")
@click.option("--error", "as_error", is_flag=True, help="Findings are errors: exit 1 (release branches).")
@shared.output_format(FORMATS, "Report format, as for `policy-check run`.")
@shared.output_file()
@click.option("-q", "--quiet", is_flag=True, help="Print the findings and nothing else.")
@click.option("--statistics", is_flag=True, help="Print a count per rule instead of the findings.")
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="Report only findings this baseline does not accept (default: "
              "policy-check-consumer-baseline.json at the root, when it exists).")
@click.option("--no-baseline", is_flag=True, help="Ignore the baseline: report every finding.")
@click.option("--write-baseline", is_flag=True, help="Write today's findings as the baseline (accepting them).")
@click.option("--staged", is_flag=True, help="In a git work tree, read only the files in git's index (the "
              "pre-commit hook's mode).")
@click.option("--no-cache", is_flag=True, help="Parse every file: do not remember findings by content.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Where findings are remembered (default: as for `policy-check run`).")
def check_command(paths, surface_file, flashinfer_root, root, as_error, output_format, output_file, quiet, statistics,
                  baseline_file, no_baseline, write_baseline, staged, no_cache, cache_dir):
    """Report experimental FlashInfer use in PATHS (default: the root).

    It reports calls of experimental APIs (CON001), experimental backends named
    (CON002), and the gate set to 1 (CON003).
    """
    from .check import BASELINE_FILE, check

    try:
        if baseline_file is not None and no_baseline:
            raise baseline_module.BaselineError("--baseline and --no-baseline exclude each other")
        root = (root or Path.cwd()).resolve()
        surface = _surface(surface_file, flashinfer_root)
        path = baseline_file or root / BASELINE_FILE
        accepted = None
        if not no_baseline and not write_baseline and (baseline_file is not None or os.path.lexists(path)):
            accepted = baseline_module.read(path, str(path))
        result = check(root, list(paths), surface, staged=staged, accepted=accepted, use_cache=not no_cache,
                       cache_dir=cache_dir)
        if write_baseline:
            baseline_module.write(path, baseline_module.counted(result.fingerprints))
            click.echo(f"{path}: wrote {len(set(result.fingerprints))} entries for {len(result.findings)} finding(s)",
                       err=True)
    except (ValueError, OSError) as error:  # SurfaceError and BaselineError are ValueErrors
        click.echo(f"policy-check consumer: error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    except Exception:
        click.echo(f"policy-check consumer: internal error:\n{traceback.format_exc()}", err=True)
        sys.exit(EXIT_ERROR)
    if not quiet:
        click.echo(f"policy-check consumer: judged by FlashInfer {surface.version}'s experimental surface "
                   f"({len(surface.apis)} API paths, {sum(map(len, surface.backends.values()))} backends; "
                   f"{surface.source})", err=True)
        for warning in result.warnings:
            click.echo(f"policy-check consumer: warning: {warning}", err=True)
    names = {i: r.name for i, r in ALL_IDS.items()}
    emit(FORMATS[output_format](result, names, Options(statistics, quiet, False)), output_file, EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if result.findings and as_error and not write_baseline else EXIT_CLEAN)


@consumer.command("surface")
@shared.root("The FlashInfer tree (a checkout or an unpacked wheel; default: the installed flashinfer).")
@shared.output_file("Write the surface to FILE instead of standard output.")
def surface_command(root, output_file):
    """Export the experimental surface of a FlashInfer tree as JSON.

    It holds the version and the experimental APIs, by every import path. It holds
    the experimental backends (api:backend) and the gate's variable.
    """
    try:
        surface = _surface(None, root)
    except ValueError as error:
        click.echo(f"policy-check consumer: error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    emit(surface_module.dumps(surface), output_file, EXIT_ERROR)
