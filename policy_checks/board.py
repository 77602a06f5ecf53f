"""``policy-check features``: the board of the experimental track.

One row per feature directory (a direct subdirectory of the experimental package whose
name starts with neither ``_`` nor ``.``): what its ``FEATURE.toml`` says (kind, owner,
tracking issue, admission, deadline, automatic routing, APIs, backends), how far the
deadline is (``policy_checks.graduation``: UTC calendar days, the admission window and
the overdue / due soon / on track status), and which fields its record lacks.

Records are read by `policy_checks.features`, never parsed here. `rows` builds the board
from records, so the checker (records read from the tree, `read_tree`) and the bot's
weekly review (records read through GraphQL, with each tracking issue's state added)
show the same table. Offline and fast: the tree alone, one small file per feature.

Text from a record is untrusted. The text format escapes what is not printable; the
Markdown format renders every cell that comes from input as an inert code span
(`policy_checks.markdown.code`, the bot's quoting too, standard library only: importing
it loads neither PyGithub nor the bot) and escapes ``|`` in cells (`table_row`).
docs/features.rst describes the command, the columns and the JSON keys.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import click

from . import graduation
from .config import ConfigError, Settings, find_root, load
from .features import SHIM_MARKER, FeatureRecord, Problem, binds_shim_marker, is_feature_name, read, shim_problem
from .markdown import code, table_row
from .markers import RECORD

# The record's fields, in FEATURE.toml's order: what `lacks` names.
FIELDS = ("kind", "owner", "tracking_issue", "admitted", "target_release", "target_date", "apis", "backends",
          "auto_routing")
_ATTRIBUTES = {"tracking_issue": "tracking"}  # field -> FeatureRecord attribute, where they differ
MAX_CELL_ITEMS = 5  # APIs or backends shown in one Markdown cell; the rest are counted


@dataclass
class BoardRow:
    """One feature on the board. ``issue_state`` is set by the bot only (it reads the issues)."""

    feature: str
    kind: str | None
    owner: str | None
    tracking_issue: str | None
    admitted: dt.date | None
    target_release: str | None
    target_date: dt.date | None
    deadline: dt.date | None
    days_left: int | None
    status: str | None
    auto_routing: bool | None
    apis: tuple[str, ...] | None
    backends: tuple[str, ...] | None
    lacks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    issue_state: str | None = None

    def as_json(self) -> dict:
        """The row as JSON: the keys docs/features.rst documents, always all of them, in this order."""
        data = {
            "feature": self.feature,
            "kind": self.kind,
            "owner": self.owner,
            "tracking_issue": self.tracking_issue,
            "admitted": _iso(self.admitted),
            "target_release": self.target_release,
            "target_date": _iso(self.target_date),
            "deadline": _iso(self.deadline),
            "days_left": self.days_left,
            "status": self.status,
            "auto_routing": self.auto_routing,
            "apis": list(self.apis) if self.apis is not None else None,
            "backends": list(self.backends) if self.backends is not None else None,
            "lacks": list(self.lacks),
            "problems": [str(p) for p in self.problems],
        }
        if self.issue_state is not None:
            data["issue_state"] = self.issue_state
        return data


def _iso(day: dt.date | None) -> str | None:
    return day.isoformat() if day is not None else None


def lacks(record: FeatureRecord) -> list[str]:
    """The fields the record lacks or gets wrong, in `FIELDS` order; ``["FEATURE.toml"]`` when
    there is no record to speak of (missing, unreadable, not TOML)."""
    keyed = {getattr(p, "key", None) for p in record.problems}
    values = {name: getattr(record, _ATTRIBUTES.get(name, name)) for name in FIELDS}
    if record.problems and all(value is None for value in values.values()) and None in keyed:
        return [RECORD]
    return [name for name in FIELDS if values[name] is None or name in keyed]


def row(record: FeatureRecord, today: dt.date, this_repo: str = "", issue_state: str | None = None) -> BoardRow:
    """The board row of one record on ``today`` (a UTC calendar date). A tracking issue of
    ``this_repo`` is written ``#N``; offline, where the repository is unknown, any
    ``owner/name#N`` is written in full."""
    deadline = record.deadline
    return BoardRow(
        feature=record.name,
        kind=record.kind,
        owner=record.owner,
        tracking_issue=record.tracking.render(this_repo) if record.tracking else None,
        admitted=record.admitted,
        target_release=record.target_release,
        target_date=record.target_date,
        deadline=deadline,
        days_left=graduation.days_left(deadline, today) if deadline else None,
        status=graduation.status(deadline, today) if deadline else None,
        auto_routing=record.auto_routing,
        apis=record.apis,
        backends=record.backends,
        lacks=lacks(record),
        problems=list(record.problems),
        issue_state=issue_state,
    )


