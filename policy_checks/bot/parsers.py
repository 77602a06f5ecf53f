"""Text in, facts out: everything the bot reads from PR bodies, issues, comments and records.

Nothing here touches the network, and nothing here raises on odd input: a parser
returns what it could read plus a list of problems worded for a contributor.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from dataclasses import dataclass, field

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

PR_SECTION_TITLE = "experimental track"
NO_RESPONSE = "_no response_"  # what GitHub issue forms write for an empty field

# A GitHub login: alphanumerics and single hyphens, at most 39 characters.
LOGIN_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$")

_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CHECKBOX_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[([ xX])\]\s*(.*)$")
_TRACKING_LINE_RE = re.compile(r"tracking[ \t]+issue[ \t]*:?[ \t]*(.*)", re.IGNORECASE)
_ISSUE_URL_RE = re.compile(
    r"https?://[^\s/]+/([A-Za-z0-9-]+)/([A-Za-z0-9._-]+)/(issues|pull|pulls)/(\d+)"
)
_CROSS_REPO_RE = re.compile(r"(?<![\w/])([A-Za-z0-9-]+)/([A-Za-z0-9._-]+)#(\d+)\b")
_GH_RE = re.compile(r"(?<![\w-])GH-(\d+)\b", re.IGNORECASE)
_HASH_RE = re.compile(r"(?<![\w&/])#(\d+)\b")
_EXTEND_RE = re.compile(r"^[ \t]*/experimental[ \t]+extend\b(.*)$", re.IGNORECASE | re.MULTILINE)
_DATE_RE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


@dataclass(frozen=True)
class TrackingRef:
    """A tracking issue: its number and, for another repository, ``owner/name``."""

    number: int
    repo: str | None = None

    def render(self, this_repo: str) -> str:
        if self.repo is None or self.repo.lower() == this_repo.lower():
            return f"#{self.number}"
        return f"{self.repo}#{self.number}"


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


@dataclass
class FeatureRecord:
    """A parsed ``FEATURE.toml``; fields that were missing or malformed are ``None``."""

    name: str
    kind: str | None = None
    owner: str | None = None
    tracking: TrackingRef | None = None
    admitted: dt.date | None = None
    target_release: str | None = None
    target_date: dt.date | None = None
    problems: list[str] = field(default_factory=list)


def _normalise(text: str | None) -> str:
    """Return text with LF line ends and without HTML comments (they hide template hints)."""
    if not text:
        return ""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"<!--.*?(?:-->|\Z)", "", text, flags=re.DOTALL)
    return text


def _unfenced_lines(text: str) -> list[tuple[str, bool]]:
    """Pair each line with whether it lies inside a fenced code block (fence lines count as inside)."""
    out = []
    fence: str | None = None
    for line in text.split("\n"):
        match = _FENCE_RE.match(line)
        if fence is None and match:
            fence = match.group(1)
            out.append((line, True))
        elif fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                fence = None
            out.append((line, True))
        else:
            out.append((line, False))
    return out


def _section(text: str, wanted: str) -> list[str] | None:
    """Lines under the heading titled ``wanted`` up to the next heading of the same or a higher level."""
    lines = _unfenced_lines(text)
    for index, (line, fenced) in enumerate(lines):
        heading = None if fenced else _HEADING_RE.match(line)
        if heading and heading.group(2).strip().lower() == wanted:
            level = len(heading.group(1))
            body = []
            for later, later_fenced in lines[index + 1 :]:
                other = None if later_fenced else _HEADING_RE.match(later)
                if other and len(other.group(1)) <= level:
                    break
                if not later_fenced:
                    body.append(later)
            return body
    return None


def parse_tracking_ref(value: str) -> tuple[TrackingRef | None, str | None]:
    """Find the first tracking reference in ``value``: an issue URL, ``owner/repo#N``, ``GH-N`` or ``#N``.

    Returns ``(ref, problem)``; a link to a pull request is a problem, not a reference.
    """
    url = _ISSUE_URL_RE.search(value)
    if url:
        owner, name, kind, number = url.groups()
        if kind != "issues":
            return None, f"the tracking reference {url.group(0)} is a pull request, not an issue"
        return TrackingRef(int(number), f"{owner}/{name}"), None
    cross = _CROSS_REPO_RE.search(value)
    if cross:
        return TrackingRef(int(cross.group(3)), f"{cross.group(1)}/{cross.group(2)}"), None
    gh = _GH_RE.search(value)
    if gh:
        return TrackingRef(int(gh.group(1))), None
    plain = _HASH_RE.search(value)
    if plain:
        return TrackingRef(int(plain.group(1))), None
    return None, None


def parse_pr_body(body: str | None) -> PrDeclaration:
    """Read the ``## Experimental Track`` section: the declaration checkbox and the tracking issue.

    The declaration is the first checkbox whose text mentions "experimental" (or, failing
    that, the first checkbox of the section), at any nesting depth.
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
    """Map each ``### Heading`` of an issue-form body (lower-cased) to its text; "_No response_" is empty."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line, fenced in _unfenced_lines(_normalise(body)):
        heading = None if fenced else _HEADING_RE.match(line)
        if heading and len(heading.group(1)) == 3:
            current = sections.setdefault(heading.group(2).strip().lower(), [])
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
    """The first ``@login`` (or bare login) in text, if it is a well-formed GitHub login."""
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
    release = re.search(r"target[ \t]+release[ \t]*:[ \t]*`?v?([0-9][\w.+-]*)", plan, re.IGNORECASE)
    if release:
        result.target_release = release.group(1).rstrip(".")
    else:
        result.problems.append("the Graduation plan has no `Target release: X.Y.Z`")
    date_line = re.search(r"target[ \t]+date[ \t]*:[ \t]*(.*)", plan, re.IGNORECASE)
    date_text = _DATE_RE.search(date_line.group(1)) if date_line else None
    result.target_date = _parse_date(date_text.group(1)) if date_text else None
    if result.target_date is None:
        result.problems.append("the Graduation plan has no valid `Target date: YYYY-MM-DD`")
    return result


def parse_extend_command(text: str | None) -> tuple[ExtendCommand | None, str | None]:
    """Find ``/experimental extend <weeks> <reason>`` in a comment; ``(None, None)`` when absent."""
    match = _EXTEND_RE.search(_normalise(text))
    if not match:
        return None, None
    words = match.group(1).split(None, 1)
    if not words or not words[0].isdigit() or not 1 <= int(words[0]) <= 52:
        return None, "`/experimental extend` needs a whole number of weeks from 1 to 52"
    reason = words[1].strip() if len(words) > 1 else ""
    if not reason:
        return None, "`/experimental extend` needs a reason after the number of weeks"
    return ExtendCommand(int(words[0]), reason), None


def normalise_reason(reason: str) -> str:
    """Reasons compare equal when they differ only in case, spacing and punctuation."""
    return " ".join(re.sub(r"[^\w\s]", " ", reason.lower()).split())


def parse_feature_toml(name: str, text: str) -> FeatureRecord:
    """Read the fields of §3.1 the bot uses; every missing or malformed field becomes a problem."""
    record = FeatureRecord(name=name)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        record.problems.append(f"FEATURE.toml is not valid TOML: {exc}")
        return record

    def take(key: str, kind: type, what: str):
        value = data.get(key)
        if value is None:
            record.problems.append(f"FEATURE.toml has no `{key}`")
            return None
        # TOML datetimes are dt.datetime, a dt.date subclass: a date field must be a plain date.
        if not isinstance(value, kind) or (kind is dt.date and isinstance(value, dt.datetime)):
            record.problems.append(f"FEATURE.toml `{key}` must be {what}")
            return None
        return value

    record.kind = take("kind", str, 'one of "api", "backend", "both"')
    owner = take("owner", str, "a GitHub login")
    if owner is not None:
        login = owner.strip().lstrip("@")
        record.owner = login if LOGIN_RE.match(login) else None
        if record.owner is None:
            record.problems.append("FEATURE.toml `owner` is not a GitHub login")
    tracking = data.get("tracking_issue")
    if isinstance(tracking, int) and not isinstance(tracking, bool) and tracking > 0:
        record.tracking = TrackingRef(tracking)
    elif isinstance(tracking, str) and _CROSS_REPO_RE.fullmatch(tracking.strip()):
        record.tracking, _ = parse_tracking_ref(tracking)
    elif tracking is None:
        record.problems.append("FEATURE.toml has no `tracking_issue`")
    else:
        record.problems.append('FEATURE.toml `tracking_issue` must be an issue number or "owner/repo#N"')
    record.admitted = take("admitted", dt.date, "a TOML date")
    record.target_release = take("target_release", str, "a version string")
    record.target_date = take("target_date", dt.date, "a TOML date")
    return record
