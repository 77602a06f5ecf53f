"""The one line reader of Markdown, against markdown-it-py (CommonMark, as GitHub renders)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from policy_checks.bot import parsers
from policy_checks.model import records
from policy_checks.model.markdown_lines import atx_heading, fenced

LINES = st.one_of(
    st.builds(lambda indent, marks, text: " " * indent + "#" * marks + (" " + text if text else ""),
              st.integers(0, 4), st.integers(1, 7), st.sampled_from(["", "Gates", "Gates ##", "a#", "#", "x  #  "])),
    st.builds(lambda indent, char, count, info: " " * indent + char * count + info,
              st.integers(0, 5), st.sampled_from("`~"), st.integers(2, 5), st.sampled_from(["", "py", " x`y", "  "])),
    st.sampled_from(["", "plain words", "  more text"]),  # lists and quotes nest blocks: not read
)


def headings_by_markdown_it(text: str) -> list:
    tokens = MarkdownIt("commonmark").parse(text)
    return [(tokens[i].map[0], int(t.tag[1]), tokens[i + 1].content)
            for i, t in enumerate(tokens) if t.type == "heading_open" and t.markup.startswith("#")]


def headings_read(text: str) -> list:
    found = []
    for number, (line, in_code) in enumerate(fenced(text.split("\n"))):
        heading = None if in_code else atx_heading(line)
        if heading is not None:
            found.append((number, *heading))
    return found


@settings(max_examples=400, deadline=None)
@given(st.lists(LINES, max_size=12))
def test_fences_and_headings_read_as_commonmark_reads_them(lines):
    text = "\n".join(lines)
    assert headings_read(text) == headings_by_markdown_it(text)


def test_the_readme_check_and_the_bot_share_the_reader():
    """A fence closed by four-space-indented backticks is still open (CommonMark): the
    heading below it is code to the README check and to the bot's section reader alike."""
    text = "```\n    ```\n## Gates\n```\n## Tests\nbody\n"
    assert records.markdown_headings(text) == ["Tests"]
    assert parsers._section(text, "gates") is None
    assert parsers._section(text, "tests") == ["body", ""]
