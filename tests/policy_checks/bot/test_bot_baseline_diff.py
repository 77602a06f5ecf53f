"""Reading a PR's change to ``policy-check-baseline.json`` from its unified diff (no network)."""

from __future__ import annotations

import difflib
import json
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policy_checks.bot.baseline_diff import BaselineEntry, parse_baseline_patch, parse_entry

EXP001 = ("EXP001", "flashinfer.mega_moe_v3", "<module>", "flashinfer.experimental.mega_moe_v3.runtime")
EXP009 = ("EXP009", "flashinfer/experimental/b12x/__init__.py", "", "b12x: FEATURE.toml")


def entry_line(rule: str, module: str, scope: str, subject: str, count: int = 1) -> str:
    """An entry line as ``policy-check baseline`` writes it (without the indent and comma)."""
    return json.dumps({"rule": rule, "module": module, "scope": scope, "subject": subject, "count": count})


def baseline_text(counts: dict[tuple, int]) -> str:
    """The whole file: one entry a line, sorted, a comma after all but the last."""
    if not counts:
        return '{\n  "policy-check-baseline": 1,\n  "entries": []\n}\n'
    lines = [f"    {entry_line(*key, count)}" for key, count in sorted(counts.items())]
    return '{\n  "policy-check-baseline": 1,\n  "entries": [\n' + ",\n".join(lines) + "\n  ]\n}\n"


def diff(old: dict[tuple, int] | None, new: dict[tuple, int], context: int = 3) -> str:
    """A unified diff between two baselines, headers and all (``None``: the file is new)."""
    before = baseline_text(old).splitlines() if old is not None else []
    return "\n".join(difflib.unified_diff(before, baseline_text(new).splitlines(), "a/x", "b/x", n=context,
                                          lineterm=""))


def test_an_added_entry_is_debt():
    delta = parse_baseline_patch(diff({EXP009: 1}, {EXP009: 1, EXP001: 1}))
    assert delta.added == [BaselineEntry(*EXP001)]
    assert delta.paid == delta.moved == delta.unreadable == []


def test_a_removed_entry_is_paid_off():
    delta = parse_baseline_patch(diff({EXP009: 1, EXP001: 2}, {EXP009: 1}))
    assert delta.paid == [BaselineEntry(*EXP001, 2)] and delta.added == []


@pytest.mark.parametrize("old, new, added, paid", [(1, 3, 2, 0), (3, 1, 0, 2), (2, 2, 0, 0)])
def test_count_changes_are_netted(old, new, added, paid):
    delta = parse_baseline_patch(diff({EXP001: old, EXP009: 1}, {EXP001: new, EXP009: 1}))
    assert delta.added == ([BaselineEntry(*EXP001, added)] if added else [])
    assert delta.paid == ([BaselineEntry(*EXP001, paid)] if paid else [])


def test_an_entry_losing_its_comma_is_unchanged():
    """Adding an entry after the last one re-writes the old last line with a comma: no debt, no payment."""
    later = ("EXP010", "z", "", "z")
    delta = parse_baseline_patch(diff({EXP001: 1}, {EXP001: 1, later: 1}))
    assert delta.added == [BaselineEntry(*later)] and delta.paid == []


def test_a_renamed_module_is_a_move():
    renamed = ("EXP001", "flashinfer.mega_moe_v4", *EXP001[2:])
    delta = parse_baseline_patch(diff({EXP001: 1, EXP009: 1}, {renamed: 1, EXP009: 1}))
    assert delta.moved == [BaselineEntry(*renamed)]
    assert delta.added == delta.paid == []


def test_a_move_that_grows_is_partly_debt():
    renamed = ("EXP001", "flashinfer.mega_moe_v4", *EXP001[2:])
    delta = parse_baseline_patch(diff({EXP001: 1}, {renamed: 3}))
    assert delta.moved == [BaselineEntry(*renamed, 1)] and delta.added == [BaselineEntry(*renamed, 2)]
    delta = parse_baseline_patch(diff({EXP001: 3}, {renamed: 1}))
    assert delta.moved == [BaselineEntry(*renamed, 1)] and delta.paid == [BaselineEntry(*EXP001, 2)]


