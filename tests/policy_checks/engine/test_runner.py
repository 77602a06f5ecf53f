"""The runner: the prefilter's soundness, rule by rule and composed, the cache never
changing a result, parallel and serial runs agreeing, and robustness against bad input."""

from __future__ import annotations

import os
import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from policy_checks.engine import cache as cache_module
from policy_checks.model.config import Settings
from policy_checks.rules.registry import RULES
from policy_checks.engine.runner import run

from ..conftest import located, write_raw_name, write_tree

BASE = {
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "from ..utils import experimental_backend\n",
    "flashinfer/experimental/feat/__init__.py": "",
    "flashinfer/experimental/feat/kernels.py": "def run():\n    pass\n",
    "flashinfer/experimental/feat/support.py": (
        "from flashinfer.utils import experimental_backend\n@experimental_backend\ndef chk(x):\n    return True\n"
    ),
    "flashinfer/ops/__init__.py": "",
    "flashinfer/ops/deep/__init__.py": "",
    "flashinfer/gdn_kernels/__init__.py": "",
    "flashinfer/gdn_kernels/experimental/__init__.py": "x = 1\n",
}


def test_prefilter_reads_identifiers_as_python_does(check):
    """``ｅxperimental`` (a fullwidth e) is the identifier ``experimental`` to Python."""
    files = {**BASE, "flashinfer/ops/a.py": "from ..\uff45xperimental.feat import kernels\n"}
    assert located(check(files, jobs=1), "EXP001") == [("flashinfer/ops/a.py", 1)]


# Import statements a core module might contain; {} is where a module path goes.
FORMS = [
    "import {abs}",
    "import {abs} as alias",
    "from {abs} import run",
    "from {parent} import {leaf}",
    "from {rel} import run",
    "from {relparent} import {leaf}",
    "importlib.import_module('{abs}')",
    "importlib.import_module('{rel}', package='flashinfer.ops.deep')",
    "__import__('{abs}')",
    "importlib.import_module('{escaped}')",  # a string escape hides the bytes
    "importlib.import_module('{split_a}' '{split_b}')",  # implicit concatenation
    "from {spaced} import run",  # whitespace around the dots
    "from {fullwidth} import run",  # Python reads identifiers NFKC-normalised
    "from {relparent} import {leaf_fullwidth}",
    "im('{abs}')",  # import_module under an alias
]
TARGETS = [
    "flashinfer.experimental.feat.kernels",
    "flashinfer.experimental.feat",
    "flashinfer.experimental",
    "flashinfer.gdn_kernels.experimental",
    "cutlass.cute.experimental",
    "flashinfer.ops",
]
PLACES = ["{stmt}\n", "try:\n    {stmt}\nexcept Exception:\n    pass\n", "def helper():\n    {stmt}\n",
          "if TYPE_CHECKING:\n    {stmt}\n", "class K:\n    {stmt}\n"]


def _render(form: str, target: str) -> str:
    parent, _, leaf = target.rpartition(".")
    # relative forms from flashinfer/ops/deep/mod.py: three dots reach flashinfer
    if target.startswith("flashinfer."):
        rel = "..." + target[len("flashinfer."):]
        relparent = "..." + parent[len("flashinfer."):] if parent != "flashinfer" else "..."
    else:
        rel, relparent = target, parent
    escaped = target.replace("e", "\\x65")
    half = len(target) // 2
    return form.format(abs=target, parent=parent or target, leaf=leaf, rel=rel, relparent=relparent,
                       escaped=escaped, split_a=target[:half], split_b=target[half:], spaced=target.replace(".", " . "),
                       fullwidth=target.replace("e", "\uff45"), leaf_fullwidth=leaf.replace("e", "\uff45"))


statements = st.lists(
    st.tuples(st.sampled_from(FORMS), st.sampled_from(TARGETS), st.sampled_from(PLACES)), min_size=1, max_size=4
)
# every rule whose declaration makes files primary, alone (its declaration is then
# the whole prefilter), and all rules together (None)
DECLARING = [None] + [rule_id for rule_id, rule in RULES.items() if rule.triggers]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(statements, st.sampled_from(DECLARING))
def test_prefilter_is_sound(tmp_path_factory, chosen, rule_id):
    """Whatever import forms a core module and a stable test use, the prefiltered
    run finds exactly what a run that parses every file finds, whichever rules run:
    the prefilter is composed from the declarations of the rules selected."""
    body = "import importlib\nfrom importlib import import_module as im\nfrom typing import TYPE_CHECKING\n"
    body += "".join(place.format(stmt=_render(form, target)) for form, target, place in chosen)
    files = {**BASE, "flashinfer/ops/deep/mod.py": body, "tests/test_generated.py": body, "pytest.ini": PYTEST_INI}
    root = write_tree(tmp_path_factory.mktemp("tree"), files)
    select = [rule_id] if rule_id else None
    fast = run(root, Settings(), select=select, use_cache=False, jobs=1, progress=False)
    full = run(root, Settings(), select=select, use_cache=False, jobs=1, progress=False, prefilter=False)
    assert fast.findings == full.findings


