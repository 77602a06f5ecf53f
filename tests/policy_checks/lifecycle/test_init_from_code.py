"""``features init`` takes what the code says: kind, apis (``@flashinfer_experimental_api``,
in the feature or in a core entry point that imports it), backends (``@experimental_backend``
checkers in ``backend_requirement`` mappings) and auto_routing (the heuristic); it writes a
README skeleton with the four headings EXP009 asks for; on a history of one commit for the
whole tree it takes no admission date and says why; a rerun changes nothing."""

from __future__ import annotations

import shutil
import sys

import pytest

from policy_checks.model.config import load
from policy_checks.engine.runner import run

from .test_drafting import EXP, commit, git, init, snapshot

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed")

TREE = {
    "flashinfer/__init__.py": "from .ops import alpha_api\n",
    "flashinfer/api_logging.py": "def flashinfer_experimental_api(func=None, **options):\n    return func\n",
    "flashinfer/utils.py": (
        "def experimental_backend(checker):\n    return checker\n\n\n"
        "def backend_requirement(checks, heuristic_func=None):\n    return lambda func: func\n"),
    "flashinfer/ops.py": (
        "from .api_logging import flashinfer_experimental_api\n\n\n"
        "@flashinfer_experimental_api\ndef alpha_api(x):\n"
        "    from .experimental.alpha.kernels import run\n    return run(x)\n"),
    "flashinfer/gemm.py": (
        "from .utils import backend_requirement\n"
        "from .experimental.beta.support import check_beta\n"
        "from .experimental.gamma.support import check_gamma\n\n\n"
        "def _check_torch(a, backend='auto'):\n    return True\n\n\n"
        "def _order(backends, a):\n    return ['beta', 'torch']\n\n\n"
        "@backend_requirement({'torch': _check_torch, 'beta': check_beta, 'gamma': check_gamma}, heuristic_func=_order)\n"
        "def mm(a, backend='auto'):\n    return a\n"),
    f"{EXP}/__init__.py": "",
    f"{EXP}/alpha/__init__.py": "",
    f"{EXP}/alpha/kernels.py": "def run(x):\n    return x\n",
    **{f"{EXP}/{name}/{rel}": text for name in ("beta", "gamma") for rel, text in {
        "__init__.py": "",
        "support.py": (f"from ...utils import experimental_backend\n\n\n@experimental_backend\n"
                       f"def check_{name}(a, backend='auto'):\n    return True\n")}.items()},
}


def record(root, feature):
    return tomllib.loads((root / EXP / feature / "FEATURE.toml").read_text())


@pytest.fixture
def imported(tmp_path):
    """The whole tree in one commit, as a release imported into git is."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, TREE, when="2026-11-20T10:00:00+00:00")
    return root


def test_kind_apis_backends_and_auto_routing_come_from_the_code(imported):
    done = init(imported)
    assert done.exit_code == 0, done.output
    alpha, beta, gamma = (record(imported, name) for name in ("alpha", "beta", "gamma"))
    assert (alpha["kind"], alpha["apis"], alpha["backends"], alpha["auto_routing"]) == (
        "api", ["flashinfer.alpha_api"], [], False)
    assert (beta["kind"], beta["apis"], beta["backends"], beta["auto_routing"]) == ("backend", [], ["mm:beta"], True)
    assert (gamma["backends"], gamma["auto_routing"]) == (["mm:gamma"], False)  # the heuristic never names it


def test_one_commit_for_everything_dates_nothing_and_says_so(imported):
    done = init(imported)
    assert "the history holds one commit for the whole tree" in done.output
    assert "admitted" not in record(imported, "beta")
    text = (imported / EXP / "beta/FEATURE.toml").read_text()
    assert "(2026-11-20) imported the whole tree in one commit" in text


def test_a_readme_skeleton_with_the_four_parts_and_a_rerun_changes_nothing(imported):
    assert init(imported).exit_code == 0
    readme = (imported / EXP / "beta/README.md").read_text()
    for heading in ("## What is experimental", "## Supported cases and limits", "## Gates", "## Automatic routing"):
        assert heading in readme
    assert "- experimental backend `beta` of `mm`" in readme
    result = run(imported, load(imported), select=["EXP009"], use_cache=False, progress=False)
    asked = {f.subject.split(": ", 1)[1] for f in result.findings}
    assert not [item for item in asked if item.startswith("README.md")]  # the skeleton answers EXP009's README items
    assert {"kind", "apis", "backends", "auto_routing"}.isdisjoint(asked)
    before = snapshot(imported)
    again = init(imported)
    assert again.exit_code == 0 and "wrote 0 record(s) and 0 README skeleton(s)" in again.output
    assert snapshot(imported) == before