def test_another_rule_at_the_same_module_is_no_move():
    other = ("EXP002", "flashinfer.mega_moe_v4", *EXP001[2:])
    delta = parse_baseline_patch(diff({EXP001: 1}, {other: 1}))
    assert delta.moved == [] and delta.added == [BaselineEntry(*other)] and delta.paid == [BaselineEntry(*EXP001)]


def test_a_new_file_adds_every_entry_and_its_frame_is_not_unreadable():
    delta = parse_baseline_patch(diff(None, {EXP001: 2, EXP009: 1}))
    assert delta.added == [BaselineEntry(*EXP001, 2), BaselineEntry(*EXP009)] and delta.unreadable == []
    assert parse_baseline_patch(diff(None, {})).unreadable == []


def test_the_example_file_reads():
    patch = """@@ -0,0 +1,7 @@
+{
+  "policy-check-baseline": 1,
+  "entries": [
+    {"rule": "EXP001", "module": "flashinfer.mega_moe_v3", "scope": "<module>", "subject": "flashinfer.experimental.mega_moe_v3.runtime", "count": 1},
+    {"rule": "EXP009", "module": "flashinfer/experimental/b12x/__init__.py", "scope": "", "subject": "b12x: FEATURE.toml", "count": 1}
+  ]
+}
\\ No newline at end of file"""
    delta = parse_baseline_patch(patch)
    assert delta.added == [BaselineEntry(*EXP001), BaselineEntry(*EXP009)] and delta.unreadable == []


@pytest.mark.parametrize("line", [
    '{"rule": "EXP001", "module": "m", "scope": "", "subject": "s"}',  # no count
    '{"rule": "EXP001", "module": "m", "scope": "", "subject": "s", "count": 1, "note": "x"}',  # a key too many
    '{"rule": "EXP001", "module": "m", "scope": null, "subject": "s", "count": 1}',
    '{"rule": 1, "module": "m", "scope": "", "subject": "s", "count": 1}',
    '{"rule": "", "module": "m", "scope": "", "subject": "s", "count": 1}',  # the checker wants a rule
    '{"rule": "EXP001", "module": "", "scope": "", "subject": "s", "count": 1}',  # and a module
    '{"rule": "EXP001", "module": "m", "scope": "", "subject": "s", "count": 0}',
    '{"rule": "EXP001", "module": "m", "scope": "", "subject": "s", "count": -1}',
    '{"rule": "EXP001", "module": "m", "scope": "", "subject": "s", "count": "1"}',
    '{"rule": "EXP001", "module": "m", "scope": "", "subject": "s", "count": true}',
    '{"rule": "EXP001", "module": "m", "scope": "", "subject": "s", "count": 1.0}',
    '{"rule": "EXP001", "module": "m", "scope": "", "subject": "s", "count": 10000000000}',
    '{"rule": "EXP001", "module": "m", "scope": "", "subject": "s", "count": ' + "9" * 5000 + "}",
    '{"rule": "EXP001", "module": "m", "scope": "", "subject": "s", "count": 1',  # cut short
    '{"rule": "EXP001", "module": "m", "scope": "", "subject": "s", "count": 1},,',
    '{"a": ' + "[" * 100_000 + "}",  # deeper than the JSON decoder recurses
    '["EXP001", "m", "", "s", 1]',
    '"note": "EXP001 is fine"',
    "{",  # an entry spread over lines is not one entry a line
    '"rule": "EXP001",',
])
def test_an_added_line_that_is_not_an_entry_is_unreadable(line):
    assert parse_entry(line) is None
    delta = parse_baseline_patch(f"@@ -1 +1 @@\n-    {line}\n+    {line}\n")
    assert delta.added == delta.paid == []
    expected = [] if line == "{" else [line]  # "{" alone is the file's frame
    assert delta.unreadable == expected


