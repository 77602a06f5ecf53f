"""``graduate --aot`` on both shapes of AOT module: this repository's
``_register_builtin()`` (test_graduate.py) and FlashInfer 0.7.x's ``gen_all_modules()``,
which fills a list and returns it; and the refusal of any other shape, decided before
the tree is read, naming where the line goes."""

from __future__ import annotations

import time

from .test_graduate_invariants import graduate_checked

ENTRY = {
    "fxpkg/ops.py": """\
        from .api_logging import flashinfer_experimental_api


        @flashinfer_experimental_api(feature="feat")
        def fancy(x):
            from .experimental.feat.kernels import run

            return run(x)
        """,
    "fxpkg/experimental/feat/kernels.py": "def run(x):\n    return x\n",
    "fxpkg/experimental/feat/spec.py": """\
        from typing import List

        JitSpec = str


        def gen_feat_module(arch: str = "sm90") -> JitSpec:
            return f"feat-{arch}"


        def gen_feat_variants() -> List[JitSpec]:
            return ["feat-a", "feat-b"]


        def gen_feat_for(arch) -> JitSpec:
            return "needs an argument"
        """,
}

LISTING = '''\
"""AOT builds."""

from typing import List

from .jit_stub import spdlog


def gen_all_modules(add_misc: bool) -> List[str]:
    jit_specs: List[str] = []
    jit_specs.append(spdlog())
    if add_misc:
        jit_specs += ["misc"]
    jit_specs.append("cudnn")

    # dedup
    names = set()
    ret: List[str] = []
    for jit_spec in jit_specs:
        if jit_spec not in names:
            names.add(jit_spec)
            ret.append(jit_spec)
    return ret


def main():
    return gen_all_modules(True)
'''


def with_aot(tree, aot: str) -> None:
    tree.write({**ENTRY, "fxpkg/aot.py": aot, "fxpkg/jit_stub.py": "def spdlog():\n    return 'spdlog'\n"})
    tree.write({"pyproject.toml": tree.read("pyproject.toml").decode() + 'aot-modules = ["fxpkg.aot"]\n'})


def test_flashinfers_gen_all_modules_gets_the_factories_before_the_list_is_read(tree):
    with_aot(tree, LISTING)
    outcome = graduate_checked(tree, "feat", "--to", "fxpkg.feat_ops", "--aot")
    assert outcome.exit_code == 0, outcome.output
    aot = tree.read("fxpkg/aot.py").decode()
    assert "from .jit_stub import spdlog\nfrom .feat_ops.spec import gen_feat_module\n" in aot
    assert ('    jit_specs.append("cudnn")\n    jit_specs.append(gen_feat_module())\n'
            "    jit_specs.extend(gen_feat_variants())\n\n    # dedup\n") in aot
    assert tree.imported("fxpkg.aot").gen_all_modules(True) == [
        "spdlog", "misc", "cudnn", "feat-sm90", "feat-a", "feat-b"]
    assert "gen_all_modules() adds fxpkg.feat_ops.spec.gen_feat_module()" in outcome.output
    call = aot.splitlines().index("    jit_specs.append(gen_feat_module())") + 1
    assert f"fxpkg/aot.py:{call}: gen_feat_module() is added for every build; put it under the architecture" in (
        outcome.output)
    # the factory that needs an argument: the exact line, for a person
    line = aot.splitlines().index("    jit_specs.extend(gen_feat_variants())") + 2
    assert f"add by hand: fxpkg/aot.py:{line}: jit_specs.append(gen_feat_for(...))" in outcome.output


def test_an_aot_module_of_neither_shape_refuses_first_naming_the_place(tree):
    with_aot(tree, "SPECS = []\n")
    tree.write({"fxpkg/experimental/feat/broken.py": "def (:\n"})  # what a later step would refuse
    started = time.perf_counter()
    outcome = graduate_checked(tree, "feat", "--to", "fxpkg.feat_ops", "--aot")
    took = time.perf_counter() - started
    assert outcome.exit_code == 1
    assert "--aot: fxpkg/aot.py has neither _register_builtin() nor gen_all_modules()" in outcome.output
    assert "fxpkg/aot.py:2: register(<factory>())" in outcome.output
    print(f"refused in {took:.2f} s")  # the figure; speed is measured by benchmarks, not asserted


def test_a_gen_all_modules_that_fills_no_returned_list_refuses_naming_its_return(tree):
    with_aot(tree, "def gen_all_modules():\n    x = 1\n    return build(x)\n")
    outcome = graduate_checked(tree, "feat", "--to", "fxpkg.feat_ops", "--aot")
    assert outcome.exit_code == 1
    assert "fxpkg/aot.py:1: gen_all_modules() fills no list it returns" in outcome.output
    assert "before fxpkg/aot.py:3" in outcome.output
