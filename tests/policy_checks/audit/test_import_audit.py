"""`policy-check audit`'s import and AOT audit on one planted tree (no torch): each
route by which core can load experimental code, beside a harmless twin that stays
clean; modules failing for their own reasons, missing third-party packages, the
network and a hang. The tree is audited once for the module."""

from __future__ import annotations

import os
import py_compile
import textwrap
from pathlib import Path

import pytest

from policy_checks.audit.tree import audit_tree
from policy_checks.model.config import Settings
from policy_checks.engine.context import Context

from ..conftest import write_tree

KERNEL = "flashinfer.experimental.feat.kernel"

POOL_READ = """\
import concurrent.futures
import pathlib

path = pathlib.Path(__file__).parent / "{folder}" / "{name}"
with concurrent.futures.ThreadPoolExecutor(1) as pool:
    text = pool.submit(path.read_bytes).result()
exec(compile(text, "<made up>", "exec"), {{}})
"""
CTYPES = """\
import ctypes
import pathlib
try:
    ctypes.CDLL(str(pathlib.Path(__file__).parent / "{folder}" / "{name}"))
except OSError:
    pass
"""


def _later(module: str, start: str, run: str, pause: float = 0.0) -> str:
    """A module whose function `later` imports `module`, run by `run` after the module's
    own import is done (an atexit handler, a thread)."""
    sleep = f"    time.sleep({pause})\n" if pause else ""
    return f"{start}\n\ndef later():\n{sleep}    import {module}\n\n\n{run}\n"


