"""Hostile PRs that weaken the policy, through the fake GitHub: each route is flagged from the files'
texts at base and head, fails the ``experimental-track`` status until a maintainer approves, and
benign PRs stay green without an alarm.

Every PR here is one the bot used to answer with "success, Not an Experimental Track PR" and no
comment: it read only the diffs GitHub lists, and only the baseline's.
"""

from __future__ import annotations

import difflib
import re

import pytest

from policy_checks.engine.baseline import Fingerprint, dumps
from policy_checks.bot import pr_check
from policy_checks.bot.pr_check import PR_MARKER

REPO = "acme/widgets"
POLICY_HEADING = "**Policy weakened: a maintainer must approve**"
DEBT_HEADING = "**Baseline debt added: a maintainer must approve**"
BASELINE = "policy-check-baseline.json"

PYPROJECT = """[project]
name = "flashinfer"

[tool.ruff]
line-length = 120

[tool.policy-check]
package = "flashinfer"
experimental-package = "flashinfer.experimental"
aot-modules = ["flashinfer.aot"]
docs = ["docs/api/*.rst"]
stable-tests = "tests"
experimental-tests = "tests/experimental"
"""
PYTEST_INI = """[pytest]
norecursedirs = test_helpers tests/experimental tests/round_trips .git .venv build
addopts = --import-mode=importlib -p no:cacheprovider
timeout = 900
"""
WORKFLOW = """name: Policy check
on:
  pull_request:
jobs:
  policy-check:
    runs-on: ubuntu-latest
    steps:
      - run: policy-check run --format github
"""
TESTS_WORKFLOW = """name: Tests
on:
  pull_request:
permissions:
  contents: read
jobs:
  lane:
    runs-on: ubuntu-latest
    steps:
      - run: python -m pytest tests/
"""
GEMM = '''"""GEMM entry points."""
import torch


def mm_bf16(a, b):
    from flashinfer.experimental.splitk import run  # policy: ignore[EXP007] a lazy entry point
    return run(a, b)


NOTE = """
    from flashinfer.experimental.moe import run  # policy: ignore[EXP001] hidden in a string
"""
'''
MOE = ("EXP001", "flashinfer.mega_moe_v3", "<module>", "flashinfer.experimental.mega_moe_v3.runtime")
B12X = ("EXP009", "flashinfer/experimental/b12x/__init__.py", "", "b12x: FEATURE.toml")


def baseline_text(*entries: tuple) -> str:
    return dumps({Fingerprint(*entry): 1 for entry in entries})


BASE_FILES = {
    "pyproject.toml": PYPROJECT, "pytest.ini": PYTEST_INI, ".github/workflows/policy-check.yml": WORKFLOW,
    ".github/workflows/tests.yml": TESTS_WORKFLOW, ".github/CODEOWNERS": "* @acme/core\n",
    "flashinfer/__init__.py": "", "flashinfer/gemm.py": GEMM, "flashinfer/mega_moe_v3.py": "import x\n",
    "flashinfer/mega_moe_v4.py": "import x\n", "docs/baseline-example.json": baseline_text(B12X),
    BASELINE: baseline_text(B12X, MOE), "README.md": "# FlashInfer\n",
}


@pytest.fixture
def repo(github_api):
    github_api.add_collaborator(REPO, "maintainer", "maintain")
    github_api.add_collaborator(REPO, "reader", "read")
    github_api.add_collaborator(REPO, "octocat", "write")
    github_api.add_user("mallory")
    github_api.repo(REPO).files.update(BASE_FILES)
    return github_api


def patch_of(old: str | None, new: str | None) -> str:
    lines = difflib.unified_diff((old or "").splitlines(), (new or "").splitlines(), lineterm="", n=3)
    return "\n".join(list(lines)[2:])


