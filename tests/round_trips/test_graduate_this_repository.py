"""``policy-check graduate gated_rmsnorm --to flashinfer.gated_norm --aot`` on a copy of
this repository: the API is stable, the old path warns, AOT builds the kernel, the
checker is clean, the docs build, and the tests of what moved or was rewritten pass."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap

import pytest

from .conftest import changed_modules, require_experimental

# Run in the copy: the API is no longer experimental, the old path forwards with a
# DeprecationWarning, and the AOT registry lists the kernel.
PROBE = textwrap.dedent("""\
    import sys, warnings
    sys.path.insert(0, sys.argv[1])
    import torch, flashinfer
    from flashinfer import aot
    assert flashinfer.__file__.startswith(sys.argv[1]), flashinfer.__file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = torch.randn(2, 8)
        flashinfer.gated_rmsnorm(x, x, torch.randn(8))
    print(getattr(flashinfer.gated_rmsnorm, "is_experimental", False))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import flashinfer.experimental.gated_rmsnorm.kernel as old
    print(old.run.__module__, [str(w.category.__name__) for w in caught])
    print(" ".join(spec.name for spec in aot.registered_specs()))
    """)


@pytest.mark.timeout(2400)  # the whole lanes run in the copy afterwards
def test_graduating_gated_rmsnorm_in_a_copy_of_this_repository(repo_copy, tmp_path):
    require_experimental("gated_rmsnorm")
    copy = repo_copy.root
    graduated = repo_copy.policy_check("graduate", "gated_rmsnorm", "--to", "flashinfer.gated_norm", "--aot")
    assert "moved flashinfer/experimental/gated_rmsnorm/ to flashinfer/gated_norm/ (5 files)" in graduated.stdout
    assert "[x] 3. Replace" in graduated.stdout and "[x] 5. If the kernels ship prebuilt" in graduated.stdout
    # the only strings left on the old path are this test's own (its probe of the shim)
    left = [line for line in graduated.stdout.splitlines() if "a string still names the experimental path" in line]
    assert left and all("tests/round_trips/test_graduate_this_repository.py:" in line for line in left), left

    # the checker is clean, and the board no longer lists the feature
    checked = repo_copy.policy_check("run", "--no-cache", check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "gated_rmsnorm" not in repo_copy.policy_check("features", "--format", "json").stdout

    assert repo_copy.import_every_module() > 20
    experimental, moved, specs = repo_copy.run(sys.executable, "-c", PROBE, str(copy)).stdout.splitlines()
    assert experimental == "False"
    assert moved == "flashinfer.gated_norm.kernel ['DeprecationWarning', 'DeprecationWarning']"
    assert "gated_rmsnorm_bf16_" in specs
    if importlib.util.find_spec("cuda") is not None:  # NVRTC compiles without a GPU
        repo_copy.run(sys.executable, "-m", "flashinfer.aot", "--arch", "sm_90", "--out", str(tmp_path / "aot"))
        manifest = json.loads((tmp_path / "aot" / "manifest.json").read_text())
        assert any(entry["spec"].startswith("gated_rmsnorm_bf16_") and entry["kind"] == "cubin" for entry in manifest)

    # the docs build with -W and document the API
    repo_copy.run(sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs", str(tmp_path / "html"))
    assert 'id="flashinfer.gated_rmsnorm"' in (tmp_path / "html" / "api" / "norm.html").read_text()

    # the moved tests, and the tests of every module the command moved or rewrote, pass
    assert not (copy / "tests/experimental/gated_rmsnorm").exists()
    modules, packages = changed_modules(graduated.stdout)
    assert {"flashinfer.norm", "flashinfer.aot"} <= set(modules), graduated.stdout
    assert {"flashinfer.gated_norm", "flashinfer.experimental.gated_rmsnorm"} <= set(packages), graduated.stdout
    selected = repo_copy.tests_importing(modules, packages)
    assert "tests/flashinfer/gated_norm/test_gated_rmsnorm.py" in selected, selected
    repo_copy.pytest("-x", *selected)

    # and the whole lanes pass, as CI runs them: the repository's tests follow the feature
    repo_copy.lanes()
