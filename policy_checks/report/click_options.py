"""The command-line options and exit statuses that subcommands share, declared once.

Each function returns a click decorator. A command names the option's meaning where it
differs: ``--root`` of ``consumer surface`` is a FlashInfer tree. The spelling, the type and
the default stay the same everywhere. The report layer holds them because every command that
takes them reports something.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

import click

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2  # 1 means findings; a bug or a bad option is 2

ROOT_HELP = "Project root (default: nearest pyproject.toml with [tool.policy-check], or a flashinfer checkout)."


def root(help: str = ROOT_HELP) -> Callable:
    """``--root DIR``: an existing directory, given to the command as a `Path`."""
    return click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
                        help=help)


def output_format(choices: Iterable[str], help: str = "Report format (--output-format is the same option).") -> Callable:
    """``--format`` (alias ``--output-format``): one of `choices`, text by default."""
    return click.option("--format", "--output-format", "output_format", type=click.Choice(sorted(choices)),
                        default="text", show_default=True, help=help)


def output_file(help: str = "Write the report to FILE instead of standard output.") -> Callable:
    """``-o FILE``: where the report goes instead of standard output."""
    return click.option("-o", "--output-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        metavar="FILE", help=help)


def diff(what: str) -> Callable:
    """``--diff``: print what the command would change, as a patch; write nothing."""
    return click.option("--diff", is_flag=True, help=f"Print a unified diff of {what} and write nothing.")


def work(command: Callable) -> Callable:
    """``--jobs``, ``--no-cache`` and ``--cache-dir``.

    They say how a command that runs the checker gets its facts."""
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


def ids(value: str) -> tuple:
    """Comma-separated rule ids (``--select``, ``--ignore``), upper-cased, with blanks dropped."""
    return tuple(v.strip().upper() for v in value.split(",") if v.strip()) if value else ()
