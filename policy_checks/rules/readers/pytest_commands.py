"""pytest command lines that can undo the stable lane's isolation (EXP008).

The pytest configuration excludes the experimental tests with ``norecursedirs``. A command
line can take that back without touching the configuration:

- ``-o norecursedirs=...`` / ``--override-ini``;
- another configuration file (``-c``, ``--config-file``);
- another root (``--rootdir``);
- plugins or conftests switched off (``-p no:...``, ``--noconftest``);
- experimental test paths named beside stable ones.

This module finds pytest's invocations in shell text: a workflow's ``run`` script, an
``addopts`` value, ``PYTEST_ADDOPTS``. It says which of their arguments do that. It reads
text only, bounded: nothing here runs.
"""

from __future__ import annotations

import shlex
from typing import Iterator, List, NamedTuple, Optional

from ...model.config import under

MAX_SCRIPT = 256 * 1024  # characters of one script read; a workflow's run step is far shorter
# pytest options that take a value as the next argument (or after "=", or glued to a short one)
_VALUED = frozenset({
    "-o", "--override-ini", "-c", "--config-file", "--inifile", "--rootdir", "-p", "-k", "-m", "-n",
    "--numprocesses", "--dist", "-W", "--pythonwarnings", "--ignore", "--ignore-glob", "--deselect",
    "--maxfail", "--timeout", "--junitxml", "--junit-xml", "--basetemp", "--confcutdir", "--durations",
    "--tb", "--log-level", "--cov", "--cov-report", "--import-mode", "--capture", "--color", "-r",
})
# `-p no:NAME` that only drops a cache or an ordering, never what decides collection
HARMLESS_DISABLED = frozenset({"cacheprovider", "randomly"})
_OPERATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "|&"})


class Problem(NamedTuple):
    key: str  # what it is, stable across edits: "-o norecursedirs", "-c", "experimental path"
    message: str


def invocations(script: str) -> Iterator[tuple]:
    """``(line index, pytest arguments)`` of each pytest invocation in a shell script.

    Invocations are ``pytest``, ``py.test`` and ``python -m pytest`` (any python). Lines are
    joined at a trailing backslash. Commands are split at ``;``, ``&&``, ``||`` and ``|``."""
    lines = script[:MAX_SCRIPT].split("\n")
    number = 0
    while number < len(lines):
        first = number
        parts = [lines[number]]
        while parts[-1].endswith("\\") and number + 1 < len(lines):
            parts[-1] = parts[-1][:-1]
            number += 1
            parts.append(lines[number])
        number += 1
        logical = " ".join(parts)
        tokens = words(logical)
        start = 0
        while start < len(tokens):
            found = _pytest_at(tokens, start)
            if found is None:
                break
            position, args_from = found
            end = args_from
            while end < len(tokens) and tokens[end] not in _OPERATORS:
                end += 1
            yield first, tokens[args_from:end]
            start = end


def words(line: str) -> List[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: read it as words
        return line.split()


def _pytest_at(tokens: List[str], start: int) -> Optional[tuple]:
    for position in range(start, len(tokens)):
        token = tokens[position]
        name = token.rpartition("/")[2]
        if name in ("pytest", "py.test") and (position == 0 or tokens[position - 1] != "-m"):
            return position, position + 1
        if token == "-m" and position + 1 < len(tokens) and tokens[position + 1] in ("pytest", "py.test"):
            return position, position + 2  # python -m pytest, python3 -I -m pytest, uv run -m pytest
    return None


def _options(args: List[str]) -> Iterator[tuple]:
    """``(option, value or None)`` and ``(None, positional)`` for each argument."""
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            for rest in args[index:]:
                yield None, rest
            return
        if arg.startswith("--"):
            name, equals, value = arg.partition("=")
            if equals:
                yield name, value
            elif name in _VALUED and index < len(args):
                yield name, args[index]
                index += 1
            else:
                yield name, None
        elif arg.startswith("-") and len(arg) > 1:
            name = arg[:2]
            if name in _VALUED:
                if len(arg) > 2:
                    yield name, arg[2:]
                elif index < len(args):
                    yield name, args[index]
                    index += 1
                else:
                    yield name, None
            else:
                yield arg, None
        else:
            yield None, arg


def problems(args: List[str], experimental_tests: str, config_file: Optional[str], anchored) -> List[Problem]:
    """What in pytest's arguments `args` can let the stable lane collect `experimental_tests`.

    An invocation that names only experimental paths is the experimental lane, and has none.
    `config_file` is the configuration EXP008 reads; ``-c`` naming it is harmless.
    `anchored(entry)` says whether a norecursedirs entry excludes the experimental tests by
    path."""
    options = list(_options(args))
    paths = [value.rstrip("/") for name, value in options if name is None]
    if paths and all(under(p.removeprefix("./"), experimental_tests) for p in paths):
        return []
    found = []
    for name, value in options:
        if name in ("-o", "--override-ini") and value is not None:
            key, _, setting = value.partition("=")
            if key.strip() == "norecursedirs" and not any(anchored(e) for e in setting.split()):
                found.append(Problem("-o norecursedirs", f"`{name} {value}` replaces norecursedirs without "
                                                         f"{experimental_tests}"))
            elif key.strip() in ("addopts", "testpaths", "confcutdir"):
                found.append(Problem(f"-o {key.strip()}", f"`{name} {value}` overrides {key.strip()}"))
        elif name in ("-c", "--config-file", "--inifile") and (value or "").removeprefix("./") != config_file:
            found.append(Problem("-c", f"`{name} {value}` makes pytest read another configuration than "
                                       f"{config_file or 'the one at the root'}"))
        elif name == "--rootdir" and (value or "").rstrip("/") not in (".", ""):
            found.append(Problem("--rootdir", f"`--rootdir {value}` moves pytest's root"))
        elif name == "--confcutdir":
            found.append(Problem("--confcutdir", f"`--confcutdir {value}` skips conftest files"))
        elif name == "--noconftest":
            found.append(Problem("--noconftest", "`--noconftest` drops the conftest files"))
        elif name == "-p" and value and value.startswith("no:") and value[3:] not in HARMLESS_DISABLED:
            found.append(Problem(f"-p {value}", f"`-p {value}` switches a plugin off"))
    named = sorted({p for p in paths if under(p.removeprefix("./"), experimental_tests)})
    if named:
        found.append(Problem("experimental path", "names experimental tests beside stable ones: " + ", ".join(named)))
    return found
