"""JitSpec: content digest, validation, and experimental status from the creating module."""

import pytest

from flashinfer.jit import JitSpec

SOURCE = 'extern "C" __global__ void k(float* x) { x[0] = 1.f; }'


def spec_created_in(module_name: str, **kwargs) -> JitSpec:
    """Run ``JitSpec(...)`` from code whose module is ``module_name`` (its frame's globals)."""
    namespace = {"__name__": module_name, "JitSpec": JitSpec, "SOURCE": SOURCE, "kwargs": kwargs}
    exec("spec = JitSpec('demo', SOURCE, ['k'], **kwargs)", namespace)
    return namespace["spec"]


def test_spec_created_under_experimental_is_experimental_whatever_it_claims():
    spec = spec_created_in("flashinfer.experimental.demo_feature.kernel", experimental=False)
    assert spec.experimental
    assert spec.created_in == "flashinfer.experimental.demo_feature.kernel"


@pytest.mark.parametrize("module", ["flashinfer.gemm", "flashinfer.foo.experimental", "flashinfer.experimentalish"])
def test_spec_created_elsewhere_is_stable_unless_it_claims(module):
    assert not spec_created_in(module).experimental
    assert spec_created_in(module, experimental=True).experimental


def test_spec_created_here_records_this_module():
    assert JitSpec("demo", SOURCE, ["k"]).created_in == __name__


def test_digest_follows_content_not_identity():
    base = JitSpec("demo", SOURCE, ["k"], headers={"a.cuh": "1"}, options=["-DX=1", "-DY=2"])
    same = JitSpec("demo", SOURCE, ["k"], headers={"a.cuh": "1"}, options=["-DX=1", "-DY=2"])
    assert base.digest == same.digest
    variants = [
        JitSpec("demo", SOURCE + "\n", ["k"], headers={"a.cuh": "1"}, options=["-DX=1", "-DY=2"]),
        JitSpec("demo", SOURCE, ["k"], headers={"a.cuh": "2"}, options=["-DX=1", "-DY=2"]),
        JitSpec("demo", SOURCE, ["k"], headers={"b.cuh": "1"}, options=["-DX=1", "-DY=2"]),
        JitSpec("demo", SOURCE, ["k"], headers={"a.cuh": "1"}, options=["-DY=2", "-DX=1"]),
        JitSpec("other", SOURCE, ["k"], headers={"a.cuh": "1"}, options=["-DX=1", "-DY=2"]),
    ]
    assert len({base.digest, *(v.digest for v in variants)}) == 1 + len(variants)


@pytest.mark.parametrize("name", ["", "has space", "a/b"])
def test_bad_name_is_refused(name):
    with pytest.raises(ValueError, match="file-name-safe"):
        JitSpec(name, SOURCE, ["k"])


def test_spec_without_kernels_is_refused():
    with pytest.raises(ValueError, match="names no kernels"):
        JitSpec("demo", SOURCE, [])
