"""``policy-check run --policy-from REV``: a pull request cannot switch the gate off
for itself. Each route by which a tree's own policy could hide a finding (settings,
a suppression comment, a baseline entry, a weakened pytest configuration), in a real
git repository: green without ``--policy-from`` (the hole), failing with it, the
finding listed with what hid it in every format. And what must stay green."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from click.testing import CliRunner

from policy_checks.engine import policy_change
from policy_checks.cli import main
from policy_checks.model.config import load
from policy_checks.engine.context import Context

from ..conftest import write_tree
from ..cli.test_commands import TREE

IMPORT = "from flashinfer.experimental.feat import helper"
# TREE's feature with its whole record, a stable lane, an experimental lane, an example: clean
BASE = {
    **{k: v for k, v in TREE.items() if k != "flashinfer/gemm.py"},
    "pyproject.toml": "[project]\nname = 'x'\n\n[tool.policy-check]\nexclude = ['build']\n",
    "flashinfer/gemm.py": "import os\n\n\ndef mm(a, b):\n    return a @ b\n",
    "flashinfer/experimental/feat/helper.py": "def run():\n    pass\n",
    "pytest.ini": "[pytest]\nnorecursedirs = .git tests/experimental\n",
    "tests/test_gemm.py": "def test_mm():\n    pass\n",
    "tests/experimental/feat/test_feat.py": "import flashinfer.experimental.feat\n",
    "examples/feat_example.py": "# uses feat\nimport flashinfer\n",
}
VIOLATION = "import os\n" + IMPORT + "\n\n\ndef mm(a, b):\n    return a @ b\n"  # EXP001 at line 2


def git(root, *args) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env, timeout=60)
    return done.stdout.decode().strip()


def commit(root, message, files=None, removed=()) -> str:
    if files:
        write_tree(root, files)
    for rel in removed:
        (root / rel).unlink()
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD")


def cli(root, *args):
    return CliRunner().invoke(main, ["run", "--root", str(root), "--no-cache", *args])


def settings_with(extra: str) -> str:
    return BASE["pyproject.toml"] + extra


@pytest.fixture
def repo(tmp_path):
    """A repository whose first commit (returned as `repo.base`) is the clean base."""
    root = write_tree(tmp_path / "repo", BASE)
    git(root, "init", "-q")
    return root


@pytest.fixture
def base(repo):
    sha = commit(repo, "base")
    assert cli(repo).exit_code == 0, cli(repo).output
    return sha


def head_with(repo, files, removed=()):
    commit(repo, "the pull request", files, removed)


# (files the pull request writes, files it removes, the cause, words of the reason)
ROUTES = {
    "ignore": (
        {"flashinfer/gemm.py": VIOLATION, "pyproject.toml": settings_with('ignore = ["EXP"]\n')},
        "ignore", 'hidden by `ignore = ["EXP"]` added in pyproject.toml',
    ),
    "extend-exclude": (
        {"flashinfer/gemm.py": VIOLATION, "pyproject.toml": settings_with('extend-exclude = ["flashinfer/gemm.py"]\n')},
        "extend-exclude", 'hidden by `extend-exclude` entry "flashinfer/gemm.py" added in pyproject.toml',
    ),
    "per-file-ignores": (
        {"flashinfer/gemm.py": VIOLATION,
         "pyproject.toml": settings_with('per-file-ignores = { "flashinfer/gemm.py" = ["EXP001"] }\n')},
        "per-file-ignores",
        'hidden by `per-file-ignores` entry "flashinfer/gemm.py" = ["EXP001"] added in pyproject.toml',
    ),
    "experimental-package": (
        {"flashinfer/gemm.py": VIOLATION,
         "pyproject.toml": settings_with('experimental-package = "flashinfer.other"\n')},
        "setting:experimental-package",
        'hidden by `experimental-package = "flashinfer.other"` added in pyproject.toml',
    ),
    "suppression": (
        {"flashinfer/gemm.py": VIOLATION.replace(IMPORT, IMPORT + "  # policy: ignore[EXP001] temporary")},
        "suppression", "hidden by a new suppression comment `policy: ignore[EXP001] temporary`",
    ),
}


def assert_hidden(repo, base, cause, words, path="flashinfer/gemm.py", line=2, rule="EXP001"):
    """Green without --policy-from; with it, exit 1 and the finding listed as
    hidden, with its cause, in text and JSON."""
    plain = cli(repo)
    assert plain.exit_code == 0 and "All clear" in plain.output, plain.output  # the hole
    text = cli(repo, "--policy-from", base)
    assert text.exit_code == 1, text.output
    assert "Hidden by this pull request's policy change" in text.output
    assert f"{path}:{line}:1: {rule} " in text.output and words in text.output, text.output
    assert "hidden by this pull request's policy change in" in text.output.splitlines()[-1]
    document = json.loads(cli(repo, "--policy-from", base, "--format", "json").output)
    assert document["findings"] == []
    assert document["policy_from"] == {"revision": base, "commit": base}
    assert document["policy_change_approved"] is False
    [hidden] = document["hidden_by_policy_change"]
    assert (hidden["path"], hidden["line"], hidden["rule"], hidden["severity"]) == (path, line, rule, "error")
    assert cause in hidden["causes"] and words in hidden["reason"]
    return hidden


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_each_settings_or_suppression_route_is_caught(repo, base, route):
    files, cause, words = ROUTES[route]
    head_with(repo, files)
    assert_hidden(repo, base, cause, words)


def test_a_baseline_entry_added_at_head_is_caught(repo, base):
    write_tree(repo, {"flashinfer/gemm.py": VIOLATION})
    assert CliRunner().invoke(main, ["baseline", "--root", str(repo), "--no-cache"]).exit_code == 0
    head_with(repo, {})
    hidden = assert_hidden(repo, base, "baseline", "accepted by a baseline entry added at head")
    assert (hidden["module"], hidden["scope"], hidden["subject"]) == (
        "flashinfer.gemm", "<module>", "flashinfer.experimental.feat.helper"
    )


def test_a_baseline_count_raised_at_head_is_caught(repo):
    old = "import os\n" + IMPORT + "\n"
    write_tree(repo, {"flashinfer/gemm.py": old})
    assert CliRunner().invoke(main, ["baseline", "--root", str(repo), "--no-cache"]).exit_code == 0
    base = commit(repo, "a base with debt")
    twice = old + IMPORT + "\n"
    write_tree(repo, {"flashinfer/gemm.py": twice})
    text = (repo / "policy-check-baseline.json").read_text().replace('"count": 1', '"count": 2')
    head_with(repo, {"policy-check-baseline.json": text})
    assert_hidden(repo, base, "baseline", "accepted by a baseline entry whose count was raised at head", line=3)


@pytest.mark.parametrize("how", ["suppression", "per-file-ignores"])
def test_a_pytest_configuration_that_breaks_lane_isolation_is_caught(repo, base, how):
    """The stable lane would collect tests/experimental (whose tests import
    experimental code); the configuration's EXP008 finding is hidden in the same
    pull request."""
    files = {"tests/experimental/feat/test_more.py": "from flashinfer.experimental.feat import helper\n"}
    if how == "suppression":
        files["pytest.ini"] = "[pytest]\nnorecursedirs = .git  # policy: ignore[EXP008] one lane for now\n"
        cause, words = "suppression", "hidden by a new suppression comment `# policy: ignore[EXP008] one lane for now`"
    else:
        files["pytest.ini"] = "[pytest]\nnorecursedirs = .git\n"
        files["pyproject.toml"] = settings_with('per-file-ignores = { "pytest.ini" = ["EXP008"] }\n')
        cause, words = "per-file-ignores", 'hidden by `per-file-ignores` entry "pytest.ini" = ["EXP008"] added'
    head_with(repo, files)
    hidden = assert_hidden(repo, base, cause, words, path="pytest.ini", line=2, rule="EXP008")
    assert "pytest-config" in hidden["causes"]
    assert ("the pytest configuration EXP008 reads changed in this pull request: pytest.ini with "
            "norecursedirs = .git tests/experimental at base") in hidden["reason"]


def test_github_and_sarif_carry_what_the_change_hides(repo, base):
    head_with(repo, ROUTES["ignore"][0])
    github = cli(repo, "--policy-from", base, "--format", "github")
    assert github.exit_code == 1
    [line] = github.output.splitlines()
    assert line.startswith("::error file=flashinfer/gemm.py,line=2,col=1,title=EXP001 core-imports-experimental "
                           "(hidden by a policy change)::EXP001 ")
    assert 'hidden by `ignore = ["EXP"]` added in pyproject.toml' in line
    sarif = cli(repo, "--policy-from", base, "--format", "sarif")
    assert sarif.exit_code == 1
    [result] = json.loads(sarif.output)["runs"][0]["results"]
    assert result["ruleId"] == "EXP001" and result["level"] == "error" and "suppressions" not in result
    assert 'hidden by `ignore = ["EXP"]` added in pyproject.toml' in result["message"]["text"]
    assert result["properties"]["causes"] == ["ignore"]
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 1}


def test_an_approved_change_passes_but_is_still_listed(repo, base):
    head_with(repo, ROUTES["suppression"][0])
    approved = cli(repo, "--policy-from", base, "--approved-policy-change")
    assert approved.exit_code == 0, approved.output
    assert "approved by a maintainer" in approved.output and "flashinfer/gemm.py:2:1: EXP001" in approved.output
    assert approved.output.splitlines()[-1].startswith("All clear: ")
    assert "1 finding(s) hidden by an approved policy change" in approved.output
    document = json.loads(cli(repo, "--policy-from", base, "--approved-policy-change", "--format", "json").output)
    assert document["policy_change_approved"] is True and len(document["hidden_by_policy_change"]) == 1
    github = cli(repo, "--policy-from", base, "--approved-policy-change", "--format", "github").output
    assert github.startswith("::warning file=flashinfer/gemm.py,line=2,")
    [result] = json.loads(cli(repo, "--policy-from", base, "--approved-policy-change", "--format", "sarif").output)[
        "runs"][0]["results"]
    assert result["level"] == "warning" and result["suppressions"][0]["status"] == "accepted"
    # and it means nothing without --policy-from
    assert cli(repo, "--approved-policy-change").exit_code == 2


def test_the_working_tree_is_judged_not_only_commits(repo, base):
    """Uncommitted changes count: the tree is what is checked, REV only gives the policy."""
    write_tree(repo, ROUTES["ignore"][0])
    assert cli(repo, "--policy-from", "HEAD").exit_code == 1


# what stays green -----------------------------------------------------------------------


def test_an_unrelated_settings_change_stays_green(repo, base):
    head_with(repo, {"pyproject.toml": BASE["pyproject.toml"] + "\n[tool.ruff]\nline-length = 120\n"})
    result = cli(repo, "--policy-from", base)
    assert result.exit_code == 0 and "Hidden" not in result.output, result.output


def test_tightening_stays_green_and_what_it_finds_is_reported_as_usual(repo):
    legacy = "def old():\n    from flashinfer.experimental.feat import helper\n    return helper\n"  # EXP007
    base = commit(repo, "a base that ignores EXP007", {
        "pyproject.toml": settings_with('ignore = ["EXP007"]\n'), "flashinfer/legacy.py": "X = 1\n",
    })
    head_with(repo, {"pyproject.toml": BASE["pyproject.toml"]})
    assert cli(repo, "--policy-from", base).exit_code == 0
    write_tree(repo, {"flashinfer/legacy.py": legacy})
    document = json.loads(cli(repo, "--policy-from", base, "--format", "json").output)
    assert [(f["path"], f["rule"]) for f in document["findings"]] == [("flashinfer/legacy.py", "EXP007")]
    assert document["hidden_by_policy_change"] == []


def test_paying_debt_off_stays_green(repo):
    write_tree(repo, {"flashinfer/gemm.py": VIOLATION})
    assert CliRunner().invoke(main, ["baseline", "--root", str(repo), "--no-cache"]).exit_code == 0
    base = commit(repo, "a base with debt")
    assert cli(repo, "--policy-from", base).exit_code == 0
    head_with(repo, {"flashinfer/gemm.py": BASE["flashinfer/gemm.py"],
                     "policy-check-baseline.json": '{\n  "policy-check-baseline": 1,\n  "entries": []\n}\n'})
    result = cli(repo, "--policy-from", base)
    assert result.exit_code == 0 and "Hidden" not in result.output, result.output
    head_with(repo, {}, removed=["policy-check-baseline.json"])  # the file gone altogether
    assert cli(repo, "--policy-from", base).exit_code == 0


def test_a_suppression_that_moved_stays_the_bases(repo):
    suppressed = IMPORT + "  # policy: ignore[EXP001] hand-off reviewed in #12"
    base = commit(repo, "a base with a suppression", {"flashinfer/gemm.py": f"import os\n{suppressed}\n"})
    assert cli(repo).exit_code == 0
    moved = f'"""GEMM."""\n\nimport sys\n\n{suppressed}\nimport os\n\nX = sys.argv\n'
    head_with(repo, {"flashinfer/gemm.py": moved})
    result = cli(repo, "--policy-from", base)
    assert result.exit_code == 0 and "Hidden" not in result.output, result.output
    # the same comment behind another import is new: the base never accepted that import
    other = moved.replace(IMPORT, "from flashinfer.experimental.feat import run")
    head_with(repo, {"flashinfer/gemm.py": other})
    assert cli(repo).exit_code == 0
    assert cli(repo, "--policy-from", base).exit_code == 1
    # and a copy of the accepted line is one more than the base had
    head_with(repo, {"flashinfer/gemm.py": moved + "if X:\n    " + suppressed + "\n"})
    assert cli(repo).exit_code == 0
    document = json.loads(cli(repo, "--policy-from", base, "--format", "json").output)
    assert [(h["line"], h["causes"]) for h in document["hidden_by_policy_change"]] == [(10, ["suppression"])]


def test_a_new_finding_under_an_unchanged_policy_is_reported_as_usual(repo, base):
    head_with(repo, {"flashinfer/gemm.py": VIOLATION})
    document = json.loads(cli(repo, "--policy-from", base, "--format", "json").output)
    assert [(f["path"], f["line"]) for f in document["findings"]] == [("flashinfer/gemm.py", 2)]
    assert document["hidden_by_policy_change"] == []


def test_the_second_evaluation_parses_nothing(repo, base, tmp_path):
    head_with(repo, ROUTES["suppression"][0])
    for use_cache in (False, True):
        context = Context(repo.resolve(), load(repo), use_cache=use_cache, cache_dir=tmp_path / "cache")
        comparison = policy_change.evaluate(context, base, progress=False)
        assert comparison.base.parsed == 0 and len(comparison.hidden) == 1
    # another experimental package at the base makes other files worth a parse: still right
    head_with(repo, ROUTES["experimental-package"][0])
    comparison = policy_change.evaluate(Context(repo.resolve(), load(repo), use_cache=False), base, progress=False)
    assert [h.causes for h in comparison.hidden] == [("setting:experimental-package",)]
    assert comparison.base.parsed > 0  # gemm.py spells no "other": the head did not parse it whole


# errors ---------------------------------------------------------------------------------


def test_errors_exit_2_with_a_clear_message(repo, base, tmp_path):
    unknown = cli(repo, "--policy-from", "no-such-branch")
    assert unknown.exit_code == 2 and "unknown revision 'no-such-branch'" in unknown.output
    for bad in ("-c", "HEAD; rm -rf /", "a\nb"):
        answer = cli(repo, "--policy-from", bad)
        assert answer.exit_code == 2 and "is not a git revision" in answer.output
    elsewhere = write_tree(tmp_path / "not-a-repo", BASE)
    answer = cli(elsewhere, "--policy-from", "HEAD")
    assert answer.exit_code == 2 and "is not in a git work tree" in answer.output
    broken = commit(repo, "broken settings", {"pyproject.toml": settings_with("bogus = 1\n")})
    head_with(repo, {"pyproject.toml": BASE["pyproject.toml"]})
    answer = cli(repo, "--policy-from", broken)
    assert answer.exit_code == 2 and "pyproject.toml at" in answer.output and "unknown key 'bogus'" in answer.output
    bad_baseline = commit(repo, "a baseline that is not one", {"policy-check-baseline.json": "[]\n"})
    head_with(repo, {}, removed=["policy-check-baseline.json"])
    answer = cli(repo, "--policy-from", bad_baseline)
    assert answer.exit_code == 2 and "policy-check-baseline.json at" in answer.output


def test_absent_at_base_means_no_settings_no_baseline_no_suppressions(repo):
    """A base without pyproject.toml has the default settings; so does one whose
    pyproject.toml is a symbolic link (git stores a link, not a file)."""
    base = commit(repo, "no settings at the base", removed=["pyproject.toml"])
    head_with(repo, {"flashinfer/gemm.py": VIOLATION, "pyproject.toml": settings_with('ignore = ["EXP001"]\n')})
    document = json.loads(cli(repo, "--policy-from", base, "--format", "json").output)
    [hidden] = document["hidden_by_policy_change"]
    assert hidden["causes"] == ["ignore"] and 'hidden by `ignore = ["EXP001"]` added' in hidden["reason"]
    write_tree(repo, {"settings.toml": settings_with('ignore = ["EXP"]\n')})
    (repo / "pyproject.toml").unlink()
    os.symlink("settings.toml", repo / "pyproject.toml")
    linked = commit(repo, "settings through a symbolic link")
    assert cli(repo).exit_code == 0  # the link is followed in the tree
    document = json.loads(cli(repo, "--policy-from", linked, "--format", "json").output)
    assert [h["causes"] for h in document["hidden_by_policy_change"]] == [["ignore"]]


def test_a_project_in_a_subdirectory_of_the_repository(tmp_path):
    """Paths are the project's (relative to --root), read at REV below the same directory."""
    repo = tmp_path / "mono"
    project = write_tree(repo / "packages" / "fi", BASE)
    write_tree(repo, {"README.md": "a monorepo\n", "pyproject.toml": "[tool.other]\n"})
    git(repo, "init", "-q")
    base = commit(repo, "base")
    assert cli(project, "--policy-from", base).exit_code == 0
    files, _, words = ROUTES["suppression"]
    write_tree(project, files)
    commit(repo, "the pull request")
    result = cli(project, "--policy-from", base)
    assert result.exit_code == 1 and words in result.output, result.output
    moved = f"import os\n\n{IMPORT}  # policy: ignore[EXP001] temporary\n"
    base = commit(repo, "the suppression at the base")
    write_tree(project, {"flashinfer/gemm.py": moved})
    assert cli(project, "--policy-from", base).exit_code == 0
