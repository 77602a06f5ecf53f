"""Quoting untrusted text in Markdown: no @mention pings, no broken Markdown, bounded length.

Everything echoed from input goes through `code`. A code span shows its text literally. So
no link, autolink, HTML, emphasis or mention can come from input. Neither can a ``#N`` or
``owner/repo#N`` cross-reference. `table_row` keeps a cell from splitting a GFM table.

The board (``policy-check features --format markdown``) and the bot's comments both quote
through here. tests/policy_checks/bot/test_bot_inert_text.py proves it on the rendered
comments. Standard library only: importing it loads neither PyGithub nor the bot.
"""

from __future__ import annotations

import re

MAX_QUOTE = 120
ZWJ = "\u200d"

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def code(text: str, limit: int = MAX_QUOTE) -> str:
    """Render user text as one inline code span.

    Code spans show text literally: no links, emphasis, HTML or pings. Newlines and control
    characters are flattened, and the length is bounded. The fence is one backtick longer
    than the longest backtick run inside, as CommonMark requires.
    """
    flat = " ".join(_CONTROL_RE.sub(" ", text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    if not flat:
        return "(empty)"
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    # GitHub does not notify mentions inside code spans; the joiner guards copies of the text.
    flat = flat.replace("@", "@" + ZWJ)
    return f"{fence}{pad}{flat}{pad}{fence}"


def table_row(cells: list[str]) -> str:
    """A GFM table row.

    ``|`` inside a cell, even inside a code span, would split it, so it is escaped."""
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
