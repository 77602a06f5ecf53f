"""Whatever a PR, an issue or a comment says, the bot's comments echo it inertly.

The comments are rendered with a CommonMark parser (markdown-it-py, with GFM tables) and
every piece of text outside a code span is searched for what GitHub would make live: an
``@mention``, a link, an autolink (``https://``, ``www.``), a ``#N``, ``GH-N`` or
``owner/repo#N`` cross-reference, and HTML beyond the bot's own hidden markers. The inputs
are arbitrary text and text built from the pieces attackers use.
"""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from policy_checks.bot.client import connect
from policy_checks.bot.comments import BotIdentity
from policy_checks.bot.markdown import code, table_row
from policy_checks.bot.pr_check import PR_MARKER, run_pr_check
from policy_checks.bot.review import REVIEW_MARKER_PREFIX, run_review
from policy_checks.bot.writes import Writes

REPO = "acme/widgets"

PIECES = [
    "@octocat", "@everyone", "@acme/team", "[Re-run the check](https://evil.example)", "[x]", "(y)", "https://x",
    "https:evil.example", "www.evil.example", "http://a.b/c", "<details><summary>x", "</details>", "<img src=x>",
    "<!--", "-->", "`", "``", "```", "#1", "#12", "GH-3", "acme/widgets#1", "evil/repo#9", "x/a/b/pull/1",
    "|", "*", "_", "~", "\\", "&lt;", "&#64;", ":+1:", "\u200d", "\u202e", "\n", "\n\n", "\r", "\t", " ", "x", "1",
    "- [x] ", "## ", "> ", "Tracking issue: ", "/experimental extend 2 ", "/experimental owner @", "a@b.example",
]
hostile = st.one_of(st.text(max_size=80), st.lists(st.sampled_from(PIECES), max_size=16).map("".join))

_LIVE = [
    ("mention", re.compile(r"(?<![\w`])@[A-Za-z0-9]")),
    ("autolink", re.compile(r"(?i)\b(?:https?://|www\.)")),
    ("issue reference", re.compile(r"(?<![\w&])#\d")),
    ("cross-reference", re.compile(r"[\w.-]/[\w.-]+#\d")),
    ("GH reference", re.compile(r"(?i)\bGH-\d")),
    ("email", re.compile(r"[\w.+-]@[\w-]+\.\w")),
]
_OWN_HTML = re.compile(r"<!-- experimental-track-bot:[^<>]*-->|<!-- head: [0-9a-f]+ -->")
_parser = MarkdownIt("commonmark").enable("table")


def live_parts(markdown: str) -> list[str]:
    """What in ``markdown`` GitHub would render live, outside code spans and the bot's own markers."""
    found = []
    for block in _parser.parse(markdown):
        if block.type == "html_block":
            rest = _OWN_HTML.sub("", block.content).strip()
            if rest:
                found.append(f"HTML block {rest[:60]!r}")
        for token in block.children or []:
            if token.type in ("link_open", "image"):
                found.append(f"{token.type} {token.attrs}")
            elif token.type == "html_inline" and not _OWN_HTML.fullmatch(token.content):
                found.append(f"HTML {token.content!r}")
            elif token.type == "text":
                found += [f"{name} in {token.content!r}" for name, pattern in _LIVE if pattern.search(token.content)]
    return found


def headings(markdown: str) -> int:
    return sum(1 for token in _parser.parse(markdown) if token.type == "heading_open")


def test_the_detector_sees_what_github_would_make_live():
    """The check above can fail: each kind of live text is found when it is not in a code span."""
    for text in ("hi @octocat", "[a](https://x)", "see https://x", "www.x.org", "#12", "evil/repo#1", "GH-3",
                 "<details>", "<b>x</b>", "mail a@b.example"):
        assert live_parts(text), text
    for text in ("hi `@octocat`", "`[a](https://x)`", "`#12` `evil/repo#1`", "<!-- head: abc123 -->"):
        assert not live_parts(text), text


