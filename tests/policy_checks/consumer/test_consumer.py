"""``policy-check consumer``: FlashInfer's experimental surface read from a planted tree, and
downstream code judged against it (CON001-CON003), in every report format, with a
baseline, ``--staged``, ``--error`` and version pinning."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner

from policy_checks.cli import main
from policy_checks.consumer import surface as surface_module
from policy_checks.consumer.check import check as consumer_check
from policy_checks.consumer.settings_text import lines_setting_gate

from ..conftest import write_tree

GATE = "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"

FLASHINFER = {
    "flashinfer/_build_meta.py": '__version__ = "9.9.1"\n',
    "flashinfer/__init__.py": (
        "from .norm import toy_gated_norm as toy_gated_norm\n"
        "from .norm import rmsnorm\n"
        "_LAZY_EXPORTS = {'mm_bf16': 'gemm', 'Planner': 'wrappers'}\n"
        "def __getattr__(name):\n    raise AttributeError(name)\n"
    ),
    "flashinfer/api_logging.py": (
        "def flashinfer_experimental_api(func=None, *, feature=None):\n    return func\n"
        "def flashinfer_api(func=None):\n    return func\n"
        "def experimental_backend(checker):\n    return checker\n"
        "def warn_experimental_backend_once(api, backend):\n    pass\n"
    ),
    "flashinfer/utils.py": "def backend_requirement(checks, common_check=None):\n    return lambda f: f\n",
    "flashinfer/norm.py": (
        "from .api_logging import flashinfer_api, flashinfer_experimental_api as fea\n"
        "@flashinfer_api\ndef rmsnorm(x):\n    return x\n"
        "@fea(feature='gated')\ndef toy_gated_norm(x):\n    return x\n"
    ),
    "flashinfer/gemm.py": (
        "from .experimental.fastk.support import check_fastk\n"
        "from .utils import backend_requirement\n"
        "def _check_torch(a, b, backend='auto'):\n    return True\n"
        "@backend_requirement({'torch': _check_torch, 'fastk': check_fastk})\n"
        "def mm_bf16(a, b, backend='auto'):\n    return a\n"
    ),
    "flashinfer/quant.py": (
        "from .api_logging import warn_experimental_backend_once\n"
        "def quantize(x, backend='auto'):\n"
        "    if backend == 'cake':\n        warn_experimental_backend_once('quantize', 'cake')\n    return x\n"
    ),
    "flashinfer/wrappers.py": (
        "from .api_logging import flashinfer_experimental_api\n"
        "class Planner:\n    @flashinfer_experimental_api\n    def __init__(self):\n        pass\n"
        "    def run(self):\n        pass\n"
    ),
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/experimental/fastk/__init__.py": "",
    "flashinfer/experimental/fastk/support.py": (
        "from ...api_logging import experimental_backend\n"
        "@experimental_backend\ndef check_fastk(a, b, backend='auto'):\n    return True\n"
    ),
}

SERVING = {
    "app/ops.py": """\
import os
import subprocess
import flashinfer
import flashinfer.gemm as fg
from flashinfer import toy_gated_norm as grn
from flashinfer.norm import *
KIND = "fastk"

def a(x):
    return flashinfer.toy_gated_norm(x)

def b(x):
    return grn(x)

def c(x, w):
    return fg.mm_bf16(x, w, backend="fastk")

def d(x, w, backend="fastk"):
    return flashinfer.mm_bf16(x, w, backend=backend)

def e(x, w):
    return flashinfer.mm_bf16(x, w, backend=KIND)

def f(x, w):
    name = "torch"
    return flashinfer.mm_bf16(x, w, backend=name) + flashinfer.mm_bf16(x, w, backend="auto")

def g():
    os.environ["FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"] = "1"
    os.environ.setdefault("FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS", "1")
    subprocess.run(["serve"], env={"FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS": "1"})
    os.environ["FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"] = "0"
    os.putenv("FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS", "1")

def h(x):
    return toy_gated_norm(x) + flashinfer.rmsnorm(x) + flashinfer.quant.quantize(x, backend="cake")

