"""What an ``.rst`` page lists, read the way docutils and Sphinx read it (EXP006).

This is an indentation-aware reader of reStructuredText's block structure. It does enough to
tell the directives Sphinx runs from text that only looks like them:

- Explicit markup (``.. name:: argument``) starts a block only where a block can start. A
  line of a paragraph that goes on is text: ``Text`` then ``.. autofunction:: f`` without a
  blank line.
- Comments and their indented bodies are text. A comment is ``..`` that starts no
  directive, target, footnote or substitution. Targets, footnotes and substitution
  definitions are text too.
- Literal blocks are text. One is the indented block after a paragraph ending in ``::``.
  Another is the "quoted" block of lines starting with the same punctuation at the
  paragraph's own indentation. The bodies of directives whose content is code or data are
  text too: ``code-block``, ``code``, ``sourcecode``, ``parsed-literal``, ``raw``,
  ``math``, the doctest directives, ``csv-table``, ...
- Every other directive's body is reStructuredText again, and is read the same way. An
  ``autofunction`` inside ``.. only:: html`` or a ``.. note::`` is listed.
- ``.. include::`` is followed through a callback. Depth is bounded, cycles are refused, and
  each page has a budget of lines. Its ``literal``/``code`` forms are text. Its
  ``start-line``/``end-line``/``start-after``/``end-before`` options are applied.

Each line is looked at a bounded number of times; a skipped block is passed over once. So
the work is linear in the text read.
``tests/policy_checks/rules/readers/test_rst_listing.py`` holds the reader against
docutils' own parser over a corpus of tricky pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterator, List, NamedTuple, Optional

DIRECTIVE = re.compile(
    r"^(?P<indent> *)\.\.[ ]+(?P<name>[A-Za-z0-9](?:[-_.:+]?[A-Za-z0-9])*)[ ]?::(?=[ ]|$)[ ]*(?P<arg>.*)$"
)
_OPTION = re.compile(r"^\s*:(?P<key>[^:\s][^:]*?):(?:\s+(?P<value>.*))?$")
_ENTRY = re.compile(r"[~!]?(?P<name>[A-Za-z_][\w.]*)")
_AUTOSUMMARY_ENTRY = re.compile(r"^[~A-Za-z_]")
_BULLET = re.compile(r"^(?:[-*+\u2022\u2023\u2043]|\(?(?:\d+|[A-Za-z#]|[ivxlcdmIVXLCDM]+)[.)])( +)(?=\S)")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_SIGNATURE_PREFIX = re.compile(r"^(?:(?:async|abstract|final|classmethod|staticmethod|static|class|property)\s+)+")

# directives whose body is code or data, never reStructuredText
LITERAL_BODIES = frozenset({
    "code-block", "code", "sourcecode", "parsed-literal", "raw", "math", "doctest", "testcode", "testoutput",
    "testsetup", "testcleanup", "ipython", "jupyter-execute", "csv-table", "graphviz", "graph", "digraph",
    "productionlist", "mermaid", "plantuml", "literalinclude", "highlight", "code-cell", "list-table-raw",
})
# Python-domain object directives (with or without ``py:``; py is Sphinx's default domain)
PY_OBJECTS = frozenset({
    "function", "class", "method", "classmethod", "staticmethod", "attribute", "property", "data", "exception",
    "decorator", "decoratormethod", "type",
})
_CLASSES = frozenset({"class", "exception", "autoclass", "autoexception"})
_CURRENT = frozenset({"currentmodule", "py:currentmodule"})
_MODULE = frozenset({"module", "py:module"})

MAX_INCLUDE_DEPTH = 8
MAX_LINES_PER_PAGE = 200_000  # lines read for one page, includes counted each time they are read


class Listed(NamedTuple):
    """One object a page lists.

    `line`/`column` are where the page names it. For an included file, that is the page's
    ``include`` line. `via` is the chain of included files (``path:line`` each). It is empty
    when the page itself names it."""

    line: int
    column: int
    name: str
    current: Optional[str]
    options: dict
    directive: str
    via: tuple = ()


@dataclass
class _State:
    current: Optional[str] = None
    budget: int = field(default_factory=lambda: MAX_LINES_PER_PAGE)
    chain: List[str] = field(default_factory=list)


def listed(text: str, include: Optional[Callable] = None, origin: str = "", defaults: Optional[dict] = None
           ) -> Iterator[Listed]:
    """Every object the page `text` lists (see the module docstring).

    `include(origin, argument)` returns ``(path, text)`` of an included file, or None when it
    is not followed. `defaults` are ``autodoc_default_options``
    (`policy_checks.rules.readers.sphinx_conf`)."""
    state = _State(chain=[origin])
    yield from _Reader(include, defaults or {}).read(text.expandtabs(8).split("\n"), state, depth=0)


def indentation(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _text_indent(line: str, indent: int) -> int:
    """Where a paragraph's text starts: after a bullet or an enumerator."""
    match = _BULLET.match(line, indent)
    return match.end() if match else indent