PYTEST_INI = "[pytest]\nnorecursedirs = tests/experimental\n"


def test_a_renamed_experimental_package_is_found_by_the_prefilter(check):
    """The trigger word is the experimental package's own last name, from the settings."""
    files = {
        "flashinfer/__init__.py": "",
        "flashinfer/incubator/__init__.py": "",
        "flashinfer/incubator/feat/__init__.py": "",
        "flashinfer/gemm.py": "from .incubator.feat import kernels\nfrom . import experimental\n",
        "flashinfer/experimental.py": "",
    }
    settings = {"experimental-package": "flashinfer.incubator"}
    expected = [("flashinfer/gemm.py", 1)]
    assert located(check(files, settings, jobs=1), "EXP001") == expected
    assert located(check(files, settings, jobs=1, prefilter=False), "EXP001") == expected


def test_traps_are_not_reported(check):
    result = check({
        **BASE,
        "flashinfer/gdn.py": (
            "from .gdn_kernels.experimental import x\nfrom .gdn_kernels import experimental\n"
            "import flashinfer.gdn_kernels.experimental\nimport cutlass.experimental\n"
            "from cuda.core.experimental import Device\nfrom .api_logging import flashinfer_experimental_api\n"
            "from .experimental.feat.support import chk\n"
        ),
    })
    assert [f for f in result.findings if f.rule != "EXP009"] == []


def _tree_for_consistency():
    return {
        **BASE,
        "flashinfer/gemm.py": "from .experimental.feat import kernels\ndef f():\n    import flashinfer.experimental.feat\n",
        "flashinfer/bad.py": "def broken(:\n",
        "flashinfer/ok.py": "x = 1  # policy: ignore[EXP001] nothing to silence\n",
        "docs/api/gemm.rst": ".. automodule:: flashinfer.experimental.feat\n",
        # backend_requirement under an alias bound in another module (a second pass)
        "flashinfer/experimental/feat/checks.py": "def unmarked(x):\n    return True\n",
        "flashinfer/dispatch.py": "from .utils import backend_requirement as requires\n",
        "flashinfer/mm.py": (
            "from . import dispatch\nfrom .experimental.feat import checks\n"
            "@dispatch.requires({'x': checks.unmarked})\ndef mm(x, backend='auto'):\n    pass\n"
        ),
    }


def test_cache_never_changes_a_result(tmp_path):
    root = write_tree(tmp_path, _tree_for_consistency())
    cold = run(root, Settings(), use_cache=True, jobs=1, progress=False)
    assert (cache_module.location(root) / cache_module._FILE).is_file()
    warm = run(root, Settings(), use_cache=True, jobs=1, progress=False)
    nocache = run(root, Settings(), use_cache=False, jobs=1, progress=False)
    assert cold.findings == warm.findings == nocache.findings
    assert len(cold.findings) >= 5 and warm.parsed == 0 and cold.parsed > 0
    assert ("flashinfer/experimental/feat/checks.py", 1) in located(warm, "EXP004")
    # one file changed: only it is parsed again, and the result follows the change
    (root / "flashinfer/gemm.py").write_text("x = 1\n")
    changed = run(root, Settings(), use_cache=True, jobs=1, progress=False)
    assert changed.parsed == 1
    assert not any(f.path == "flashinfer/gemm.py" for f in changed.findings)
    assert changed.findings == run(root, Settings(), use_cache=False, jobs=1, progress=False).findings


def test_parallel_and_serial_runs_agree(tmp_path):
    files = _tree_for_consistency()
    files.update({f"flashinfer/many/m{n}.py": f"from ..experimental.feat import kernels as k{n}\n" for n in range(60)})
    files["flashinfer/many/__init__.py"] = ""
    root = write_tree(tmp_path, files)
    serial = run(root, Settings(), use_cache=False, jobs=1, progress=False)
    parallel = run(root, Settings(), use_cache=False, jobs=2, progress=False)
    assert serial.findings == parallel.findings and len(serial.findings) > 60


