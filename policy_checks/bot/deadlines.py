"""Calendar dates for graduation deadlines: compared in UTC, printed with days left or overdue."""

from __future__ import annotations

import datetime as dt

ADMISSION_WINDOW = dt.timedelta(weeks=4)  # default and maximum time from admission to graduation
DUE_SOON = dt.timedelta(days=7)


def today_utc() -> dt.date:
    return dt.datetime.now(dt.timezone.utc).date()


def utc_date(moment: dt.datetime) -> dt.date:
    """The UTC calendar date of a timestamp (naive timestamps are taken as UTC, as PyGithub returns them)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc)
    return moment.date()


def default_deadline(admitted: dt.date) -> dt.date:
    return admitted + ADMISSION_WINDOW


def days_left(deadline: dt.date, today: dt.date) -> int:
    return (deadline - today).days


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