def pull(g, head: dict, *, renames: dict | None = None, body: str | None = "A change.", author: str = "mallory",
         patches: dict | None = None, base: dict | None = None) -> int:
    """A PR changing each path of ``head`` to its text (None: removed), ``renames`` new path -> old path, on a
    base of `BASE_FILES` and ``base``; the listing carries the real diff of each file unless ``patches`` gives
    another."""
    renames = renames or {}
    before = {**BASE_FILES, **(base or {})}
    listing = []
    for path, text in head.items():
        old = before.get(renames.get(path, path))
        status = ("renamed" if path in renames else "removed" if text is None else "added" if old is None
                  else "modified")
        patch = (patches or {}).get(path, patch_of(old, text))
        listing.append((path, patch, status, renames[path]) if path in renames else (path, patch, status))
    number = g.add_pull(REPO, body, listing, author=author)
    touched = [*head, *renames.values()]
    g.set_contents(REPO, number, base={path: before[path] for path in touched if path in before},
                   head={**{old: None for old in renames.values()}, **head})
    return number


def check(bot_cli, pr: int):
    return bot_cli("pr", "--repo", REPO, "--pr", str(pr))


def status_of(g, pr: int) -> dict:
    sha = g.repo(REPO).pulls[pr]["head"]["sha"]
    return next(s for s in g.repo(REPO).statuses[sha] if s["context"] == "experimental-track")


def comment_of(g, pr: int) -> str:
    [comment] = [c for c in g.comments_by(REPO, pr) if c["body"].startswith(PR_MARKER)]
    return comment["body"]


def approve_command(body: str) -> str:
    return re.search(r"`(/experimental-track approve-policy [0-9a-f]{16})`", body).group(1)


def assert_flagged(g, bot_cli, pr: int, *expected: str) -> str:
    result = check(bot_cli, pr)
    assert result.exit_code == 1, result.output
    status = status_of(g, pr)
    assert status["state"] == "failure" and status["description"].startswith("this PR weakens the policy")
    body = comment_of(g, pr)
    assert POLICY_HEADING in body
    for text in expected:
        assert text in body, body
    return body


def assert_green(g, bot_cli, pr: int, comment: bool = False) -> None:
    result = check(bot_cli, pr)
    assert result.exit_code == 0, result.output
    assert status_of(g, pr)["state"] == "success"
    if comment:
        assert POLICY_HEADING not in comment_of(g, pr) and "Policy weakened" not in comment_of(g, pr)
    else:
        assert [c for c in g.comments_by(REPO, pr) if c["body"].startswith(PR_MARKER)] == []


# ----- the checker's settings ---------------------------------------------------------------------

SECTION = "[tool.policy-check]\n"


@pytest.mark.parametrize("head, expected", [
    (PYPROJECT.replace(SECTION, SECTION + 'ignore = ["EXP"]\n'),
     "`[tool.policy-check]` stops checking `EXP000`, `EXP001`, `EXP002`"),
    (PYPROJECT.replace(SECTION, SECTION + 'select = ["EXP002"]\n'), "stops checking `EXP000`, `EXP001`, `EXP003`"),
    (PYPROJECT.replace(SECTION, SECTION + 'extend-exclude = ["flashinfer/gemm.py"]\n'),
     "`[tool.policy-check]` excludes `flashinfer/gemm.py` from the check"),
    (PYPROJECT + 'per-file-ignores = { "flashinfer/gemm.py" = ["EXP001"] }\n',
     "`per-file-ignores` stops checking `EXP001` in `flashinfer/gemm.py`"),
    (PYPROJECT.replace('"flashinfer.experimental"', '"flashinfer.experimental_v2"'),
     "`experimental-package` changes from `flashinfer.experimental` to `flashinfer.experimental_v2`"),
    (PYPROJECT.replace('experimental-tests = "tests/experimental"', 'experimental-tests = "tests"'),
     "`experimental-tests` changes from `tests/experimental` to `tests`"),
    # the audit calls the listing this names: one that lists nothing would hide every AOT spec
    (PYPROJECT.replace(SECTION, SECTION + 'aot-listing = "nothing_listed"\n'),
     "`aot-listing` changes from (empty) to `nothing_listed`"),
    (PYPROJECT.replace(SECTION, SECTION + "ignore = [\n"), "the checker cannot read `[tool.policy-check]`"),
    (PYPROJECT.replace(SECTION, SECTION + 'ignore = ["EXP999"]\n'), "no rule id starts with 'EXP999'"),
], ids=["ignore", "select", "extend-exclude", "per-file-ignores", "experimental-package", "experimental-tests",
        "aot-listing", "not-toml", "unknown-rule"])
def test_settings_that_let_more_through_are_flagged(repo, bot_cli, head, expected):
    pr = pull(repo, {"pyproject.toml": head})
    assert_flagged(repo, bot_cli, pr, expected)


