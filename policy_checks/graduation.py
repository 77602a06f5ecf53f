"""The graduation window and the deadline status of an experimental feature.

A feature is admitted for a bounded time: its target date lies at most
`ADMISSION_WINDOW` after its admission, and without a target date its deadline is the
end of that window (docs/experimental.rst, "Admission"; docs/bot.rst). The checker
(EXP009, through `policy_checks.features`), the bot's PR check and its weekly review
all take the window, its wording and the status of a deadline from here, so they
cannot drift apart. Pure date arithmetic: nothing here imports the bot or PyGithub.
"""

from __future__ import annotations

import datetime as dt

ADMISSION_WINDOW = dt.timedelta(weeks=4)  # default and longest time from admission to the target date
DUE_SOON_WITHIN = dt.timedelta(days=7)  # a deadline at most this far away is "due soon"

# The status of a deadline on a given day (`status`); the review shows these words.
ON_TRACK = "on track"
DUE_SOON = f"due within {DUE_SOON_WITHIN.days} days"
OVERDUE = "overdue"

_SMALL_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                  "twelve")


def in_words(span: dt.timedelta) -> str:
    """A span of whole days as messages write it: ``four weeks``, ``one week``, ``ten days``, ``15 days``."""
    count, unit = (span.days // 7, "week") if span.days % 7 == 0 else (span.days, "day")
    number = _SMALL_NUMBERS[count] if count < len(_SMALL_NUMBERS) else str(count)
    return f"{number} {unit}" + ("" if count == 1 else "s")


WINDOW_IN_WORDS = in_words(ADMISSION_WINDOW)  # "four weeks"


def default_deadline(admitted: dt.date) -> dt.date:
    """The end of the window: the latest target date, and the deadline of a feature that names none."""
    return admitted + ADMISSION_WINDOW


def days_left(deadline: dt.date, today: dt.date) -> int:
    """Days until the deadline; negative once it has passed."""
    return (deadline - today).days


def status(deadline: dt.date, today: dt.date) -> str:
    """`OVERDUE` once the deadline has passed, `DUE_SOON` within `DUE_SOON_WITHIN` of it, else `ON_TRACK`."""
    left = days_left(deadline, today)
    if left < 0:
        return OVERDUE
    return DUE_SOON if left <= DUE_SOON_WITHIN.days else ON_TRACK
