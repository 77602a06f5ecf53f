"""The bot's parsers on their own: PR body, tracking references, issue forms, commands, FEATURE.toml."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from policy_checks.bot.markdown import ZWJ
from policy_checks.bot.parsers import (
    LOGIN_RE,
    TrackingRef,
    issue_sections,
    mentioned_users,
    normalise_reason,
    parse_extend_command,
    parse_feature_toml,
    parse_login,
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


def test_the_pr_link_is_quoted_as_a_code_span():
    _, problem = parse_tracking_ref("see https://github.com/acme/w/pulls/12 please")
    assert problem == "the tracking reference `https://github.com/acme/w/pulls/12` is a pull request, not an issue"


# ----- headings as people write them --------------------------------------------------------

@pytest.mark.parametrize(
    "heading",
    [
        "## Experimental Track",
        "## experimental track",
        "## 🔬 Experimental Track",
        "## Experimental Track 🧪",
        "### **Experimental track:**",
        "## [Experimental Track]",
        "## 🔬 Experimental-Track",
        "## _Experimental_ Track",
        "## :microscope: Experimental Track",
        "## :microscope::test_tube: Experimental Track",
        "##   Experimental   Track   ##",
        "# EXPERIMENTAL TRACK #",
        "   ## Experimental Track",
        "##\tExperimental Track",
    ],
)
def test_experimental_track_headings_as_people_write_them(heading):
    body = f"## 📌 Description\n\nText.\n\n{heading}\n\n- [x] This PR is experimental\n- Tracking issue: #42\n"
    declaration = parse_pr_body(body + "\n## 🚀 Pull Request Checklist\n\n- [ ] Tracking issue: #7\n")
    assert declaration.section_found and declaration.ticked
    assert declaration.tracking == TrackingRef(42)


@pytest.mark.parametrize(
    "heading",
    [
        "## Experimental Track (optional)",
        "## Experimental Tracking",
        "## Experimental",
        "##Experimental Track",  # no blank after the hashes: a paragraph
        "    ## Experimental Track",  # four spaces: an indented code block
        "####### Experimental Track",  # seven hashes
        "Experimental Track",
        "> ## Experimental Track",
    ],
)
def test_other_headings_are_not_the_section(heading):
    assert not parse_pr_body(f"{heading}\n- [x] experimental\nTracking issue: #1\n").section_found


def test_an_emoji_heading_ends_the_section():
    body = "## 🔬 Experimental Track\n- [ ] experimental\n## 🚀 Checklist\nTracking issue: #3\n"
    declaration = parse_pr_body(body)
    assert declaration.section_found and declaration.tracking is None


def test_an_empty_heading_ends_the_section():
    # CommonMark: "##" alone is an empty level-2 heading.
    declaration = parse_pr_body("## Experimental Track\n- [x] experimental\n##\nTracking issue: #3\n")
    assert declaration.ticked and declaration.tracking is None


def test_a_heading_ending_in_a_hash_keeps_it():
    # "C#": the closing run of hashes needs a blank before it, so this is not "C".
    assert set(issue_sections("### C#\nx\n### C #\ny\n")) == {"c"}
    assert issue_sections("### Owner ###\n@a\n") == {"owner": "@a"}


def test_short_html_comments_close_at_once():
    # "<!-->" and "<!--->" are whole comments in HTML and CommonMark; what follows shows.
    for comment in ("<!-->", "<!--->"):
        assert parse_pr_body(f"## Experimental Track\n{comment}\n- [x] experimental\n").ticked


def test_a_flashinfer_style_template():
    body = """<!-- .github/pull_request_template.md -->

## 📌 Description

Adds a split-K backend.

## 🔍 Related Issues

Fixes #12.

## 🔬 Experimental Track

<!-- Tick the box if this PR adds or changes an experimental API or backend. -->

- [x] This PR is part of the **Experimental Track**
- Tracking issue: https://github.com/flashinfer-ai/flashinfer/issues/2100

## 🚀 Pull Request Checklist

### ✅ Pre-commit Checks

