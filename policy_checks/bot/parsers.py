"""Text in, facts out: everything the bot reads from PR bodies, issues, comments and records.

``FEATURE.toml`` is read by `policy_checks.model.records`, shared with the checker's EXP009.
`parse_feature_toml` only quotes its problems as Markdown. GitHub's rules for logins and
tracking references come from there too.

Nothing here touches the network, and nothing here raises on odd input. A parser returns
what it could read plus a list of problems worded for a contributor. A problem that quotes
input quotes it with `markdown.code`, an inert code span.

Every parser takes time linear in its input. GitHub bodies reach 65,536 characters and are
written by anyone. Headings and HTML comments are read with string code. Mention links are
read with string code around `html.parser.HTMLParser`. Each regex below is built so that no
part of the input is scanned more than a bounded number of times:

- A search whose pattern opens with a character class can only start where a run of that
  class begins. A lookbehind excludes the run's own characters.
- Quantifiers next to each other match disjoint classes, or are followed by nothing that can
  fail.
- Numbers are bounded.

``benchmarks/bot_parsers.py`` times every parser on adversarial input.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from markdown_it import MarkdownIt

from ..model import markdown_lines
from ..model.markdown_lines import atx_heading
from ..model import records as features
from ..model.records import (CROSS_REPO_REF, ISSUE_NUMBER, LOGIN_RE, NAME_CHARS, OWNER_CHARS, FeatureRecord, TrackingRef,
                        issue_number)
from .markdown import code

PR_SECTION_TITLE = "experimental track"  # compared as words: see `_heading_words`
NO_RESPONSE = "_no response_"  # what GitHub issue forms write for an empty field

# match() only, so one start per line; \s, the bullet and \d are disjoint, and (.*)$ cannot fail.
_CHECKBOX_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[([ xX])\]\s*(.*)$")
# Starts with a literal; the blanks around the colon can split two ways, but (.*) after them
# cannot fail, so nothing is retried.
_TRACKING_LINE_RE = re.compile(r"tracking[ \t]+issue[ \t]*:?[ \t]*(.*)", re.IGNORECASE)
# Owners, names and issue numbers are `policy_checks.model.records`' pieces (numbers: at most nine
# ASCII digits, not followed by a tenth).
_ISSUE_URL_RE = re.compile(
    rf"https?://[A-Za-z0-9.-]+(?::[0-9]{{1,5}})?/({OWNER_CHARS})/({NAME_CHARS})/(issues|pull|pulls)/{ISSUE_NUMBER}"
)
# The lookbehind excludes the owner's own characters, so a match starts only where a run of
# them begins (searching "-" * 65,000 used to try every position and scan to the end: quadratic).
_CROSS_REPO_RE = re.compile(r"(?<![\w/-])" + CROSS_REPO_REF + r"\b")
_GH_RE = re.compile(r"(?<![\w-])GH-" + ISSUE_NUMBER + r"\b", re.IGNORECASE)
_HASH_RE = re.compile(r"(?<![\w&/])#" + ISSUE_NUMBER + r"\b")
_EXTEND_RE = re.compile(r"^[ \t]*/experimental[ \t]+extend\b(.*)$", re.IGNORECASE | re.MULTILINE)
# A whole paragraph (fullmatch: a literal, blanks, a literal, then one optional token of non-blanks):
# the disjoint classes and the anchored end leave nothing to retry.
_APPROVE_POLICY_RE = re.compile(r"/experimental-track[ \t]+approve-policy(?:[ \t]+(\S*))?[ \t]*", re.IGNORECASE)
# Where such a paragraph can start (`parse_policy_approvals`): a line start, blanks other than a line
# break (Python's whitespace, which str.strip removes), then the command's words as the regex above
# reads them. One start per line, and the blank run stops at the line's end: linear.
_APPROVE_LINE_RE = re.compile(r"^[^\S\n]*/experimental-track[ \t]+approve-policy", re.IGNORECASE | re.MULTILINE)
APPROVE_WORD = "approve-policy"
MAX_COMMENT_CHARS = 65_536  # GitHub's largest comment body; a longer text is read up to here
_TARGET_RELEASE_RE = re.compile(r"target[ \t]+release[ \t]*:[ \t]*`?v?([0-9][\w.+-]*)", re.IGNORECASE)
_TARGET_DATE_RE = re.compile(r"target[ \t]+date[ \t]*:[ \t]*(.*)", re.IGNORECASE)
_DATE_RE = re.compile(r"\b([0-9]{4}-[0-9]{2}-[0-9]{2})\b")
_WORD_RE = re.compile(r"[^\W_]+")  # a run of letters and digits
# GitHub emoji shortcodes (":microscope:"), alone or several together, between blanks.
_SHORTCODES_RE = re.compile(r"(?<!\S)(?::[A-Za-z0-9_+-]+:)+(?!\S)")
_PUNCTUATION_RE = re.compile(r"[^\w\s]")
# CommonMark's block structure only (the "inline" core rule off): paragraphs keep their raw text.
_BLOCKS = MarkdownIt("commonmark").disable("inline")


@dataclass
class PrDeclaration:
    """What the ``## Experimental Track`` section of a PR body says."""

    section_found: bool = False
    ticked: bool = False
    tracking: TrackingRef | None = None
    problems: list[str] = field(default_factory=list)