FILES = {
    "flashinfer/__init__.py": "",
    "flashinfer/api.py": "def experimental_backend(f):\n    return f\n",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/experimental/feat/__init__.py": "",
    "flashinfer/experimental/feat/support.py": (
        "from flashinfer.api import experimental_backend\n\n@experimental_backend\ndef check(x):\n    return True\n"
    ),
    "flashinfer/experimental/feat/kernel.py": "X = 1\n",
    # the support-module exception: allowed
    "flashinfer/gemm.py": "from .experimental.feat.support import check\n",
    # 1. TYPE_CHECKING rebound in a core helper
    "flashinfer/tc_bad.py": "TYPE_CHECKING = True\nif TYPE_CHECKING:\n    from flashinfer.experimental.feat import kernel\n",
    "flashinfer/tc_good.py": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from flashinfer.experimental.feat import kernel\n"
    ),
    # 2. a thin entry point called at module level
    "flashinfer/entry.py": "def run():\n    from flashinfer.experimental.feat import kernel\n    return kernel\n",
    "flashinfer/entry_bad.py": "from .entry import run\n\nrun()\n",
    "flashinfer/entry_good.py": "from .entry import run\n\ndef later():\n    return run()\n",
    "flashinfer/plain.py": "VALUE = 2\n",
    # 3. loaders other than import statements
    "flashinfer/resolve_bad.py": f"import pkgutil\npkgutil.resolve_name({KERNEL!r})\n",
    "flashinfer/resolve_good.py": "import pkgutil\npkgutil.resolve_name('flashinfer.plain:VALUE')\n",
    "flashinfer/runpy_bad.py": f"import runpy\nrunpy.run_module({KERNEL!r})\n",
    "flashinfer/runpy_good.py": "import runpy\nrunpy.run_module('flashinfer.plain')\n",
    "flashinfer/exec_bad.py": f"exec('import {KERNEL}')\n",
    "flashinfer/exec_good.py": "exec('import flashinfer.plain')\n",
    "flashinfer/spec_bad.py": (
        "import importlib.util\n"
        f"spec = importlib.util.find_spec({KERNEL!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
    ),
    "flashinfer/spec_good.py": (
        "import importlib.util\n"
        "spec = importlib.util.find_spec('flashinfer.plain')\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
    ),
    # 4. import_module of a name built from pieces, or passed through a helper
    "flashinfer/pieces_bad.py": "import importlib\nimportlib.import_module('flashinfer.' + 'experimental.feat.kernel')\n",
    "flashinfer/pieces_good.py": "import importlib\nimportlib.import_module('flashinfer.' + 'plain')\n",
    "flashinfer/loader_helper.py": "import importlib\n\ndef load(name):\n    return importlib.import_module(name)\n",
    "flashinfer/param_bad.py": f"from .loader_helper import load\n\nload({KERNEL!r})\n",
    "flashinfer/param_good.py": "from .loader_helper import load\n\nload('flashinfer.plain')\n",
    # 5. an import in an excluded folder that core imports
    "flashinfer/data/__init__.py": "",
    "flashinfer/data/helper.py": f"import {KERNEL}\n",
    "flashinfer/data/harmless.py": "X = 1\n",
    "flashinfer/data_bad.py": "from .data import helper\n",
    "flashinfer/data_good.py": "from .data import harmless\n",
    # 6. links and sourceless bytecode (the links and .pyc files are made below)
    "flashinfer/stablepkg/__init__.py": "",
    "flashinfer/stablepkg/thing.py": "X = 1\n",
    "flashinfer/link_bad.py": "from .linked import kernel\n",
    "flashinfer/link_good.py": "from .linked_ok import thing\n",
    "flashinfer/pyc_bad_user.py": "from . import pyc_bad\n",
    "flashinfer/pyc_good_user.py": "from . import pyc_good\n",
    # 7. the AOT listing reaching experimental code through a core entry point, and
    # returning one experimental spec beside a stable one
    "flashinfer/aot.py": textwrap.dedent("""\
        from pathlib import Path


        class Spec:
            def __init__(self, name, sources):
                self.name, self.sources = name, sources


        def registered_specs():
            from .entry import run

            run()
            here = Path(__file__).parent
            return [Spec("stable_gemm", [here / "csrc" / "gemm.cu"]),
                    Spec("sneaky", [here / "experimental" / "feat" / "kernel.cu"]),
                    Spec("copied", [here / "csrc" / "copied.cu"])]
        """),
    # the sources a build would compile: a copy of an experimental kernel's text, beside a stable one
    "flashinfer/experimental/feat/feat_kernel.cu": "__global__ void feat_kernel() { /* experimental */ }\n",
    "flashinfer/csrc/copied.cu": "__global__ void feat_kernel() { /* experimental */ }\n",
    "flashinfer/csrc/gemm.cu": "__global__ void gemm_kernel() { /* stable */ }\n",
    # a second line importing what the first already loaded: a finding of its own
    "flashinfer/twice_bad.py": f"import {KERNEL}\nfrom flashinfer.experimental.feat import kernel\n",
    # a package whose __init__ fails: its modules are still imported (under a bare package)
    "flashinfer/brokenpkg/__init__.py": "raise ImportError('needs CUDA')\n",
    "flashinfer/brokenpkg/inner.py": f"import {KERNEL}\n",
    # failing for its own reasons; a missing module of the tree itself is not stood in for
    "flashinfer/broken.py": "raise NameError('name CUDA_HOME is not defined')\n",
    "flashinfer/missing_own.py": "import flashinfer.does_not_exist\n",
    # a missing third-party package: stand-ins, used as module, base class, decorator
    "flashinfer/standin.py": textwrap.dedent("""\
        import nonexistent_thirdparty_xyz as ntx
        from nonexistent_thirdparty_xyz.language import core as tl
        from nonexistent_thirdparty_xyz import Base


        class Kernel(Base):
            pass


        @ntx.jit
        def fused(x):
            return x


        @ntx.autotune(configs=[ntx.Config(block=64)])
        def tuned(x):
            return x


        ARRAY = ntx.types[3]
        COPIED = ntx.copy(ntx.index, count=ntx.count)  # ordinary names, also those of builtin types
        NEWER = ntx.__version__ >= "0" and not (ntx.CUDA_VERSION.major > 13)
        assert fused(2) == 2 and tuned(3) == 3
        """),
    # the network, refused and reported; a socket that connects nowhere is fine
    "flashinfer/net_bad.py": (
        "import socket\ns = socket.socket()\ntry:\n    s.connect(('192.0.2.1', 80))\nexcept OSError:\n    pass\n"
    ),
    "flashinfer/net_good.py": "import socket\ns = socket.socket()\ns.close()\n",
    # a new process: allowed (the workers have no network at all where unshare can), named
    "flashinfer/spawns.py": "import subprocess\nsubprocess.run(['true'], check=True)\n",
    # a hang: the time limit
    "flashinfer/hang.py": "import time\nwhile True:\n    time.sleep(0.5)\n",
    # 8. loads no import event shows: an experimental file read on a pool thread and run under a
    # made-up name; experimental text compiled under a made-up name; a library loaded from the
    # package; an atexit handler; a thread that outlives the import, a daemon too
    "flashinfer/experimental/feat/secret.py": "SECRET = 'experimental text'\n",
    "flashinfer/experimental/feat/libfeat.so": b"not really a library\n",
    "flashinfer/stablepkg/libstable.so": b"not really a library\n",
    "flashinfer/pool_read_bad.py": POOL_READ.format(folder="experimental/feat", name="secret.py"),
    "flashinfer/pool_read_good.py": POOL_READ.format(folder="stablepkg", name="thing.py"),
    "flashinfer/copy_exec_bad.py": "exec(compile(\"SECRET = 'experimental text'\\n\", '<made up>', 'exec'), {})\n",
    # a stable module whose file holds the same text, imported under its own name: judged by name
    "flashinfer/vendored_copy.py": "SECRET = 'experimental text'\n",
    "flashinfer/copy_exec_good.py": "exec(compile(\"SECRET = 'stable text'\\n\", '<made up>', 'exec'), {})\n",
    "flashinfer/ctypes_bad.py": CTYPES.format(folder="experimental/feat", name="libfeat.so"),
    "flashinfer/ctypes_good.py": CTYPES.format(folder="stablepkg", name="libstable.so"),
    "flashinfer/atexit_bad.py": _later(module=KERNEL, start="import atexit\n", run="atexit.register(later)"),
    "flashinfer/atexit_good.py": _later(module="flashinfer.plain", start="import atexit\n",
                                              run="atexit.register(later)"),
    "flashinfer/thread_bad.py": _later(module=KERNEL, start="import threading\nimport time\n",
                                             run="threading.Thread(target=later).start()", pause=0.5),
    "flashinfer/daemon_bad.py": _later(module=KERNEL, start="import threading\nimport time\n",
                                             run="threading.Thread(target=later, daemon=True).start()", pause=0.1),
    "flashinfer/thread_good.py": _later(module="flashinfer.plain", start="import threading\nimport time\n",
                                              run="threading.Thread(target=later).start()", pause=0.5),
}


