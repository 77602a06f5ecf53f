"""``policy-check features``: the board of the experimental track, and ``features init``.

The board has one row per feature. A feature is a direct subdirectory of the
experimental package, as EXP009 sees them
(`policy_checks.model.records.feature_directories`). A row shows:

- what its ``FEATURE.toml`` says: kind, owner, tracking issue, admission,
  deadline, automatic routing, APIs, backends;
- how far the deadline is, by ``policy_checks.model.window``. That module counts
  UTC calendar days and knows the admission window. It gives the overdue, due
  soon or on track status;
- what the feature lacks.

Records are read by `policy_checks.model.records`, never parsed here. What a
feature lacks is `policy_checks.model.records.survey`'s answer. EXP009 reports the
same answer item by item.

`rows` builds the board from records. So the checker and the bot's weekly review
show the same table. The checker reads records from the tree (`survey_tree`). The
bot reads them through GraphQL and adds each tracking issue's state. There the
record alone says what is lacking. Offline, the board reads the tree alone, one
small file per feature. ``policy-check features init``
(`policy_checks.lifecycle.drafting`) writes the missing records.

Text from a record is untrusted. The text format escapes what is not printable.
The Markdown format renders every cell from input as an inert code span
(`policy_checks.report.markdown.code`). The bot quotes with it too. It is standard
library only, so importing it loads neither PyGithub nor the bot. The Markdown
format also escapes ``|`` in cells (`table_row`).

docs/features.rst describes the command, the columns and the JSON keys.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import click

from ..report import click_options as shared
from ..model import window as graduation
from ..model.config import ConfigError, Settings, find_root, load
from ..model.records import FIELDS, SHIM_MARKER, Feature, FeatureRecord, Problem, record_lacks, survey
from ..report.markdown import code, table_row
from ..model.markers import README, RECORD
from ..report.output import emit

MAX_CELL_ITEMS = 5  # APIs or backends shown in one Markdown cell; the rest are counted


@dataclass
class BoardRow:
    """One feature on the board. Only the bot sets ``issue_state``, since it reads the issues."""

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
        """The row as JSON, with every key docs/features.rst documents, in this order."""
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
    """What the record lacks, as EXP009 reports it (`policy_checks.model.records.record_lacks`).

    With no usable record, that is ``FEATURE.toml`` and every field. A record is
    unusable when missing, unreadable or not TOML. Otherwise it is the fields
    missing or wrong, in `FIELDS` order. What the rest of the directory lacks
    (README, tests, example) is known only from the tree (`survey_tree`).
    """
    return lack_items(record_lacks(record))


def lack_items(found) -> list[str]:
    """The items of `policy_checks.model.records.Lack` records, each once, in order."""
    items: list[str] = []
    for lack in found:
        if lack.item not in items:
            items.append(lack.item)
    return items


def shown_lacks(items: list[str]) -> list[str]:
    """``lacks`` for a table cell.

    A missing ``FEATURE.toml`` stands for its fields. A missing ``README.md`` stands
    for its parts. The JSON lists every item.
    """
    shown = list(items)
    if RECORD in shown:
        shown = [item for item in shown if item not in FIELDS]
    if README in shown:
        shown = [item for item in shown if not item.startswith(README + ": ")]
    return shown


def row(record: FeatureRecord, today: dt.date, this_repo: str = "", issue_state: str | None = None,
        missing: list[str] | None = None) -> BoardRow:
    """The board row of one record on ``today``, a UTC calendar date.

    A tracking issue of ``this_repo`` is written ``#N``. Offline, the repository is
    unknown, so any ``owner/name#N`` is written in full. ``missing`` is what the
    feature lacks, when known from the tree (`survey_tree`). Otherwise the row
    shows what the record lacks (`lacks`).
    """
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
        lacks=list(missing) if missing is not None else lacks(record),
        problems=list(record.problems),
        issue_state=issue_state,
    )


def rows(records: Iterable[FeatureRecord], today: dt.date, this_repo: str = "",
         issue_states: dict[str, str] | None = None, missing: dict[str, list[str]] | None = None) -> list[BoardRow]:
    """The board of ``records``, sorted by feature name.

    ``issue_states`` maps a feature to its tracking issue's state. The bot's review
    uses it to add that state to each row. ``missing`` maps a feature to the items
    it lacks. It is known when the tree was read (`survey_tree`).
    """
    states = issue_states if issue_states is not None else {}
    found = missing if missing is not None else {}
    return [row(r, today, this_repo, states.get(r.name) if issue_states is not None else None, found.get(r.name))
            for r in sorted(records, key=lambda r: r.name)]


def survey_tree(root: Path, settings: Settings) -> list[Feature]:
    """Every feature of the tree with its record and what it lacks, as EXP009 sees them.

    It calls `policy_checks.model.records.survey` with the checker's file selection
    and examples. A directory that binds ``__graduated_to__`` but is no pure shim
    gets that as a problem.

    No experimental package means no features. Raises OSError when the package's
    directory exists but cannot be listed.
    """
    from ..model.project import Project  # the checker's view of which files count

    def no_facts(source):  # the board reads no Python file's facts
        raise AssertionError(source)

    project = Project(root, settings, no_facts)
    found = survey(root, settings, project.excluded, lambda: project.example_texts().values())
    for feature in found:
        if feature.shim_problem is not None:
            feature.record.problems.append(Problem(
                f"the directory binds {SHIM_MARKER} but the shim holds other code ({feature.shim_problem}): "
                "it is still a feature"))
    return found


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
    """Text for a terminal. Anything not printable becomes an escape.

    That covers newlines, escape sequences and bidi controls.
    """
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
            ",".join(shown_lacks(r.lacks)) or "-")))
    widths = [max(len(line[i]) for line in table) for i in range(len(TEXT_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in table]
    return "\n".join(lines + ["", _counts(board)]) + "\n"


# Changes only when a field of the JSON board changes meaning or disappears.
JSON_VERSION = 1


def render_json(board: list[BoardRow]) -> str:
    """A versioned JSON object.

    ``features`` holds one object per feature, sorted by feature name. The keys are
    those of `BoardRow.as_json`.
    """
    return json.dumps({"version": JSON_VERSION, "features": [r.as_json() for r in board]}, indent=2) + "\n"


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
    """A GFM table.

    Every cell from input is an inert code span, and ``|`` is escaped. When the
    rows carry issue states, the ``issue state`` column follows ``tracking issue``.
    """
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
            ", ".join(code(name) for name in shown_lacks(r.lacks)) or "—",
        ]
        if with_issue:
            cells.insert(4, code(r.issue_state) if r.issue_state else "—")
        lines.append(table_row(cells))
    return "\n".join(lines) + "\n"


RENDERERS = {"text": render_text, "json": render_json, "markdown": render_markdown}


# --- the command -------------------------------------------------------------------------

@contextlib.contextmanager
def _tree_errors_exit_2() -> Iterator[None]:
    """Settings or a tree that cannot be read give one line on stderr and exit status 2."""
    try:
        yield
    except ConfigError as error:
        click.echo(f"policy-check: {error}", err=True)
        raise SystemExit(2) from None
    except OSError as error:
        click.echo(f"policy-check: cannot read the tree: {error}", err=True)
        raise SystemExit(2) from None


@click.group(invoke_without_command=True,
             epilog="Exit status: 0, the board was written; 2, the settings or the tree could not be read.")
@shared.root()
@shared.output_format(RENDERERS, "text: an aligned table; json: a versioned object (`version`, `features`); "
                                 "markdown: a GitHub table. --output-format is the same option.")
@shared.output_file("Write the board to FILE instead of standard output.")
@click.option("--today", type=click.DateTime(["%Y-%m-%d"]), default=None, metavar="YYYY-MM-DD",
              help="Count days from this UTC date (default: today in UTC).")
@click.pass_context
def features(ctx: click.Context, root: Path | None, output_format: str, output_file: Path | None,
             today: dt.datetime | None) -> None:
    """The board of the experimental track: every feature, its record and its deadline.

    Reads each feature directory's FEATURE.toml under the experimental package, offline.
    `policy-check features init` writes the records that are missing.
    """
    if ctx.invoked_subcommand is not None:
        ctx.obj = root  # `policy-check features --root DIR init` means the same as `... init --root DIR`
        return
    day = today.date() if today else dt.datetime.now(dt.timezone.utc).date()
    with _tree_errors_exit_2():
        root = root.resolve() if root else find_root(Path.cwd())
        settings = load(root)
        surveyed = survey_tree(root, settings)
    if not surveyed and output_format != "json" and not (root / settings.experimental_dir).is_dir():
        emit(f"No experimental features: no experimental package ({settings.experimental_dir}) in this tree.\n",
             output_file)
        return
    missing = {feature.name: lack_items(feature.lacks) for feature in surveyed}
    emit(RENDERERS[output_format](rows([f.record for f in surveyed], day, missing=missing)), output_file)


@features.command("init", epilog="Exit status: 0, done (with --diff: nothing to write); 1, with --diff, there "
                                 "are records to write; 2, the settings or the tree could not be read or written.")
@shared.root()
@click.option("--diff", is_flag=True, help="Print the files it would write (a diff from /dev/null); write nothing.")
@click.pass_context
def init(ctx: click.Context, root: Path | None, diff: bool) -> None:
    """Write the FEATURE.toml and README.md skeleton each feature lacks, from what the tree states.

    The owner and tracking issue come from the feature's README.md. The admission
    date comes from the first commit that added the directory. For a GitHub
    no-reply address, that commit gives the owner too. Kind, apis, backends and
    auto_routing come from the code (the checker's facts). The rest is left as
    commented-out TODO lines for a person.

    The README skeleton has a heading on each of the four parts every feature
    documents. It never overwrites a file, so a second run writes nothing.
    """
    from . import drafting

    root = root or ctx.obj
    with _tree_errors_exit_2():
        root = root.resolve() if root else find_root(Path.cwd())
        settings = load(root)
        code = drafting.code_facts(root, settings)
        made, having, why = drafting.drafts(root, settings, code)
        readmes = drafting.skeletons(root, settings, code)
    verb = "would write" if diff else "wrote"
    written = written_readmes = 0
    for draft in [*made, *readmes]:
        if diff:
            click.echo(draft.diff(), nl=False)
        else:
            try:
                if not drafting.write(root, draft):
                    click.echo(f"policy-check: {draft.rel} appeared meanwhile: left as it is", err=True)
                    continue
            except OSError as error:
                click.echo(f"policy-check: cannot write {draft.rel}: {error.strerror or error}", err=True)
                raise SystemExit(2) from None
        if isinstance(draft, drafting.Skeleton):
            written_readmes += 1
            click.echo(f"{verb} {draft.rel}: the four headings, each with a TODO", err=diff)
            continue
        written += 1
        filled = ", ".join(draft.filled) or "nothing"
        click.echo(f"{verb} {draft.rel}: {filled} filled; left for a person: {', '.join(draft.unfilled)}",
                   err=diff)
    if why and made:
        click.echo(f"policy-check: admission dates: {why}", err=True)
    click.echo(f"{verb} {written} record(s) and {written_readmes} README skeleton(s); {having} feature(s) "
               "already had a record", err=diff)
    raise SystemExit(1 if diff and (written or written_readmes) else 0)