@dataclass
class TrackingIssueBody:
    """The fields of a tracking issue, as the issue form lays them out."""

    owner: str | None = None
    use_case: str = ""
    why_experimental: str = ""
    target_release: str | None = None
    target_date: dt.date | None = None
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ExtendCommand:
    weeks: int
    reason: str


def _without_comments(text: str) -> str:
    """Text without HTML comments; an unterminated comment hides the rest.

    ``<!-->`` and ``<!--->`` are whole, empty comments, as in HTML and CommonMark. It uses
    string search, not a regex, so each character is looked at once.
    """
    out = []
    start = 0
    while True:
        opening = text.find("<!--", start)
        if opening < 0:
            out.append(text[start:])
            break
        out.append(text[start:opening])
        closing = text.find("-->", opening + 2)
        if closing < 0:
            break
        start = closing + 3
    return "".join(out)


def _normalise(text: str | None) -> str:
    """Return text with LF line ends and without HTML comments, which hide template hints."""
    if not text:
        return ""
    return _without_comments(text.replace("\r\n", "\n").replace("\r", "\n"))


def _unfenced_lines(text: str) -> list[tuple[str, bool]]:
    """Pair each line with whether it lies inside a fenced code block.

    Fence lines count as inside."""
    return list(markdown_lines.fenced(text.split("\n")))


def _heading_words(text: str) -> str:
    """A heading's words, lower-cased and joined by one space: what headings are compared by.

    Words are runs of letters and digits, so emoji, punctuation, emphasis and brackets fall
    away. ``🔬 Experimental Track``, ``**Experimental track:**``, ``[Experimental-Track]``
    and ``:microscope: Experimental Track 🧪`` all read ``experimental track``.
    """
    return " ".join(_WORD_RE.findall(_SHORTCODES_RE.sub(" ", text).lower()))


def _section(text: str, wanted: str) -> list[str] | None:
    """Lines under the first heading whose words are ``wanted``.

    The section runs up to the next heading of the same or a higher level. Only ATX headings
    (``## Title``) count, as in the PR template. Setext headings (a line underlined with
    ``===`` or ``---``) are not read. Telling an underline from a thematic break, a list item
    or a table needs CommonMark's paragraph rules. Those cost more than they are worth here.
    """
    lines = _unfenced_lines(text)
    for index, (line, fenced) in enumerate(lines):
        heading = None if fenced else atx_heading(line)
        if heading and _heading_words(heading[1]) == wanted:
            level = heading[0]
            body = []
            for later, later_fenced in lines[index + 1 :]:
                other = None if later_fenced else atx_heading(later)
                if other and other[0] <= level:
                    break
                if not later_fenced:
                    body.append(later)
            return body
    return None


