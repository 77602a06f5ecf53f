"""The one gate every write goes through: dry run, the write budget, and read-only tokens.

A write is described in words first ("create comment on #12"). So a dry run can print
exactly what a real run would do. A run that hits ``--max-writes`` can list what it left
for the next one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import github
import requests

from .client import describe_failure, is_forbidden

DONE, PREVIEWED, LEFT, FORBIDDEN, FAILED = "done", "dry-run", "left", "forbidden", "failed"


@dataclass
class WriteRecord:
    description: str
    outcome: str
    detail: str = ""


class Writes:
    def __init__(self, *, dry_run: bool, max_writes: int | None = None, echo: Callable[[str], None] = print):
        self.dry_run = dry_run
        self.max_writes = max_writes
        self.echo = echo
        self.records: list[WriteRecord] = []

    def _count(self, outcome: str) -> int:
        return sum(1 for r in self.records if r.outcome == outcome)

    def perform(self, description: str, action: Callable[[], object], preview: str = ""):
        """Run ``action`` unless this is a dry run or the budget is spent.

        Return its result, or None."""
        if self.dry_run:
            self.records.append(WriteRecord(description, PREVIEWED))
            self.echo(f"[dry-run] would {description}")
            if preview:
                self.echo("\n".join("    " + line for line in preview.splitlines()))
            return None
        if self.max_writes is not None and self._count(DONE) + self._count(FAILED) >= self.max_writes:
            self.records.append(WriteRecord(description, LEFT))
            return None
        try:
            result = action()
        except (github.GithubException, requests.RequestException) as exc:
            outcome = FORBIDDEN if is_forbidden(exc) else FAILED
            detail = describe_failure(exc, description)
            self.records.append(WriteRecord(description, outcome, detail))
            self.echo(detail)
            return None
        self.records.append(WriteRecord(description, DONE))
        return result

    def of(self, outcome: str) -> list[WriteRecord]:
        return [r for r in self.records if r.outcome == outcome]

    def summary_lines(self) -> list[str]:
        """Markdown lines on writes that did not happen as planned: left, refused, failed."""
        lines = []
        for outcome, title in (
            (LEFT, "Left for the next run (write budget spent)"),
            (FORBIDDEN, "Refused: the token may not write these (read-only token?)"),
            (FAILED, "Failed"),
        ):
            records = self.of(outcome)
            if records:
                lines.append(f"**{title}:**")
                lines.extend(f"- {r.description}" + (f": {r.detail}" if r.detail and outcome == FAILED else "") for r in records)
        return lines