PLANNER = flashinfer.wrappers.Planner()
fn = getattr(flashinfer, "toy_gated_norm")
fn(1)
""",
    "app/unrelated.py": "def toy_gated_norm(x):\n    return x\ntoy_gated_norm(1)\nmm_bf16(1, 2, backend='fastk')\n",
    "scripts/serve.sh": (
        "#!/bin/sh\n"
        "# export FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1\n"
        "export FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1\n"
        'if [ "$FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS" = "1" ]; then echo on; fi\n'
        "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=10 python -m app\n"
        "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=${FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS:-1} python -m app\n"
    ),
    "docker/Dockerfile": "FROM base\nENV FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS 1\nARG FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1\n",
    ".github/workflows/ci.yml": (
        "jobs:\n  test:\n    env:\n      FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS: \"1\"\n"
        "    steps:\n      - if: env.FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS == '1'\n        run: echo\n"
    ),
    "config/serve.toml": 'FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS = "1"\n',
    "config/serve.ini": "[env]\nFLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS = true\n",
    "README.md": "export FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1\n",  # prose: not read
}

EXPECTED = {
    ("app/ops.py", 10, "CON001"),  # flashinfer.toy_gated_norm (a re-export)
    ("app/ops.py", 13, "CON001"),  # grn, from flashinfer import ... as ...
    ("app/ops.py", 16, "CON002"),  # module alias, literal
    ("app/ops.py", 19, "CON002"),  # parameter default
    ("app/ops.py", 22, "CON002"),  # module-level variable
    ("app/ops.py", 29, "CON003"),  # os.environ[...] = "1"
    ("app/ops.py", 30, "CON003"),  # setdefault
    ("app/ops.py", 31, "CON003"),  # env dict for a subprocess
    ("app/ops.py", 33, "CON003"),  # putenv
    ("app/ops.py", 36, "CON001"),  # star import
    ("app/ops.py", 36, "CON002"),  # hand-routed backend, found by its literal warning
    ("app/ops.py", 38, "CON001"),  # constructing a class whose __init__ is experimental (lazy export)
    ("app/ops.py", 40, "CON001"),  # getattr(flashinfer, "...")
    ("scripts/serve.sh", 3, "CON003"),
    ("docker/Dockerfile", 2, "CON003"),
    ("docker/Dockerfile", 3, "CON003"),
    (".github/workflows/ci.yml", 4, "CON003"),
    ("config/serve.toml", 1, "CON003"),
}


@pytest.fixture
def trees(tmp_path):
    fi = write_tree(tmp_path / "fi", FLASHINFER)
    app = write_tree(tmp_path / "serving", SERVING)
    return fi, app


def test_surface_is_read_statically_with_every_import_path(trees):
    fi, _ = trees
    surface = surface_module.from_tree(fi)
    assert surface.version == "9.9.1"
    assert surface.gate == GATE
    assert {"flashinfer.norm.toy_gated_norm", "flashinfer.toy_gated_norm", "flashinfer.wrappers.Planner",
            "flashinfer.Planner", "flashinfer.wrappers.Planner.__init__"} <= surface.apis
    assert "flashinfer.norm.rmsnorm" not in surface.apis and "flashinfer.wrappers.Planner.run" not in surface.apis
    assert surface.backends_of("flashinfer.gemm.mm_bf16") == {"fastk"}
    assert surface.backends_of("flashinfer.mm_bf16") == {"fastk"}  # the lazy export
    assert surface.backends_of("flashinfer.quant.quantize") == {"cake"}
    # the JSON index round-trips
    again = surface_module.loads(surface_module.dumps(surface).encode(), "s.json")
    assert (again.version, again.apis, again.backends) == (surface.version, surface.apis, surface.backends)


def test_each_form_of_use_is_found_at_its_line(trees):
    fi, app = trees
    result = consumer_check(app, [app], surface_module.from_tree(fi))
    assert {(f.path, f.line, f.rule) for f in result.findings} == EXPECTED
    by_line = {(f.line, f.rule): f.message for f in result.findings if f.path == "app/ops.py"}
    assert "flashinfer.toy_gated_norm" in by_line[(10, "CON001")] and "9.9.1" in by_line[(10, "CON001")]
    assert "'fastk'" in by_line[(19, "CON002")] and "`backend`" in by_line[(19, "CON002")]


def test_a_star_import_brings_the_stable_apis_with_experimental_backends(trees):
    fi, app = trees
    write_tree(app, {"app/star.py": "from flashinfer import *\nmm_bf16(1, 2, backend='fastk')\n"})
    result = consumer_check(app, [app / "app/star.py"], surface_module.from_tree(fi))
    assert [(f.line, f.rule) for f in result.findings] == [(2, "CON002")]


def test_a_consumer_is_judged_by_the_version_it_pins(trees, tmp_path):
    fi, app = trees
    old = surface_module.Surface("0.6.0", frozenset({"flashinfer.rmsnorm"}), {}, GATE)
    result = consumer_check(app, [app / "app"], old)
    rules = {(f.line, f.rule) for f in result.findings}
    assert (10, "CON001") not in rules and (16, "CON002") not in rules  # not experimental in 0.6.0
    assert (36, "CON001") in rules  # flashinfer.rmsnorm was, there


def test_cli_warns_by_default_and_fails_with_error(trees, tmp_path):
    fi, app = trees
    surface_file = tmp_path / "surface.json"
    runner = CliRunner()
    exported = runner.invoke(main, ["consumer", "surface", "--root", str(fi), "-o", str(surface_file)])
    assert exported.exit_code == 0, exported.output
    assert json.loads(surface_file.read_text())["flashinfer_version"] == "9.9.1"
    args = ["consumer", str(app), "--root", str(app), "--surface", str(surface_file)]
    warned = runner.invoke(main, args)
    assert warned.exit_code == 0 and "app/ops.py:10:12: CON001" in warned.output
    failed = runner.invoke(main, [*args, "--error", "--format", "json"])
    assert failed.exit_code == 1
    report = json.loads(failed.stdout)
    assert {(f["path"], f["line"], f["rule"]) for f in report["findings"]} == EXPECTED
    for fmt, needle in (("github", "::warning") , ("sarif", '"ruleId": "CON002"')):
        out = runner.invoke(main, [*args, "--format", fmt])
        assert out.exit_code == 0 and ("CON00" in out.output)
    sarif = json.loads(runner.invoke(main, [*args, "--format", "sarif"]).stdout)
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"CON001", "CON002", "CON003"}
    bad = tmp_path / "bad.json"
    bad.write_text('{"something": 1}')
    refused = runner.invoke(main, ["consumer", str(app), "--surface", str(bad)])
    assert refused.exit_code == 2 and "not a FlashInfer experimental surface" in refused.output


def test_baseline_accepts_todays_findings_and_reports_new_ones(trees):
    fi, app = trees
    runner = CliRunner()
    args = ["consumer", str(app), "--root", str(app), "--flashinfer-root", str(fi), "--error"]
    assert runner.invoke(main, [*args, "--write-baseline"]).exit_code == 0
    assert (app / "policy-check-consumer-baseline.json").is_file()
    clean = runner.invoke(main, args)
    assert clean.exit_code == 0, clean.output
    ops = app / "app/ops.py"
    ops.write_text("# a line above moves every finding\n" + ops.read_text() + "grn(2)\n")
    again = runner.invoke(main, [*args, "--format", "json"])
    assert again.exit_code == 1
    report = json.loads(again.stdout)
    assert [(f["path"], f["line"]) for f in report["findings"]] == [("app/ops.py", 42)]
    assert report["baselined"] == len(EXPECTED)


def test_staged_reads_only_what_the_commit_holds(trees):
    fi, app = trees
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=app, check=True)
    subprocess.run([*git, "add", "app/ops.py"], cwd=app, check=True)
    result = consumer_check(app, [app], surface_module.from_tree(fi), staged=True)
    assert {f.path for f in result.findings} == {"app/ops.py"}


def test_suppression_comment_and_run_ignoring_consumer_ids(trees, check):
    fi, app = trees
    ops = app / "app/ops.py"
    ops.write_text(ops.read_text().replace("return grn(x)", "return grn(x)  # policy: ignore[CON001] vetted"))
    result = consumer_check(app, [app], surface_module.from_tree(fi))
    assert ("app/ops.py", 13, "CON001") not in {(f.path, f.line, f.rule) for f in result.findings}
    # `policy-check run` knows the ids (no SUP001) and does not check them (no SUP002)
    found = check({"flashinfer/__init__.py": "x = 1  # policy: ignore[CON001] downstream id\n"})
    assert [f.rule for f in found.findings] == []


def test_rules_and_explain_list_the_consumer_ids(tmp_path):
    runner = CliRunner()
    root = write_tree(tmp_path / "fi", {"flashinfer/__init__.py": ""})
    refused = runner.invoke(main, ["run", "--root", str(root), "--select", "CON001"])
    assert refused.exit_code == 2 and "policy-check consumer" in refused.output
    listed = runner.invoke(main, ["rules"])
    assert "CON001" in listed.output and "experimental-gate-enabled" in listed.output
    explained = runner.invoke(main, ["explain", "CON002"])
    assert explained.exit_code == 0 and "backend=" in explained.output


def test_hostile_input_is_bounded(trees, monkeypatch):
    fi, app = trees
    from policy_checks.consumer import check as check_module

    monkeypatch.setattr(check_module, "MAX_FILE_BYTES", 1000)
    write_tree(app, {
        "app/big.py": "import flashinfer\n" + "flashinfer.toy_gated_norm(1)\n" * 100,
        "app/deep.py": "import flashinfer\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
        "app/broken.py": "import flashinfer\ndef (:\n",
    })
    result = consumer_check(app, [app / "app"], surface_module.from_tree(fi))
    assert not {f.path for f in result.findings} & {"app/big.py", "app/deep.py", "app/broken.py"}
    assert any("app/big.py" in w for w in result.warnings) and any("app/broken.py" in w for w in result.warnings)
    # a blank run after the variable's name is read once (the pattern has one way to match it)
    assert lines_setting_gate(GATE + " " * 100_000 + "x", GATE) == []
    assert lines_setting_gate(GATE + ":  '1'", GATE) == [(1, 1, GATE + ":  '1'")]


def test_precommit_hook_entry():
    import yaml
    from pathlib import Path

    hooks = yaml.safe_load((Path(__file__).resolve().parents[3] / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "policy-check-consumer")
    assert hook["entry"] == "python -m policy_checks consumer --staged" and hook["pass_filenames"] is False


def test_an_installed_flashinfer_is_found_without_importing_it(tmp_path, monkeypatch):
    import sys

    site = write_tree(tmp_path / "site", {
        "fakefi/__init__.py": "raise RuntimeError('imported: the check must only read files')\n",
        "fakefi/_build_meta.py": '__version__ = "1.2.3"\n',
    })
    monkeypatch.syspath_prepend(str(site))
    root = surface_module.installed_root("fakefi")
    assert root == site and "fakefi" not in sys.modules
    assert surface_module.installed_root("no_such_package_here") is None


def test_findings_are_remembered_by_content_and_surface(trees):
    fi, app = trees
    surface = surface_module.from_tree(fi)
    first = consumer_check(app, [app], surface)
    again = consumer_check(app, [app], surface)
    assert first.parsed == 1 and again.parsed == 0  # app/ops.py: the only file importing flashinfer
    assert again.findings == first.findings
    ops = app / "app/ops.py"
    ops.write_text(ops.read_text() + "grn(3)\n")
    changed = consumer_check(app, [app], surface)
    assert changed.parsed == 1 and len(changed.findings) == len(first.findings) + 1
    older = surface_module.Surface("0.6.0", frozenset(), {}, GATE)  # another surface: judged afresh
    assert consumer_check(app, [app], older).parsed == 1
    assert consumer_check(app, [app], surface, use_cache=False).parsed == 1


# FlashInfer 0.7.x's shape of a wrapper class that is experimental as a whole: ``is_experimental
# = True`` beside marked methods, and an ``__init__`` that builds experimental machinery. A caller
# constructs it before calling any method, so the construction is the use.
WHOLE_CLASSES = {
    "flashinfer/__init__.py": "from .kda import PrefillWrapper, Flagged\n",
    "flashinfer/kda.py": (
        "from .api_logging import flashinfer_experimental_api\n"
        "class PrefillWrapper:\n    is_experimental = True\n"
        "    def __init__(self, device):\n        from .experimental.kda_prefill.planner import Planner\n"
        "        self.impl = Planner(device)\n"
        "    @flashinfer_experimental_api(feature='kda')\n    def plan(self):\n        pass\n"
        "class Flagged:\n    is_experimental = True\n    def run(self):\n        pass\n"
    ),
    "flashinfer/experimental/kda_prefill/__init__.py": "",
    "flashinfer/experimental/kda_prefill/planner.py": "class Planner:\n    pass\n",
}


def test_constructing_a_class_experimental_as_a_whole_is_con001(tmp_path):
    """The class is in the surface under each path, not only its marked methods, so
    constructing it is reported, the flag alone (no marked method) included."""
    fi = write_tree(tmp_path / "fi", {**FLASHINFER, **WHOLE_CLASSES})
    surface = surface_module.from_tree(fi)
    assert {"flashinfer.kda.PrefillWrapper", "flashinfer.PrefillWrapper", "flashinfer.kda.PrefillWrapper.plan",
            "flashinfer.kda.Flagged", "flashinfer.Flagged"} <= surface.apis
    app = write_tree(tmp_path / "serving", {"app/kda.py": (
        "import flashinfer\nfrom flashinfer.kda import PrefillWrapper\n"
        "w = PrefillWrapper('cuda')\n"  # 3: constructing the class
        "f = flashinfer.Flagged()\n"  # 4
        "n = flashinfer.rmsnorm(1)\n"
    )})
    result = consumer_check(app, [app], surface)
    assert {(f.line, f.rule) for f in result.findings} == {(3, "CON001"), (4, "CON001")}


# FlashInfer 0.7.x's shape of a backend only experimental code declares: the stable API hands
# the backend to a helper, which imports the experimental implementation; no backend branch of
# the API imports it and no checker is marked, and the implementation announces the backend
# with ``warn_experimental_backend_once("api", "backend")``.
ANNOUNCED_ONLY = {
    "flashinfer/__init__.py": "from .grouped import grouped_mm\n",
    "flashinfer/grouped.py": (
        "from .api_logging import flashinfer_api\n"
        "def _fused(a, backend):\n    from .experimental.cake_grouped.run import grouped_cake\n"
        "    return grouped_cake(a)\n"
        "@flashinfer_api\ndef grouped_mm(a, backend='cudnn'):\n"
        "    return a if backend == 'cudnn' else _fused(a, backend)\n"
    ),
    "flashinfer/experimental/cake_grouped/__init__.py": "",
    "flashinfer/experimental/cake_grouped/run.py": (
        "from ...api_logging import warn_experimental_backend_once\n"
        "def grouped_cake(a):\n    warn_experimental_backend_once('grouped_mm', 'cake')\n    return a\n"
    ),
}


def test_a_backend_announced_only_by_experimental_code_is_con002(tmp_path):
    """The announcement names the API bare; the surface gives the backend to each path
    of that API, so selecting it is reported and the stable backend is not."""
    fi = write_tree(tmp_path / "fi", {**FLASHINFER, **ANNOUNCED_ONLY})
    surface = surface_module.from_tree(fi)
    assert surface.backends_of("flashinfer.grouped.grouped_mm") == {"cake"}
    assert surface.backends_of("flashinfer.grouped_mm") == {"cake"}
    app = write_tree(tmp_path / "serving", {"app/grouped.py": (
        "import flashinfer\nfrom flashinfer.grouped import grouped_mm\n"
        "out = flashinfer.grouped_mm(1, backend='cake')\n"  # 3
        "out = grouped_mm(1, backend='cake')\n"  # 4
        "ok = flashinfer.grouped_mm(1, backend='cudnn')\n"
    )})
    result = consumer_check(app, [app], surface)
    assert {(f.line, f.rule) for f in result.findings} == {(3, "CON002"), (4, "CON002")}
