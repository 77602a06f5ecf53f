"""The shipped audit job (``.github/workflows/policy-audit.yml``) can pass: the checker
runs from an environment of its own, the PR's code in an audited environment that holds
what this repository's code and stable lane import (``.github/policy-audit-requirements.txt``),
named to the audit with ``--python``. The job's commands run for real in
``tests/round_trips/test_policy_audit_workflow.py`` (minutes); these are the fast checks."""

from __future__ import annotations

import ast
import configparser
import fnmatch
import importlib.metadata
import re
import shlex
import sys
from pathlib import Path

import yaml
from packaging.requirements import InvalidRequirement, Requirement

from ..conftest import write_tree

REPOSITORY = Path(__file__).resolve().parents[3]
WORKFLOW = REPOSITORY / ".github" / "workflows" / "policy-audit.yml"
REQUIREMENTS = REPOSITORY / ".github" / "policy-audit-requirements.txt"
OWN = ("flashinfer", "policy_checks", "tests")  # the tree's own top-level packages


def _module_level_imports(body: list) -> set:
    """Top-level names imported by statements that run at import (under if/try too)."""
    found = set()
    for node in body:
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", []),
                          *[h.body for h in getattr(node, "handlers", [])]):
                found |= _module_level_imports(block)
    return found


def lane_imports(root: Path) -> set:
    """Third-party top-level modules that importing the packages and collecting the stable
    lane (``tests/`` less pytest.ini's ``norecursedirs``) import at module level."""
    parser = configparser.ConfigParser()
    parser.read(root / "pytest.ini")
    skipped = parser.get("pytest", "norecursedirs", fallback="").split()
    files = [*(root / "flashinfer").rglob("*.py"), *(root / "policy_checks").rglob("*.py")]
    for path in (root / "tests").rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        if not any(fnmatch.fnmatch(part, pattern) for part in rel.split("/")[:-1] for pattern in skipped) and \
                not any(rel.startswith(pattern.rstrip("/") + "/") for pattern in skipped):
            files.append(path)
    names = set()
    for path in files:
        try:
            names |= _module_level_imports(ast.parse(path.read_bytes()).body)
        except SyntaxError:
            continue
    return {n for n in names if n not in sys.stdlib_module_names and n not in OWN}


def _closure(requirements: list) -> set:
    """The distributions `requirements` install, dependencies included, as this
    environment resolves them (normalised names)."""
    wanted, seen = [r.name for r in requirements], set()
    while wanted:
        name = re.sub(r"[-_.]+", "-", wanted.pop()).lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            needs = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for text in needs:
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                continue
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                wanted.append(requirement.name)
    return seen


def _requirements(text: str) -> list:
    return [Requirement(line.split("#")[0].strip()) for line in text.splitlines() if line.split("#")[0].strip()]


def uncovered(modules: set, requirements_text: str) -> list:
    """The distributions (as installed here) of `modules` that the requirements do not install."""
    installed = _closure(_requirements(requirements_text))
    providers = importlib.metadata.packages_distributions()
    missing = set()
    for module in modules:
        for distribution in providers.get(module, ()):  # not installed here: the lane itself could not import it
            if re.sub(r"[-_.]+", "-", distribution).lower() not in installed:
                missing.add(distribution)
    return sorted(missing)


def test_the_audited_environment_holds_what_this_repositorys_lane_imports():
    assert uncovered(lane_imports(REPOSITORY), REQUIREMENTS.read_text(encoding="utf-8")) == []


def test_a_lane_importing_a_package_the_requirements_lack_is_found(tmp_path):
    """The check can fail: a stable test importing hypothesis (whose stand-in breaks its
    collection) against requirements that hold pytest alone; with hypothesis listed, none."""
    root = write_tree(tmp_path, {
        "pytest.ini": "[pytest]\nnorecursedirs = tests/experimental\n",
        "flashinfer/__init__.py": "import torch\n",
        "tests/test_props.py": "from hypothesis import given\nimport pytest\n",
        "tests/experimental/test_exp.py": "import graphql\n",  # not the stable lane's
    })
    assert lane_imports(root) == {"torch", "hypothesis", "pytest"}
    assert uncovered(lane_imports(root), "torch\npytest\n") == ["hypothesis"]
    assert uncovered(lane_imports(root), "torch\npytest\nhypothesis>=6\n") == []


def _steps() -> list:
    [job] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"].values()
    return [step for step in job["steps"] if "run" in step]


def test_the_job_audits_the_pr_in_the_audited_environment_with_the_checker_from_its_own():
    """Two environments: the base branch's checker in one; the requirements, read from the
    base branch's checkout, in the other, whose python runs the PR's code (``--python``)."""
    commands = [shlex.split(step["run"].replace("&&", " && ")) for step in _steps()]
    checker = next(c for c in commands if "./base" in c)
    audited = next(c for c in commands if "-r" in c)
    audit = next(c for c in commands if "audit" in c)
    checker_env, audited_env = checker[checker.index("venv") + 1], audited[audited.index("venv") + 1]
    assert checker_env != audited_env
    assert audited[audited.index("-r") + 1] == "base/.github/policy-audit-requirements.txt"
    assert audit[:4] == [f"{checker_env}/bin/python", "-I", "-m", "policy_checks"]
    assert audit[audit.index("--python") + 1] == f"{audited_env}/bin/python"
    assert audit[audit.index("--root") + 1] == "pr"
    assert {"pytest", "hypothesis", "torch", "numpy"} <= {r.name for r in _requirements(REQUIREMENTS.read_text())}
