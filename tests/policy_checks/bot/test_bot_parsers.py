"""The bot's parsers on their own: PR body, tracking references, issue forms, commands, FEATURE.toml."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_checks.bot.parsers import (
    TrackingRef,
    issue_sections,
    normalise_reason,
    parse_extend_command,
    parse_feature_toml,
    parse_pr_body,
    parse_tracking_issue,
    parse_tracking_ref,
)


def section(*lines: str) -> str:
    return "## Summary\n\nText.\n\n## Experimental Track\n\n" + "\n".join(lines) + "\n\n## Checklist\n\n- [x] tests\n"


# ----- PR body ---------------------------------------------------------------------------

def test_null_and_empty_bodies_declare_nothing():
    for body in (None, "", "   \n"):
        declaration = parse_pr_body(body)
        assert not declaration.section_found and not declaration.ticked and declaration.tracking is None


def test_ticked_box_and_tracking_issue():
    declaration = parse_pr_body(section("- [x] This PR is experimental", "- Tracking issue: #42"))
    assert declaration.section_found and declaration.ticked
    assert declaration.tracking == TrackingRef(42)


def test_unticked_box():
    declaration = parse_pr_body(section("- [ ] This PR is experimental", "Tracking issue: #42"))
    assert declaration.section_found and not declaration.ticked


@pytest.mark.parametrize("bullet", ["-", "*", "+", "1."])
@pytest.mark.parametrize("mark", ["x", "X"])
def test_bullets_and_tick_marks(bullet, mark):
    assert parse_pr_body(section(f"{bullet} [{mark}] Experimental track PR")).ticked


def test_crlf_line_ends():
    body = section("- [x] Experimental PR", "  - Tracking issue: GH-7").replace("\n", "\r\n")
    declaration = parse_pr_body(body)
    assert declaration.ticked and declaration.tracking == TrackingRef(7)


def test_nested_items_are_read():
    declaration = parse_pr_body(section("- [x] Experimental PR", "    - details", "        - Tracking issue: acme/gizmo#9"))
    assert declaration.tracking == TrackingRef(9, "acme/gizmo")


def test_html_comments_hide_template_hints():
    body = section("<!-- - [x] Experimental PR (tick me)", "Tracking issue: #1 -->", "- [ ] Experimental PR", "Tracking issue:")
    declaration = parse_pr_body(body)
    assert not declaration.ticked and declaration.tracking is None


def test_unterminated_html_comment_hides_the_rest():
    assert not parse_pr_body("## Experimental Track\n<!-- - [x] experimental\n").ticked


def test_code_fences_are_not_read():
    body = section("```markdown", "## Experimental Track", "- [x] experimental", "Tracking issue: #5", "```",
                   "- [ ] experimental")
    declaration = parse_pr_body(body)
    assert declaration.section_found and not declaration.ticked and declaration.tracking is None


def test_heading_inside_a_fence_does_not_start_the_section():
    body = "```\n## Experimental Track\n- [x] experimental\n```\n"
    assert not parse_pr_body(body).section_found


def test_section_ends_at_the_next_heading():
    body = "## Experimental Track\n- [ ] experimental\n## Other\n- [x] experimental\nTracking issue: #3\n"
    declaration = parse_pr_body(body)
    assert not declaration.ticked and declaration.tracking is None


def test_declaration_is_the_checkbox_mentioning_experimental():
    body = section("- [x] I ran the tests", "- [ ] This PR is an Experimental Track PR")
    assert not parse_pr_body(body).ticked


def test_pr_link_is_a_problem_not_a_tracking_issue():
    declaration = parse_pr_body(section("- [x] experimental", "Tracking issue: https://github.com/acme/w/pull/12"))
    assert declaration.tracking is None
    assert "pull request, not an issue" in declaration.problems[0]


@pytest.mark.parametrize(
    "text, ref",
    [
        ("#12", TrackingRef(12)),
        ("GH-12", TrackingRef(12)),
        ("gh-12", TrackingRef(12)),
        ("acme/gizmo#12", TrackingRef(12, "acme/gizmo")),
        ("https://github.com/acme/gizmo/issues/12", TrackingRef(12, "acme/gizmo")),
        ("[#12](https://github.com/acme/gizmo/issues/12)", TrackingRef(12, "acme/gizmo")),
        ("see issue #12.", TrackingRef(12)),
        ("#", None),
        ("<number>", None),
        ("", None),
    ],
)
def test_tracking_references(text, ref):
    assert parse_tracking_ref(text)[0] == ref


def test_tracking_ref_renders_relative_to_the_repo():
    assert TrackingRef(3).render("a/b") == "#3"
    assert TrackingRef(3, "A/B").render("a/b") == "#3"
    assert TrackingRef(3, "c/d").render("a/b") == "c/d#3"


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.text()))
def test_any_text_parses_without_an_exception(body):
    declaration = parse_pr_body(body)
    assert isinstance(declaration.ticked, bool)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["## Experimental Track", "- [x] experimental", "- [ ] experimental", "```", "~~~",
                                 "<!--", "-->", "Tracking issue: #1", "\r\n", "  * [X] nested", "# Top", "### Sub",
                                 "Tracking issue: https://x.y/a/b/pull/3", ""]), max_size=30))
def test_markdown_like_text_parses_without_an_exception(lines):
    declaration = parse_pr_body("\n".join(lines))
    if declaration.tracking is not None:
        assert declaration.tracking.number >= 0


# ----- tracking issue -----------------------------------------------------------------------

FORM = """### Owner

