"""Quoting user text in bot comments: no @mention pings, no broken Markdown, bounded length.

Everything the bot echoes from input goes through `code`. A code span shows its text
literally. So no link, autolink, HTML, emphasis or mention can come from input. Neither can
a ``#N`` or ``owner/repo#N`` cross-reference. tests/policy_checks/bot/test_bot_inert_text.py
proves it on the rendered comments.

`code` and `table_row` live in `policy_checks.report.markdown`, below the bot. The checker's
board quotes with them too. The bot's own helpers are here.
"""

from __future__ import annotations

from ..report.markdown import MAX_QUOTE, ZWJ, code, table_row

__all__ = ["MAX_LIST_ITEMS", "MAX_QUOTE", "ZWJ", "bullet_list", "code", "table_row"]

MAX_LIST_ITEMS = 30


def bullet_list(items: list[str], limit: int = MAX_LIST_ITEMS) -> list[str]:
    """Markdown bullets for already-rendered items, with "and N more" past the limit."""
    lines = [f"- {item}" for item in items[:limit]]
    if len(items) > limit:
        lines.append(f"- … and {len(items) - limit} more")
    return lines