- [x] I have installed `pre-commit`.
"""
    declaration = parse_pr_body(body)
    assert declaration.section_found and declaration.ticked and declaration.problems == []
    assert declaration.tracking == TrackingRef(2100, "flashinfer-ai/flashinfer")


# ----- cost and robustness: inputs that used to be slow or raise -------------------------------

@pytest.mark.parametrize(
    "text",
    [
        "#" + "1" * 5000,
        "GH-" + "1" * 5000,
        "acme/gizmo#" + "1" * 5000,
        "https://github.com/acme/gizmo/issues/" + "1" * 5000,
        "#12345678901",  # ten digits and more are not an issue number
        "#١٢",  # Arabic-Indic digits: GitHub links ASCII digits only
    ],
)
def test_overlong_or_non_ascii_numbers_are_not_references(text):
    assert parse_tracking_ref(text) == (None, None)
    assert parse_pr_body(section("- [x] experimental", "Tracking issue: " + text)).tracking is None


@pytest.mark.parametrize(
    "text, ref",
    [
        ("https://github.com:443/acme/gizmo/issues/5", TrackingRef(5, "acme/gizmo")),
        ("http://ghe.example-corp.internal/acme/gizmo/issues/5", TrackingRef(5, "acme/gizmo")),
        ("https://[evil]/acme/gizmo/issues/5", None),  # not a host name
        ("https://exa_mple.com/acme/gizmo/issues/5", None),
        ("https://x@github.com/acme/gizmo/issues/5", None),
    ],
)
def test_issue_urls_need_a_host_name(text, ref):
    assert parse_tracking_ref(text)[0] == ref


def test_cross_repo_references_start_at_the_start_of_the_owner():
    # A match may not start inside a run of owner characters ("-" included): that is
    # what keeps the search linear, and "my_org-x" is not the owner "x".
    assert parse_tracking_ref("my_org-x/gizmo#5") == (None, None)
    assert parse_tracking_ref("(acme/gizmo#5)")[0] == TrackingRef(5, "acme/gizmo")
    assert parse_tracking_ref("-acme/gizmo#5")[0] == TrackingRef(5, "-acme/gizmo")


@pytest.mark.parametrize("weeks", ["²", "٣", "1" * 5000, "0" * 4 + "2"])
def test_extend_weeks_must_be_a_small_ascii_number(weeks):
    command, problem = parse_extend_command(f"/experimental extend {weeks} waiting for CUTLASS")
    assert command is None and "whole number of weeks" in problem


def test_extend_weeks_with_a_leading_zero():
    assert parse_extend_command("/experimental extend 02 x")[0].weeks == 2


@pytest.mark.parametrize(
    "text, problem",
    [
        ("a = " + "1" * 5000, "a number is too long"),
        ("a = " + "[" * 5000, "nested too deeply"),
        ("a = " + "{b = " * 3000, "nested too deeply"),
    ],
)
def test_toml_that_python_refuses_is_a_problem(text, problem):
    record = parse_feature_toml("x", text)
    assert record.kind is None and problem in record.problems[0]


def test_toml_errors_quote_the_file_inertly():
    # tomllib's message quotes the key: "Cannot declare ('<key>',) twice (at line 2, column 1)".
    key = '"@everyone [click](https://evil.example) <b>"'
    record = parse_feature_toml("x", f"[{key}]\n[{key}]\n")
    (problem,) = record.problems
    assert problem.startswith("FEATURE.toml is not valid TOML: `Cannot declare") and problem.endswith("`")
    assert "@everyone" not in problem and f"@{ZWJ}everyone [click]" in problem


ADVERSARIAL = {
    "tracking dashes": "## Experimental Track\n- [x] experimental\nTracking issue: " + "-" * 65000,
    "heading ' #' run": " #" * 20000 + "x",
    "issue heading": "###" + " #" * 20000 + "x",
    "'<!--' run": "<!--" * 16000,
    "checkbox spaces": "## Experimental Track\n- [ ] " + " " * 65000,
    "extend spaces": "/experimental extend " + " " * 65000,
    "'@' run": "### Owner\n" + "@" * 65000,
    "'a/' run": "## Experimental Track\nTracking issue: " + "a/" * 32000 + "#",
    "'a-' run": "## Experimental Track\nTracking issue: https://github.com/" + "a-" * 32000,
    "'http://' run": "## Experimental Track\nTracking issue: " + "http://" * 9000,
    "'1' run": "## Experimental Track\nTracking issue: #" + "1" * 65000 + " ",
    "'#' run": "#" * 65000,
    "'<a class=' run": "<a class=" * 7000,
    "'<a ' run": "<a " * 21000,
    "'<![' run": "<![" * 21000,
    "'</' run": "</" * 32000,
    "TOML '[' run": "a = " + "[" * 65000,
}


@pytest.mark.parametrize("text", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_adversarial_bodies_parse(text):
    # No timing here (benchmarks/bot_parsers.py times these); each used to take seconds,
    # and some raised.
    declaration = parse_pr_body(text)
    assert declaration.tracking is None and declaration.problems == []
    assert parse_tracking_issue(text).owner is None
    assert parse_extend_command(text)[0] is None
    assert parse_tracking_ref(text) == (None, None)
    assert parse_feature_toml("x", text).problems
    assert mentioned_users(text) == set()
    parse_login(text)
    normalise_reason(text)


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


@pytest.mark.parametrize(
    "heading, key",
    [
        ("### Owner", "owner"),
        ("### 👤 Owner", "owner"),
        ("### Owner:", "owner"),
        ("### **Owner**", "owner"),
        ("### :bust_in_silhouette: Owner", "owner"),
        ("### Why experimental?", "why experimental"),
        ("### Why *experimental*?", "why experimental"),
        ("### Use case", "use case"),
        ("### 🎯 Use-case", "use case"),
        ("### Graduation plan 🎓", "graduation plan"),
    ],
)
def test_issue_section_names_are_their_words(heading, key):
    assert issue_sections(f"{heading}\n\ntext\n") == {key: "text"}


def test_a_decorated_issue_form():
    decorated = (
        FORM.replace("### Owner", "### 👤 Owner:")
        .replace("### Why experimental", "### Why experimental?")
        .replace("### Use case", "### 🎯 Use case")
        .replace("### Graduation plan", "### **Graduation plan**")
    )
    issue = parse_tracking_issue(decorated)
    assert issue.problems == [] and issue.owner == "octocat" and issue.target_date == dt.date(2026, 11, 30)


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


# ----- user mentions in rendered HTML ---------------------------------------------------------

LINK = ('<a class="user-mention notranslate" data-hovercard-type="user" data-hovercard-url="/users/{0}/hovercard" '
        'data-octo-click="hovercard-link-click" href="https://github.com/{0}">@{0}</a>')


def test_mentioned_users_are_the_user_mention_links():
    body = f"<p>Owner: {LINK.format('OctoCat')}, cc {LINK.format('hubot')} and @ghost</p>"
    assert mentioned_users(body) == {"octocat", "hubot"}


@pytest.mark.parametrize(
    "body_html",
    [
        None,
        "",
        "<p>@octocat</p>",
        '<a href="https://github.com/octocat">@octocat</a>',
        '<a class="team-mention js-team-mention" data-hovercard-type="team">@acme/core</a>',
        '<a data-note="user-mention">@octocat</a>',
        '<a class="user-mention">@not a login</a>',
        '<a class="user-mention">@-bad-</a>',
        '<a class="user-mention">@octocat',  # never closed
        '<code>&lt;a class="user-mention"&gt;@octocat&lt;/a&gt;</code>',  # escaped text, not a link
    ],
)
def test_what_is_not_a_user_mention(body_html):
    assert mentioned_users(body_html) == set()


@pytest.mark.parametrize(
    "body_html, logins",
    [
        ("<A CLASS='user-mention'>@Octocat</A>", {"octocat"}),
        ('<a title="1 > 0" class="user-mention">@octocat</a>', {"octocat"}),
        ('<a class="user-mention"><span>@octo</span>cat</a>', {"octocat"}),
        ('<a class="user-mention">@&#111;ctocat</a>', {"octocat"}),
        ('<a class="user-mention">@a&#' + "1" * 5000 + ';</a>' + LINK.format("b"), {"b"}),
        ('<a class="user-mention' + LINK.format("octocat"), {"octocat"}),  # an unfinished tag before
        ("<![" * 1000 + LINK.format("octocat"), {"octocat"}),  # HTMLParser alone raises on "<!["
        ("<!-- x -->" + LINK.format("octocat") + "<?pi?>", {"octocat"}),
    ],
)
def test_user_mentions_in_odd_html(body_html, logins):
    assert mentioned_users(body_html) == logins


# ----- every parser, any text ---------------------------------------------------------------

# The pieces the grammars are made of, so that generated text reaches deep into each parser.
PIECES = [
    "#", "##", "###", " ", "\t", "-", "/", "\n", "\r\n", "\r", "tracking issue:", "Tracking issue: ", "[x]", "[ ]",
    "`", "```", "~~~", "<!--", "-->", "<!-->", "0", "1", "7", "12", "a", "Z", "acme", "@", "@octocat", ":", ".",
    "_", "*", "GH-", "http://", "https://github.com/", "issues/", "pull/", "experimental", "Experimental Track",
    "🔬", ":microscope:", "Owner", "Use case", "Why experimental", "Graduation plan", "Target release: ",
    "Target date: ", "2026-11-30", "_No response_", "/experimental extend ", "²", "=", '"', "'", "[", "]", "{", "}",
    ",", "<", ">", "</", "<a ", 'class="user-mention"', "</a>", "&#", "&amp;", ";", "<![", "<?",
]
grammar_text = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)
any_text = st.one_of(st.text(), grammar_text)
INERT_PROBLEM = re.compile(r"the tracking reference `[^`\n]+` is a pull request, not an issue")


@settings(max_examples=400, deadline=None)
@given(any_text)
@example("## Experimental Track\n- [x] experimental\nTracking issue: https://x.y/a/b/pull/3")
def test_pr_body_and_tracking_refs_on_any_text(text):
    declaration = parse_pr_body(text)
    assert isinstance(declaration.ticked, bool)
    assert declaration.tracking is None or 0 <= declaration.tracking.number < 10**9
    assert all(INERT_PROBLEM.fullmatch(problem) for problem in declaration.problems)
    ref, problem = parse_tracking_ref(text)
    assert ref is None or problem is None
    assert problem is None or INERT_PROBLEM.fullmatch(problem)


@settings(max_examples=400, deadline=None)
@given(any_text)
@example("### 👤 Owner:\n\n@octocat\n")
def test_issue_bodies_on_any_text(text):
    sections = issue_sections(text)
    for key, value in sections.items():
        assert key == " ".join(key.split()) and all(word.isalnum() for word in key.split())
        assert value == value.strip()
    issue = parse_tracking_issue(text)
    assert issue.owner is None or LOGIN_RE.match(issue.owner)
    assert issue.problems or issue.owner is not None
    login = parse_login(text)
    assert login is None or LOGIN_RE.match(login)


@settings(max_examples=400, deadline=None)
@given(any_text)
def test_comments_on_any_text(text):
    command, problem = parse_extend_command(text)
    assert command is None or (1 <= command.weeks <= 52 and command.reason and problem is None)
    assert problem is None or problem.startswith("`/experimental extend` needs")
    assert normalise_reason(normalise_reason(text)) == normalise_reason(text)


toml_text = st.lists(
    st.sampled_from(['a', 'owner', 'tracking_issue', ' = ', '=', ' ', '\n', '"', "'", '[', ']', '{', '}', ',', '.',
                     '#', '1', '2026-11-02', 'T10:00:00', '"acme/gizmo#5"', 'true', '"""', '@', '`']),
    max_size=60,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(), toml_text))
def test_feature_toml_on_any_text(text):
    record = parse_feature_toml("x", text)
    assert record.owner is None or LOGIN_RE.match(record.owner)
    assert all(isinstance(problem, str) for problem in record.problems)
    if record.problems and record.problems[0].startswith("FEATURE.toml is not valid TOML: "):
        message = record.problems[0].removeprefix("FEATURE.toml is not valid TOML: ")
        assert message.startswith("`") or message in ("a number is too long", "values are nested too deeply")


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.none(), st.text(), grammar_text))
def test_mentioned_users_on_any_text(body_html):
    logins = mentioned_users(body_html)
    assert all(LOGIN_RE.match(login) and login == login.lower() for login in logins)
