"""The layering of the runtime and the checker: contracts in pyproject.toml
(``[tool.importlinter]``), run with import-linter, and a planted tree that breaks every
one of them, to show each contract can fail.

import-linter's graph counts every import, in function bodies and under
``TYPE_CHECKING`` too. A rule that holds only at import time (a command loads the runner
in its body, never when the command table is loaded) is the small table
`AT_IMPORT_TIME` below, checked on the import-time graph of `tests/import_graph.py`.
docs/architecture.rst describes the layers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import grimp

from .import_graph import import_graph, reachable

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "pyproject.toml"

# module -> modules it must not load at import time, though it may import them in a function
# body (otherwise the rule belongs in a contract). `policy-check rules` / `explain` read the
# rule table; only running the checks loads the runner (and with it the fact machinery).
AT_IMPORT_TIME = {
    "policy_checks.cli.run": ("policy_checks.engine.runner",),
    "policy_checks.cli.baseline": ("policy_checks.engine.runner",),
}


def contracts() -> list:
    return tomllib.loads(CONFIG.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def lint_imports(config: Path, cwd: Path) -> subprocess.CompletedProcess:
    """``lint-imports CONFIG`` in `cwd` (on the path, for the root packages), without a cache."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(cwd), os.environ.get("PYTHONPATH")])),
                   "COLUMNS": "200", "NO_COLOR": "1"}
    command = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
               "--no-cache", "--no-logo", str(config)]
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=300)


def flat(text: str) -> str:
    """`text` with each run of whitespace one space (the report wraps long contract names)."""
    return " ".join(text.split())


def test_the_layering_contracts_hold():
    result = lint_imports(CONFIG, ROOT)
    assert result.returncode == 0, (
        f"a layering contract of {CONFIG.name} [tool.importlinter] is broken "
        f"(run `lint-imports` to see it again):\n{result.stdout}{result.stderr}"
    )
    assert f"Contracts: {len(contracts())} kept, 0 broken." in flat(result.stdout), result.stdout


def test_the_contracts_graph_counts_imports_inside_functions():
    """The contracts see the imports a core module makes in a function body (aot loads
    gemm and norm there; utils loads tuning and trace-apply on the first automatic call)."""
    graph = grimp.build_graph("flashinfer", cache_dir=None)
    at_import_time = import_graph(ROOT / "flashinfer", at_import_time=True)
    for importer, imported in [("flashinfer.aot", "flashinfer.gemm"), ("flashinfer.aot", "flashinfer.norm"),
                               ("flashinfer.utils", "flashinfer.tuning.tuner"), ("flashinfer.utils", "flashinfer.trace_apply")]:
        assert graph.direct_import_exists(importer=importer, imported=imported), (importer, imported)
        assert imported not in at_import_time[importer], f"{importer} imports {imported} at import time now"
    assert graph.direct_import_exists(importer="flashinfer.norm", imported="flashinfer.norm_rows")  # relative


def test_what_only_holds_at_import_time():
    everything = import_graph(ROOT / "policy_checks")
    at_import_time = import_graph(ROOT / "policy_checks", at_import_time=True)
    for module, lazy in AT_IMPORT_TIME.items():
        loaded = sorted(set(lazy) & reachable(at_import_time, module))
        assert not loaded, f"importing {module} loads {loaded}: import them in the function that needs them"
        assert set(lazy) <= reachable(everything, module), f"{module} no longer imports {lazy}: a contract can say it"


# --- every contract can fail --------------------------------------------------------------

RENAMED = {"flashinfer": "rt_planted", "policy_checks": "ck_planted"}

