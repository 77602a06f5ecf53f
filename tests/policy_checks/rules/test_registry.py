"""The rule table is found, not listed: a rule is one file of ``policy_checks/rules``.

A temporary copy of the checker with one new rule module shows the rule in ``rules``,
``explain``, the docs table (which then no longer matches docs/policy_check.rst) and
the example tests, with no other file touched."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from policy_checks.report.rule_help import rst_table
from policy_checks.rules.registry import RULES, RuleTableError, discover

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "policy_check.rst"

NEW_RULE = '''\
"""EXP099 toy-rule: a module named ``toy``."""

from .base import Example, Rule
from ..analysis.needs import CORE_MODULE

MESSAGE = "a module is named toy"


class ToyRule(Rule):
    """A core module named ``toy``: a rule written in one file, for the registry's test.
    It reads core modules and needs no facts up front; its examples are its tests.
    Nothing else in the checker names it: the registry finds it by scanning."""

    id = "EXP099"
    name = "toy-rule"
    summary = "a core module is named toy"
    reads = (CORE_MODULE,)
    VALID = [Example({"flashinfer/__init__.py": "", "flashinfer/ok.py": ""})]
    INVALID = [Example({"flashinfer/__init__.py": "", "flashinfer/toy.py": ""}, expect=(("flashinfer/toy.py", 1),))]

    def check(self, project):
        for rel, source in sorted(project.files.items()):
            if source.module.rpartition(".")[2] == "toy":
                yield self.finding(rel, 1, 1, MESSAGE)
'''


def page_table() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("Rules\n-----\n\n") + len("Rules\n-----\n\n")
    return text[start:text.index("\n\n", text.index("=\n", text.index("=\n", start) + 2) + 2) + 1]


def test_the_docs_table_is_the_registry():
    assert page_table() == rst_table(), "docs/policy_check.rst's rule table drifted: paste `policy-check rules --format rst`"


def test_each_rule_is_one_module_named_after_its_id():
    assert RULES and list(RULES) == sorted(RULES)
    for rule_id, rule in RULES.items():
        assert type(rule).__module__ == f"policy_checks.rules.{rule_id.lower()}", rule_id


def test_a_taken_id_is_an_error(tmp_path):
    package = tmp_path / "twin_rules"
    package.mkdir()
    (package / "__init__.py").write_text("")
    body = "from policy_checks.rules.base import Rule\n\nclass R{n}(Rule):\n    id = 'EXP001'\n"
    for n in (1, 2):
        (package / f"r{n}.py").write_text(body.format(n=n))
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(RuleTableError, match="EXP001"):
            discover("twin_rules", package)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("twin_rules")]:
            del sys.modules[name]


@pytest.mark.timeout(300)
def test_a_rule_added_as_one_file_is_seen_everywhere(tmp_path):
    copy = tmp_path / "checker"
    shutil.copytree(ROOT / "policy_checks", copy / "policy_checks", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "policy_checks" / "rules" / "exp099.py").write_text(NEW_RULE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}

    def policy_check(*args):
        return subprocess.run([sys.executable, "-m", "policy_checks", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)

    assert "EXP099      toy-rule" in policy_check("rules").stdout
    explained = policy_check("explain", "EXP099")
    assert explained.returncode == 0 and "A core module named ``toy``" in explained.stdout, explained.stderr
    table = policy_check("rules", "--format", "rst").stdout
    assert "_`EXP099`  toy-rule" in table and table != page_table()  # the docs table check sees it
    examples = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-c", str(ROOT / "pytest.ini"), "--rootdir", str(ROOT),
         str(ROOT / "tests/policy_checks/rules/test_rule_examples.py"), "-k", "EXP099"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert examples.returncode == 0 and "8 passed" in examples.stdout, examples.stdout[-3000:] + examples.stderr[-2000:]


def test_the_engine_imports_no_rule_of_its_own_accord():
    """What a rule needs from the engine is declared on the rule (`Rule.configuration`,
    `fingerprint_by_path`, `follow_ups`, `runs_last`): no engine module imports one
    rule's module, so a rule added as one file gets what EXP008 gets."""
    rule_module = re.compile(r"(?:^|\.)exp\d{3}$")
    for path in sorted((ROOT / "policy_checks" / "engine").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                named = [node.module or "", *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            else:
                continue
            assert not any(rule_module.search(name) for name in named), f"{path.name}:{node.lineno} imports a rule"
