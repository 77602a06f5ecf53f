"""Where a report goes: standard output, or the file of ``-o``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click


def emit(report: str, output_file: Optional[Path], error_status: int = 2) -> None:
    """Print `report`, or write it to `output_file` (``-o``).

    Exit `error_status` if that fails."""
    if output_file is None:
        click.echo(report, nl=False)
        return
    try:
        Path(output_file).write_text(report, encoding="utf-8")
    except OSError as error:
        click.echo(f"policy-check: error: cannot write the report to {output_file}: {error.strerror or error}",
                   err=True)
        sys.exit(error_status)