def test_settings_that_tighten_are_not_flagged(repo, bot_cli):
    base = PYPROJECT.replace(SECTION, SECTION + 'ignore = ["EXP007"]\nextend-exclude = ["build2"]\n')
    head = PYPROJECT.replace(SECTION, SECTION + 'type-checking-imports = true\nselect = ["EXP", "SUP"]\n')
    pr = pull(repo, {"pyproject.toml": head}, base={"pyproject.toml": base})
    assert_green(repo, bot_cli, pr)


def test_a_tool_ruff_section_is_not_flagged(repo, bot_cli):
    pr = pull(repo, {"pyproject.toml": PYPROJECT.replace("line-length = 120", "line-length = 100\n[tool.ruff.lint]\n"
                                                                              'select = ["E"]')})
    assert_green(repo, bot_cli, pr)


# ----- suppressions -------------------------------------------------------------------------------

def test_an_added_suppression_is_flagged(repo, bot_cli):
    head = GEMM.replace("import torch\n", "import torch\nimport flashinfer.experimental.moe  # policy: ignore[EXP001] "
                                          "needed\n")
    pr = pull(repo, {"flashinfer/gemm.py": head})
    assert_flagged(repo, bot_cli, pr, "`flashinfer/gemm.py` adds the suppression "
                                      "`policy: ignore[EXP001] needed`")


def test_an_unresolved_load_made_visible_by_a_suppression_needs_a_maintainer(repo, bot_cli, tmp_path):
    """Deny by default at import (EXP010): a load the checker cannot resolve stays red
    unless suppressed with a reason, and the bot holds that suppression for a maintainer;
    the explicit twin (a literal name) is green for both."""
    from policy_checks.model.config import Settings
    from policy_checks.engine.runner import run

    from ..conftest import write_tree

    load = "import importlib, os\nPLUGIN = importlib.import_module(os.environ.get('FI_PLUGIN', 'flashinfer.norm'))"
    explicit = "import importlib\nNORM = importlib.import_module('flashinfer.norm')\n"
    files = {"flashinfer/__init__.py": "", "flashinfer/norm.py": "", "flashinfer/experimental/__init__.py": ""}
    checked = {name: run(write_tree(tmp_path / name, {**files, "flashinfer/gemm.py": GEMM + text}), Settings(),
                         select=["EXP010"], use_cache=False, jobs=1, progress=False).findings
               for name, text in (("bare", load + "\n"), ("twin", explicit))}
    assert [f.rule for f in checked["bare"]] == ["EXP010"] and checked["twin"] == []
    pr = pull(repo, {"flashinfer/gemm.py": GEMM + load + "  # policy: ignore[EXP010] plugins pick a module\n"})
    assert_flagged(repo, bot_cli, pr, "adds the suppression `policy: ignore[EXP010] plugins pick a module`")
    assert_green(repo, bot_cli, pull(repo, {"flashinfer/gemm.py": GEMM + explicit}))


def test_a_suppression_out_of_a_string_is_flagged_though_its_line_is_unchanged(repo, bot_cli):
    """The line's text is at the base, inside a string; at the head the string is gone and it is a comment."""
    head = GEMM.replace('NOTE = """\n', "if False:\n").replace('# policy: ignore[EXP001] hidden in a string\n"""\n',
                                                              "# policy: ignore[EXP001] hidden in a string\n")
    pr = pull(repo, {"flashinfer/gemm.py": head})
    assert_flagged(repo, bot_cli, pr, "adds the suppression `policy: ignore[EXP001] hidden in a string`")


def test_a_copied_suppressed_line_is_flagged_and_a_moved_one_is_not(repo, bot_cli):
    line = "    from flashinfer.experimental.splitk import run  # policy: ignore[EXP007] a lazy entry point\n"
    copied = GEMM + "\n\ndef mm_fp8(a, b):\n" + line + "    return run(a, b)\n"
    pr = pull(repo, {"flashinfer/gemm.py": copied})
    assert_flagged(repo, bot_cli, pr, "adds the suppression `policy: ignore[EXP007] a lazy entry point`")
    moved = GEMM.replace("def mm_bf16(a, b):\n" + line, "def mm_bf16(a, b):\n    x = 1\n" + line)
    pr = pull(repo, {"flashinfer/gemm.py": moved})
    assert_green(repo, bot_cli, pr)