def _plant(root: Path) -> Path:
    write_tree(root, FILES)
    package = root / "flashinfer"
    os.symlink("experimental/feat", package / "linked")
    os.symlink("stablepkg", package / "linked_ok")
    for name, text in (("pyc_bad", f"import {KERNEL}\n"), ("pyc_good", "X = 1\n")):
        source = root / f"{name}_source.py"
        source.write_text(text, encoding="utf-8")
        py_compile.compile(str(source), cfile=str(package / f"{name}.pyc"), dfile="<hidden>", doraise=True)
        source.unlink()
    return root


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    root = _plant(tmp_path_factory.mktemp("audit") / "tree")
    return audit_tree(Context(root.resolve(), Settings()), jobs=2, timeout=4)


def _at(audit, rule: str, path: str) -> list:
    return [f for f in audit.findings if f.rule == rule and f.path == path]


def _clean(audit, *paths: str) -> None:
    for path in paths:
        assert not [f for f in audit.findings if f.path == path], path


def test_the_support_module_exception_is_allowed(audit):
    _clean(audit, "flashinfer/gemm.py", "flashinfer/experimental/feat/support.py")
    assert "flashinfer.experimental.feat.support" in audit.support


def test_type_checking_rebound(audit):
    (finding,) = _at(audit, "AUD001", "flashinfer/tc_bad.py")
    assert finding.line == 3 and KERNEL in finding.message
    _clean(audit, "flashinfer/tc_good.py")


def test_thin_entry_point_called_at_module_level(audit):
    found = _at(audit, "AUD001", "flashinfer/entry.py")
    assert found and all(f.line == 2 for f in found)
    assert any("called from flashinfer/entry_bad.py:3" in f.message for f in found)
    assert not any("entry_good" in f.message for f in audit.findings)