# A small runtime and checker, named as RENAMED says, that break each contract (the id
# each file is planted for; some break others too).
PLANTED = {
    # the typed face, an import the dispatch layers' contract ignores
    "rt_planted/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .track import x as x\n",
    "rt_planted/gemm.py": """
        def mm():
            from .experimental.feat import run  # the entry point of a feature
    """,
    "rt_planted/experimental/__init__.py": "",
    "rt_planted/experimental/feat/__init__.py": "from ...gemm import mm  # runtime-acyclic: reaches back\n",
    "rt_planted/utils.py": "from . import tuning, trace_apply\n",
    "rt_planted/autotuner.py": "",
    "rt_planted/tuning/__init__.py": "",
    "rt_planted/tuning/tuner.py": "from ..dispatch import hooks\n",
    "rt_planted/trace_apply.py": "from .dispatch import hooks\n",
    "rt_planted/dispatch/__init__.py": "",
    "rt_planted/dispatch/hooks.py": "",
    "rt_planted/dispatch/core.py": """
        def first_auto_call():
            from ..tuning import tuner  # runtime-dispatch-layers: dispatch reaches up
    """,
    "rt_planted/api_logging.py": "",
    "rt_planted/capabilities.py": "",
    "rt_planted/track.py": "",
    "ck_planted/__init__.py": "",
    **{f"ck_planted/{layer}/__init__.py": "" for layer in (
        "cli", "bot", "audit", "consumer", "fix", "lifecycle", "report", "editing", "engine", "rules", "analysis",
        "model")},
    "ck_planted/engine/suppressions.py": "from ..rules.base import Finding\n",
    "ck_planted/rules/base.py": "Finding = object\n",
    "ck_planted/rules/registry.py": "from ..engine.suppressions import META_RULES  # checker-acyclic, suppressions-above-rules\n",
    "ck_planted/model/project.py": """
        def module_names():
            from rt_planted import track  # checker-not-runtime
            from ..engine import cache  # checker-layers: the model reaches up
    """,
    "ck_planted/engine/runner.py": """
        import github  # pygithub-in-bot
        def run():
            import multiprocessing
    """,
    "ck_planted/bot/client.py": "import github, requests, urllib3\nfrom ..lifecycle import board\n",
    "ck_planted/bot/markdown.py": "",
    "ck_planted/lifecycle/board.py": "from ..bot.markdown import code  # bot-above-checker\n",
    "ck_planted/model/config.py": """
        def load():
            from .features import read  # settings-import-nothing
    """,
    "ck_planted/model/features.py": "",
    "ck_planted/report/__init__.py": """
        def render():
            from ..engine.runner import run  # rule-metadata-without-runner
    """,
    "ck_planted/engine/cache.py": "import multiprocessing  # one-process-pool\n",
    "ck_planted/cli/rules.py": "",
}


def renamed(value):
    """`value` (a contract's setting) with the packages of RENAMED renamed."""
    if isinstance(value, str):
        return re.sub(r"\b(" + "|".join(RENAMED) + r")\b", lambda m: RENAMED[m.group(1)], value)
    if isinstance(value, list):
        return [renamed(item) for item in value]
    return value


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return json.dumps(value)  # a JSON string or number is a TOML one


def test_every_contract_can_fail(tmp_path):
    """The contracts of pyproject.toml, moved onto a planted tree, report each breach."""
    for relative, text in PLANTED.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    section = tomllib.loads(CONFIG.read_text(encoding="utf-8"))["tool"]["importlinter"]
    lines = ["[tool.importlinter]"]
    lines += [f"{key} = {toml_value(renamed(value))}" for key, value in section.items() if key != "contracts"]
    for contract in section["contracts"]:
        lines += ["", "[[tool.importlinter.contracts]]"]
        lines += [f"{key} = {toml_value(renamed(value))}" for key, value in contract.items()]
    config = tmp_path / "planted.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = lint_imports(config, tmp_path)
    report = flat(result.stdout)
    assert result.returncode == 1 and f"Contracts: 0 kept, {len(section['contracts'])} broken." in report, (
        result.stdout + result.stderr)
    for contract in section["contracts"]:
        assert flat(f"{renamed(contract['name'])} BROKEN") in report, contract["id"]