def parse_tracking_ref(value: str) -> tuple[TrackingRef | None, str | None]:
    """Find the first tracking reference in ``value``.

    A reference is an issue URL, ``owner/repo#N``, ``GH-N`` or ``#N``. Returns
    ``(ref, problem)``. A link to a pull request is a problem, not a reference. No issue has
    number 0, so a first reference to number 0 makes none.
    """
    url = _ISSUE_URL_RE.search(value)
    if url:
        owner, name, kind, digits = url.groups()
        if kind != "issues":
            return None, f"the tracking reference {code(url.group(0))} is a pull request, not an issue"
        repo = f"{owner}/{name}"
    elif cross := _CROSS_REPO_RE.search(value):
        digits, repo = cross.group(3), f"{cross.group(1)}/{cross.group(2)}"
    elif plain := _GH_RE.search(value) or _HASH_RE.search(value):
        digits, repo = plain.group(1), None
    else:
        return None, None
    number = issue_number(digits)
    return (TrackingRef(number, repo) if number else None), None


def parse_pr_body(body: str | None) -> PrDeclaration:
    """Read the ``## Experimental Track`` section: the declaration checkbox and the tracking issue.

    The declaration is the first checkbox whose text mentions "experimental", at any nesting
    depth. Failing that, it is the first checkbox of the section.
    """
    result = PrDeclaration()
    lines = _section(_normalise(body), PR_SECTION_TITLE)
    if lines is None:
        return result
    result.section_found = True
    boxes = [m for m in (_CHECKBOX_RE.match(line) for line in lines) if m]
    declaring = [m for m in boxes if "experimental" in m.group(2).lower()] or boxes[:1]
    if declaring:
        result.ticked = declaring[0].group(1) in "xX"
    for line in lines:
        found = _TRACKING_LINE_RE.search(line)
        if not found:
            continue
        ref, problem = parse_tracking_ref(found.group(1))
        if problem:
            result.problems.append(problem)
        if ref:
            result.tracking = ref
            break
    return result


def issue_sections(body: str | None) -> dict[str, str]:
    """Map each ``### Heading`` of an issue-form body to its text; "_No response_" is empty.

    Keys are the heading's words, lower-cased (see `_heading_words`). ``### Owner``,
    ``### 👤 Owner`` and ``### Owner:`` are all ``"owner"``. ``### Why experimental?`` is
    ``"why experimental"``. A heading that comes again adds to the first one's text.
    """
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line, fenced in _unfenced_lines(_normalise(body)):
        heading = None if fenced else atx_heading(line)
        if heading and heading[0] == 3:
            current = sections.setdefault(_heading_words(heading[1]), [])
        elif current is not None:
            current.append(line)
    out = {}
    for name, lines in sections.items():
        text = "\n".join(lines).strip()
        out[name] = "" if text.lower() == NO_RESPONSE else text
    return out


