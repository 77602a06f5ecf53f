"""pytest as the repository's workflows run it (EXP008).

A workflow step can undo the lane's isolation on its command line
(`policy_checks.rules.readers.pytest_commands`). This module reads every ``run`` script and
every ``PYTEST_ADDOPTS`` value of ``.github/workflows/*.yml`` / ``*.yaml``. It also reads
the repository's composite actions, ``.github/actions/*/action.yml``. It uses PyYAML's
composer: nodes and their lines. No object is constructed, and aliases are visited once.
Each pytest invocation goes to `pytest_commands.problems`.
"""

from __future__ import annotations

from typing import Iterator, List

from ...model import walk
from . import pytest_commands

WORKFLOWS_DIR = ".github/workflows"
ACTIONS_DIR = ".github/actions"
MAX_WORKFLOW_BYTES = 1024 * 1024  # a larger file is not read (no workflow is near it)


def workflow_files(project) -> List[str]:
    """Relative paths of the workflow files that git selects.

    The repository's own composite actions (``.github/actions/<name>/action.yml``) count
    too."""
    listing = getattr(project, "listing", None)
    depth = ACTIONS_DIR.count("/") + 1  # .github/actions/<name>
    workflows = [e.rel for e in walk.files(project.root, WORKFLOWS_DIR, enter=lambda e: False)
                 if e.name.endswith((".yml", ".yaml"))]
    actions = [e.rel for e in walk.files(project.root, ACTIONS_DIR, enter=lambda e: e.rel.count("/") == depth)
               if e.name in ("action.yml", "action.yaml") and e.rel.count("/") == depth + 1]
    return [rel for rel in workflows + actions if listing is None or listing.has_file(rel)]


def pytest_problems(project, config_file, anchored) -> Iterator[tuple]:
    """``(workflow, line, Problem)`` for each risky pytest invocation of a workflow.

    Risky means it can let the stable lane collect experimental tests."""
    experimental = project.settings.experimental_tests
    for rel in workflow_files(project):
        path = project.root / rel
        try:
            if path.stat().st_size > MAX_WORKFLOW_BYTES:
                continue
        except OSError:
            continue
        text = project.read_text(rel)
        if text is None:
            continue
        for line, problem in text_problems(text, experimental, config_file, anchored):
            yield rel, line, problem


def is_workflow_file(rel: str) -> bool:
    """Whether a path is one `workflow_files` reads.

    That is a workflow, or a composite action of the repository."""
    parts = rel.split("/")
    if rel.startswith(WORKFLOWS_DIR + "/") and len(parts) == 3:
        return parts[2].endswith((".yml", ".yaml"))
    return rel.startswith(ACTIONS_DIR + "/") and len(parts) == 4 and parts[3] in ("action.yml", "action.yaml")


def text_problems(text: str, experimental: str, config_file, anchored) -> Iterator[tuple]:
    """``(line, Problem)`` for each pytest invocation of one workflow's text (`pytest_problems`).

    It asks the same question of another revision's text. The bot reads a PR's base and
    head."""
    if "pytest" not in text and "py.test" not in text:
        return
    lines = text.split("\n")
    for start, end, script, is_addopts in _scripts(text):
        if is_addopts:
            calls = [(0, pytest_commands.words(script))]
        else:
            calls = list(pytest_commands.invocations(script))
        for _offset, arguments in calls:
            for problem in pytest_commands.problems(arguments, experimental, config_file, anchored):
                yield _line(lines, start, end, problem), problem


def _line(lines: List[str], start: int, end: int, problem) -> int:
    """The 1-based line that spells the problem's option.

    It lies between the scalar's first and last line. Otherwise it is the scalar's first
    line."""
    word = problem.key.split()[0] if problem.key != "experimental path" else "pytest"
    for number in range(start, min(end, len(lines) - 1) + 1):
        if word in lines[number]:
            return number + 1
    return start + 1


def _scripts(text: str) -> Iterator[tuple]:
    """``(first line, last line, text, is PYTEST_ADDOPTS)`` of each scalar that runs pytest.

    Lines are 0-based. The scalars are every ``run`` scalar and every ``PYTEST_ADDOPTS``
    scalar in a YAML document stream."""
    import yaml  # only when a workflow runs pytest: most runs never need it

    try:
        nodes = list(yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except yaml.YAMLError:
        return
    seen = set()
    stack = [node for node in nodes if node is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if (isinstance(key, yaml.ScalarNode) and key.value in ("run", "PYTEST_ADDOPTS")
                        and isinstance(value, yaml.ScalarNode)):
                    yield value.start_mark.line, value.end_mark.line, value.value, key.value == "PYTEST_ADDOPTS"
                stack.append(key)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