def test_a_suppression_in_the_pytest_configuration_is_flagged(repo, bot_cli):
    head = PYTEST_INI.replace("norecursedirs", "# policy: ignore[EXP008] not needed here\nnorecursedirs")
    pr = pull(repo, {"pytest.ini": head})
    assert_flagged(repo, bot_cli, pr, "`pytest.ini` adds the suppression `# policy: ignore[EXP008] not needed here`")


# ----- the test lanes -----------------------------------------------------------------------------

@pytest.mark.parametrize("head, expected", [
    ({"pytest.ini": PYTEST_INI.replace(" tests/experimental", "")},
     "pytest's `norecursedirs` changes from `test_helpers tests/experimental"),
    ({"pytest.ini": PYTEST_INI.replace("addopts = ", "addopts = --ignore=tests/test_lanes.py ")},
     "pytest's `addopts` changes"),
    ({"pytest.toml": '[pytest]\naddopts = ["-p", "no:cacheprovider"]\n'},  # found before pytest.ini
     "pytest's `norecursedirs` changes from `test_helpers tests/experimental tests/round_trips .git .venv build` "
     "to unset (pytest reads `pytest.toml`)"),
    ({"conftest.py": "collect_ignore_glob = []\n"}, "the root `conftest.py` is added"),
    ({"pytest.ini": PYTEST_INI.replace("[pytest]", "[pytest\n")}, "pytest cannot read `pytest.ini`"),
], ids=["norecursedirs", "addopts", "pytest.toml-first", "conftest", "not-ini"])
def test_lane_isolation_changes_are_flagged(repo, bot_cli, head, expected):
    pr = pull(repo, head)
    assert_flagged(repo, bot_cli, pr, expected)


@pytest.mark.parametrize("head", [
    {"pytest.ini": PYTEST_INI.replace("timeout = 900", "timeout = 600\nmarkers =\n    slow: slow tests")},
    # pytest reads pytest.ini first: a pyproject table it never reads changes nothing.
    {"pyproject.toml": PYPROJECT + '\n[tool.pytest.ini_options]\nnorecursedirs = ["nothing"]\n'},
], ids=["harmless-keys", "shadowed-table"])
def test_pytest_changes_that_keep_the_lanes_are_not_flagged(repo, bot_cli, head):
    pr = pull(repo, head)
    assert_green(repo, bot_cli, pr)


# ----- the gates: workflows and CODEOWNERS --------------------------------------------------------

@pytest.mark.parametrize("head, renames, expected", [
    ({".github/workflows/policy-check.yml": WORKFLOW.replace("runs-on:", "continue-on-error: true\n    runs-on:")},
     None, "`.github/workflows/policy-check.yml` changes: it runs the checker or the bot"),
    ({".github/workflows/fast.yml": "on: pull_request\njobs:\n  experimental-track:\n    runs-on: x\n"
                                    "    steps:\n      - run: exit 0\n"},
     None, "`.github/workflows/fast.yml` is added"),
    ({".github/workflows/policy-check.yml": TESTS_WORKFLOW}, {".github/workflows/policy-check.yml":
                                                              ".github/workflows/tests.yml"},
     "`.github/workflows/policy-check.yml` changes"),
    ({".github/workflows/policy-check.yml": None}, None, "`.github/workflows/policy-check.yml` is removed"),
    ({".github/CODEOWNERS": "* @mallory\n"}, None, "`.github/CODEOWNERS` changes: it says who must review what"),
    ({"CODEOWNERS": "* @mallory\n"}, None, "`CODEOWNERS` is added"),
], ids=["edited", "new-job-named-like-the-check", "renamed-onto", "removed", "codeowners", "root-codeowners"])
def test_gate_changes_are_flagged(repo, bot_cli, head, renames, expected):
    pr = pull(repo, head, renames=renames)
    assert_flagged(repo, bot_cli, pr, expected)


def test_a_workflow_that_runs_neither_is_not_flagged(repo, bot_cli):
    pr = pull(repo, {".github/workflows/tests.yml": TESTS_WORKFLOW.replace("tests/", "tests/ -q")})
    assert_green(repo, bot_cli, pr)