def rows(records: Iterable[FeatureRecord], today: dt.date, this_repo: str = "",
         issue_states: dict[str, str] | None = None) -> list[BoardRow]:
    """The board of ``records``, sorted by feature name; ``issue_states`` (feature -> state) adds
    the tracking issue's state to each row (the bot's review)."""
    states = issue_states if issue_states is not None else {}
    return [row(r, today, this_repo, states.get(r.name) if issue_states is not None else None)
            for r in sorted(records, key=lambda r: r.name)]


def read_tree(root: Path, settings: Settings) -> list[FeatureRecord]:
    """Every feature directory's record under ``root``; a missing record is a problem of its feature.

    No experimental package means no features. Raises OSError when the package's
    directory exists but cannot be listed.
    """
    package = root / settings.experimental_dir
    if not package.is_dir():
        return []
    records = []
    for entry in sorted(package.iterdir(), key=lambda p: p.name):
        if not is_feature_name(entry.name) or not entry.is_dir():
            continue  # shared code
        shim = None
        if binds_shim_marker(entry):
            shim = shim_problem(entry, settings.experimental_package)
            if shim is None:
                continue  # the pure re-export shim a graduated feature leaves for one release
        path = entry / RECORD
        if path.is_file():
            record = read(path)
        else:
            where = f"{settings.experimental_dir}/{entry.name}/{RECORD}"
            record = FeatureRecord(name=entry.name, problems=[Problem(
                f"{RECORD} is missing: add {where} (docs/experimental.rst, \"Admission\")")])
        if shim is not None:
            record.problems.append(Problem(
                f"the directory binds {SHIM_MARKER} but the shim holds other code ({shim}): it is still a feature"))
        records.append(record)
    return records


# --- rendering ---------------------------------------------------------------------------

def left_in_words(days: int | None) -> str:
    """``3 days left``, ``due today``, ``2 days overdue``; ``-`` without a deadline."""
    if days is None:
        return "-"
    if days == 0:
        return "due today"
    unit = "day" if abs(days) == 1 else "days"
    return f"{days} {unit} left" if days > 0 else f"{-days} {unit} overdue"


def _counts(board: list[BoardRow]) -> str:
    by_status = {s: sum(1 for r in board if r.status == s)
                 for s in (graduation.OVERDUE, graduation.DUE_SOON, graduation.ON_TRACK)}
    incomplete = sum(1 for r in board if r.lacks)
    noun = "feature" if len(board) == 1 else "features"
    parts = [f"{n} {s}" for s, n in by_status.items()] + [f"{incomplete} with an incomplete record"]
    return f"{len(board)} {noun}: " + ", ".join(parts)


