"""EXP006: take experimental entries out of the ``docs/api/*.rst`` pages.

It works on lines, not on a parsed document. So every byte of the page that does
not belong to a removed entry stays as it was, line endings included.

- An ``.. autosummary::`` entry loses its line. A block left without entries goes
  as a whole: directive, options and the blank line after it.
- An ``.. autofunction::``, ``.. autoclass::`` or ``.. automodule::`` goes with
  its option and content lines and the blank line after it. So does any other
  ``.. auto*::`` but autosummary.
"""

from __future__ import annotations

import re
from typing import List, Sequence, Set, Tuple

from .findings import Finding

_DIRECTIVE = re.compile(rb"^([ \t]*)\.\.[ \t]+(auto\w+)::")


def rewrite(source: bytes, findings: Sequence[Finding]) -> Tuple[bytes, List[Finding], List[Tuple[Finding, str]]]:
    """The page without the entries `findings` point at, what was fixed, and what was not."""
    lines = source.splitlines(keepends=True)
    dropped: Set[int] = set()
    summaries: Set[int] = set()  # autosummary directives that lost an entry
    fixed, left = [], []
    for finding in findings:
        index = finding.line - 1
        if not 0 <= index < len(lines):
            left.append((finding, f"the page has no line {finding.line}"))
            continue
        directive = _DIRECTIVE.match(lines[index])
        if directive and directive.group(2) != b"autosummary":
            dropped |= _block_with_gap(lines, index)
        else:
            owner = _owning_directive(lines, index)
            if owner is None or _DIRECTIVE.match(lines[owner]).group(2) != b"autosummary":
                left.append((finding, "the line is neither an autosummary entry nor an auto* directive"))
                continue
            dropped.add(index)
            summaries.add(owner)
        fixed.append(finding)
    for start in summaries:
        if not any(i not in dropped for i in _entries(lines, start)):
            dropped |= _block_with_gap(lines, start)
    return b"".join(line for i, line in enumerate(lines) if i not in dropped), fixed, left


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip(b" \t"))


def _blank(line: bytes) -> bool:
    return not line.strip()


def _block_end(lines: List[bytes], start: int) -> int:
    """One past the last line indented under the directive at `start`."""
    end = start + 1
    for index in range(start + 1, len(lines)):
        if _blank(lines[index]):
            continue
        if _indent(lines[index]) <= _indent(lines[start]):
            break
        end = index + 1
    return end


def _block_with_gap(lines: List[bytes], start: int) -> Set[int]:
    """The directive's lines plus one blank line that separated it: after it, else before."""
    end = _block_end(lines, start)
    block = set(range(start, end))
    if end < len(lines) and _blank(lines[end]):
        block.add(end)
    elif start > 0 and _blank(lines[start - 1]):
        block.add(start - 1)
    return block


def _owning_directive(lines: List[bytes], index: int):
    """The nearest ``.. auto*::`` above `index` whose block holds it, or None."""
    for candidate in range(index - 1, -1, -1):
        if _blank(lines[candidate]) or _indent(lines[candidate]) >= _indent(lines[index]):
            continue
        if _DIRECTIVE.match(lines[candidate]) and _block_end(lines, candidate) > index:
            return candidate
        return None
    return None


def _entries(lines: List[bytes], start: int) -> List[int]:
    """Line indexes of an autosummary block's entries, not its options or comments."""
    return [
        i
        for i in range(start + 1, _block_end(lines, start))
        if not _blank(lines[i]) and not lines[i].lstrip().startswith((b":", b".."))
    ]