def test_corrupt_cache_is_ignored_with_a_warning(tmp_path):
    root = write_tree(tmp_path, _tree_for_consistency())
    expected = run(root, Settings(), use_cache=False, jobs=1, progress=False).findings
    cache_file = cache_module.location(root) / cache_module._FILE
    cache_file.parent.mkdir(parents=True)
    cache_file.write_bytes(b"{not json")
    result = run(root, Settings(), use_cache=True, jobs=1, progress=False)
    assert result.findings == expected
    assert any("ignoring unreadable cache" in w for w in result.warnings)
    # the run rewrote a good cache
    stored = json.loads(cache_file.read_bytes())
    assert stored[cache_module.FORMAT_KEY] == cache_module.FORMAT and stored["entries"]
    # a damaged entry inside a valid file is recomputed, not trusted
    damaged = {key: [day, ["truncated"]] for key, (day, _) in stored["entries"].items()}
    damaged["not hex"] = [0, []]
    damaged[next(iter(stored["entries"]))] = "not a [day, value] pair"
    cache_file.write_text(json.dumps({**stored, "entries": damaged}))
    again = run(root, Settings(), use_cache=True, jobs=1, progress=False)
    assert again.findings == expected and again.warnings == [] and again.parsed > 0


def test_two_runs_sharing_a_cache(tmp_path):
    """Concurrent runs each write a complete cache file atomically."""
    import multiprocessing

    root = write_tree(tmp_path, _tree_for_consistency())
    expected = run(root, Settings(), use_cache=False, jobs=1, progress=False).findings
    context = multiprocessing.get_context("fork")
    with context.Pool(2) as pool:
        results = pool.starmap(_run_findings, [(str(root),)] * 4)
    assert all(r == expected for r in results)
    assert run(root, Settings(), use_cache=True, jobs=1, progress=False).findings == expected


def _run_findings(root):
    return run(root, Settings(), use_cache=True, jobs=1, progress=False).findings


def _huge_source() -> str:
    """Over 20 MB in 700,001 lines, the import on the last: the file must be read whole and its
    lines counted right. One line in 100 is a statement, the others comments of the same length:
    size and line count are what this shows, and parsing 700,000 statements would cost ~15 s of
    CPU (the checker's speed is benchmarks/check_speed.py's business)."""
    lines = (f"VALUE_{n} = {n}  # generated\n" if n % 100 == 0 else f"# VALUE_{n} = {n}, generated\n"
             for n in range(700_000))
    return "".join(lines) + "from .experimental import feat\n"


def test_robustness(tmp_path, monkeypatch):
    files = {
        **BASE,
        # each names the experimental package, so a rule must read it: unparsable, it is EXP000
        "flashinfer/syntax.py": "from .experimental import feat\ndef f(:\n",
        "flashinfer/latin1.py": b"from .experimental import feat\ns = '\xe9'\n",
        "flashinfer/nul.py": b"from .experimental import feat\nx = 1\x00\n",
        "flashinfer/encoding.py": b"# -*- coding: no-such-codec -*-\nfrom .experimental import feat\n",
        "flashinfer/nested.py": "from .experimental import feat\nx = " + "(" * 200_000 + ")" * 200_000 + "\n",
        # no rule reads it (its bytes spell no trigger): not parsed, so not reported
        "flashinfer/unread.py": "def f(:\n",
        "flashinfer/bom.py": b"\xef\xbb\xbfimport flashinfer.experimental.feat\n",
        "flashinfer/crlf.py": b"x = 1\r\nfrom .experimental import feat\r\n",
        "flashinfer/ff.py": b"\x0cfrom .experimental import feat\n",
        "flashinfer/tabs.py": "if True:\n\tfrom .experimental import feat\n",
        "flashinfer/huge.py": _huge_source(),
    }
    root = write_tree(tmp_path, files)
    os.symlink(root / "flashinfer", root / "flashinfer" / "loop")  # a symlink loop
    os.symlink(root / "missing.py", root / "flashinfer" / "dangling.py")
    os.symlink(root / "flashinfer" / "looped.py", root / "flashinfer" / "looping.py")
    os.symlink(root / "flashinfer" / "looping.py", root / "flashinfer" / "looped.py")
    os.symlink(os.devnull, root / "flashinfer" / "device.py")
    os.mkfifo(root / "flashinfer" / "fifo.py")
    write_raw_name(root, b"flashinfer/\xff\xfe.py", b"from .experimental import feat\n")
    write_raw_name(root, b"flashinfer/\xff/mod.py", b"x = 1\n")  # a directory's name
    result = run(root, Settings(), use_cache=True, jobs=2, progress=False)
    by_path = {(f.path, f.rule) for f in result.findings}
    unreadable = ("syntax", "latin1", "nul", "encoding", "nested", "dangling", "looping", "looped", "device", "fifo")
    for path in unreadable:
        assert (f"flashinfer/{path}.py", "EXP000") in by_path, path
    assert ("flashinfer/unread.py", "EXP000") not in by_path
    unfiltered = run(root, Settings(), use_cache=False, jobs=1, progress=False, prefilter=False)
    assert ("flashinfer/unread.py", "EXP000") in {(f.path, f.rule) for f in unfiltered.findings}
    names = [(f.path, f.message) for f in result.findings if f.message == "name is not valid UTF-8"]
    assert names == [("flashinfer/\\xff/mod.py", "name is not valid UTF-8"),
                     ("flashinfer/\\xff\\xfe.py", "name is not valid UTF-8")]
    for path in ("bom", "crlf", "ff", "tabs", "huge"):
        assert (f"flashinfer/{path}.py", "EXP001") in by_path, path
    assert ("flashinfer/huge.py", 700_001) in located(result, "EXP001")
    assert (tmp_path / "flashinfer/huge.py").stat().st_size > 20_000_000