def _printable(text: str) -> str:
    """Text for a terminal: anything not printable (newlines, escapes, bidi controls) as an escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _joined(values: tuple[str, ...] | None) -> str:
    """A list for a text cell: ``-`` when the record has none, ``none`` when it is empty."""
    return "-" if values is None else (",".join(values) or "none")


def _flag(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


TEXT_COLUMNS = ("FEATURE", "KIND", "OWNER", "TRACKING", "ADMITTED", "DEADLINE", "LEFT", "STATUS", "AUTO", "APIS",
                "BACKENDS", "LACKS")


def render_text(board: list[BoardRow]) -> str:
    """An aligned table, one line per feature, and a count of each status."""
    if not board:
        return "No experimental features.\n"
    table = [TEXT_COLUMNS]
    for r in board:
        table.append(tuple(_printable(cell) for cell in (
            r.feature, r.kind or "-", r.owner or "-", r.tracking_issue or "-", _iso(r.admitted) or "-",
            _iso(r.deadline) or "-", left_in_words(r.days_left), r.status or "-", _flag(r.auto_routing),
            _joined(r.apis), _joined(r.backends),
            ",".join(r.lacks) or "-")))
    widths = [max(len(line[i]) for line in table) for i in range(len(TEXT_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in table]
    return "\n".join(lines + ["", _counts(board)]) + "\n"


def render_json(board: list[BoardRow]) -> str:
    """A JSON list of objects, one per feature, sorted by feature name (keys: `BoardRow.as_json`)."""
    return json.dumps([r.as_json() for r in board], indent=2) + "\n"


def _items(values: tuple[str, ...] | None) -> str:
    if values is None:
        return "—"
    if not values:
        return "none"
    shown = ", ".join(code(v) for v in values[:MAX_CELL_ITEMS])
    more = len(values) - MAX_CELL_ITEMS
    return shown + (f" and {more} more" if more > 0 else "")


MARKDOWN_COLUMNS = ("feature", "kind", "owner", "tracking issue", "admitted", "deadline", "left", "status",
                    "auto routing", "APIs", "backends", "lacks")


def render_markdown(board: list[BoardRow]) -> str:
    """A GFM table. Every cell from input is an inert code span, ``|`` is escaped; the
    ``issue state`` column follows ``tracking issue`` when the rows carry issue states."""
    if not board:
        return "No experimental features.\n"
    with_issue = any(r.issue_state is not None for r in board)
    columns = list(MARKDOWN_COLUMNS)
    if with_issue:
        columns.insert(4, "issue state")
    lines = [_counts(board), "", table_row(columns), "|" + "---|" * len(columns)]
    for r in board:
        cells = [
            code(r.feature), code(r.kind) if r.kind else "—", code(r.owner) if r.owner else "—",
            code(r.tracking_issue) if r.tracking_issue else "—",
            _iso(r.admitted) or "—", _iso(r.deadline) or "—", left_in_words(r.days_left).replace("-", "—"),
            r.status or "—", _flag(r.auto_routing).replace("-", "—"), _items(r.apis), _items(r.backends),
            ", ".join(code(name) for name in r.lacks) or "—",
        ]
        if with_issue:
            cells.insert(4, code(r.issue_state) if r.issue_state else "—")
        lines.append(table_row(cells))
    return "\n".join(lines) + "\n"


RENDERERS = {"text": render_text, "json": render_json, "markdown": render_markdown}


# --- the command -------------------------------------------------------------------------

@click.command(epilog="Exit status: 0, the board was written; 2, the settings or the tree could not be read.")
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Project root (default: nearest pyproject.toml with [tool.policy-check], or a flashinfer checkout).")
@click.option("--format", "output_format", type=click.Choice(sorted(RENDERERS)), default="text", show_default=True,
              help="text: an aligned table; json: a list of objects; markdown: a GitHub table.")
@click.option("--today", type=click.DateTime(["%Y-%m-%d"]), default=None, metavar="YYYY-MM-DD",
              help="Count days from this UTC date (default: today in UTC).")
def features(root: Path | None, output_format: str, today: dt.datetime | None) -> None:
    """The board of the experimental track: every feature, its record and its deadline.

    Reads each feature directory's FEATURE.toml under the experimental package, offline.
    """
    day = today.date() if today else dt.datetime.now(dt.timezone.utc).date()
    try:
        root = root.resolve() if root else find_root(Path.cwd())
        records = read_tree(root, load(root))
    except ConfigError as error:
        click.echo(f"policy-check: {error}", err=True)
        raise SystemExit(2) from None
    except OSError as error:
        click.echo(f"policy-check: cannot read the tree: {error}", err=True)
        raise SystemExit(2) from None
    click.echo(RENDERERS[output_format](rows(records, day)), nl=False)