@octocat

### Use case

Serving small batches.

### Why experimental

New numerics.

### Graduation plan

Target release: v0.8.0
Target date: 2026-11-30
Then move to core.
"""


def test_issue_form_fields():
    issue = parse_tracking_issue(FORM)
    assert issue.problems == []
    assert issue.owner == "octocat" and issue.target_release == "0.8.0"
    assert issue.target_date == dt.date(2026, 11, 30)
    assert issue.use_case == "Serving small batches."


def test_issue_form_no_response_and_missing_fields():
    issue = parse_tracking_issue("### Owner\n\n_No response_\n\n### Graduation plan\n\nTarget date: 2026-02-30\n")
    text = " ".join(issue.problems)
    assert issue.owner is None and "Owner" in text and "Use case" in text and "Why experimental" in text
    assert "Target release" in text and "Target date" in text  # 2026-02-30 is not a date


def test_issue_owner_must_be_a_login():
    assert parse_tracking_issue(FORM.replace("@octocat", "@not a login!")).owner == "not"
    assert parse_tracking_issue(FORM.replace("@octocat", "@-bad-")).owner is None


def test_issue_sections_ignore_fenced_headings_and_crlf():
    body = "### Owner\r\n\r\n@a\r\n\r\n```\r\n### Use case\r\n```\r\n"
    sections = issue_sections(body)
    assert set(sections) == {"owner"} and "### Use case" not in sections["owner"].splitlines()[0]


# ----- extension commands ------------------------------------------------------------------

def test_extend_command():
    assert parse_extend_command("/experimental extend 2 waiting for CUTLASS 4.1") == (
        parse_extend_command("/Experimental  EXTEND 2   waiting for CUTLASS 4.1")[0], None)
    command, problem = parse_extend_command("Thanks!\r\n/experimental extend 3 numerics fix pending\r\n")
    assert command.weeks == 3 and command.reason == "numerics fix pending" and problem is None


@pytest.mark.parametrize("text", ["/experimental extend", "/experimental extend two weeks", "/experimental extend 0 x",
                                  "/experimental extend 99 x", "/experimental extend 2"])
def test_bad_extend_commands_are_problems(text):
    command, problem = parse_extend_command(text)
    assert command is None and problem


def test_text_without_a_command():
    assert parse_extend_command("we should /experimental extend 2 later") == (None, None)
    assert parse_extend_command(None) == (None, None)


def test_reasons_compare_loosely():
    assert normalise_reason("Waiting for  CUTLASS!") == normalise_reason("waiting for cutlass")


# ----- FEATURE.toml ---------------------------------------------------------------------------

RECORD = """
kind = "backend"
owner = "octocat"
tracking_issue = 123
admitted = 2026-11-02
target_release = "0.8.0"
target_date = 2026-11-30
apis = []
backends = ["mm_bf16:splitk"]
auto_routing = true
"""


def test_feature_record():
    record = parse_feature_toml("splitk", RECORD)
    assert record.problems == []
    assert (record.owner, record.tracking, record.admitted, record.target_date) == (
        "octocat", TrackingRef(123), dt.date(2026, 11, 2), dt.date(2026, 11, 30))


def test_feature_record_cross_repo_issue():
    record = parse_feature_toml("x", RECORD.replace("tracking_issue = 123", 'tracking_issue = "acme/gizmo#5"'))
    assert record.tracking == TrackingRef(5, "acme/gizmo")


@pytest.mark.parametrize(
    "change, problem",
    [
        (("tracking_issue = 123", 'tracking_issue = "soon"'), "tracking_issue"),
        (("tracking_issue = 123", ""), "no `tracking_issue`"),
        (("admitted = 2026-11-02", 'admitted = "2026-11-02"'), "`admitted` must be a TOML date"),
        (("target_date = 2026-11-30", "target_date = 2026-11-30T10:00:00"), "`target_date` must be a TOML date"),
        (('owner = "octocat"', 'owner = "not a login"'), "`owner` is not a GitHub login"),
    ],
)
def test_feature_record_problems(change, problem):
    record = parse_feature_toml("x", RECORD.replace(*change))
    assert any(problem in p for p in record.problems), record.problems


def test_invalid_toml_is_a_problem():
    record = parse_feature_toml("x", "owner = ")
    assert record.owner is None and "not valid TOML" in record.problems[0]


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.text()))
def test_any_issue_body_or_comment_parses_without_an_exception(text):
    issue = parse_tracking_issue(text)
    assert issue.owner is None or issue.owner == issue.owner.strip()
    command, problem = parse_extend_command(text)
    assert command is None or (1 <= command.weeks <= 52 and command.reason)
