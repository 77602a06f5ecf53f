"""Weakenings of the stable lane's isolation, judged as EXP008 reads the lane.

EXP008 reads more than the root's pytest configuration: the first configuration pytest finds
from the stable lane's directory up (a ``tests/pytest.ini`` wins over the root's), the conftest
hooks of the lane that re-admit or add tests, and the workflows' pytest command lines. The bot
reads the same files at a PR's base and head commits and asks the checker's own readers
(`policy_checks.rules.exp008`, `conftest_hooks`, `workflows`, `pytest_commands`) what each text
means; nothing of the PR runs. What the head adds is a weakening; what it drops (tightening) is not.

* the configuration's candidates (`config_paths`) in pytest's order, directory by directory
  (`policy_weakening.pytest_config` reads them);
* a conftest of the lane (`is_lane_conftest`, the root's aside: any change to it is judged by
  `policy_weakening`): each hook statement that re-admits or adds tests (`conftest_hooks.readmissions`)
  whose stripped line the base does not hold as often. A conftest renamed or copied from outside
  the lane is new to it (its base is none);
* a workflow or composite action (`workflows.is_workflow_file`): each pytest argument that can
  let the stable lane collect experimental tests (``-o norecursedirs``, ``--override-ini``, ``-c``,
  ``--rootdir``, ``-p no:``, experimental paths beside stable ones, ``PYTEST_ADDOPTS``) that the
  base's text does not hold as often. ``-c`` naming the configuration pytest uses is harmless,
  as in EXP008.

Links under ``tests/`` are not judged here: the bot fails a link anywhere in the test lanes
outright (`pr_check`).

Pure: no request.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping

from ..model import markers
from ..model.config import DEFAULT, Settings, under
from ..rules import exp008
from ..rules.readers import workflows
from ..rules.readers.conftest_hooks import readmissions
from ..rules.readers.lane_links import lane_directories
from .markdown import code
from .revisions import FileAtRevisions

CONFTEST = "conftest.py"


def config_paths(settings: Settings = DEFAULT) -> tuple[str, ...]:
    """Where pytest looks for its configuration when run on the stable lane, in its order: each of
    EXP008's `CONFIG_FILES` in the lane's directory, then in each directory above it up to the root."""
    return tuple(f"{directory}/{name}" if directory else name
                 for directory in lane_directories(settings) for name in exp008.CONFIG_FILES)


def is_lane_conftest(path: str | None, settings: Settings = DEFAULT) -> bool:
    """A conftest the stable lane loads, other than the root's: one in the lane's directory or a
    directory between it and the root, or in any stable test directory (not the experimental lane's)."""
    if not path or path == CONFTEST:
        return False
    directory, _, name = path.rpartition("/")
    if name != CONFTEST:
        return False
    if directory in lane_directories(settings):
        return True
    return under(path, settings.stable_tests) and not under(path, settings.experimental_tests)


def _anchored(settings: Settings):
    return lambda entry: exp008.anchored(entry, settings.experimental_tests)


def _readmitting_lines(text: str | None) -> list[tuple[str, str, str]]:
    """``(hook and what it does, stripped line, message)`` of each statement of a conftest that re-admits or
    adds tests."""
    if not text:
        return []
    if markers.parse(text) is None:  # not Python, or nested deeper than the parser takes: cannot be judged
        return [("unparsed", "", "the bot cannot parse it as Python (a syntax error, or nesting deeper than "
                                 "Python's parser takes), so it cannot tell which hooks it defines")]
    found_all = readmissions(text)
    lines = text.split("\n")
    return [(found.key, lines[found.line - 1].strip() if 1 <= found.line <= len(lines) else "", found.message)
            for found in found_all]


def conftest_weakenings(path: str, base: str | None, head: str | None) -> list[tuple[str, tuple]]:
    """``(text, key parts)`` of each statement re-admitting or adding tests that the head of a lane conftest
    holds more often than its base (a hook added, or one changed to re-admit)."""
    before = Counter((key, line) for key, line, _ in _readmitting_lines(base))
    seen: Counter = Counter()
    out = []
    for key, line, message in _readmitting_lines(head):
        seen[(key, line)] += 1
        if seen[(key, line)] > before[(key, line)]:
            where = f"{code(path, 200)} {code(line, 200)}" if line else code(path, 200)
            out.append((f"{where}: {message}; the stable lane may collect experimental tests",
                        ("conftest hook", path, key, line, seen[(key, line)])))
    return out


def workflow_weakenings(path: str, base: str | None, head: str | None, config_base: str | None,
                        config_head: str | None, settings: Settings = DEFAULT) -> list[tuple[str, tuple]]:
    """``(text, key parts)`` of each pytest argument of a workflow at head that can let the stable lane collect
    experimental tests and that the base does not hold as often. ``config_*`` is the configuration pytest
    uses at each commit (``-c`` naming it is harmless)."""
    anchored = _anchored(settings)

    def problems(text: str | None, config: str | None) -> list:
        if not text:
            return []
        return [problem for _, problem in workflows.text_problems(text, settings.experimental_tests, config, anchored)]

    before = Counter(problems(base, config_base))
    seen: Counter = Counter()
    out = []
    for problem in problems(head, config_head):
        seen[problem] += 1
        if seen[problem] > before[problem]:
            out.append((f"{code(path, 200)} runs pytest with {code(problem.key, 60)}: {code(problem.message, 300)}; "
                        "the stable lane may collect experimental tests",
                        ("workflow pytest", path, problem.key, problem.message, seen[problem])))
    return out


def renamed_into_lane(path: str, status: str, previous: str | None, settings: Settings = DEFAULT) -> bool:
    """A lane conftest that arrives by a rename or copy from a path that is not one: its base text is
    another file's, so all of it is new to the lane."""
    return status in ("renamed", "copied") and not is_lane_conftest(previous, settings)


def lane_conftests(paths: Iterable[str], files: Mapping[str, FileAtRevisions],
                   settings: Settings = DEFAULT) -> list[str]:
    """The lane conftests among ``paths`` that were read whole."""
    return [path for path in sorted(set(paths)) if is_lane_conftest(path, settings)
            and path in files and files[path].complete]
