"""Settings: the one answer to "is this module or path experimental?"."""

from __future__ import annotations

from policy_checks.config import Settings, is_experimental_module, is_experimental_path, under


def test_experimental_modules():
    s = Settings()
    assert s.is_experimental_module("flashinfer.experimental")
    assert s.is_experimental_module("flashinfer.experimental.splitk_gemm.support")
    for module in ("flashinfer.experimentally", "flashinfer.gdn_kernels.experimental", "cutlass.experimental", "", None):
        assert not s.is_experimental_module(module), module
    assert is_experimental_module("flashinfer.experimental.x")
    renamed = Settings(experimental_package="flashinfer.incubator")
    assert is_experimental_module("flashinfer.incubator.x", renamed) and not renamed.is_experimental_module("flashinfer.experimental")


def test_experimental_paths():
    for path in ("flashinfer/experimental", "flashinfer/experimental/splitk_gemm/FEATURE.toml",
                 "tests/experimental/splitk_gemm/test_splitk.py"):
        assert is_experimental_path(path), path
    for path in ("flashinfer/experimental_utils.py", "flashinfer/gemm.py", "tests/test_gemm.py",
                 "tests/experimentalish/x.py", "docs/experimental.rst"):
        assert not is_experimental_path(path), path
    custom = Settings(experimental_package="pkg.exp", experimental_tests="t/exp")
    assert custom.is_experimental_path("pkg/exp/a.py") and custom.is_experimental_path("t/exp/test_a.py")
    assert not custom.is_experimental_path("flashinfer/experimental/a.py")


def test_under():
    assert under("a/b", "a") and under("a", "a") and under("a/b", "a/") and not under("ab", "a")
