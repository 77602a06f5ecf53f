"""The approval parser's fast path (`parsers.might_hold_approval`): a comment no line of which can start
the command's paragraph is not parsed, and skipping the parse never changes the verdict."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from policy_checks.bot.parsers import (APPROVE_WORD, MAX_COMMENT_CHARS, approvals_in_blocks, might_hold_approval,
                                       parse_policy_approvals)

DIGEST = "0123456789abcdef"
COMMAND = f"/experimental-track approve-policy {DIGEST}"


def full_parse(text: str) -> list[str]:
    """What the parser answered before the fast path: the word test, then the whole block parse."""
    if not text or APPROVE_WORD not in text.lower():
        return []
    return approvals_in_blocks(text[:MAX_COMMENT_CHARS])


def test_a_body_without_a_command_line_is_not_parsed():
    assert not might_hold_approval("approve-policy\n" + "a\n=\n" * 100)
    assert not might_hold_approval("approve-policy\n" + "> a\nb\n" * 100)
    assert not might_hold_approval(f"> {COMMAND}\n")  # a quote's marker comes first on the line
    assert not might_hold_approval(f"text {COMMAND}\n")


def test_every_line_a_paragraph_can_start_on_is_scanned():
    """The command after blanks only Python strips, after lines of such blanks (which make it a paragraph's
    continuation line, indented any amount), after a CR: the block parse counts each, so the scan finds it."""
    for text in (f"\u00a0{COMMAND}", f"\u00a0\n        {COMMAND}\n", f"\u2003\n\u00a0\t\t{COMMAND}", f"Hi.\r\r{COMMAND}",
                 f"  {COMMAND.upper()}  "):
        assert might_hold_approval(text), repr(text)
        assert parse_policy_approvals(text) == full_parse(text) != [], repr(text)


PIECES = [COMMAND, COMMAND.upper(), "/experimental-track", "/Experimental-Track\tapprove-policy", "approve-policy",
          DIGEST, "\n", "\n\n", "\r", "\r\n", " ", "  ", "    ", "\t", "\u00a0", "\u2028", "\x0b", "\x0c", "\u3000",
          "> ", ">", "- ", "* ", "1. ", "```", "~~~", "<pre>", "</pre>", "<!--", "-->", "<div>", "</div>", "===",
          "---", "#", "## ", "text", "[a]: b", "`", "\\"]
bodies = st.one_of(st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
                   st.text(alphabet=st.sampled_from(sorted(set("".join(PIECES)))), max_size=200))


@settings(max_examples=600, deadline=None)
@given(bodies)
def test_the_fast_path_gives_the_full_parses_verdict(text):
    assert parse_policy_approvals(text) == full_parse(text)