# ----- the baseline, however it arrives ------------------------------------------------------------

def test_a_look_alike_renamed_onto_the_baseline_is_read_whole(repo, bot_cli):
    """``git mv`` a file onto the baseline: GitHub lists a rename whose one-line patch says nothing of entries."""
    head = baseline_text(B12X, MOE, ("EXP002", "flashinfer.gemm", "<module>", "flashinfer.experimental.x"))
    pr = pull(repo, {BASELINE: head}, renames={BASELINE: "docs/baseline-example.json"},
              patches={BASELINE: '@@ -2 +2 @@\n-  "entries": [\n+  "entries": ['})
    body = assert_flagged(repo, bot_cli, pr, DEBT_HEADING,
                          "- `EXP002` in `flashinfer.gemm`, scope `<module>`: `flashinfer.experimental.x`")
    assert "`flashinfer.mega_moe_v3`" not in body  # the base's baseline held it already: not new


@pytest.mark.parametrize("patch", [None, '@@ -2 +2 @@\n-  "entries": [\n+  "entries": ['],
                         ids=["its-diff", "a-misleading-diff"])
def test_an_entry_re_keyed_to_a_module_that_does_not_exist_is_debt(repo, bot_cli, patch):
    """The checker lets an entry whose module is gone accept its finding anywhere: a "rename" to nowhere is debt.
    The module is looked up at the head with the texts when the diff shows the move, else in one more request."""
    ghost = (MOE[0], "flashinfer.no_such_module", *MOE[2:])
    pr = pull(repo, {BASELINE: baseline_text(B12X, ghost)}, patches={BASELINE: patch} if patch else None)
    repo.graphql_log.clear()
    body = assert_flagged(repo, bot_cli, pr, DEBT_HEADING, "moved under a module that does not exist at the head "
                          "commit, so it accepts its finding in any module: `EXP001` in `flashinfer.no_such_module`")
    assert "a rename" not in body
    reads = [variables for op, variables in repo.graphql_log if op == "FilesAtRevisions"]
    assert len(reads) == (1 if patch is None else 2)
    assert any(value.endswith(":flashinfer/no_such_module.py") for value in reads[-1].values())


def test_an_entry_re_keyed_to_a_module_that_exists_is_a_rename(repo, bot_cli):
    moved = (MOE[0], "flashinfer.mega_moe_v4", *MOE[2:])  # the module is there, unchanged by the PR
    pr = pull(repo, {BASELINE: baseline_text(B12X, moved)}, body="Rename.")
    assert_green(repo, bot_cli, pr)


def test_paying_debt_off_is_thanked_not_flagged(repo, bot_cli):
    pr = pull(repo, {BASELINE: baseline_text(B12X)})
    assert_green(repo, bot_cli, pr, comment=True)
    assert "This PR pays off 1 baseline entry: thank you." in comment_of(repo, pr)


# ----- fail closed --------------------------------------------------------------------------------

def test_files_github_does_not_list_fail_closed(repo, bot_cli):
    """GitHub lists 3,000 files: the hostile change in the 3,001st is never seen, so the bot says so."""
    files = [(f"docs/page_{i}.txt", "+x", "added") for i in range(3000)]
    files.append(("pyproject.toml", patch_of(PYPROJECT, PYPROJECT + 'ignore = ["EXP"]\n'), "modified"))
    pr = repo.add_pull(REPO, None, files, author="mallory")
    body = assert_flagged(repo, bot_cli, pr, "GitHub lists 3,000 of this PR's 3,001 changed files")
    assert "stops checking" not in body  # it never saw the last file


def test_more_files_than_the_bot_reads_fail_closed(repo, bot_cli, monkeypatch):
    monkeypatch.setattr(pr_check, "MAX_CODE_READS", 3)
    pr = pull(repo, {f"flashinfer/m{i}.py": f"x = {i}\n" for i in range(5)})
    assert_flagged(repo, bot_cli, pr, "this PR changes 5 files the bot reads", "it reads at most 3")


def test_a_policy_file_too_large_to_read_fails_closed(repo, bot_cli):
    pr = pull(repo, {"pyproject.toml": PYPROJECT + "#" * 600_000 + "\n"})
    assert_flagged(repo, bot_cli, pr, "the bot could not read `pyproject.toml` whole",
                   "too large for GitHub to send whole")


