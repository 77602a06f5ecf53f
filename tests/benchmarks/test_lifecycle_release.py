"""benchmarks/lifecycle_release.py's invariants on a tiny tree (``fxpkg``, laid out like
FlashInfer, as tests/policy_checks/scratch.py's): a real removal passes every one, and
each one fails when its promise is broken (a doctored diff, a refusal that wrote, a write
beside the copy or through a linked file, a broken import, a new finding); the import
probe gets past a module that hangs or kills its process."""

from __future__ import annotations

import collections
import json
import dataclasses
import sys
import textwrap
import types
from pathlib import Path

import pytest

from ..benchmark_modules import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


lr = load_benchmark("lifecycle_release")

FILES = {
    "pyproject.toml": """\
        [tool.policy-check]
        package = "fxpkg"
        experimental-package = "fxpkg.experimental"
        """,
    "fxpkg/__init__.py": '"""The fixture package."""\n',
    "fxpkg/api_logging.py": """\
        def flashinfer_api(func=None, *, trace=None):
            return func if func is not None else (lambda f: f)


        def flashinfer_experimental_api(func=None, *, trace=None, feature=None):
            if func is None:
                return lambda f: flashinfer_experimental_api(f)
            func.is_experimental = True
            return func
        """,
    "fxpkg/ops.py": """\
        from .api_logging import flashinfer_api, flashinfer_experimental_api


        @flashinfer_api
        def stable(x):
            return x


        @flashinfer_experimental_api(feature="feat")
        def fancy(x):
            from .experimental.feat.kernels import run

            return run(x)
        """,
    "fxpkg/user.py": "from .ops import stable\n",
    "fxpkg/unrelated.py": "VALUE = 1\n",
    "fxpkg/experimental/__init__.py": "",
    "fxpkg/experimental/feat/__init__.py": "",
    "fxpkg/experimental/feat/kernels.py": "def run(x):\n    return x + 1\n",
    "fxpkg/broken.py": "raise ImportError('broken before any command')\n",
    "script.py": "import fxpkg.user\n",
}


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    """The fixture tree as the driver's base repository, its findings and import survey."""
    work = tmp_path_factory.mktemp("lifecycle-release")
    source = work / "source"
    for rel, text in FILES.items():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(textwrap.dedent(text))
    base = work / "base"
    lr.make_base(source, base)
    ctx = lr.Context(base=base, snapshot=lr.Snapshot.take(base), workdir=work, home="fxpkg.{feature}",
                     findings=lr.finding_keys(lr.run_checker(base, None)), survey=None,
                     python=Path(sys.executable), cache=None, keep=False, preload=(),
                     experimental="fxpkg.experimental")
    ctx.survey = ctx.import_on_base(lr.tree_modules(base), "batch")
    return ctx


def test_the_survey_knows_what_imports_and_what_each_import_read(ctx):
    modules = ctx.survey.modules
    assert modules["fxpkg.user"]["ok"] and modules["script"]["ok"]
    assert not modules["fxpkg.broken"]["ok"] and "broken before any command" in modules["fxpkg.broken"]["error"]
    assert modules["fxpkg"]["preloaded"] and ctx.survey.groups["fxpkg"]["files"] == ["fxpkg/__init__.py"]
    edges = ctx.survey.edges
    assert "fxpkg/ops.py" in edges["fxpkg/user.py"] and "fxpkg/api_logging.py" in edges["fxpkg/ops.py"]
    assert "fxpkg/user.py" in edges["script.py"]
    reaching = ctx.survey.reaching({"fxpkg/api_logging.py"})
    assert {"fxpkg/ops.py", "fxpkg/user.py", "script.py"} <= reaching and "fxpkg/unrelated.py" not in reaching


def test_a_hang_or_a_crash_costs_its_module_only(tmp_path):
    (tmp_path / "pkg").mkdir()
    for name, text in {"__init__": "", "a_slow": "import time\ntime.sleep(60)\n", "b_crash": "import os\nos._exit(3)\n",
                       "c_fine": "from . import d_dep\n", "d_dep": ""}.items():
        (tmp_path / "pkg" / f"{name}.py").write_text(text)
    survey = lr.run_probe(Path(sys.executable), tmp_path, lr.tree_modules(tmp_path), tmp_path / "log", preload=(),
                          timeout=2)
    outcome = {module: record["ok"] or record["error"] for module, record in survey.modules.items()}
    assert outcome == {"pkg": True, "pkg.a_slow": "timed out after 2 s", "pkg.b_crash": "the child died (wait status 0x300)",
                       "pkg.c_fine": True, "pkg.d_dep": True}
    assert survey.edges == {"pkg/c_fine.py": ["pkg/__init__.py", "pkg/d_dep.py"]}  # `from . import` reads pkg