@pytest.mark.parametrize("name, loader, line", [
    ("resolve", "pkgutil.resolve_name", 2),
    ("runpy", "runpy.run_module", 2),
    ("exec", "exec/eval", 1),
    ("spec", "exec_module", 4),
    ("pieces", "importlib.import_module", 2),
])
def test_loaders_other_than_import_statements(audit, name, loader, line):
    found = _at(audit, "AUD001", f"flashinfer/{name}_bad.py")
    assert found, [str(f) for f in audit.findings]
    assert all(f.line == line for f in found)
    assert any(loader in f.message and KERNEL in f.message for f in found)
    _clean(audit, f"flashinfer/{name}_good.py")


def test_import_module_through_a_helper_parameter(audit):
    (finding,) = [f for f in _at(audit, "AUD001", "flashinfer/loader_helper.py") if f.subject == KERNEL]
    assert finding.line == 4 and "called from flashinfer/param_bad.py:3" in finding.message
    _clean(audit, "flashinfer/param_good.py", "flashinfer/param_bad.py")


def test_each_core_line_is_charged_even_when_the_module_is_already_loaded(audit):
    assert [f.line for f in _at(audit, "AUD001", "flashinfer/twice_bad.py")] == [1, 2]


def test_excluded_folder_imported_by_core(audit):
    (finding,) = _at(audit, "AUD001", "flashinfer/data/helper.py")
    # at the excluded module's own top-level line; not "called from" its importer: which core
    # module imports it first in a worker depends on the order of the requests
    assert finding.line == 1 and KERNEL in finding.message and "called from" not in finding.message
    _clean(audit, "flashinfer/data/harmless.py", "flashinfer/data_good.py")
    assert any(path == "flashinfer/data" for path, _ in audit.skipped)


def test_package_directory_linked_to_the_experimental_folder(audit):
    found = _at(audit, "AUD001", "flashinfer/link_bad.py")
    assert found and any(KERNEL in f.message and "read through flashinfer/linked/" in f.message for f in found)
    _clean(audit, "flashinfer/link_good.py")


def test_sourceless_pyc_holding_the_import(audit):
    found = _at(audit, "AUD001", "flashinfer/pyc_bad_user.py")
    assert found and any(KERNEL in f.message and "<hidden>" in f.message for f in found)
    _clean(audit, "flashinfer/pyc_good_user.py")


def test_aot_listing(audit):
    loads = [f for f in audit.findings if f.rule == "AUD002" and f.subject == KERNEL]
    assert loads and loads[0].path == "flashinfer/entry.py" and "called from flashinfer/aot.py" in loads[0].message
    sneaky, copied = sorted((f for f in audit.findings if f.rule == "AUD002" and f.subject.startswith("spec ")),
                            key=lambda f: "'copied'" in f.message)
    assert "'sneaky'" in sneaky.message and sneaky.path == "flashinfer/aot.py"
    # judged by what a build compiles: the copy's text is the experimental kernel's
    assert "flashinfer/csrc/copied.cu (the text of flashinfer/experimental/feat/feat_kernel.cu)" in copied.message
    assert "stable_gemm" not in " ".join(f.message for f in audit.findings)


def test_modules_failing_for_their_own_reasons_are_not_audited(audit):
    (broken,) = _at(audit, "AUD000", "flashinfer/broken.py")
    assert "NameError" in broken.message and "CUDA_HOME" in broken.message
    (missing,) = _at(audit, "AUD000", "flashinfer/missing_own.py")
    assert "ModuleNotFoundError" in missing.message
    assert "flashinfer" not in audit.stand_ins


def test_modules_of_a_failing_package_are_still_audited(audit):
    (failed,) = _at(audit, "AUD000", "flashinfer/brokenpkg/__init__.py")
    assert "needs CUDA" in failed.message
    (inner,) = _at(audit, "AUD001", "flashinfer/brokenpkg/inner.py")
    assert inner.line == 1 and KERNEL in inner.message


def test_missing_third_party_package_is_stood_in_and_named(audit):
    assert audit.stand_ins == ["nonexistent_thirdparty_xyz"]
    _clean(audit, "flashinfer/standin.py")


def test_network_is_refused_and_reported(audit):
    (refused,) = _at(audit, "AUD000", "flashinfer/net_bad.py")
    assert refused.line == 4 and "socket.connect" in refused.message and "192.0.2.1" in refused.message
    _clean(audit, "flashinfer/net_good.py")


def test_a_new_process_is_run_and_named(audit):
    _clean(audit, "flashinfer/spawns.py")
    assert any("'true'" in p and "flashinfer/spawns.py:2" in p for p in audit.processes), audit.processes