# ----- approval -----------------------------------------------------------------------------------

IGNORE = PYPROJECT.replace(SECTION, SECTION + 'ignore = ["EXP001"]\n')


def test_approval_by_a_writer_is_recorded_and_holds_until_the_policy_weakens_further(repo, bot_cli):
    pr = pull(repo, {"pyproject.toml": IGNORE})
    body = assert_flagged(repo, bot_cli, pr, "stops checking `EXP001`")
    command = approve_command(body)

    # A user without write access: ignored, and said so.
    repo.add_comment(REPO, pr, command, "reader")
    body = assert_flagged(repo, bot_cli, pr, "the approval by `@\u200dreader` is not counted: only users with write "
                                             "access to this repository can approve")

    # A maintainer: accepted, and recorded in the bot's own comment.
    repo.add_comment(REPO, pr, f"Reviewed, fine.\n\n{command}", "maintainer")
    assert check(bot_cli, pr).exit_code == 0
    assert status_of(repo, pr)["state"] == "success"
    body = comment_of(repo, pr)
    assert "**Policy weakened: approved by `@\u200dmaintainer`**" in body
    assert re.search(r"^<!-- experimental-track-bot:policy-approved maintainer c\d+ [0-9a-f]{16} -->$", body, re.M)

    # A push that changes nothing in the weakenings keeps the approval.
    repo.repo(REPO).pulls[pr]["head"]["sha"] = "beef" * 10
    repo.set_contents(REPO, pr, head={"README.md": "# FlashInfer, faster\n"})
    assert check(bot_cli, pr).exit_code == 0
    assert status_of(repo, pr)["state"] == "success"

    # A push that weakens further needs a new approval; what was approved stays approved.
    repo.repo(REPO).pulls[pr]["head"]["sha"] = "cafe" * 10
    repo.set_contents(REPO, pr, head={"pyproject.toml": IGNORE.replace(SECTION, SECTION + 'extend-exclude = ["x"]\n')})
    body = assert_flagged(repo, bot_cli, pr, "excludes `x` from the check", "stops checking `EXP001` (`select`, "
                                             "`ignore`) (approved)")
    assert "this PR weakens the policy (1 change not approved)" in status_of(repo, pr)["description"]
    new_command = approve_command(body)
    assert new_command != command
    repo.add_comment(REPO, pr, new_command, "maintainer")
    assert check(bot_cli, pr).exit_code == 0
    assert status_of(repo, pr)["state"] == "success"


def test_an_approval_of_what_was_shown_covers_only_that_when_a_push_lands_first(repo, bot_cli):
    pr = pull(repo, {"pyproject.toml": IGNORE})
    command = approve_command(assert_flagged(repo, bot_cli, pr))
    repo.add_comment(REPO, pr, command, "maintainer")  # approves what the comment showed
    repo.repo(REPO).pulls[pr]["head"]["sha"] = "beef" * 10  # ... but a push lands before the next run
    repo.set_contents(REPO, pr, head={"pyproject.toml": IGNORE.replace(SECTION, SECTION + 'extend-exclude = ["x"]\n')})
    body = assert_flagged(repo, bot_cli, pr, "excludes `x` from the check", "(approved)")
    assert "(1 change not approved)" in status_of(repo, pr)["description"]
    assert body.count("(approved)") == 2  # the item, and the sentence that explains the mark


def test_the_prs_author_cannot_approve_their_own_weakening(repo, bot_cli):
    pr = pull(repo, {"pyproject.toml": IGNORE}, author="octocat")  # octocat may write
    repo.add_comment(REPO, pr, approve_command(assert_flagged(repo, bot_cli, pr)), "octocat")
    assert_flagged(repo, bot_cli, pr, "the approval by `@\u200doctocat` is not counted: the PR's author cannot approve")


def test_a_record_pasted_by_someone_else_is_no_record(repo, bot_cli):
    pr = pull(repo, {"pyproject.toml": IGNORE})
    body = assert_flagged(repo, bot_cli, pr)
    keys = re.search(r"policy-shown [0-9a-f]{16} ([0-9a-f ]+) -->", body).group(1)
    forged = f"{PR_MARKER}\n<!-- experimental-track-bot:policy-approved maintainer {keys} -->\n"
    repo.add_comment(REPO, pr, forged, "mallory")
    assert_flagged(repo, bot_cli, pr)