def test_read_error_while_running_is_exp000(tmp_path, monkeypatch):
    """A file that disappears or fails to read mid-run is an EXP000 finding."""
    root = write_tree(tmp_path, {**BASE, "flashinfer/gone.py": "x = 1\n"})
    from pathlib import Path

    real = Path.read_bytes

    def failing(self):
        if self.name == "gone.py":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", failing)
    result = run(root, Settings(), select=["EXP000"], use_cache=False, jobs=1, progress=False)
    assert [(f.path, f.rule) for f in result.findings] == [("flashinfer/gone.py", "EXP000")]
    assert "Permission denied" in result.findings[0].message


def test_paths_restrict_the_report(tmp_path):
    root = write_tree(tmp_path, _tree_for_consistency())
    only = run(root, Settings(), paths=[str(root / "flashinfer/gemm.py")], use_cache=False, jobs=1, progress=False)
    assert {f.path for f in only.findings} == {"flashinfer/gemm.py"} and only.files_checked == 1
    with pytest.raises(ValueError):
        run(root, Settings(), paths=["/"], use_cache=False, jobs=1, progress=False)


def test_paths_restrict_the_report_but_not_the_facts(tmp_path):
    """Findings in the named file still come from facts of files not named."""
    files = {
        **BASE,
        "flashinfer/experimental/feat/support.py": (
            "import numpy\nfrom flashinfer.utils import experimental_backend\n"
            "@experimental_backend\ndef chk(x):\n    return True\ndef unmarked(x):\n    return True\n"
        ),
        "flashinfer/gemm.py": (
            "from flashinfer.utils import backend_requirement\n"
            "from .experimental.feat.support import chk\n"  # the exception: fine
            "from .experimental.feat import support\n"  # 3
            "@backend_requirement({'a': chk, 'b': support.unmarked})\ndef mm(x, backend='auto'):\n    pass\n"
        ),
    }
    root = write_tree(tmp_path, files)
    support = run(root, Settings(), paths=[str(root / "flashinfer/experimental/feat/support.py")],
                  use_cache=False, jobs=1, progress=False)
    assert sorted((f.rule, f.line) for f in support.findings) == [("EXP003", 1), ("EXP004", 6)]
    gemm = run(root, Settings(), paths=[str(root / "flashinfer/gemm.py")], use_cache=False, jobs=1, progress=False)
    assert [(f.rule, f.line) for f in gemm.findings] == [("EXP001", 3)]


def test_progress_shows_only_on_a_terminal_after_a_second(monkeypatch, capsys):
    import io
    import sys

    from policy_checks.engine import runner

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for tty, elapsed, shown in ((True, 5.0, True), (True, 0.1, False), (False, 5.0, False)):
        stream = Terminal() if tty else io.StringIO()
        monkeypatch.setattr(sys, "stderr", stream)
        bar = runner._Progress(32, enabled=True)
        bar.start -= elapsed
        bar.update(16)
        bar.close()
        assert ("parsed 16/32 files" in stream.getvalue()) == shown, (tty, elapsed)


def test_a_warm_run_neither_scans_nor_parses(tmp_path, monkeypatch):
    """The trigger scan of each file's bytes is cached beside its facts."""
    from policy_checks.analysis import needs

    root = write_tree(tmp_path, _tree_for_consistency())
    cold = run(root, Settings(), use_cache=True, jobs=1, progress=False)

    def no_scan(self, data):
        raise AssertionError("scanned again")

    monkeypatch.setattr(needs.Scanner, "scan", no_scan)
    warm = run(root, Settings(), use_cache=True, jobs=1, progress=False)
    assert warm.findings == cold.findings and warm.parsed == 0
    # another selection reads the same cache: the scan covers every rule's triggers
    assert run(root, Settings(), select=["EXP004"], use_cache=True, jobs=1, progress=False).parsed == 0


