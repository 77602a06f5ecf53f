"""The CLI: exit codes, the four formats, rules, explain, settings errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from urllib.parse import unquote

import pytest
from click.testing import CliRunner

from policy_checks.cli import main
from policy_checks.report import FORMATS
from policy_checks.rules.registry import RULES

from ..conftest import write_raw_name, write_tree

TREE = {
    "pyproject.toml": "[tool.policy-check]\nexclude = ['build']\n",
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/gemm.py": "import os\nfrom .experimental import feat\n",
    "flashinfer/experimental/feat/__init__.py": "",
    "flashinfer/experimental/feat/FEATURE.toml": (
        'kind = "api"\nowner = "octocat"\ntracking_issue = 1\nadmitted = 2026-11-02\n'
        'target_release = "0.8.0"\ntarget_date = 2026-11-30\napis = ["flashinfer.feat"]\n'
        "backends = []\nauto_routing = false\n"
    ),
    "flashinfer/experimental/feat/README.md": "# feat\n## What is experimental\n## Supported cases and limits\n## Gates\n## Auto routing\n",
}


def invoke(root, *args):
    return CliRunner().invoke(main, ["run", "--root", str(root), "--no-cache", *args])


@pytest.fixture
def tree(tmp_path):
    return write_tree(tmp_path, TREE)


def test_text_output_and_exit_codes(tree):
    result = invoke(tree)
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("flashinfer/gemm.py:2:1: EXP001 [*] core module imports flashinfer.experimental.feat")
    assert lines[1] == "1 finding(s) in 4 files checked"
    assert lines[2] == (
        "Next: `policy-check explain EXP001` says what a rule wants and why; `policy-check fix` rewrites the 1 "
        "finding(s) marked [*] (`--diff` to preview); `# policy: ignore[EXP001] <reason>` on a finding's line "
        "suppresses it."
    ) and len(lines) == 3
    assert invoke(tree, "--exit-zero").exit_code == 0
    (tree / "flashinfer/gemm.py").write_text("import os\n")
    clean = invoke(tree)
    assert clean.exit_code == 0 and "All clear" in clean.output


def test_json_output_follows_the_spec(tree):
    result = invoke(tree, "--format", "json")
    document = json.loads(result.output)
    assert document["version"] == 1 and document["files_checked"] == 4
    assert document["findings"] == [{
        "rule": "EXP001", "name": "core-imports-experimental", "path": "flashinfer/gemm.py",
        "line": 2, "column": 1, "message": document["findings"][0]["message"], "severity": "error",
    }]


def test_github_and_sarif_carry_the_same_findings(tree):
    github = invoke(tree, "--format", "github").output.splitlines()
    assert len(github) == 1
    assert github[0].startswith("::error file=flashinfer/gemm.py,line=2,col=1,title=EXP001 core-imports-experimental::EXP001 ")
    sarif = json.loads(invoke(tree, "--format", "sarif").output)
    assert sarif["version"] == "2.1.0"
    (run,) = sarif["runs"]
    (finding,) = run["results"]
    assert finding["ruleId"] == "EXP001"
    assert run["tool"]["driver"]["rules"][finding["ruleIndex"]]["id"] == "EXP001"
    region = finding["locations"][0]["physicalLocation"]
    assert region["artifactLocation"]["uri"] == "flashinfer/gemm.py"
    assert region["region"] == {"startLine": 2, "startColumn": 1}


def test_sarif_locations_are_uri_references(tree):
    """A path with a space or a `#` must be percent-encoded in a SARIF uri."""
    (tree / "flashinfer/gemm.py").rename(tree / "flashinfer/my gemm#2.py")
    sarif = json.loads(invoke(tree, "--format", "sarif").output)
    (finding,) = sarif["runs"][0]["results"]
    location = finding["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "flashinfer/my%20gemm%232.py"
    assert json.loads(invoke(tree, "--format", "json").output)["findings"][0]["path"] == "flashinfer/my gemm#2.py"


# every file below is EXP000, as reported (bytes of a name that are not UTF-8 as \\xNN)
UNREADABLE = {
    "flashinfer/nul.py", "flashinfer/encoding.py", "flashinfer/nested.py", "flashinfer/fifo.py",
    "flashinfer/device.py", "flashinfer/looping.py", "flashinfer/looped.py",
    "flashinfer/\\xff\\xfe.py", "docs/api/\\xff.rst", "flashinfer/experimental/\\xfe/__init__.py",
}


@pytest.fixture
def unreadable_tree(tree):
    """TREE plus a file of every kind the checker cannot read, parse or name."""
    write_tree(tree, {
        # each names the experimental package, so a rule must read it
        "flashinfer/nul.py": b"import flashinfer.experimental\nx = 1\x00\n",
        "flashinfer/encoding.py": b"# -*- coding: no-such-codec -*-\nimport flashinfer.experimental\n",
        "flashinfer/nested.py": "import flashinfer.experimental\nx = " + "(" * 200_000 + ")" * 200_000 + "\n",
    })
    os.mkfifo(tree / "flashinfer/fifo.py")
    os.symlink(os.devnull, tree / "flashinfer/device.py")
    os.symlink(tree / "flashinfer/looped.py", tree / "flashinfer/looping.py")
    os.symlink(tree / "flashinfer/looping.py", tree / "flashinfer/looped.py")
    write_raw_name(tree, b"flashinfer/\xff\xfe.py", b"x = 1\n")
    write_raw_name(tree, b"docs/api/\xff.rst", b"Page\n====\n")
    write_raw_name(tree, b"flashinfer/experimental/\xfe/__init__.py")  # a feature directory's name
    return tree


def _reported(output_format: str, output: str) -> set:
    """(path, rule) of every finding in a report."""
    if output_format == "json":
        return {(f["path"], f["rule"]) for f in json.loads(output)["findings"]}
    if output_format == "sarif":
        return {
            (unquote(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]), r["ruleId"])
            for r in json.loads(output)["runs"][0]["results"]
        }
    pattern = r"^::error file=(.*?),line=.*?::(\w+) " if output_format == "github" else r"^(.*?):\d+:\d+: (\w+) "
    return {(m[1], m[2]) for m in re.finditer(pattern, output, re.M)}


@pytest.mark.parametrize("output_format", sorted(FORMATS))
def test_unreadable_files_are_exp000_in_every_format(unreadable_tree, output_format):
    """Each is one EXP000 finding, the rest of the tree is still checked, and the
    report is valid UTF-8 (valid JSON without lone surrogates for json and sarif)."""
    done = subprocess.run(
        [sys.executable, "-m", "policy_checks", "run", "--root", str(unreadable_tree), "--format", output_format],
        capture_output=True, timeout=120,
    )
    assert done.returncode == 1, done.stderr.decode(errors="replace")
    output = done.stdout.decode("utf-8")
    reported = _reported(output_format, output)
    assert {path for path, rule in reported if rule == "EXP000"} == UNREADABLE
    assert ("flashinfer/gemm.py", "EXP001") in reported
    assert ("flashinfer/experimental/\\xfe/__init__.py", "EXP009") in reported  # lacks its record
    assert output.count("name is not valid UTF-8") == 3
    if output_format in ("json", "sarif"):
        json.dumps(json.loads(output), ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate


def test_select_ignore_and_statistics(tree):
    assert invoke(tree, "--ignore", "EXP001").exit_code == 0
    assert invoke(tree, "--select", "EXP002,EXP003").exit_code == 0
    assert invoke(tree, "--select", "EXP").exit_code == 1
    stats = invoke(tree, "--statistics").output.splitlines()
    assert stats[:2] == ["     1  EXP001  [*] core-imports-experimental", "1 finding(s) in 4 files checked"]
    assert not any("flashinfer/gemm.py" in line for line in stats)  # a summary only
    bad = invoke(tree, "--select", "EXP099")
    assert bad.exit_code == 2 and "EXP099" in bad.output


def test_jobs_option_and_paths(tree):
    assert invoke(tree, "--jobs", "2").exit_code == 1
    only = invoke(tree, str(tree / "flashinfer/experimental"))
    assert only.exit_code == 0, only.output


@pytest.mark.parametrize(
    "setting,key",
    [
        ("package = 3", "package"),
        ("typo = 1", "typo"),
        ("select = ['nope']", "select"),
        ("type-checking-imports = 'yes'", "type-checking-imports"),
        ("per-file-ignores = ['x']", "per-file-ignores"),
        ("experimental-package = 'other.experimental'", "experimental-package"),
        ("aot-modules = ['not a module']", "aot-modules"),
        ("select = ['EXP099']", "EXP099"),  # well formed, but no such rule: would check nothing
        ("ignore = ['EXP1']", "EXP1"),
        ("per-file-ignores = {'tests/*' = ['EXP098']}", "EXP098"),
    ],
)
def test_invalid_setting_is_a_clear_error(tree, setting, key):
    (tree / "pyproject.toml").write_text(f"[tool.policy-check]\n{setting}\n")
    result = invoke(tree)
    assert result.exit_code == 2
    assert key in result.output and "Traceback" not in result.output


def test_unparsable_pyproject_is_exit_2(tree):
    (tree / "pyproject.toml").write_text("[tool.policy-check\n")
    assert invoke(tree).exit_code == 2


def test_settings_change_the_layout(tree):
    (tree / "pyproject.toml").write_text(
        "[tool.policy-check]\nper-file-ignores = {'flashinfer/gemm.py' = ['EXP001']}\n"
    )
    assert invoke(tree).exit_code == 0
    write_tree(tree, {"pyproject.toml": "[tool.policy-check]\nexclude = ['flashinfer/gemm.py']\n"})
    assert invoke(tree).exit_code == 0


def test_rules_and_explain():
    runner = CliRunner()
    table = runner.invoke(main, ["rules"]).output
    for rule_id in RULES:
        assert rule_id in table
    assert "SUP001" in table and "SUP002" in table
    explained = runner.invoke(main, ["explain", "exp004"])
    assert explained.exit_code == 0 and "unmarked-experimental-checker" in explained.output
    assert "Invalid example" in explained.output
    assert runner.invoke(main, ["explain", "EXP042"]).exit_code == 2
    assert "0.1.0" in runner.invoke(main, ["--version"]).output


def test_root_is_found_from_the_working_directory(tree, monkeypatch):
    monkeypatch.chdir(tree / "flashinfer")
    result = CliRunner().invoke(main, ["run", "--no-cache"])
    assert result.exit_code == 1 and "flashinfer/gemm.py:2:1" in result.output


def test_python_dash_m_entry_point(tree):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "policy_checks", "run", "--root", str(tree), "--format", "json", "--no-cache"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1 and json.loads(done.stdout)["findings"][0]["rule"] == "EXP001"


def test_a_root_without_the_package_is_an_error(tmp_path):
    result = CliRunner().invoke(main, ["run", "--root", str(tmp_path)])
    assert result.exit_code == 2 and "no package 'flashinfer'" in result.output


def test_an_internal_error_exits_2(tree, monkeypatch):
    from policy_checks.rules.registry import RULES

    def broken(project):
        raise RuntimeError("bug")

    monkeypatch.setattr(RULES["EXP005"], "check", broken)
    result = invoke(tree)
    assert result.exit_code == 2 and "internal error" in result.output and "RuntimeError: bug" in result.output


def test_a_report_format_is_imported_only_when_used():
    """The commands and the report package load no format; looking one up loads it alone."""
    code = (
        "import sys\n"
        "import policy_checks.cli.run, policy_checks.cli.baseline, policy_checks.cli.rules\n"
        "from policy_checks.report import FORMATS\n"
        "formats = lambda: sorted(m for m in sys.modules if m.startswith('policy_checks.report.')\n"
        "                         and m.rpartition('.')[2] in {'text', 'json_report', 'github', 'sarif', 'rule_help'})\n"
        "before = formats()\n"
        "json_report = FORMATS['json']\n"
        "print(before, formats(), json_report.__name__, sorted(FORMATS))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == ["[]", "['policy_checks.report.json_report']", "json_report",
                                   "['github',", "'json',", "'sarif',", "'text']"]
