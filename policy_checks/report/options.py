"""How to report, beside what (`Options`): the command line's report options."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple, Optional

import click


class Options(NamedTuple):
    """``--statistics`` (text: a count per rule instead of the findings; json: adds
    ``statistics``), ``--quiet`` (text: the findings and nothing else),
    ``--sarif-suppressed`` (SARIF: also the baselined findings, as suppressed
    results, and the fixed baseline entries)."""

    statistics: bool = False
    quiet: bool = False
    sarif_suppressed: bool = False


def emit(report: str, output_file: Optional[Path], error_status: int = 2) -> None:
    """Print `report`, or write it to `output_file` (``-o``); exit `error_status` if that fails."""
    if output_file is None:
        click.echo(report, nl=False)
        return
    try:
        Path(output_file).write_text(report, encoding="utf-8")
    except OSError as error:
        click.echo(f"policy-check: error: cannot write the report to {output_file}: {error.strerror or error}",
                   err=True)
        sys.exit(error_status)