def test_copies_are_read_once(tmp_path, monkeypatch):
    """Files with the same bytes share one trigger scan and one reading of their
    suppressions; each keeps its own facts. No rule reads them (they spell no trigger),
    so they are not parsed: their syntax error is reported only by a run that parses
    every file."""
    from policy_checks.engine import runner

    calls = []
    real = runner.bytes_only

    def counting(source, module, is_package, top=None):
        calls.append(module)
        return real(source, module, is_package, top)

    monkeypatch.setattr(runner, "bytes_only", counting)
    copy = "x = 1  # policy: ignore[EXP001] copied\ndef broken(:\n"
    files = {**BASE, **{f"flashinfer/gen{n}/__init__.py": copy for n in range(3)}, "flashinfer/other.py": "y = 2\n"}
    root = write_tree(tmp_path, files)
    result = run(root, Settings(), use_cache=False, jobs=1, progress=False)
    assert len([m for m in calls if m.startswith("flashinfer.gen")]) == 1
    assert located(result, "EXP000") == []
    everything = run(root, Settings(), use_cache=False, jobs=2, progress=False, prefilter=False)
    assert located(everything, "EXP000") == [(f"flashinfer/gen{n}/__init__.py", 2) for n in range(3)]
    assert [f for f in everything.findings if f.rule != "EXP000"] == result.findings


def test_only_files_a_rule_needs_are_parsed(tmp_path, monkeypatch):
    """EXP000 reports the files the checker must read and cannot. A file whose bytes
    spell a rule's trigger (``experimental``) is parsed, and one the import-time
    follow-ups must ask (it spells ``threading``) gets its symbol table: a syntax error
    in either is EXP000. A file whose bytes concern no rule is only scanned: neither the
    parser nor the symbol table sees its bytes, so its syntax error is not reported
    (Python cannot import it: nothing in it runs). A run parsing every file reports it."""
    from policy_checks.model import facts, parsed

    seen = []
    real_tree, real_checked = parsed.tree, facts._checked
    monkeypatch.setattr(parsed, "tree", lambda data: seen.append(data) or real_tree(data))
    monkeypatch.setattr(facts, "_checked", lambda data: seen.append(data) or real_checked(data))
    needed, follows, unneeded = "from .experimental import feat\ndef f(:\n", "import threading\ndef f(:\n", "def f(:\n"
    files = {**BASE, "flashinfer/needed.py": needed, "flashinfer/follows.py": follows, "flashinfer/unneeded.py": unneeded}
    root = write_tree(tmp_path, files)
    result = run(root, Settings(), use_cache=False, jobs=1, progress=False)
    assert located(result, "EXP000") == [("flashinfer/follows.py", 2), ("flashinfer/needed.py", 2)]
    assert needed.encode() in seen and follows.encode() in seen and unneeded.encode() not in seen
    everything = run(root, Settings(), use_cache=False, jobs=1, progress=False, prefilter=False)
    assert ("flashinfer/unneeded.py", 1) in located(everything, "EXP000")


@pytest.mark.parametrize("use_cache", [False, True], ids=["no cache", "cache"])
def test_a_file_parsed_on_demand_is_scanned_once(tmp_path, monkeypatch, use_cache):
    """A module the import-time follow-up parses on demand (it calls, at import, a
    function that imports experimental code) was scanned by the first pass: that scan is
    the one stored with its facts, and its bytes are not searched again."""
    from policy_checks.analysis.needs import Scanner

    scanned = []
    real = Scanner.scan
    monkeypatch.setattr(Scanner, "scan", lambda self, data, asked=-1: scanned.append(data) or real(self, data, asked))
    caller = "from .helpers import outer\nX = outer()\n"
    files = {**BASE, "flashinfer/helpers.py": "def outer():\n    from .experimental.feat import kernels\n",
             "flashinfer/gemm.py": caller}
    root = write_tree(tmp_path, files)
    result = run(root, Settings(), use_cache=use_cache, jobs=1, progress=False)
    assert located(result, "EXP001") == [("flashinfer/gemm.py", 2)]
    assert scanned.count(caller.encode()) == 1
    if use_cache:  # the stored scan serves a warm run: nothing is scanned or parsed
        scanned.clear()
        warm = run(root, Settings(), use_cache=True, jobs=1, progress=False)
        assert warm.findings == result.findings and warm.parsed == 0 and scanned == []