def test_removed_lines_that_are_not_entries_are_ignored():
    assert parse_baseline_patch("@@ -1,2 +1 @@\n-garbage\n-    {\n") == parse_baseline_patch(None)


@pytest.mark.parametrize("line", ["+++ b/policy-check-baseline.json", "--- a/policy-check-baseline.json",
                                  "@@ -1,3 +1,3 @@", "\\ No newline at end of file", " context", "", "+", "+   "])
def test_headers_context_and_blank_lines_are_skipped(line):
    delta = parse_baseline_patch(line)
    assert delta.added == delta.paid == delta.unreadable == []


def test_duplicate_lines_add_up_and_crlf_is_read():
    line = f"+    {entry_line(*EXP001)},\r\n"
    assert parse_baseline_patch(line * 3).added == [BaselineEntry(*EXP001, 3)]


def test_lines_end_only_at_newlines():
    """A writer that keeps non-ASCII text as it is may leave U+2028 or U+0085 inside a string."""
    odd = ("EXP001", "m\u2028x", "", "s\x85t\x1c")
    line = json.dumps(dict(zip(("rule", "module", "scope", "subject"), odd), count=1), ensure_ascii=False)
    assert parse_baseline_patch(f"+    {line}\r\n").added == [BaselineEntry(*odd)]


def test_none_and_empty_patches_change_nothing():
    for patch in (None, ""):
        delta = parse_baseline_patch(patch)
        assert delta.added == delta.paid == delta.moved == delta.unreadable == []


# ----- properties ------------------------------------------------------------------------

PIECES = ["+", "-", " ", "@@ -1 +1 @@", "---", "+++", "{", "}", "[", "]", ",", '"count": ', "1", "0", "-1", "1e9",
          '"rule": "EXP001"', '"module": ""', '"scope": ""', '"subject": "s"', '"entries": [', "\\u0000", "\\",
          '"', ":", "\n", "\r", "\r\n", "\x00", "\u2028", "@octocat", "[" * 50, "9" * 30, entry_line(*EXP001)]
patch_text = st.one_of(st.text(), st.lists(st.sampled_from(PIECES), max_size=40).map("".join))


@given(patch_text)
def test_any_patch_parses_without_an_exception(patch):
    delta = parse_baseline_patch(patch)
    assert all(e.count >= 1 for e in delta.added + delta.paid + delta.moved)


keys = st.tuples(st.sampled_from(["EXP001", "EXP009"]), st.sampled_from(["a", "b", "c/d.py"]),
                 st.sampled_from(["", "<module>", "f"]), st.text(max_size=6))
baselines = st.dictionaries(keys, st.integers(1, 4), max_size=8)


@given(baselines, baselines, st.integers(0, 3))
def test_a_diff_of_two_baselines_nets_to_their_difference(old, new, context):
    delta = parse_baseline_patch(diff(old, new, context))
    assert delta.unreadable == []
    assert sum(e.count for e in delta.added) - sum(e.count for e in delta.paid) == sum(new.values()) - sum(old.values())
    for e in delta.added + delta.moved:
        assert new.get(e.key, 0) - old.get(e.key, 0) >= e.count
    for e in delta.paid:
        assert old.get(e.key, 0) - new.get(e.key, 0) >= e.count


@given(baselines, baselines)
def test_without_renames_the_delta_is_the_exact_difference(old, new):
    old = {("EXP001", "m", *key[2:]): n for key, n in old.items()}  # one module: nothing can move
    new = {("EXP001", "m", *key[2:]): n for key, n in new.items()}
    delta = parse_baseline_patch(diff(old, new))
    assert delta.moved == []
    assert Counter({e.key: e.count for e in delta.added}) == Counter(new) - Counter(old)
    assert Counter({e.key: e.count for e in delta.paid}) == Counter(old) - Counter(new)