def test_an_approval_for_another_set_is_said_not_to_match(repo, bot_cli):
    pr = pull(repo, {"pyproject.toml": IGNORE})
    assert_flagged(repo, bot_cli, pr)
    repo.add_comment(REPO, pr, "/experimental-track approve-policy 0123456789abcdef", "maintainer")
    assert_flagged(repo, bot_cli, pr, "names `0123456789abcdef`, which is not the set of policy changes shown")


def test_approving_a_fail_closed_listing_holds_for_that_head_only(repo, bot_cli):
    pr = pull(repo, {"docs/a.txt": "x\n"})
    repo.repo(REPO).pulls[pr]["changed_files"] = 3001  # GitHub says more than it lists
    repo.add_comment(REPO, pr, approve_command(assert_flagged(repo, bot_cli, pr)), "maintainer")
    assert check(bot_cli, pr).exit_code == 0
    repo.repo(REPO).pulls[pr]["head"]["sha"] = "beef" * 10
    assert_flagged(repo, bot_cli, pr, "GitHub lists 1 of this PR's 3,001 changed files")


# ----- benign PRs ---------------------------------------------------------------------------------

def test_a_docs_only_pr_stays_quiet(repo, bot_cli):
    pr = pull(repo, {"README.md": "# FlashInfer\n\nFaster.\n", "docs/api/norm.rst": "Norm\n====\n"})
    assert_green(repo, bot_cli, pr)


def test_a_declared_experimental_pr_has_no_alarm(repo, bot_cli):
    repo.add_issue(REPO, "### Owner\n\n@mallory\n\n### Use case\n\nx\n\n### Why experimental\n\nx\n\n"
                         "### Graduation plan\n\nTarget release: 0.8.0\nTarget date: 2026-11-20\n")
    body = "## Experimental Track\n\n- [x] This PR adds experimental code\n  - Tracking issue: #1\n"
    kernel = "from flashinfer.api_logging import flashinfer_experimental_api\n\n\n" \
             "@flashinfer_experimental_api\ndef run(): ...\n"
    pr = pull(repo, {"flashinfer/experimental/splitk/kernel.py": kernel,
                     "tests/experimental/splitk/test_splitk.py": "def test(): ...\n"}, body=body)
    assert_green(repo, bot_cli, pr, comment=True)
    assert "Experimental Track PR: declaration and tracking issue are complete" == status_of(repo, pr)["description"]


# ----- what the PR wrote stays inert ----------------------------------------------------------------

HOSTILE = "@everyone [a](https://evil.example) <details> #1 evil/repo#2 `x`"


def live(markdown: str) -> list[str]:
    """Links, HTML beyond the bot's own hidden lines, and mentions or references outside code spans."""
    from markdown_it import MarkdownIt

    found = []
    for block in MarkdownIt("commonmark").parse(markdown):
        if block.type == "html_block" and not all(
                line.startswith("<!-- experimental-track-bot:") or line.startswith("<!-- head: ")
                for line in block.content.strip().split("\n")):
            found.append(block.content)
        for token in block.children or []:
            if token.type in ("link_open", "image", "html_inline"):
                found.append(token.type)
            elif token.type == "text" and re.search(r"@\w|#\d|https?:|<", token.content):
                found.append(token.content)
    return found


def test_weakenings_quote_the_prs_text_inertly(repo, bot_cli):
    toml_hostile = HOSTILE.replace("`", "'")
    head = {
        "pyproject.toml": PYPROJECT.replace(SECTION, SECTION + f'extend-exclude = ["{toml_hostile}"]\n'),
        f".github/workflows/{HOSTILE}.yml": "run: policy-check\n",
        "flashinfer/gemm.py": GEMM + f"x = 1  # policy: ignore[EXP001] {HOSTILE}\n",
        "pytest.ini": PYTEST_INI.replace("timeout = 900", f"python_files = {HOSTILE}"),
    }
    pr = pull(repo, head)
    body = assert_flagged(repo, bot_cli, pr, "excludes `@\u200deveryone")
    assert live(body) == [], body
    assert body.count("\n### ") == 1  # no heading from input
