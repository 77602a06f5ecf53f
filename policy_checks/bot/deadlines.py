"""Calendar dates for graduation deadlines, as the bot uses them.

That means UTC days, the weekly cycle and the wording. The window and the status of a
deadline (`status`: on track, due soon, overdue) are `policy_checks.model.window`'s. The
checker shares them. They are imported here so that the bot has one calendar module.
"""

from __future__ import annotations

import datetime as dt

from ..model.window import DUE_SOON, ON_TRACK, OVERDUE, default_deadline, days_left, status

__all__ = ["DUE_SOON", "ON_TRACK", "OVERDUE", "days_left", "default_deadline", "describe", "review_cycle", "status",
           "today_utc", "utc_date"]


def today_utc() -> dt.date:
    return dt.datetime.now(dt.timezone.utc).date()


def utc_date(moment: dt.datetime) -> dt.date:
    """The UTC calendar date of a timestamp.

    Naive timestamps are taken as UTC, as PyGithub returns them."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc)
    return moment.date()


def describe(deadline: dt.date, today: dt.date) -> str:
    """``2026-11-30 (3 days left)``, ``(due today)`` or ``(2 days overdue)``."""
    left = days_left(deadline, today)
    if left == 0:
        return f"{deadline.isoformat()} (due today)"
    unit = "day" if abs(left) == 1 else "days"
    if left > 0:
        return f"{deadline.isoformat()} ({left} {unit} left)"
    return f"{deadline.isoformat()} ({-left} {unit} overdue)"


def review_cycle(today: dt.date) -> str:
    """The weekly review cycle a date falls in, as an ISO week: ``2026-W48``."""
    year, week, _ = today.isocalendar()
    return f"{year}-W{week:02d}"