@pytest.fixture(scope="module")
def removal(ctx):
    """`remove feat` on the fixture, as the driver runs it: its row, its --diff output and
    the tree of the real run (the copies kept)."""
    row = lr.run_trial(dataclasses.replace(ctx, keep=True), "feat", "remove")
    patch = (ctx.workdir / "remove-feat.diff").read_bytes()
    after = lr.Snapshot.take(Path(row["copies"][0]) / lr.COPY)
    return row, patch, after, lr.compare(ctx.snapshot, after)


def test_a_real_removal_keeps_every_promise(removal):
    row, patch, _, _ = removal
    assert (row["diff_exit"], row["exit"]) == (0, 0), row["reason"]
    statuses = {name: check["status"] for name, check in row["checks"].items()}
    assert statuses == {**dict.fromkeys(lr.INVARIANTS, lr.PASS), "clean": lr.NA, "markers": lr.NA}, row["checks"]
    assert row["files"]["deleted"] >= 2 and b"+++ /dev/null" in patch  # the feature's package
    assert row["checks"]["imports"]["data"]["imported_again"] >= 3  # the modules that reach fxpkg/ops.py


def test_the_patch_of_the_run_gives_its_tree(ctx, removal):
    _, patch, expected, run = removal
    check = lr.check_patch(patch, ctx.base, run, expected, ctx.workdir)
    assert check.status == lr.PASS, check.detail
    assert lr.check_patch(patch, ctx.base, lr.Delta([], [], []), expected, ctx.workdir).status == lr.PASS


def test_a_diff_that_leaves_out_a_deletion_is_not_the_run(ctx, removal):
    _, patch, expected, run = removal
    sections = patch.split(b"diff --git ")
    kept = [s for s in sections if b"feat/kernels.py" not in s.split(b"\n", 1)[0]]
    assert len(kept) == len(sections) - 1
    check = lr.check_patch(b"diff --git ".join(kept), ctx.base, run, expected, ctx.workdir)
    assert check.status == lr.FAIL
    assert "only in patched: fxpkg/experimental/feat/kernels.py" in check.detail


def test_a_diff_that_does_not_apply_says_why(ctx, removal):
    _, patch, expected, run = removal
    doctored = patch.replace(b"-def run(x):", b"-def walk(x):")
    assert doctored != patch
    check = lr.check_patch(doctored, ctx.base, run, expected, ctx.workdir)
    assert check.status == lr.FAIL and check.detail.startswith("git apply failed: ")


def test_a_refusal_that_wrote_is_caught(ctx):
    copy = lr.make_copy(ctx.base, ctx.snapshot, ctx.workdir, "refused")
    assert lr.check_unchanged(copy, "exit 1").status == lr.PASS
    (copy.root / "fxpkg/unrelated.py").write_text("VALUE = 1\n")  # the same bytes, rewritten: no change
    assert lr.check_unchanged(copy, "exit 1").status == lr.PASS
    (copy.root / "fxpkg/ops.py").write_text("# half a removal\n")
    check = lr.check_unchanged(copy, "exit 1")
    assert check.status == lr.FAIL and "changed fxpkg/ops.py" in check.detail and "git status:  M fxpkg/ops.py" in check.detail


def test_a_write_beside_the_copy_is_caught(ctx):
    copy = lr.make_copy(ctx.base, ctx.snapshot, ctx.workdir, "outside")
    assert lr.check_outside([copy], ctx.base, ctx.snapshot).status == lr.PASS
    (copy.parent / "fxpkg").mkdir()
    check = lr.check_outside([copy], ctx.base, ctx.snapshot)
    assert check.status == lr.FAIL and "fxpkg (new)" in check.detail


def test_a_write_through_a_linked_file_is_caught(ctx):
    copy = lr.make_copy(ctx.base, ctx.snapshot, ctx.workdir, "linked", linked=("fxpkg/experimental",))
    kernels = copy.root / "fxpkg/experimental/feat/kernels.py"
    assert kernels.stat().st_ino == (ctx.base / "fxpkg/experimental/feat/kernels.py").stat().st_ino
    assert (copy.root / "fxpkg/ops.py").stat().st_ino != (ctx.base / "fxpkg/ops.py").stat().st_ino
    original = kernels.read_bytes()
    try:
        kernels.write_text("# written in place\n")
        check = lr.check_outside([copy], ctx.base, ctx.snapshot)
        assert check.status == lr.FAIL and "the base repository: changed fxpkg/experimental/feat/kernels.py" in check.detail
    finally:
        kernels.write_bytes(original)