@given(text=hostile)
def test_code_spans_hold_any_text(text):
    rendered = code(text)
    tokens = _parser.parseInline(rendered)[0].children
    assert [t.type for t in tokens] == ["code_inline"] or rendered == "(empty)"
    assert not live_parts(rendered)
    row = table_row([code(text), "x"])
    table = _parser.parse("| a | b |\n|---|---|\n" + row)
    assert sum(1 for t in table if t.type == "td_open") == 2  # a `|` in the text does not add a cell


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string: quotes, backslashes and control characters escaped."""
    escaped = "".join(f"\\u{ord(c):04x}" if c < " " or c == "\x7f" or c in '"\\' else c for c in text)
    return f'"{escaped}"'


def _issue_body(owner: str, text: str) -> str:
    return (f"### Owner\n\n@{owner}\n\n### Use case\n\n{text}\n\n### Why experimental\n\n{text}\n\n"
            f"### Graduation plan\n\nTarget release: 0.8.{text}\nTarget date: 2026-11-20\n")


# The reported attack: no spaces, so a host pattern that stops only at whitespace swallows it all.
ATTACK = "https://x,@octocat,[Re-run_the_check_here](https:evil.example),<details><summary>x/a/b/pull/1"


def _baseline_patch(fields: list[str], line: str) -> str:
    """A diff of ``policy-check-baseline.json`` adding an entry made of ``fields``, paying one off, and
    adding ``line`` as it stands (an unreadable line, or whatever it parses as)."""
    rule, module, scope, subject = fields
    added = json.dumps({"rule": rule, "module": module, "scope": scope, "subject": subject, "count": 2},
                       ensure_ascii=False)
    paid = json.dumps({"rule": subject, "module": rule, "scope": "", "subject": module, "count": 1})
    return "\n".join(["@@ -1,3 +1,3 @@", f"+    {added},", f"-    {paid},", *("+" + part for part in line.split("\n"))])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(tracking=ATTACK, path="x", owner="octocat", text="x", comment="x", fields=[ATTACK] * 4, line=ATTACK)
@example(tracking="evil/repo#1", path="@everyone", owner="carol", text="#1 @octocat", comment="<details>",
         fields=["@everyone", "evil/repo#1", "<details>", "[a](https://x)"], line="#1 <img src=x> @octocat")
@given(tracking=hostile, path=hostile, owner=st.sampled_from(["octocat", "ghost-user", "carol"]), text=hostile,
       comment=hostile, fields=st.lists(hostile, min_size=4, max_size=4), line=hostile)
def test_pr_check_comment_is_inert(fresh_github, tracking, path, owner, text, comment, fields, line):
    g = fresh_github()
    g.add_collaborator(REPO, "maintainer", "maintain")
    g.add_user("carol")
    g.add_issue(REPO, _issue_body(owner, text))  # #1
    g.add_comment(REPO, 1, comment, "outsider")
    g.add_comment(REPO, 1, f"/experimental extend 2 {comment}", "maintainer")
    body = f"## 🔬 Experimental Track\n\n- [x] This PR adds experimental code\n  - Tracking issue: {tracking}\n"
    pr = g.add_pull(REPO, body, [(f"flashinfer/experimental/{path}", "+x"), (path or "x", "+y"),
                                 ("policy-check-baseline.json", _baseline_patch(fields, line))])
    gh = connect(g.token, g.url, retry_budget_s=1, write_interval_s=0)
    run_pr_check(gh, REPO, pr, Writes(dry_run=False, echo=lambda s: None), BotIdentity(gh))
    [ours] = [c["body"] for c in g.comments_by(REPO, pr) if c["body"].startswith(PR_MARKER)]
    assert "**Baseline debt added: a maintainer must approve**" in ours  # the hostile entry is in the comment
    assert live_parts(ours) == [], ours
    assert headings(ours) == 1, ours


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(name="", text="'\"", reason="")  # quotes that a repr would have turned into broken TOML
@given(name=hostile.filter(lambda n: "\x00" not in n), text=hostile, reason=hostile)
def test_review_comment_is_inert(fresh_github, name, text, reason):
    g = fresh_github()
    g.add_collaborator(REPO, "maintainer", "maintain")
    issue = g.add_issue(REPO, _issue_body("octocat", text))
    g.add_comment(REPO, issue, f"/experimental extend 1 {reason}", "maintainer")
    g.add_comment(REPO, issue, f"/experimental extend 1 {reason}", "outsider")
    feature = "f" + name.replace("/", "_")  # a leading "_" or "." is not a feature directory
    g.repo(REPO).files[f"flashinfer/experimental/{feature}/FEATURE.toml"] = (
        f'kind = "api"\nowner = "octocat"\ntracking_issue = {issue}\nadmitted = 2026-10-01\n'
        f'target_release = {toml_string(text)}\ntarget_date = 2026-10-20\n'
    )
    gh = connect(g.token, g.url, retry_budget_s=1, write_interval_s=0)
    import datetime as dt

    result = run_review(gh, REPO, dt.date(2026, 11, 2), Writes(dry_run=False, echo=lambda s: None), BotIdentity(gh))
    [ours] = [c["body"] for c in g.comments_by(REPO, issue) if c["body"].startswith(REVIEW_MARKER_PREFIX)]
    assert live_parts(ours) == [], ours
    assert headings(ours) == 1, ours
    assert live_parts(result.markdown()) == [], result.markdown()


def _removed(text: str) -> str:
    """GitHub's diff of a deleted file."""
    lines = text.split("\n")
    return f"@@ -1,{len(lines)} +0,0 @@\n" + "\n".join("-" + line for line in lines)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(name=ATTACK, path=ATTACK, tracking=ATTACK, home="evil", declared=False)
