"""The gate set to 1 in text that is not Python.

Such text is shell scripts, Dockerfiles, YAML, TOML, INI, ``.env`` files, CI
workflows, and command strings inside Python.

Each form writes the variable, a separator and the value. So one pattern reads them
all:

- ``export GATE=1``, ``GATE=1 python serve.py``;
- ``ENV GATE=1``, ``ENV GATE 1`` and ``ARG GATE=1``;
- ``GATE: "1"``: YAML, or a workflow's ``env:``;
- ``GATE = "1"``: TOML, INI;
- ``- GATE=1``: a compose file's list;
- ``"GATE": "1"``: JSON.

Some forms are not counted. A comment line is not. Nor is a value other than
exactly 1 (``10``, ``1.0``, ``true``). Nor is a test of the variable:
``"$GATE" = "1"``, ``${GATE:-1}``, ``env.GATE == '1'``.

It runs in linear time. The pattern is anchored at the variable's name, a literal.
Its only repetitions are runs of blanks, with a single way to match them.
"""

from __future__ import annotations

import re
from typing import Iterator, List, Tuple

_COMMENT = ("#", ";", "//")
_MAX_LINE = 64 * 1024  # longer lines (minified data) are not read


def _pattern(gate: str) -> "re.Pattern[str]":
    return re.compile(
        r"(?<![$\w{.])" + re.escape(gate) + r"""["']?(?:[ \t]*[=:][ \t]*|[ \t]+)["']?1(?![\w.])"""
    )


_CACHE: dict = {}


def gate_assignments(text: str, gate: str) -> Iterator[int]:
    """The 0-based column of each assignment of 1 to `gate` in one line or string."""
    pattern = _CACHE.get(gate)
    if pattern is None:
        pattern = _CACHE[gate] = _pattern(gate)
    for match in pattern.finditer(text):
        yield match.start()


def lines_setting_gate(text: str, gate: str) -> List[Tuple[int, int, str]]:
    """``(line, column, the line stripped)`` of each non-comment line that sets `gate` to 1."""
    found = []
    if gate not in text:
        return found
    for number, line in enumerate(text.splitlines(), 1):
        if gate not in line or len(line) > _MAX_LINE:
            continue
        stripped = line.strip()
        if stripped.startswith(_COMMENT):
            continue
        for column in gate_assignments(line, gate):
            found.append((number, column + 1, stripped[:200]))
            break
    return found
