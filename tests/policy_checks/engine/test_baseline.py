"""The baseline: its file format, counting, pruning, refusing foreign files, the
four report formats, and which findings stay baselined through a real git history
of edits and moves."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from click.testing import CliRunner

from policy_checks.engine import baseline
from policy_checks.engine.baseline import Fingerprint
from policy_checks.cli import main
from policy_checks.model.facts import extract
from policy_checks.rules.registry import RULES

from ..conftest import write_tree
from ..cli.test_commands import TREE

# a feature with its whole record (test_commands' tree without its violation), and a module to import
FEATURE = {**{k: v for k, v in TREE.items() if k != "flashinfer/gemm.py"}, "flashinfer/experimental/feat/kernels.py": "def run():\n    pass\n"}
IMPORT = "from flashinfer.experimental.feat import kernels"
KERNELS = "flashinfer.experimental.feat.kernels"
OPS = (
    "import os\n"
    f"{IMPORT}\n"  # 2: EXP001 at module level
    "\n"
    "def helper(x):\n"
    "    value = x + 1\n"
    f"    {IMPORT}\n"  # 6: EXP007 in helper
    "    return kernels, value\n"
    "\n"
    "class Runner:\n"
    "    def go(self):\n"
    f"        {IMPORT}\n"  # 11: EXP007 in Runner.go
    "        return kernels\n"
)
LEGACY = f"def old():\n    {IMPORT}\n    return kernels\n"


def cli(root, *args):
    return CliRunner().invoke(main, [*args, "--root", str(root), "--no-cache"])


def report(root, *args) -> dict:
    result = cli(root, "run", "--format", "json", *args)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


@pytest.fixture
def tree(tmp_path):
    return write_tree(tmp_path / "project", {**FEATURE, "flashinfer/ops.py": OPS, "flashinfer/legacy.py": LEGACY})


# the file -----------------------------------------------------------------------------


def test_format_is_one_sorted_entry_a_line_and_round_trips(tmp_path):
    counts = {
        Fingerprint("EXP009", "flashinfer/experimental/b12x/__init__.py", "", "b12x: FEATURE.toml"): 1,
        Fingerprint("EXP001", "flashinfer.mega_moe_v3", "<module>", "flashinfer.experimental.mega_moe_v3.runtime"): 1,
        Fingerprint("EXP007", "flashinfer.gemm", "f", "caf\u00e9 \"quoted\""): 2,
    }
    text = baseline.dumps(counts)
    assert text == (
        '{\n  "policy-check-baseline": 1,\n  "entries": [\n'
        '    {"rule": "EXP001", "module": "flashinfer.mega_moe_v3", "scope": "<module>", '
        '"subject": "flashinfer.experimental.mega_moe_v3.runtime", "count": 1},\n'
        '    {"rule": "EXP007", "module": "flashinfer.gemm", "scope": "f", '
        '"subject": "caf\\u00e9 \\"quoted\\"", "count": 2},\n'
        '    {"rule": "EXP009", "module": "flashinfer/experimental/b12x/__init__.py", "scope": "", '
        '"subject": "b12x: FEATURE.toml", "count": 1}\n'
        "  ]\n}\n"
    )
    assert text.isascii()
    path = tmp_path / "b.json"
    baseline.write(path, counts)
    assert path.read_text() == text and baseline.read(path).counts == counts
    assert oct(path.stat().st_mode & 0o777) != oct(0o600)  # a file to commit, not a private one
    baseline.write(path, {})
    assert path.read_text() == '{\n  "policy-check-baseline": 1,\n  "entries": []\n}\n'
    assert baseline.read(path).counts == {}


def test_baseline_command_writes_todays_findings(tree):
    result = cli(tree, "baseline")
    assert result.exit_code == 0, result.output
    assert "wrote 4 entries for 4 finding(s)" in result.output
    entries = json.loads((tree / "policy-check-baseline.json").read_text())["entries"]
    assert [(e["rule"], e["module"], e["scope"], e["subject"], e["count"]) for e in entries] == [
        ("EXP001", "flashinfer.ops", "<module>", KERNELS, 1),
        ("EXP007", "flashinfer.legacy", "old", KERNELS, 1),
        ("EXP007", "flashinfer.ops", "Runner.go", KERNELS, 1),
        ("EXP007", "flashinfer.ops", "helper", KERNELS, 1),
    ]
    clean = cli(tree, "run")
    assert clean.exit_code == 0 and clean.output.splitlines()[-1] == "All clear: 6 files checked, 4 baselined"
    other = tree / "elsewhere.json"
    assert cli(tree, "baseline", "--file", str(other)).exit_code == 0 and other.is_file()


def test_two_identical_findings_in_one_scope_are_counted(tree):
    (tree / "flashinfer/ops.py").write_text(OPS.replace("    return kernels, value\n", f"    {IMPORT}\n    return kernels, value\n"))
    assert cli(tree, "baseline").exit_code == 0
    entries = json.loads((tree / "policy-check-baseline.json").read_text())["entries"]
    assert {(e["scope"], e["count"]) for e in entries if e["module"] == "flashinfer.ops"} == {
        ("<module>", 1), ("helper", 2), ("Runner.go", 1)
    }
    assert report(tree)["baselined"] == 5


def test_prune_removes_and_lowers_but_never_adds(tree):
    ops = tree / "flashinfer/ops.py"
    ops.write_text(OPS.replace("    return kernels, value\n", f"    {IMPORT}\n    return kernels, value\n"))
    assert cli(tree, "baseline").exit_code == 0
    # pay off: legacy.py's finding and one of helper's two; add new debt in a new function
    (tree / "flashinfer/legacy.py").write_text("def old():\n    return 1\n")
    ops.write_text(OPS + f"\ndef fresh():\n    {IMPORT}\n")
    before = report(tree)
    assert before["baseline_fixed"] == 2 and [f["line"] for f in before["findings"]] == [15]
    pruned = cli(tree, "baseline", "--prune")
    assert pruned.exit_code == 0, pruned.output
    assert "pruned 2 finding(s)" in pruned.output and "1 new finding(s) not added" in pruned.output
    entries = json.loads((tree / "policy-check-baseline.json").read_text())["entries"]
    assert [(e["module"], e["scope"], e["count"]) for e in entries] == [
        ("flashinfer.ops", "<module>", 1), ("flashinfer.ops", "Runner.go", 1), ("flashinfer.ops", "helper", 1),
    ]
    after = report(tree)
    assert after["baseline_fixed"] == 0 and len(after["findings"]) == 1  # still new: prune accepted nothing
    assert cli(tree, "baseline").exit_code == 0  # the explicit act that accepts it
    assert report(tree)["findings"] == []


def test_prune_needs_a_baseline(tree):
    result = cli(tree, "baseline", "--prune")
    assert result.exit_code == 2 and "policy-check-baseline.json: no such file" in result.output


# refusing what is not a baseline ----------------------------------------------------------

ENTRY = {"rule": "EXP001", "module": "m", "scope": "", "subject": "s", "count": 1}
BAD = {
    "not-json": b"{\"policy-check-baseline\": 1,",
    "not-utf8": b"\xff\xfe",
    "a-list": b"[]",
    "foreign-key": json.dumps({"version": 1, "findings": []}).encode(),
    "extra-key": json.dumps({"policy-check-baseline": 1, "entries": [], "x": 1}).encode(),
    "version-2": json.dumps({"policy-check-baseline": 2, "entries": []}).encode(),
    "version-true": json.dumps({"policy-check-baseline": True, "entries": []}).encode(),
    "entries-object": json.dumps({"policy-check-baseline": 1, "entries": {}}).encode(),
    "entry-extra": json.dumps({"policy-check-baseline": 1, "entries": [{**ENTRY, "line": 3}]}).encode(),
    "entry-number": json.dumps({"policy-check-baseline": 1, "entries": [{**ENTRY, "scope": 3}]}).encode(),
    "count-zero": json.dumps({"policy-check-baseline": 1, "entries": [{**ENTRY, "count": 0}]}).encode(),
    "count-bool": json.dumps({"policy-check-baseline": 1, "entries": [{**ENTRY, "count": True}]}).encode(),
    "count-float": json.dumps({"policy-check-baseline": 1, "entries": [{**ENTRY, "count": 1.0}]}).encode(),
    "duplicate": json.dumps({"policy-check-baseline": 1, "entries": [ENTRY, ENTRY]}).encode(),
    "deep": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("content", BAD.values(), ids=BAD.keys())
def test_a_foreign_or_malformed_baseline_is_an_error_naming_the_file(tree, content):
    (tree / "policy-check-baseline.json").write_bytes(content)
    for args in (("run",), ("run", "--format", "json"), ("baseline", "--prune")):
        result = cli(tree, *args)
        assert result.exit_code == 2, (args, result.output)
        assert "baseline policy-check-baseline.json:" in result.output and "All clear" not in result.output
    assert cli(tree, "run", "--no-baseline").exit_code == 1  # everything, as without a baseline


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink", "dangling", "huge", "missing-option"])
def test_a_baseline_that_is_no_regular_file_is_an_error(tree, kind, monkeypatch):
    path = tree / "policy-check-baseline.json"
    args = ()
    if kind == "fifo":
        os.mkfifo(path)  # reading must not block
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink":
        baseline.write(tree / "real.json", {})
        path.symlink_to(tree / "real.json")
    elif kind == "dangling":
        path.symlink_to(tree / "nowhere.json")
    elif kind == "huge":
        baseline.write(path, {Fingerprint("EXP001", f"m{n}", "", "s"): 1 for n in range(50)})
        monkeypatch.setattr(baseline, "MAX_BYTES", 1000)
    else:
        args = ("--baseline", str(tree / "absent.json"))
    result = cli(tree, "run", *args)
    assert result.exit_code == 2, result.output
    assert re.search(r"baseline \S*(policy-check-baseline|absent)\.json: ", result.output), result.output


def test_without_a_baseline_nothing_changes(tree):
    document = report(tree)
    assert set(document) == {"version", "findings", "files_checked"}
    assert set(document["findings"][0]) == {"rule", "name", "path", "line", "column", "message", "severity"}
    text = cli(tree, "run").output.splitlines()
    assert text[-2] == "4 finding(s) in 6 files checked" and text[-1].startswith("Next: ")
    sarif = json.loads(cli(tree, "run", "--format", "sarif").output)
    assert all("baselineState" not in r for r in sarif["runs"][0]["results"])
    assert "::notice" not in cli(tree, "run", "--format", "github").output


# the four formats -----------------------------------------------------------------------


@pytest.fixture
def mixed(tree):
    """One new finding (line 15), three baselined, one fixed (legacy.py's)."""
    assert cli(tree, "baseline").exit_code == 0
    (tree / "flashinfer/legacy.py").write_text("def old():\n    return 1\n")
    (tree / "flashinfer/ops.py").write_text(OPS + f"\ndef fresh():\n    {IMPORT}\n")
    return tree


def test_all_four_formats_agree(mixed):
    text = cli(mixed, "run")
    assert text.exit_code == 1
    lines = text.output.splitlines()
    assert lines[0].startswith("flashinfer/ops.py:15:5: EXP007 fresh imports")
    assert lines[1] == (
        '1 baselined finding(s) no longer found (fixed): run "policy-check baseline --prune" '
        "to remove them from policy-check-baseline.json"
    )
    assert lines[2] == "1 finding(s) in 6 files checked, 3 baselined"
    assert lines[3].startswith("Next: `policy-check explain EXP007`") and len(lines) == 4

    document = report(mixed)
    assert [(f["path"], f["line"], f["scope"], f["subject"]) for f in document["findings"]] == [
        ("flashinfer/ops.py", 15, "fresh", KERNELS)
    ]
    assert document["baselined"] == 3 and document["baseline_fixed"] == 1
    assert document["baseline"] == "policy-check-baseline.json"
    assert document["baseline_fixed_entries"] == [
        {"rule": "EXP007", "module": "flashinfer.legacy", "scope": "old", "subject": KERNELS, "count": 1}
    ]

    github = cli(mixed, "run", "--format", "github").output.splitlines()
    assert len(github) == 2 and github[0].startswith("::error file=flashinfer/ops.py,line=15,col=5,")
    assert github[1].startswith("::notice title=policy-check baseline::policy-check: 1 new finding(s), 3 baselined")
    assert "1 baselined finding(s) no longer found (fixed)" in github[1]

    # SARIF for code scanning (which opens an alert for a suppressed result): the new finding only
    alerts = json.loads(cli(mixed, "run", "--format", "sarif").output)["runs"][0]["results"]
    assert [(r["ruleId"], r["baselineState"], "suppressions" in r) for r in alerts] == [("EXP007", "new", False)]
    assert alerts[0]["locations"][0]["physicalLocation"]["region"] == {"startLine": 15, "startColumn": 5}

    # --sarif-suppressed: also the baselined findings (suppressed) and the fixed entry
    sarif = json.loads(cli(mixed, "run", "--format", "sarif", "--sarif-suppressed").output)
    assert sarif["version"] == "2.1.0"
    (run,) = sarif["runs"]
    results = run["results"]
    states = [r["baselineState"] for r in results]
    assert states == ["new", "unchanged", "unchanged", "unchanged", "absent"]
    assert results[0] == alerts[0]
    rules = run["tool"]["driver"]["rules"]
    for r in results:
        assert r["ruleId"] == rules[r["ruleIndex"]]["id"] and r["message"]["text"] and r["locations"]
        assert r["level"] in ("error", "note")
    assert all("suppressions" not in r for r in results if r["baselineState"] != "unchanged")
    for r in results[1:4]:
        assert r["suppressions"] == [{
            "kind": "external", "status": "accepted",
            "justification": "accepted as existing debt by the baseline policy-check-baseline.json",
        }]
    absent = results[4]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert absent == {"uri": "policy-check-baseline.json", "uriBaseId": "%SRCROOT%"}
    assert "--prune" in results[4]["message"]["text"]


def test_no_baseline_option_and_another_file(mixed):
    assert len(report(mixed, "--no-baseline")["findings"]) == 4
    (mixed / "policy-check-baseline.json").rename(mixed / "debt.json")
    assert len(report(mixed)["findings"]) == 4  # no file at the root: no baseline
    assert report(mixed, "--baseline", str(mixed / "debt.json"))["baselined"] == 3
    both = cli(mixed, "run", "--baseline", str(mixed / "debt.json"), "--no-baseline")
    assert both.exit_code == 2


def test_fixed_entries_only_for_what_the_run_checked(mixed):
    """PATHS and --select narrow the fixed report to what the run could have seen."""
    assert report(mixed, str(mixed / "flashinfer/ops.py"))["baseline_fixed"] == 0
    assert report(mixed, str(mixed / "flashinfer/legacy.py"))["baseline_fixed"] == 1
    assert report(mixed, "--select", "EXP001")["baseline_fixed"] == 0
    assert report(mixed, "--select", "EXP001")["baselined"] == 1


def test_suppressions_apply_before_the_baseline(tree):
    assert cli(tree, "baseline").exit_code == 0
    ops = tree / "flashinfer/ops.py"
    ops.write_text(OPS.replace(f"{IMPORT}\n\ndef", f"{IMPORT}  # policy: ignore[EXP001] kept for 0.8\n\ndef", 1))
    document = report(tree)
    assert document["findings"] == [] and document["baselined"] == 3 and document["baseline_fixed"] == 1
    # an unused suppression is SUP002, new like any finding
    ops.write_text(OPS.replace("import os\n", "import os  # policy: ignore[EXP001] stale\n"))
    assert [f["rule"] for f in report(tree)["findings"]] == ["SUP002"]


# fingerprints -----------------------------------------------------------------------------


def test_every_rule_says_what_its_findings_are_about(check, tmp_path):
    for rule in RULES.values():
        for n, example in enumerate(rule.INVALID):
            result = check(example.files, example.settings, jobs=1, root=tmp_path / f"{rule.id}-{n}")
            for finding in result.findings:
                assert finding.subject, finding
                assert f"{finding.path}:{finding.line}" not in finding.subject


def test_scope_is_the_innermost_definition():
    source = (
        "import os\n"                       # 1
        "def f():\n"                        # 2
        "    x = 1\n"                       # 3
        "    def g():\n"                    # 4
        "        return x\n"                # 5
        "    return g\n"                    # 6
        "class C:\n"                        # 7
        "    y = 2\n"                       # 8
        "    @staticmethod\n"               # 9
        "    def m():\n"                    # 10
        "        pass\n"                    # 11
        "if os.name:\n"                     # 12
        "    def h():\n"                    # 13
        "        return 1\n"                # 14
        "else:\n"                           # 15
        "    def h():\n"                    # 16
        "        return 2\n"                # 17
    ).encode()
    facts = extract(source, "m", False)
    scopes = [facts.scope_at(line) for line in range(1, 18)]
    assert scopes == [
        # line 9, a decorator, is part of its definition's statement
        "<module>", "f", "f", "f.g", "f.g", "f", "C", "C", "C.m", "C.m", "C.m", "<module>", "h", "h", "<module>", "h", "h",
    ]


# a git history ------------------------------------------------------------------------------


def git(root, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env, timeout=60)


def commit(root, message, files=None):
    if files:
        write_tree(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def new_and_baselined(root):
    document = report(root)
    return [(f["path"], f["line"], f["scope"]) for f in document["findings"]], document["baselined"], document["baseline_fixed"]


def test_fingerprints_survive_edits_and_moves_in_a_git_history(tree):
    git(tree, "init", "-q")
    commit(tree, "a tree with violations")
    assert cli(tree, "baseline").exit_code == 0
    commit(tree, "baseline")
    ops = tree / "flashinfer/ops.py"

    # lines inserted above every finding
    commit(tree, "insert lines", {
        "flashinfer/ops.py": "'''Ops.'''\n\nimport sys\n\n\ndef first():\n    return sys.argv\n\n" + OPS,
        "flashinfer/legacy.py": "# legacy\n\n" + LEGACY,
    })
    assert new_and_baselined(tree) == ([], 4, 0)

    # the violating lines reformatted
    text = ops.read_text()
    text = text.replace(f"\n{IMPORT}\n", "\nfrom flashinfer.experimental.feat import (kernels)\n", 1)
    text = text.replace(f"    {IMPORT}\n    return kernels, value", "    from  flashinfer.experimental.feat   import  kernels\n    return kernels, value")
    text = text.replace(f"        {IMPORT}\n", "        from flashinfer.experimental.feat import (\n            kernels,\n        )\n")
    commit(tree, "reformat", {"flashinfer/ops.py": text})
    assert new_and_baselined(tree) == ([], 4, 0)

    # a local variable of the enclosing function renamed
    commit(tree, "rename a local", {"flashinfer/ops.py": ops.read_text().replace("value", "result")})
    assert new_and_baselined(tree) == ([], 4, 0)

    # the violating file moved with its content: the module is part of the key, so
    # the finding is new under its new name and the old entry paid, until re-keyed
    git(tree, "mv", "flashinfer/legacy.py", "flashinfer/old_ops.py")
    commit(tree, "move legacy.py")
    assert new_and_baselined(tree) == ([("flashinfer/old_ops.py", 4, "old")], 3, 1)
    assert cli(tree, "baseline").exit_code == 0  # re-keyed: the bot reads the change as a rename
    text = (tree / "policy-check-baseline.json").read_text()
    assert "flashinfer.old_ops" in text and "flashinfer.legacy" not in text
    commit(tree, "re-key the baseline")
    assert new_and_baselined(tree) == ([], 4, 0)

    # the violating import duplicated into another function: new
    text = ops.read_text() + f"\ndef other():\n    {IMPORT}\n    return kernels\n"
    commit(tree, "duplicate into another function", {"flashinfer/ops.py": text})
    line = text.splitlines().index(f"    {IMPORT}") + 1
    assert new_and_baselined(tree) == ([("flashinfer/ops.py", line, "other")], 4, 0)

    # a second identical violation in a baselined function: new, the later one
    text = ops.read_text().replace("    return kernels, result\n", f"    {IMPORT}\n    return kernels, result\n")
    commit(tree, "a second one in helper", {"flashinfer/ops.py": text})
    second = text.splitlines().index(f"    {IMPORT}") + 1
    new, baselined, fixed = new_and_baselined(tree)
    assert (new, baselined, fixed) == (
        [("flashinfer/ops.py", second, "helper"), ("flashinfer/ops.py", line + 1, "other")], 4, 0
    )


def test_records_and_pages_are_fingerprinted_by_path(tmp_path):
    """EXP009 is about a feature's record even at its __init__.py; a docs page has no scope."""
    root = write_tree(tmp_path / "p", {
        **FEATURE,
        "flashinfer/experimental/bare/__init__.py": "",
        "flashinfer/norm.py": "def fast():\n    pass\n",
        "flashinfer/experimental/feat/kernels.py": "def run():\n    pass\n",
        "docs/api/norm.rst": "Norm\n====\n\n.. currentmodule:: flashinfer.experimental.feat\n\n.. autofunction:: kernels.run\n",
    })
    assert cli(root, "baseline").exit_code == 0
    entries = json.loads((root / "policy-check-baseline.json").read_text())["entries"]
    # EXP009: one entry per missing item (the record and each field, the README and each part)
    lacks = ["FEATURE.toml", "README.md", "README.md: automatic routing", "README.md: gates",
             "README.md: supported cases and limits", "README.md: what is experimental", "admitted", "apis",
             "auto_routing", "backends", "kind", "owner", "target_date", "target_release", "tracking_issue"]
    assert [(e["rule"], e["module"], e["scope"], e["subject"]) for e in entries] == [
        ("EXP006", "docs/api/norm.rst", "", "autofunction:: kernels.run in flashinfer.experimental.feat"),
        *(("EXP009", "flashinfer/experimental/bare/__init__.py", "", f"bare: {item}") for item in lacks),
    ]
