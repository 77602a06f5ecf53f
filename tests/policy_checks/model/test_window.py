"""The graduation window (``policy_checks/graduation.py``): defined once, worded from its constant, and
the status of a deadline decided in one place."""

from __future__ import annotations

import ast
import datetime as dt
import re
from pathlib import Path

import pytest

from policy_checks.model import window as graduation
from policy_checks.bot import deadlines, review
from policy_checks.model.window import ADMISSION_WINDOW, DUE_SOON_WITHIN, WINDOW_IN_WORDS, in_words

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "span, words",
    [(dt.timedelta(weeks=4), "four weeks"), (dt.timedelta(weeks=1), "one week"), (dt.timedelta(days=10), "ten days"), (dt.timedelta(days=15), "15 days"),
     (dt.timedelta(days=1), "one day"), (dt.timedelta(weeks=13), "13 weeks")],
)
def test_spans_in_words(span, words):
    assert in_words(span) == words


@pytest.mark.parametrize(
    "left, status",
    [(-1, graduation.OVERDUE), (0, graduation.DUE_SOON), (DUE_SOON_WITHIN.days, graduation.DUE_SOON),
     (DUE_SOON_WITHIN.days + 1, graduation.ON_TRACK)],
)
def test_status_of_a_deadline(left, status):
    today = dt.date(2026, 11, 27)
    assert deadlines.status(today + dt.timedelta(days=left), today) == status


def test_the_bot_uses_the_one_status_and_window():
    assert (deadlines.status, deadlines.default_deadline) == (graduation.status, graduation.default_deadline)
    assert (review.ON_TRACK, review.DUE_SOON, review.OVERDUE) == (graduation.ON_TRACK, graduation.DUE_SOON,
                                                                  graduation.OVERDUE)
    assert graduation.default_deadline(dt.date(2026, 11, 2)) == dt.date(2026, 11, 2) + ADMISSION_WINDOW


# Spellings of the window or of the due-soon span that only lifecycle/window.py may hold.
SPELLED = re.compile(r"\b(?:four|4)[ -]weeks?\b|weeks\s*=\s*4\b|days\s*=\s*(?:28|7)\b|\b7 days\b", re.IGNORECASE)


def test_no_module_spells_the_window_but_window():
    spelled = []
    for path in sorted((ROOT / "policy_checks").rglob("*.py")):
        if path.relative_to(ROOT).as_posix() == "policy_checks/model/window.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SPELLED.search(node.value):
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.keyword) and SPELLED.search(ast.unparse(node)):  # timedelta(weeks=4)
                spelled.append(f"{path.relative_to(ROOT)}:{node.value.lineno}")
    assert spelled == []


@pytest.mark.parametrize(
    "page, phrase",
    [
        ("docs/bot.rst", f"most {WINDOW_IN_WORDS} after admission"),
        ("docs/bot.rst", f"the deadline is {WINDOW_IN_WORDS} after"),
        ("docs/bot.rst", f"at most {WINDOW_IN_WORDS} after admitted"),
        ("docs/bot.rst", f"more than {DUE_SOON_WITHIN.days} days to the deadline"),
        ("docs/bot.rst", graduation.DUE_SOON),
        (".github/ISSUE_TEMPLATE/experimental-feature.yml", f"at most {WINDOW_IN_WORDS} after admission"),
        ("docs/experimental.rst", f"within {WINDOW_IN_WORDS} of admission"),
    ],
)
def test_the_pages_state_the_window_the_code_enforces(page, phrase):
    text = " ".join((ROOT / page).read_text(encoding="utf-8").split())  # rst wraps lines
    assert phrase in text