def test_a_hang_meets_the_time_limit(audit):
    (hang,) = _at(audit, "AUD000", "flashinfer/hang.py")
    assert "time limit" in hang.message
    # the worker that hung was replaced: every other module was still audited
    assert audit.not_audited == 4 and audit.audited == audit.modules - 4


@pytest.mark.parametrize("name, line, subject", [
    # read on a pool thread, whose stack holds no core line: charged to the line waiting on the pool
    ("pool_read", 6, "flashinfer.experimental.feat.secret"),
    ("pool_read", 7, "flashinfer.experimental.feat.secret"),  # its text compiled under a made-up name
    ("copy_exec", 1, "flashinfer.experimental.feat.secret"),  # the same text, from no file at all
    ("ctypes", 4, "flashinfer.experimental.feat.libfeat"),  # a library is named as a module
])
def test_loads_no_import_event_shows(audit, name, line, subject):
    found = _at(audit, "AUD001", f"flashinfer/{name}_bad.py")
    assert (line, subject) in [(f.line, f.subject) for f in found], [str(f) for f in found]
    _clean(audit, f"flashinfer/{name}_good.py")


def test_a_stable_file_holding_experimental_text_is_judged_by_its_name(audit):
    _clean(audit, "flashinfer/vendored_copy.py")
    (finding,) = [f for f in _at(audit, "AUD001", "flashinfer/copy_exec_bad.py")]
    assert "<made up> holding the text of flashinfer/experimental/feat/secret.py" in finding.message


@pytest.mark.parametrize("name", ["atexit_bad", "thread_bad", "daemon_bad"])
def test_loads_after_the_import_is_done_are_traced(audit, name):
    found = _at(audit, "AUD001", f"flashinfer/{name}.py")
    line = FILES[f"flashinfer/{name}.py"].splitlines().index(f"    import {KERNEL}") + 1
    assert [(f.line, f.subject) for f in found] == [(line, KERNEL)], [str(f) for f in found]
    _clean(audit, "flashinfer/atexit_good.py", "flashinfer/thread_good.py")


def test_nothing_else_is_found(audit):
    expected = {"tc_bad", "entry", "resolve_bad", "runpy_bad", "exec_bad", "spec_bad", "pieces_bad",
                "loader_helper", "data/helper", "link_bad", "pyc_bad_user", "aot", "broken", "missing_own",
                "net_bad", "hang", "twice_bad", "brokenpkg/__init__", "brokenpkg/inner", "linked/kernel", "linked/__init__",
                "pool_read_bad", "copy_exec_bad", "ctypes_bad", "atexit_bad", "thread_bad", "daemon_bad"}
    stray = [f for f in audit.findings if f.path[len("flashinfer/"):-len(".py")] not in expected]
    assert not stray, stray


def test_aot_listing_in_flashinfers_gen_all_modules_shape(tmp_path):
    """FlashInfer's shape: ``gen_all_modules(...)`` called with its default config's
    values (trailing ``_`` dropped), every capability, and True for other flags."""
    root = write_tree(tmp_path / "tree", {
        "flashinfer/__init__.py": "",
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/aot.py": textwrap.dedent("""\
            from pathlib import Path


            class Spec:
                def __init__(self, name, sources):
                    self.name, self.sources = name, sources


            def get_default_config():
                return {"f16_dtype": ["float16"], "add_moe": True}


            def gen_all_modules(f16_dtype_, sm_capabilities, add_moe, add_misc: bool):
                assert f16_dtype_ == ["float16"] and sm_capabilities.get("sm100", False) is True
                here = Path(__file__).parent
                specs = [Spec("dense_fp16", [here / "csrc" / "dense.cu"])]
                if add_moe and add_misc:
                    specs.append(Spec("moe_experimental", [here / "experimental" / "feat" / "moe.cu"]))
                return specs
            """),
    })
    found = audit_tree(Context(root.resolve(), Settings()), jobs=1, timeout=20, collection=False)
    (spec,) = found.findings
    assert spec.rule == "AUD002" and "gen_all_modules" in spec.message and "'moe_experimental'" in spec.message
    assert spec.path == "flashinfer/aot.py" and spec.line == 13
