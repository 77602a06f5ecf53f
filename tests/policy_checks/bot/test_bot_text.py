"""Escaping of quoted user text and the deadline wording."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from policy_checks.bot import deadlines
from policy_checks.bot.markdown import ZWJ, bullet_list, code


def test_code_span_defuses_mentions_and_markdown():
    text = code("@everyone **bold** [x](http://e) <!-- hide -->")
    assert text.startswith("`") and text.endswith("`")
    assert "@everyone" not in text and "@" + ZWJ + "everyone" in text


def test_code_span_fence_outgrows_backticks_inside():
    assert code("a ``b`` c") == "```a ``b`` c```"
    assert code("`x`") == "`` `x` ``"


def test_code_span_is_one_line_and_bounded():
    text = code("line one\nline two\r\n\t" + "y" * 500, limit=40)
    assert "\n" not in text and len(text) <= 42 and text.endswith("…`")


def test_empty_text_is_named():
    assert code("  \n ") == "(empty)"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_text_becomes_one_closed_code_span(text):
    span = code(text)
    assert "\n" not in span and "\r" not in span
    if span != "(empty)":
        fence = span[: len(span) - len(span.lstrip("`"))]
        inner = span[len(fence) : len(span) - len(fence)]
        assert span.endswith(fence) and fence not in inner  # nothing inside can close it early
        assert "@" not in inner.replace("@" + ZWJ, "")


def test_bullet_list_bounds_its_length():
    lines = bullet_list([str(i) for i in range(40)], limit=30)
    assert len(lines) == 31 and lines[-1] == "- … and 10 more"


def test_deadline_wording():
    today = dt.date(2026, 11, 27)
    assert deadlines.describe(dt.date(2026, 11, 30), today) == "2026-11-30 (3 days left)"
    assert deadlines.describe(dt.date(2026, 11, 28), today) == "2026-11-28 (1 day left)"
    assert deadlines.describe(today, today) == "2026-11-27 (due today)"
    assert deadlines.describe(dt.date(2026, 11, 25), today) == "2026-11-25 (2 days overdue)"


def test_dates_are_utc_calendar_dates():
    late_in_tokyo = dt.datetime(2026, 11, 30, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=9)))
    assert deadlines.utc_date(late_in_tokyo) == dt.date(2026, 11, 29)
    assert deadlines.default_deadline(dt.date(2026, 11, 2)) == dt.date(2026, 11, 30)
    assert deadlines.review_cycle(dt.date(2026, 11, 30)) == "2026-W49"
