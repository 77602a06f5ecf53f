"""AOT builds: every stable spec compiles for sm_80 and sm_90 (no GPU needed), and
experimental specs are refused."""

import json

import pytest

from flashinfer import aot
from flashinfer.jit import JitSpec, cache
from flashinfer.jit.elf import function_symbols


@pytest.fixture(autouse=True)
def fresh_memo():
    cache.clear_memo()
    yield
    cache.clear_memo()


def test_registry_holds_the_stable_kernels():
    names = {spec.name for spec in aot.registered_specs()}
    assert "rmsnorm_bf16" in names
    assert any(name.startswith("gemm_bf16_") for name in names)
    assert not any(spec.experimental for spec in aot.registered_specs())


@pytest.mark.parametrize("arch", [80, 90])
def test_every_stable_spec_compiles_with_its_entry_points(tmp_path, arch):
    manifest = aot.build_all([arch], tmp_path)
    assert {e["spec"] for e in manifest} == {
        s.name for s in aot.registered_specs() if arch in s.archs
    }
    for entry in manifest:
        assert entry["kind"] == "cubin" and entry["arch"] == f"sm_{arch}"
        kind, image = cache.decode_entry((tmp_path / entry["file"]).read_bytes())
        assert set(entry["kernels"]) <= set(function_symbols(image))


def test_cli_writes_a_manifest_and_a_warm_cache(tmp_path, monkeypatch, capsys):
    """The CLI builds what the registry holds, here only its cheapest spec: that every stable
    spec compiles is the test above's (NVRTC takes seconds for the GEMMs)."""
    [norm] = [spec for spec in aot.registered_specs() if spec.name == "rmsnorm_bf16"]
    monkeypatch.setattr(aot, "_registry", {norm.name: norm})
    out = tmp_path / "aot"
    assert aot.main(["--arch", "sm_90", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert [entry["spec"] for entry in manifest] == [spec.name for spec in aot.registered_specs()]
    assert "module(s) written" in capsys.readouterr().out
    monkeypatch.setenv(cache.CACHE_DIR_ENV_VAR, str(out))
    cache.clear_memo()
    spec = aot.registered_specs()[0]
    assert cache.build(spec, 90).origin == "disk"


@pytest.mark.parametrize("text,arch", [("sm_90", 90), ("90", 90), ("8.0", 80), ("SM_100", 100)])
def test_parse_arch(text, arch):
    assert aot.parse_arch(text) == arch


def test_cli_rejects_a_bad_arch(tmp_path, capsys):
    with pytest.raises(SystemExit):
        aot.main(["--arch", "hopper", "--out", str(tmp_path)])
    assert "not an architecture" in capsys.readouterr().err


def test_claimed_experimental_spec_is_refused():
    spec = JitSpec("claims_experimental", 'extern "C" __global__ void k() {}', ["k"], experimental=True)
    with pytest.raises(aot.AotRefusedError, match="claims_experimental") as info:
        aot.register(spec)
    assert "JIT-only" in str(info.value)
    assert spec.name not in {s.name for s in aot.registered_specs()}


def test_spec_created_under_experimental_is_refused_whatever_it_claims():
    namespace = {"__name__": "flashinfer.experimental.some_feature.kernel", "JitSpec": JitSpec}
    exec("spec = JitSpec('sneaky', 'extern \"C\" __global__ void k() {}', ['k'], experimental=False)", namespace)
    with pytest.raises(aot.AotRefusedError, match="'sneaky' \\(created in flashinfer.experimental.some_feature.kernel\\)"):
        aot.register(namespace["spec"])
