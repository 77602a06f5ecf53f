"""Markdown read line by line: fenced code blocks and ATX headings, as CommonMark has them.

Feature READMEs (EXP009) and pull-request bodies (the bot) are read with these two
tests. String code only, each line looked at once: a hostile text costs linear time.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Optional, Tuple

Fence = Tuple[str, int]  # the fence's character and how many of it opened the block


def fence_opened(line: str) -> Optional[Fence]:
    """The fence ``line`` opens: up to three spaces, then three or more backticks or
    tildes; a backtick fence's info string holds no backtick."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3 or stripped[:3] not in ("```", "~~~"):
        return None
    char = stripped[0]
    length = len(stripped) - len(stripped.lstrip(char))
    if char == "`" and "`" in stripped[length:]:
        return None
    return char, length


def fence_closed(line: str, fence: Fence) -> bool:
    """Whether ``line`` closes the block `fence` opened: the same character, at least as
    many, up to three spaces in, nothing else on the line."""
    stripped = line.strip(" \t")
    char, length = fence
    return len(line) - len(line.lstrip(" ")) <= 3 and len(stripped) >= length and stripped == char * len(stripped)


def fenced(lines: Iterable[str]) -> Iterator[Tuple[str, bool]]:
    """Each line with whether it lies in a fenced code block (its fences included)."""
    fence: Optional[Fence] = None
    for line in lines:
        if fence is not None:
            if fence_closed(line, fence):
                fence = None
            yield line, True
            continue
        fence = fence_opened(line)
        yield line, fence is not None


def atx_heading(line: str) -> Optional[Tuple[int, str]]:
    """``(level, text)`` of an ATX heading (``## Title``, ``## Title ##``), or None.

    Up to three spaces, one to six ``#``, then a blank or the end of the line. The text
    loses its blanks and an optional closing run of ``#`` (after a blank, or the whole text).
    """
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3 or not stripped.startswith("#"):
        return None
    rest = stripped.lstrip("#")
    level = len(stripped) - len(rest)
    if level > 6 or (rest and rest[0] not in " \t"):
        return None
    text = rest.strip(" \t")
    unclosed = text.rstrip("#")
    if not unclosed or unclosed[-1] in " \t":
        text = unclosed.rstrip(" \t")
    return level, text