def _parse_date(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


def parse_login(text: str) -> str | None:
    """The first ``@login``, or bare login, in text, if it is a well-formed GitHub login."""
    token = text.strip().split()[0] if text.strip() else ""
    token = token.strip("`*_").lstrip("@").rstrip(",.;")
    return token if LOGIN_RE.match(token) else None


def parse_tracking_issue(body: str | None) -> TrackingIssueBody:
    """Read Owner, Use case, Why experimental and the Graduation plan of a tracking issue."""
    sections = issue_sections(body)
    result = TrackingIssueBody()
    owner_text = sections.get("owner", "")
    if not owner_text:
        result.problems.append("the tracking issue has no `### Owner` section with an @login")
    else:
        result.owner = parse_login(owner_text)
        if result.owner is None:
            result.problems.append("the tracking issue's Owner is not a GitHub @login")
    result.use_case = sections.get("use case", "")
    if not result.use_case:
        result.problems.append("the tracking issue has no `### Use case`")
    result.why_experimental = sections.get("why experimental", "")
    if not result.why_experimental:
        result.problems.append("the tracking issue has no `### Why experimental`")
    plan = sections.get("graduation plan", "")
    if not plan:
        result.problems.append("the tracking issue has no `### Graduation plan`")
        return result
    release = _TARGET_RELEASE_RE.search(plan)
    if release:
        result.target_release = release.group(1).rstrip(".")
    else:
        result.problems.append("the Graduation plan has no `Target release: X.Y.Z`")
    date_line = _TARGET_DATE_RE.search(plan)
    date_text = _DATE_RE.search(date_line.group(1)) if date_line else None
    result.target_date = _parse_date(date_text.group(1)) if date_text else None
    if result.target_date is None:
        result.problems.append("the Graduation plan has no valid `Target date: YYYY-MM-DD`")
    return result


def parse_extend_command(text: str | None) -> tuple[ExtendCommand | None, str | None]:
    """Find ``/experimental extend <weeks> <reason>`` in a comment.

    Returns ``(None, None)`` when absent."""
    match = _EXTEND_RE.search(_normalise(text))
    if not match:
        return None, None
    words = match.group(1).split(None, 1)
    # ASCII digits only: str.isdigit() accepts "²", which int() refuses, and int() refuses
    # strings of more than 4,300 digits.
    if not words or not (words[0].isascii() and words[0].isdigit() and len(words[0]) <= 3) or not (
        1 <= int(words[0]) <= 52
    ):
        return None, "`/experimental extend` needs a whole number of weeks from 1 to 52"
    reason = words[1].strip() if len(words) > 1 else ""
    if not reason:
        return None, "`/experimental extend` needs a reason after the number of weeks"
    return ExtendCommand(int(words[0]), reason), None


def parse_policy_approvals(text: str | None) -> list[str]:
    """The digests that ``/experimental-track approve-policy <digest>`` commands name.

    Digests are lower-cased. A command that names none gives "". Otherwise the whole token
    counts: ``<digest>x`` is not ``<digest>``.

    A command is a paragraph of its own, the whole paragraph. It sits at the top level of the
    comment as GitHub's CommonMark reads it (markdown-it-py). Elsewhere it is text, not a
    command:

    - inside a code block, indented or fenced, a fence in a list item too;
    - in a block quote, its lazy continuation lines too;
    - in a list item;
    - in an HTML block (``<pre>``, a comment).

    Only the block structure is parsed, without inline rules, which is linear in the text. It
    is parsed only when some line can start such a paragraph (`might_hold_approval`). Most
    comments are never parsed.
    """
    if not text or APPROVE_WORD not in text.lower():
        return []
    text = text[:MAX_COMMENT_CHARS]
    if not might_hold_approval(text):
        return []
    return approvals_in_blocks(text)


def might_hold_approval(text: str) -> bool:
    """Whether a line of ``text`` can start a top-level paragraph that is the approval command.

    It is a cheap linear scan. When it says no, `approvals_in_blocks` would find nothing.

    A top-level paragraph's content is taken from the start of its first line and stripped.
    That is markdown-it-py's paragraph rule, then `parse_policy_approvals`. The command fits on
    one line: its regex matches no line break. So the command's words start a line after
    nothing but blanks other than a line break. Lines that are only such blanks can precede it
    in the same paragraph. A line of the paragraph after its first may be indented any amount.

    The scan asks exactly that. It reads lines as markdown-it-py splits them: at LF, CR and
    CRLF. It uses the command regex's own case rules.
    """
    return _APPROVE_LINE_RE.search(text.replace("\r", "\n")) is not None


def approvals_in_blocks(text: str) -> list[str]:
    """The digests of the top-level paragraphs of ``text`` that are the approval command.

    They come from markdown-it-py's block structure, the whole parse. This is what
    `parse_policy_approvals` answers when `might_hold_approval`."""
    found = []
    tokens = _BLOCKS.parse(text)
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type == "paragraph_open" and opening.level == 0 and inline.type == "inline":
            match = _APPROVE_POLICY_RE.fullmatch(inline.content.strip())
            if match:
                found.append((match.group(1) or "").lower())
    return found


def normalise_reason(reason: str) -> str:
    """Reasons compare equal when they differ only in case, spacing and punctuation."""
    return " ".join(_PUNCTUATION_RE.sub(" ", reason.lower()).split())


def parse_feature_toml(name: str, text: str) -> FeatureRecord:
    """Read a FEATURE.toml (`policy_checks.model.records.parse`).

    Its text is quoted in problems as inert code spans."""
    return features.parse(name, text, quote=code)


_TAG_NAME_ENDS = (" ", "\t", "\n", "\r", "\f", "/", ">", "\x00")  # what ends a tag name for HTMLParser
_MAX_LINK_TEXT = 64  # a mention link's text is "@" and a login of at most 39 characters


class _MentionStart(HTMLParser):
    """Reads one ``<a ...>`` start tag and the text after it.

    It tells whether the tag is a user-mention link, and what follows."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: str | None = None  # after a user-mention start tag: the text that followed it

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            classes = next((value or "" for name, value in attrs if name == "class"), "").split()
            self.text = "" if "user-mention" in classes else None

    def handle_data(self, data: str) -> None:
        if self.text is not None:
            self.text = (self.text + data[:_MAX_LINK_TEXT])[:_MAX_LINK_TEXT]

    def start(self, piece: str) -> str | None:
        """The text after ``piece``'s start tag if it opens a user-mention link, else None."""
        self.text = None
        try:
            self.feed(piece)
        except ValueError:  # a character reference of more than 4,300 digits
            self.text = None
        if self.rawdata:  # an unfinished tag, or text ending in what may be a reference
            self.reset()
        return self.text


def mentioned_users(body_html: str | None) -> set[str]:
    """Logins GitHub rendered as user-mention links in an issue's HTML body: users that exist.

    Logins are lower-cased. GitHub renders ``@login`` as ``<a class="user-mention notranslate"
    data-hovercard-type="user" href="https://github.com/login">@login</a>`` only when the user
    exists.

    `html.parser.HTMLParser` reads the ``<a>`` start tags: attributes, quotes, character
    references. It is not given the whole document, for two reasons. Given that, it rescans
    from every ``<`` that opens something unfinished: ``"<a class=" * 7000`` takes seconds. It
    also raises on some declarations (``"<!["``).

    So the HTML is cut into pieces, each from one ``<`` to the next. Only some pieces go to the
    parser: those that open an ``<a>`` tag mentioning "user-mention" and hold its ``>``. A piece
    it cannot finish is dropped. Inside a mention link, other tags are skipped up to their first
    ``>``. The text is kept, bounded, up to ``</a>``.

    No character is scanned more than a few times and nothing raises. GitHub's HTML escapes
    every ``<`` outside markup, so nothing it renders is dropped.
    """
    logins: set[str] = set()
    if not body_html:
        return logins
    reader = _MentionStart()
    text: str | None = None  # inside a user-mention link: its text so far
    size = len(body_html)
    start = 0
    while start < size:
        end = body_html.find("<", start + 1)
        end = size if end < 0 else end
        piece = body_html[start:end]
        start = end
        kind = _tag_kind(piece)
        if kind is not None and ">" not in piece:
            continue  # an unfinished tag
        if kind == "a" and not piece.startswith("</"):
            text = reader.start(piece) if "user-mention" in piece else None
            continue
        if text is None:
            continue  # outside a user-mention link only its start tag matters
        if kind == "a":  # </a>
            login = text.strip()
            if login.startswith("@") and LOGIN_RE.match(login[1:]):
                logins.add(login[1:].lower())
            text = None
            continue
        if kind is not None or piece[1:2] in ("!", "?", "/"):  # another tag, a comment or a declaration
            closing = piece.find(">")
            if closing < 0:
                continue  # unfinished
            piece = piece[closing + 1 :]  # what follows is text
        # else a "<" that opens nothing: text, "<" included
        if len(text) < _MAX_LINK_TEXT:
            chunk = piece[: 2 * _MAX_LINK_TEXT]  # a short slice: its character references are small
            text = (text + (html.unescape(chunk) if "&" in chunk else chunk))[:_MAX_LINK_TEXT]
    return logins


def _tag_kind(piece: str) -> str | None:
    """What tag ``piece`` opens.

    ``"a"`` for an ``<a>`` or ``</a>`` tag, ``""`` for another tag, None for no tag."""
    offset = 2 if piece.startswith("</") else 1
    first = piece[offset : offset + 1]
    if not (piece.startswith("<") and first.isascii() and first.isalpha()):
        return None
    return "a" if first in ("a", "A") and piece[offset + 1 : offset + 2] in _TAG_NAME_ENDS else ""
