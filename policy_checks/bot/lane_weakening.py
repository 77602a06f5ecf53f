"""Weakenings of the stable lane's isolation, judged as EXP008 reads the lane.

EXP008 reads more than the root's pytest configuration:

- the first configuration pytest finds from the stable lane's directory up. A
  ``tests/pytest.ini`` wins over the root's;
- the conftest hooks of the lane that re-admit or add tests;
- the workflows' pytest command lines.

The bot reads the same files at a PR's base and head commits. It asks the checker's own
readers what each text means: `policy_checks.rules.exp008`, `conftest_hooks`, `workflows`
and `pytest_commands`. Nothing of the PR runs. What the head adds is a weakening. What it
drops is tightening, and is not.

* The configuration's candidates (`config_paths`), in pytest's order, directory by
  directory. `policy_weakening.pytest_config` reads them.
* A conftest of the lane (`is_lane_conftest`). The root's is aside: `policy_weakening` judges
  any change to it. Each hook statement that re-admits or adds tests
  (`conftest_hooks.readmissions`) counts when the base holds its stripped line fewer times. A
  conftest renamed or copied from outside the lane is new to it: its base is none.
* A workflow or composite action (`workflows.is_workflow_file`). Each pytest argument that can
  let the stable lane collect experimental tests counts when the base holds it fewer times.
  Such arguments are ``-o norecursedirs``, ``--override-ini``, ``-c``, ``--rootdir``,
  ``-p no:``, experimental paths beside stable ones, and ``PYTEST_ADDOPTS``. ``-c`` naming the
  configuration pytest uses is harmless, as in EXP008.

Links under ``tests/`` are not judged here. The bot fails a link anywhere in the test lanes
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
    """Where pytest looks for its configuration when run on the stable lane, in its order.

    That is each of EXP008's `CONFIG_FILES` in the lane's directory. Then it is each directory
    above it, up to the root."""
    return tuple(f"{directory}/{name}" if directory else name
                 for directory in lane_directories(settings) for name in exp008.CONFIG_FILES)


def is_lane_conftest(path: str | None, settings: Settings = DEFAULT) -> bool:
    """A conftest the stable lane loads, other than the root's.

    It is one in the lane's directory, or in a directory between it and the root. It may also
    be in any stable test directory, but not the experimental lane's."""
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
    """The statements of a conftest that re-admit or add tests.

    Each comes as ``(hook and what it does, stripped line, message)``."""
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
    """``(text, key parts)`` of each statement that re-admits or adds tests, new at the head.

    It counts when the head of a lane conftest holds it more often than its base. A hook was
    added, or changed to re-admit."""
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
    """``(text, key parts)`` of each risky pytest argument of a workflow at head.

    Risky means it can let the stable lane collect experimental tests. It counts when the base
    holds it fewer times. ``config_*`` is the configuration pytest uses at each commit.
    ``-c`` naming it is harmless."""
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
    """A lane conftest that arrives by a rename or copy from a path that is not one.

    Its base text is another file's, so all of it is new to the lane."""
    return status in ("renamed", "copied") and not is_lane_conftest(previous, settings)


def lane_conftests(paths: Iterable[str], files: Mapping[str, FileAtRevisions],
                   settings: Settings = DEFAULT) -> list[str]:
    """The lane conftests among ``paths`` that were read whole."""
    return [path for path in sorted(set(paths)) if is_lane_conftest(path, settings)
            and path in files and files[path].complete]