def test_a_broken_import_is_caught_and_only_what_read_the_file_is_tried(ctx):
    copy = lr.make_copy(ctx.base, ctx.snapshot, ctx.workdir, "imports")
    (copy.root / "fxpkg/unrelated.py").write_text("VALUE = 2\n")
    delta = lr.compare(copy.reference, lr.Snapshot.take(copy.root, copy.reference))
    check = lr.check_imports(ctx.survey, ctx.python, copy.root, delta, ctx.workdir / "imports.log", preload=())
    assert check.status == lr.PASS and check.data["imported_again"] == 1  # fxpkg.unrelated alone reaches it
    (copy.root / "fxpkg/ops.py").write_text("from .gone import stable\n")
    delta = lr.compare(copy.reference, lr.Snapshot.take(copy.root, copy.reference))
    check = lr.check_imports(ctx.survey, ctx.python, copy.root, delta, ctx.workdir / "imports.log", preload=(),
                             on_base=lambda modules: ctx.import_on_base(modules, "isolated"))
    assert check.status == lr.FAIL and not check.data["unsteady"]
    broken = {line.split(":")[0] for line in check.data["broken"]}
    assert broken == {"fxpkg.ops", "fxpkg.user", "script"}, check.data
    assert "No module named 'fxpkg.gone'" in check.detail


def test_a_new_finding_is_listed():
    before = collections.Counter({("EXP003", "fxpkg/ops.py", "old"): 1})
    assert lr.check_findings(before, before).status == lr.PASS
    after = before + collections.Counter({("EXP001", "fxpkg/user.py", "imports the experimental package"): 1})
    check = lr.check_findings(before, after)
    assert check.status == lr.FAIL and check.data["new_exp001"] == 1 and "fxpkg/user.py" in check.detail


def test_a_refusal_and_its_diff_must_agree():
    assert lr.check_agree(1, 1).status == lr.PASS
    assert lr.check_agree(0, 1).status == lr.FAIL


def test_a_workdir_in_use_is_read_not_rewritten(tmp_path):
    first = lr.WorkdirLock(tmp_path)
    first.writing("it has no base")  # alone: it may build the base
    first.share()  # its trials run
    second = lr.WorkdirLock(tmp_path)
    with pytest.raises(SystemExit, match="is in use by another run and it has no base: pass another --workdir"):
        second.writing("it has no base")


def test_an_import_made_unused_and_a_stale_baseline_entry_are_caught(tmp_path):
    base, root = tmp_path / "base", tmp_path / "copy"
    for tree, ops in ((base, "import os\nimport sys\n\ndef f():\n    return os.sep\n"), (root, "import os\nimport sys\n")):
        (tree / "pkg").mkdir(parents=True)
        (tree / "pkg/ops.py").write_text(ops)
    lr.git(root, "init", "-q")
    delta = lr.Delta(created=[], changed=["pkg/ops.py"], deleted=["pkg/experimental/feat/k.py"])
    check = lr.check_unused(base, root, delta)
    assert check.status == lr.FAIL and check.data["left"] == ["pkg/ops.py: os"]  # sys was unused before: not judged
    (root / "pkg/user.py").write_text("from .ops import os\n")
    lr.git(root, "add", "-A")
    assert lr.check_unused(base, root, delta).status == lr.PASS  # another file imports it from there
    entries = [{"rule": "EXP004", "module": "pkg.experimental.feat.k", "scope": "", "subject": "", "count": 1},
               {"rule": "EXP004", "module": "pkg.ops", "scope": "", "subject": "", "count": 1}]
    (root / lr.BASELINE).write_text(json.dumps({"policy-check-baseline": 1, "entries": entries}))
    check = lr.check_baseline(root, "feat", "pkg.experimental", delta)
    assert check.status == lr.FAIL and check.data["stale"] == ["pkg.experimental.feat.k"]
    (root / lr.BASELINE).write_text(json.dumps({"policy-check-baseline": 1, "entries": entries[1:]}))
    assert lr.check_baseline(root, "feat", "pkg.experimental", delta).status == lr.PASS


def test_an_import_made_unused_in_a_function_body_is_caught(tmp_path):
    base, root = tmp_path / "base", tmp_path / "copy"
    before = "def f(backend):\n    import os\n    if backend == 'x':\n        return os.sep\n    return None\n"
    after = "def f(backend):\n    import os\n    return None\n"
    for tree, ops in ((base, before), (root, after)):
        (tree / "pkg").mkdir(parents=True)
        (tree / "pkg/ops.py").write_text(ops)
    lr.git(root, "init", "-q")
    delta = lr.Delta(created=[], changed=["pkg/ops.py"], deleted=[])
    check = lr.check_unused(base, root, delta)
    assert check.status == lr.FAIL and check.data["left"] == ["pkg/ops.py: f: os"]
    (root / "pkg/ops.py").write_text("def f(backend):\n    return None\n")
    assert lr.check_unused(base, root, delta).status == lr.PASS


