"""`policy_checks.model.parsed`: one parse per text while a command shares them, none kept
outside, a bounded budget, and the parser's errors raised again on every ask."""

from __future__ import annotations

import ast

import pytest

from policy_checks.model import parsed


def test_within_sharing_the_same_text_is_parsed_once():
    with parsed.sharing():
        first = parsed.tree(b"x = 1\n")
        assert parsed.tree(bytes(b"x = 1\n")) is first  # equal bytes, another object
        assert parsed.tree(b"x = 2\n") is not first
        assert parsed.stats() == (2, 12)
    assert parsed.stats() == (0, 0)  # the trees go with the block


def test_outside_sharing_nothing_is_kept():
    first = parsed.tree(b"y = 1\n")
    assert parsed.tree(b"y = 1\n") is not first
    assert parsed.stats() == (0, 0)


def test_the_budget_drops_the_oldest(monkeypatch):
    monkeypatch.setattr(parsed, "BUDGET", 20)
    with parsed.sharing():
        a = parsed.tree(b"a = 1  # 0123456\n")  # 18 bytes
        assert parsed.tree(b"a = 1  # 0123456\n") is a
        parsed.tree(b"b = 2\n")  # 6 more: over the budget, `a` goes
        assert parsed.stats() == (1, 6)
        assert parsed.tree(b"a = 1  # 0123456\n") is not a
        parsed.tree(b"c = '" + b"x" * 64 + b"'\n")  # over the whole budget: never kept
        assert parsed.stats()[1] <= 20


def test_a_text_that_does_not_parse_raises_each_time():
    with parsed.sharing():
        for _ in range(2):
            with pytest.raises(SyntaxError):
                parsed.tree(b"def (:\n")
        assert parsed.tree_or_none(b"def (:\n") is None
        with pytest.raises((SyntaxError, ValueError)):  # which one depends on the Python
            parsed.tree(b"x = 1\0\n")


def test_the_parsers_warnings_about_the_text_are_not_printed(recwarn):
    tree = parsed.tree(b"s = '\\d'\n")  # an invalid escape sequence
    assert isinstance(tree, ast.Module)
    assert not [w for w in recwarn if issubclass(w.category, (SyntaxWarning, DeprecationWarning))]


def test_a_shared_planner_keeps_trees_only_while_it_runs():
    seen = []

    @parsed.shared
    def planner():
        parsed.tree(b"z = 3\n")
        seen.append(parsed.stats())
        return "plan"

    assert planner() == "plan"
    assert seen == [(1, 6)] and parsed.stats() == (0, 0)


def test_parses_answers_from_memory_for_a_text_parsed_in_the_block(monkeypatch):
    with parsed.sharing():
        parsed.tree(b"w = 1\n")
        monkeypatch.setattr(parsed.ast, "parse", lambda *a, **k: pytest.fail("parsed again"))
        assert parsed.parses(b"w = 1\n")
    monkeypatch.undo()
    assert not parsed.parses(b"def (:\n") and parsed.parses(b"v = 2\n")
