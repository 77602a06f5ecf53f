"""Which modules are experimental (flashinfer/track.py): one definition, used everywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from flashinfer import track

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "module, experimental, feature",
    [
        ("flashinfer.experimental", True, None),
        ("flashinfer.experimental.toy_feature", True, "toy_feature"),
        ("flashinfer.experimental.toy_feature.support", True, "toy_feature"),
        ("flashinfer.experimental_foo", False, None),
        ("flashinfer.experimentalx.y", False, None),
        ("flashinfer.gemm", False, None),
        ("tests.experimental.toy_feature", False, None),
        ("", False, None),
    ],
)
def test_the_experimental_package_and_below_only(module, experimental, feature):
    assert track.is_experimental_module(module) is experimental
    assert track.experimental_feature(module) == feature


def test_no_other_runtime_module_spells_the_package_test():
    """The package name as a value appears in track.py only; everything else imports it."""
    spelled = []
    for path in sorted((ROOT / "flashinfer").rglob("*.py")):
        if path.name == "track.py" and path.parent.name == "flashinfer":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in (track.EXPERIMENTAL_PACKAGE, track.EXPERIMENTAL_PACKAGE + "."):
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert spelled == []


def test_dispatch_jit_and_tuning_agree_on_the_boundary():
    from flashinfer.dispatch.core import BackendDispatch
    from flashinfer.jit import JitSpec

    def checker(x, backend="auto"):
        return True

    checker.__module__ = "flashinfer.experimental_foo"
    BackendDispatch(lambda x, backend="auto": x, {"b": checker}, None, None)  # accepted: not experimental
    assert not JitSpec("s", "", ["k"], _creator="flashinfer.experimental_foo").experimental
    assert JitSpec("s", "", ["k"], _creator="flashinfer.experimental.f.kernel").experimental
