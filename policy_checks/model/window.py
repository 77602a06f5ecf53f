"""The graduation window and the deadline status of an experimental feature.

A feature is admitted for a bounded time: its target date lies at most
`ADMISSION_WINDOW` after its admission, and without a target date its deadline is the
end of that window (docs/experimental.rst, "Admission"; docs/bot.rst). The checker
(EXP009, through `policy_checks.model.records`), the bot's PR check and its weekly review
all take the window, its wording and the status of a deadline from here, so they
cannot drift apart. The graduation checklist (`GRADUATION_STEPS`) is defined here
too: ``policy-check graduate`` prints it and the bot's PR check shows it on a
graduation PR. Pure data and date arithmetic: nothing here imports the bot or PyGithub.
"""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from . import markers

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


class GraduationStep(NamedTuple):
    """One step of the graduation checklist (docs/experimental.rst, "Graduation")."""

    number: int
    text: str


GRADUATION_STEPS = (
    GraduationStep(1, "Settle the API contract: names, dtypes, keyword-only performance arguments."),
    GraduationStep(2, "Move the code out of the experimental package to its stable home, leaving a re-export shim "
                      "at the old path for one release."),
    GraduationStep(3, f"Replace `@{markers.EXPERIMENTAL_API}` with `@{markers.STABLE_API}` and drop the "
                      f"experimental gate calls and `@{markers.EXPERIMENTAL_BACKEND}` markers."),
    GraduationStep(4, "Finish the stable-API checklist: trace template, trace example test, docs page, top-level "
                      "export."),
    GraduationStep(5, "If the kernels ship prebuilt, register their JIT specs in the AOT module."),
    GraduationStep(6, "Move the tests from the experimental lane to the stable lane."),
    GraduationStep(7, "Close the tracking issue, naming the release the feature graduated in."),
)