def _end_of_block(lines: List[str], start: int, indent: int) -> int:
    """The index of the first non-blank line at or after `start` indented at most `indent`."""
    number = start
    while number < len(lines) and (not lines[number].strip() or indentation(lines[number]) > indent):
        number += 1
    return number


def _options(lines: List[str], start: int, indent: int) -> dict:
    """The ``:key: value`` options right below a directive line."""
    options = {}
    for body in lines[start:]:
        match = _OPTION.match(body)
        if not body.strip() or indentation(body) <= indent or not match:
            break
        options[match.group("key").strip()] = (match.group("value") or "").strip()
    return options


def _past_argument(lines: List[str], start: int, indent: int) -> int:
    """Past the lines that go on from a directive line's text, up to the first blank line.

    They are the rest of its argument; ``autofunction`` takes the whole block as its argument.
    Or they are the rest of the paragraph its content starts with (``.. note:: text``). No
    block starts there."""
    number = start
    while number < len(lines) and lines[number].strip() and indentation(lines[number]) > indent:
        number += 1
    return number


def _signature_name(argument: str) -> Optional[re.Match]:
    """The object's dotted name in a directive argument, such as ``f(x) -> int``, ``async f``."""
    prefix = _SIGNATURE_PREFIX.match(argument)
    return _ENTRY.match(argument, prefix.end() if prefix else 0)


