"""Settings: the one answer to "is this module or path experimental?"."""

from __future__ import annotations

from policy_checks.model.config import Settings, is_experimental_module, is_experimental_path, under


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


# Path settings stay inside the repository: the lifecycle commands delete and write there.

import os  # noqa: E402

import pytest  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from policy_checks.cli import main  # noqa: E402
from policy_checks.model.config import ConfigError, from_table, load  # noqa: E402


@pytest.mark.parametrize("table", [
    {"experimental-tests": "../victim"},
    {"stable-tests": "/etc"},
    {"examples": "examples/../../x"},
    {"experimental-tests": "~/x"},
    {"docs": ["docs/api/*.rst", "../other/*.rst"]},
    {"docs": "/abs/*.rst"},
])
def test_a_path_setting_outside_the_repository_is_a_configuration_error(table):
    with pytest.raises(ConfigError, match="inside the repository"):
        from_table(table)


def test_a_path_setting_through_a_link_that_leaves_the_repository_is_a_configuration_error(tmp_path):
    outside, root = tmp_path / "victim", tmp_path / "repo"
    (outside / "feat").mkdir(parents=True)
    (outside / "feat" / "keep.py").write_text("precious\n")
    (root / "flashinfer" / "experimental" / "feat").mkdir(parents=True)
    (root / "flashinfer" / "experimental" / "feat" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text('[tool.policy-check]\nexperimental-tests = "linked"\n')
    os.symlink(outside, root / "linked")
    with pytest.raises(ConfigError, match="experimental-tests = 'linked' leads outside the repository"):
        load(root)
    result = CliRunner().invoke(main, ["remove", "feat", "--root", str(root)])
    assert result.exit_code == 2 and "leads outside the repository" in result.output
    assert (outside / "feat" / "keep.py").read_text() == "precious\n"
    assert (root / "flashinfer" / "experimental" / "feat" / "__init__.py").exists()


def test_paths_inside_the_repository_are_kept_as_written():
    settings = from_table({"experimental-tests": "tests/exp/", "docs": ["docs/**/*.rst"], "examples": "./examples"})
    assert settings.experimental_tests == "tests/exp" and settings.docs == ("docs/**/*.rst",)