def test_each_trial_is_measured_against_a_cold_run_with_median_and_maximum():
    rows = [{"feature": f, "command": "remove", "exit": e, "ratio": r, "real_s": 1.0,
             "checks": {name: {"status": lr.PASS} for name in lr.INVARIANTS}}
            for f, e, r in (("a", 0, 1.0), ("b", 0, 4.0), ("c", 0, 2.0), ("d", 1, 0.5), ("e", 1, 1.5))]
    s = lr.summary(rows)
    assert s["ratio_done"] == {"median": 2.0, "max": 4.0, "limit": 3.0, "over": 1, "of": 3}
    assert s["ratio_refused"] == {"median": 1.0, "max": 1.5, "limit": 1.0, "over": 1, "of": 2}


@pytest.fixture(scope="module")
def graduation(ctx):
    """`graduate feat --to fxpkg.feat` on the fixture, as the driver runs it: its row and
    the kept copy of the real run."""
    row = lr.run_trial(dataclasses.replace(ctx, keep=True), "feat", "graduate")
    return row, Path(row["copies"][-1]) / lr.COPY


def test_a_real_graduation_leaves_no_marker(graduation):
    row, root = graduation
    assert (row["diff_exit"], row["exit"]) == (0, 0), row["reason"]
    assert row["checks"]["markers"]["status"] == lr.PASS, row["checks"]["markers"]
    assert "@flashinfer_api" in (root / "fxpkg/ops.py").read_text()  # the entry point was swapped


def test_a_marker_left_after_graduate_is_caught_unless_step_3_names_it(ctx, graduation):
    _, root = graduation
    ops = root / "fxpkg/ops.py"
    swapped = ops.read_text()
    try:
        ops.write_text(swapped.replace("@flashinfer_api\ndef fancy", "@flashinfer_experimental_api\ndef fancy"))
        assert ops.read_text() != swapped
        line = next(n for n, text in enumerate(ops.read_text().splitlines(), 1) if text.startswith("def fancy"))
        delta = lr.compare(ctx.snapshot, lr.Snapshot.take(root))
        check = lambda output: lr.check_markers(root, "feat", "fxpkg.experimental", "fxpkg.feat", delta, output)  # noqa: E731
        ticked = check("[x] 3. Replace ...\n")
        assert ticked.status == lr.FAIL and f"fxpkg/ops.py:{line}: fancy" in ticked.detail
        assert check("[ ] 3. Replace ...\n").status == lr.FAIL  # left and not named
        named = check(f"[ ] 3. Replace ...\n      for a person: fxpkg/ops.py:{line}: fancy is still marked\n")
        assert named.status == lr.PASS and named.data["left"]
        ops.write_text(swapped + '\n\ndef other(x):\n    require_experimental_auto_backends("feat_other")\n'
                                 '    require_experimental_auto_backends("feat")\n')
        delta = lr.compare(ctx.snapshot, lr.Snapshot.take(root))
        gate = check("[x] 3. Replace ...\n")  # the call naming feat_other is another feature's
        assert gate.status == lr.FAIL and len(gate.data["left"]) == 1 and "a gate call in other" in gate.detail
        ops.write_text(swapped)
        moved = root / "fxpkg/feat/kernels.py"
        moved.write_text(moved.read_text() + "\n\nclass Runner:\n    is_experimental = True\n")
        delta = lr.compare(ctx.snapshot, lr.Snapshot.take(root))
        flagged = check("[x] 3. Replace ...\n")
        assert flagged.status == lr.FAIL and "class Runner sets is_experimental" in flagged.detail
    finally:
        ops.write_text(swapped)


def test_a_cpu_torch_answers_device_queries_for_a_stand_in_and_stays_unavailable():
    def refuse(device=None):
        raise AssertionError("Torch not compiled with CUDA enabled")

    cpu = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False, get_device_properties=refuse,
                                                           get_device_capability=refuse, get_device_name=refuse))
    assert lr.stand_in_device(cpu)
    assert cpu.cuda.get_device_properties(0).multi_processor_count == lr.STAND_IN_DEVICE["multi_processor_count"]
    assert cpu.cuda.get_device_capability(0) == (10, 0) and not cpu.cuda.is_available()
    gpu = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: True, get_device_properties=refuse))
    assert not lr.stand_in_device(gpu) and gpu.cuda.get_device_properties is refuse