class _Reader:
    def __init__(self, include, defaults: dict):
        self.include = include
        self.defaults = defaults

    def read(self, lines: List[str], state: _State, depth: int) -> Iterator[Listed]:
        state.budget -= max(1, len(lines))
        if state.budget < 0:
            return
        paragraph = None  # text indentation of the open paragraph
        colons = False  # does the open paragraph's last line end with "::"?
        pending = None  # indentation of a paragraph that ended with "::" before a blank line
        classes: List[tuple] = []  # (indent, class name) of enclosing class directives
        number = 0
        while number < len(lines):
            line = lines[number]
            stripped = line.strip()
            if not stripped:
                if paragraph is not None and colons:
                    pending = paragraph
                paragraph, colons = None, False
                number += 1
                continue
            indent = indentation(line)
            while classes and indent <= classes[-1][0]:
                classes.pop()
            if pending is not None:
                owner, pending = pending, None
                if indent > owner:  # an indented literal block
                    number = _end_of_block(lines, number, owner)
                    continue
                if indent == owner and stripped[0] in _PUNCTUATION:  # a quoted literal block
                    quote = stripped[0]
                    while number < len(lines) and lines[number].strip()[:1] == quote \
                            and indentation(lines[number]) == owner:
                        number += 1
                    continue
            if paragraph is not None and indent == paragraph:  # the paragraph goes on
                colons = stripped.endswith("::")
                if set(stripped) <= _PUNCTUATION and len(set(stripped)) == 1:
                    paragraph, colons = None, False  # a title's underline ends it
                number += 1
                continue
            if stripped == ".." or stripped.startswith(("..\t", ".. ")):
                paragraph, colons = None, False
                number = yield from self._markup(lines, number, indent, state, depth, classes)
                continue
            paragraph, colons = _text_indent(line, indent), stripped.endswith("::")
            number += 1

    def _markup(self, lines, number, indent, state, depth, classes):
        """Read the explicit markup block at `number`.

        Yield what it lists, and return the index of the next line to read."""
        line = lines[number]
        match = DIRECTIVE.match(line)
        if not match:  # a comment, target, footnote, citation or substitution definition
            if line.strip() == ".." and (number + 1 == len(lines) or not lines[number + 1].strip()):
                return number + 1  # an empty comment; what follows is not its body
            return _end_of_block(lines, number + 1, indent)
        name = match.group("name")
        short = name[3:] if name.startswith("py:") else name
        options = _options(lines, number + 1, indent)
        after = number + 1 + len(options)  # the body (reStructuredText) starts here
        argument = match.group("arg")
        if name in _CURRENT:
            state.current = None if argument.strip() in ("", "None") else argument.strip()
            return after
        if name in LITERAL_BODIES:
            return _end_of_block(lines, number + 1, indent)
        if name == "include":
            yield from self._include(argument.strip(), options, number + 1, state, depth)
            return _end_of_block(lines, number + 1, indent)
        column = match.start("arg") + 1
        current = options.get("module") or state.current
        if name in _MODULE:
            state.current = argument.strip() or None
            entry = _ENTRY.match(argument)
            if entry:
                yield Listed(number + 1, column + entry.start("name"), entry.group("name"), None, {}, "module")
            return after
        if short == "autosummary":
            body_end = _end_of_block(lines, after, indent)
            for index in range(after, body_end):
                body = lines[index]
                stripped = body.strip()
                if not stripped or not _AUTOSUMMARY_ENTRY.match(stripped):
                    continue
                entry = _ENTRY.match(stripped)
                if entry:
                    offset = indentation(body)
                    yield Listed(index + 1, offset + entry.start("name") + 1, entry.group("name"), current,
                                 options, "autosummary")
            return body_end
        if short.startswith("auto") or (short in PY_OBJECTS and (name.startswith("py:") or ":" not in name)):
            entry = _signature_name(argument) if not short.startswith("auto") else _ENTRY.match(argument)
            if entry:
                listed_name = entry.group("name")
                if classes and not short.startswith("auto") and short not in _CLASSES:
                    listed_name = f"{classes[-1][1]}.{listed_name}"
                if short in ("automodule", "autoclass", "autoexception"):
                    options = self._with_defaults(options)
                yield Listed(number + 1, column + entry.start("name"), listed_name, current, options, short)
                if short in _CLASSES:
                    classes.append((indent, listed_name))
        return _past_argument(lines, after, indent) if argument.strip() else after

    def _with_defaults(self, options: dict) -> dict:
        """A directive's options with ``autodoc_default_options`` filled in, as autodoc merges them.

        The directive's own options win. ``no-members`` switches members off."""
        merged = dict(options)
        for key, value in self.defaults.items():
            if key not in merged and f"no-{key}" not in merged:
                merged[key] = value
        if "no-members" in merged:
            merged.pop("members", None)
        return merged

    def _include(self, argument: str, options: dict, line: int, state: _State, depth: int):
        if self.include is None or "literal" in options or "code" in options or depth >= MAX_INCLUDE_DEPTH:
            return
        found = self.include(state.chain[-1], argument)
        if found is None:
            return
        path, text = found
        if path in state.chain:
            return  # a cycle: Sphinx would refuse it too
        lines = text.expandtabs(8).split("\n")
        start = _int(options.get("start-line"), 0)
        end = _int(options.get("end-line"), len(lines))
        lines, offset = lines[start:end], max(start, 0) if start >= 0 else 0
        after_text, before_text = options.get("start-after"), options.get("end-before")
        if after_text or before_text:
            joined = "\n".join(lines)
            if after_text and after_text in joined:
                cut = joined.index(after_text) + len(after_text)
                offset += joined.count("\n", 0, cut)
                joined = joined[cut:]
            if before_text and before_text in joined:
                joined = joined[: joined.index(before_text)]
            lines = joined.split("\n")
        state.chain.append(path)
        try:
            for item in self.read(lines, state, depth + 1):
                hop = f"{path}:{item.line + offset}"
                yield item._replace(line=line, column=1, via=(hop, *item.via))
        finally:
            state.chain.pop()


def _int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
