"""``policy-check remove`` on a copy of this repository: it refuses while the benchmarks
measure a feature, then both features go, and then the checker is clean, every module
imports, nothing names them, the tests of what the command rewrote pass, and so do the
whole lanes."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from policy_checks.model.facts import docstring_ids

from .conftest import changed_modules, require_experimental

FEATURES = ("splitk_gemm", "gated_rmsnorm")


def _code_mentions(path: Path, words) -> list:
    """Mentions of `words` in names and non-docstring strings (comments and docstrings
    are prose, left for a person)."""
    tree = ast.parse(path.read_bytes())
    docstrings = docstring_ids(list(ast.walk(tree)))
    found = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, ast.alias):
            text = node.name
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            text = node.name
        if text and any(word in text for word in words):
            found.append(f"{path}:{getattr(node, 'lineno', '?')}: {text!r}")
    return found


def _snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def _remove_past_the_benchmarks(repo_copy, feature: str) -> str:
    """The benchmarks of this repository measure both features, so ``remove`` first
    refuses, naming them, and writes nothing; a maintainer who drops those benchmarks
    (here: deletes the files the refusal names and their tests) can then remove the
    feature. The one refusal names every use: of the feature's modules and paths,
    found before the plan of core, and of its backend names, found after it."""
    for round_ in range(3):
        before = _snapshot(repo_copy.root)
        done = repo_copy.policy_check("remove", feature, check=False)
        if done.returncode == 0:
            assert round_ > 0, "remove went through while the benchmarks still measure the feature"
            assert round_ == 1, f"remove {feature} refused {round_} times: a refusal left out a use it could see"
            return done.stdout
        assert done.returncode == 1 and "refused, nothing written" in done.stderr, done.stdout + done.stderr
        assert _snapshot(repo_copy.root) == before
        named = set(re.findall(r"\b((?:benchmarks|tests)/[\w/]+\.py):\d+", done.stderr))
        assert named and all(rel.startswith("benchmarks/") for rel in named), done.stderr
        for rel in named:
            repo_copy.drop_benchmark(rel)
    raise AssertionError(f"remove {feature} still refused after three rounds of dropping the benchmarks it named")


@pytest.mark.timeout(2400)  # the whole lanes run in the copy afterwards
def test_removing_both_features_from_this_repository(repo_copy):
    for feature in FEATURES:
        require_experimental(feature)
    copy = repo_copy.root
    reports = "".join(_remove_past_the_benchmarks(repo_copy, feature) for feature in FEATURES)
    repo_copy.drop_measured_rows()  # with the features gone, the rows that measured them
    for gone in ("flashinfer/experimental/splitk_gemm", "flashinfer/experimental/gated_rmsnorm",
                 "tests/experimental/splitk_gemm", "tests/experimental/gated_rmsnorm",
                 "examples/splitk_gemm_demo.py", "examples/gated_rmsnorm_demo.py"):
        assert not (copy / gone).exists(), gone

    checked = repo_copy.policy_check("run", check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "splitk" not in checked.stdout and "gated_rmsnorm" not in checked.stdout

    assert repo_copy.import_every_module() > 20
    imported = repo_copy.run(
        sys.executable, "-c",
        "import sys; sys.path.insert(0, sys.argv[1]); import flashinfer, flashinfer.gemm, flashinfer.norm; "
        "print(hasattr(flashinfer.norm, 'gated_rmsnorm'), sorted(flashinfer.gemm.mm_bf16.backend_checks))",
        str(copy),
    )
    assert imported.stdout.splitlines() == ["False ['nvrtc', 'torch']"]

    mentions = [m for path in sorted((copy / "flashinfer").rglob("*.py")) for m in _code_mentions(path, ("splitk", "gated_rmsnorm"))]
    assert mentions == []

    # the tests of what the command rewrote pass; the experimental lane is empty (exit 5)
    modules, packages = changed_modules(reports)
    assert {"flashinfer", "flashinfer.gemm", "flashinfer.norm"} <= set(modules), reports
    selected = repo_copy.tests_importing(modules, packages)
    assert "tests/flashinfer/test_gemm.py" in selected and "tests/flashinfer/test_norm.py" in selected
    repo_copy.pytest("-x", *selected)
    empty = repo_copy.pytest("tests/experimental/", check=False)
    assert empty.returncode == 5, empty.stdout[-3000:]

    # and the whole lanes pass, as CI runs them: the repository's tests follow its features
    repo_copy.lanes()