@example(name="@everyone", path="#1 <details>", tracking="evil/repo#9", home="x", declared=True)
@given(name=hostile, path=hostile, tracking=hostile, home=hostile, declared=st.booleans())
def test_graduation_checklist_is_inert(fresh_github, name, path, tracking, home, declared):
    """A graduation PR's feature name, paths, new home and recorded tracking issue are all the PR's text.

    The new home is a dotted module name (a shim binding anything else is no shim), so it can
    carry only identifier characters of the hostile text."""
    g = fresh_github()
    g.add_issue(REPO, _issue_body("octocat", path))  # #1
    feature = "f" + name.replace("/", "_")  # a leading "_" or "." is not a feature directory
    code_dir, tests_dir = f"flashinfer/experimental/{feature}", f"tests/experimental/{feature}"
    record = f'kind = "api"\nowner = "octocat"\ntracking_issue = {toml_string(tracking)}\napis = ["flashinfer.f"]\n'
    swap = "@@ -1,2 +1,2 @@\n-@flashinfer_experimental_api(feature='x')\n+@flashinfer_api\n def f(): ..."
    last = "".join(c for c in home if c.isalnum() or c == "_")
    home = "flashinfer." + (last if last.isidentifier() else "moved")
    files = [(f"{code_dir}/FEATURE.toml", _removed(record), "removed"),
             (f"{code_dir}/__init__.py", f"+__graduated_to__ = {home!r}", "modified"),
             (f"flashinfer/{path}.py", None, "renamed", f"{code_dir}/{path}.py"),
             (f"flashinfer/{path}/core.py", swap + f"\n+require_experimental_x({path!r})"),
             (f"tests/{path}.py", None, "renamed", f"{tests_dir}/{path}.py"),
             (f"{tests_dir}/{path}", "+x", "modified")]
    declaration = "## Experimental Track\n\n- [x] This PR adds experimental code\n  - Tracking issue: #1\n"
    body = declaration if declared else path
    pr = g.add_pull(REPO, body, files)
    gh = connect(g.token, g.url, retry_budget_s=1, write_interval_s=0)
    run_pr_check(gh, REPO, pr, Writes(dry_run=False, echo=lambda s: None), BotIdentity(gh))
    [ours] = [c["body"] for c in g.comments_by(REPO, pr) if c["body"].startswith(PR_MARKER)]
    assert "**Graduation checklist**" in ours  # the hostile feature's checklist is in the comment
    assert live_parts(ours) == [], ours
    assert headings(ours) == 1, ours
