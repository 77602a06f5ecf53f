"""The checker's modules, the bot included, import each other without cycles (counting
imports inside functions; `tests/import_graph.py` builds the graph), and its layers stay light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import policy_checks

from ..import_graph import cycles, describe, import_graph

PACKAGE = Path(policy_checks.__file__).parent


def test_policy_checks_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    found = cycles(graph)
    assert not found, "import cycles: " + " | ".join(describe(graph, c) for c in found)


def test_rule_metadata_does_not_need_the_runner():
    """``policy-check rules`` / ``explain`` and the report formats read the rule
    table, not the runner (which would start the fact machinery)."""
    code = (
        "import sys, policy_checks.commands, policy_checks.report, policy_checks.rules.registry\n"
        "assert 'policy_checks.runner' not in sys.modules, 'runner imported'\n"
        "assert 'multiprocessing' not in sys.modules, 'multiprocessing imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE.parent)


def test_settings_import_nothing_of_the_checker():
    """The bot imports `policy_checks.config` for `is_experimental_path`: it must stay light."""
    code = (
        "import sys, policy_checks.config\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('policy_checks.'))\n"
        "assert loaded == ['policy_checks.config'], loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE.parent)
