"""Graduation PRs: recognised from the PR's file listing, answered with the graduation checklist.

Against the fake GitHub API over real HTTP (the listing carries ``status``, ``previous_filename``
and ``patch`` as GitHub's REST API does), plus the recognition on its own.
"""

from __future__ import annotations

import re
import time
from types import SimpleNamespace

import pytest
from markdown_it import MarkdownIt

from policy_checks.bot import graduation_pr
from policy_checks.bot.graduation_pr import Listed, calls_gate, decorator_name, recognise
from policy_checks.bot.pr_check import PR_MARKER
from policy_checks.features import TrackingRef
from policy_checks.graduation import GRADUATION_STEPS

REPO = "acme/widgets"
FEATURE = "gated_rmsnorm"
CODE_DIR = f"flashinfer/experimental/{FEATURE}"
TESTS_DIR = f"tests/experimental/{FEATURE}"

ISSUE = """### Owner

@octocat

### Use case

Gated RMSNorm for the new decoder blocks.

### Why experimental

A new kernel whose numerics are still being validated.

### Graduation plan

Target release: 0.8.0
Target date: 2026-10-20
"""

RECORD_TEXT = """kind = "api"
owner = "octocat"
tracking_issue = 1
admitted = 2026-09-28
target_release = "0.8.0"
target_date = 2026-10-20
apis = ["flashinfer.gated_rmsnorm"]
backends = []
auto_routing = false"""


def removed(text: str) -> str:
    """The diff GitHub lists for a deleted file."""
    lines = text.split("\n")
    return f"@@ -1,{len(lines)} +0,0 @@\n" + "\n".join("-" + line for line in lines)


RECORD_REMOVED = (f"{CODE_DIR}/FEATURE.toml", removed(RECORD_TEXT), "removed")
SHIM = (f"{CODE_DIR}/__init__.py", "@@ -1,3 +1,9 @@\n-from .kernel import gated_rmsnorm\n"
        "+import warnings\n+\n+from flashinfer.gated_norm import *  # noqa: F401,F403\n+\n"
        '+__graduated_to__ = "flashinfer.gated_norm"\n'
        '+warnings.warn("moved to flashinfer.gated_norm", DeprecationWarning, stacklevel=2)', "modified")
CODE_MOVED = ("flashinfer/gated_norm.py", "@@ -1,4 +1,4 @@\n-from flashinfer.experimental import require_x\n"
              "+from flashinfer.api_logging import flashinfer_api", "renamed", f"{CODE_DIR}/kernel.py")
SWAP = ("flashinfer/norm.py",
        '@@ -10,7 +10,7 @@\n def rmsnorm(x):\n     ...\n-@flashinfer_experimental_api(feature="gated_rmsnorm")\n'
        "+@flashinfer_api\n def gated_rmsnorm(x, gate):\n-    require_experimental_auto_backends()\n"
        "     return _run(x, gate)", "modified")
TESTS_MOVED = ("tests/test_gated_norm.py", None, "renamed", f"{TESTS_DIR}/test_gated_rmsnorm.py")  # no diff
DOCS = ("docs/api/norm.rst", "@@ -3,0 +4 @@\n+.. autofunction:: flashinfer.gated_rmsnorm", "modified")
AOT = ("flashinfer/aot.py", "@@ -20,0 +21 @@\n+    gen_gated_norm_module(),", "modified")
FULL = [RECORD_REMOVED, SHIM, CODE_MOVED, SWAP, TESTS_MOVED, DOCS, AOT]

DECLARED = """## Experimental Track

- [x] This PR adds or changes experimental-track code
  - Tracking issue: #1
"""


@pytest.fixture
def repo(github_api):
    github_api.add_collaborator(REPO, "octocat", "write")
    github_api.add_issue(REPO, ISSUE)  # #1, the tracking issue
    return github_api


def check(bot_cli, pr: int, *extra: str, **kw):
    return bot_cli("pr", "--repo", REPO, "--pr", str(pr), *extra, **kw)


def comment_of(g, pr: int) -> str:
    [comment] = [c for c in g.comments_by(REPO, pr) if c["body"].startswith(PR_MARKER)]
    return comment["body"]


def status_of(g, pr: int) -> dict:
    sha = g.repo(REPO).pulls[pr]["head"]["sha"]
    return next(s for s in g.repo(REPO).statuses[sha] if s["context"] == "experimental-track")


def boxes(body: str) -> dict[int, bool]:
    """Step number -> ticked, from the task list of the comment."""
    found = re.findall(r"^- \[([ x])\] (\d)\. ", body, re.MULTILINE)
    return {int(number): mark == "x" for mark, number in found}


def step_line(body: str, number: int) -> str:
    return next(line for line in body.split("\n") if re.match(rf"- \[[ x]\] {number}\. ", line))


# ----- through the fake GitHub --------------------------------------------------------------


def test_a_graduation_pr_gets_the_checklist_with_each_steps_state(repo, bot_cli):
    pr = repo.add_pull(REPO, f"Graduate {FEATURE}.", FULL)
    repo.requests.clear()
    result = check(bot_cli, pr)
    assert result.exit_code == 0, result.output
    assert len(repo.requests) <= 8, repo.requests
    body = comment_of(repo, pr)
    assert "**Graduation checklist**: `gated_rmsnorm`, to `flashinfer.gated_norm`" in body
    assert boxes(body) == {1: False, 2: True, 3: True, 4: False, 5: True, 6: True, 7: False}
    for step in GRADUATION_STEPS:
        assert step.text in step_line(body, step.number)
    assert step_line(body, 1).endswith("— for a person") and step_line(body, 4).endswith("— for a person")
    assert step_line(body, 7).endswith("— for a person: tracking issue `#1`")  # from the removed record
    assert f"1 file moved out of `{CODE_DIR}/`, e.g. to `flashinfer/gated_norm.py`" in step_line(body, 2)
    assert f"a re-export shim in `{CODE_DIR}/__init__.py`" in step_line(body, 2)
    assert "done: seen in `flashinfer/norm.py`" in step_line(body, 3)
    assert "done: `flashinfer/aot.py` changed" in step_line(body, 5)
    assert f"1 file moved out of `{TESTS_DIR}/` into the stable lane" in step_line(body, 6)
    assert "(6 of 7)" not in body and "(4 of 7)" in body
    # Undeclared, yet no failure: its experimental files are the graduating feature's own.
    assert status_of(repo, pr)["state"] == "success"
    assert status_of(repo, pr)["description"] == "Graduation PR: the graduation checklist is in the bot's comment"
    assert "does not declare it" not in body
    repo.requests.clear()
    assert check(bot_cli, pr).exit_code == 0
    assert repo.writes() == []  # the same checklist again: nothing rewritten


def test_a_declared_graduation_is_not_held_to_the_admission_rules(repo, bot_cli):
    """The tracking issue's target date lies before the PR was opened and the issue is closed: for a
    feature entering the track those fail the check, for one leaving it they do not."""
    repo.repo(REPO).issues[1]["state"] = "closed"
    pr = repo.add_pull(REPO, DECLARED, FULL)
    repo.requests.clear()
    result = check(bot_cli, pr)
    assert result.exit_code == 0, result.output
    assert len(repo.requests) <= 8
    body = comment_of(repo, pr)
    assert "- Tracking issue: `#1` (closed)" in body
    assert step_line(body, 7).endswith("tracking issue `#1` (closed)")
    assert "before admission" not in body and "is closed" not in body


def test_a_declared_graduation_needs_no_tracking_reference(repo, bot_cli):
    pr = repo.add_pull(REPO, DECLARED.replace("  - Tracking issue: #1\n", ""), FULL)
    assert check(bot_cli, pr).exit_code == 0
    assert "no `Tracking issue:` reference" not in comment_of(repo, pr)


def test_a_graduation_linking_no_issue_still_fails_for_a_wrong_reference(repo, bot_cli):
    pr = repo.add_pull(REPO, DECLARED.replace("#1", "#77"), FULL)
    assert check(bot_cli, pr).exit_code == 1
    assert "the tracking issue #77 does not exist" in status_of(repo, pr)["description"]


def test_a_removal_pr_is_not_a_graduation(repo, bot_cli):
    files = [RECORD_REMOVED, (f"{CODE_DIR}/kernel.py", "@@ -1 +0,0 @@\n-def run(): ...", "removed"),
             (f"{CODE_DIR}/__init__.py", "@@ -1 +0,0 @@\n-from .kernel import run", "removed"),
             (f"{TESTS_DIR}/test_gated_rmsnorm.py", "@@ -1 +0,0 @@\n-def test(): ...", "removed"),
             ("flashinfer/norm.py",
              "@@ -1,3 +1,0 @@\n-@flashinfer_experimental_api(feature='x')\n-def gated_rmsnorm(): ...", "modified")]
    pr = repo.add_pull(REPO, "Remove gated_rmsnorm.", files)
    assert check(bot_cli, pr).exit_code == 1  # as before: experimental code changed without a declaration
    body = comment_of(repo, pr)
    assert "Graduation checklist" not in body and "does not declare it" in body
    assert status_of(repo, pr)["state"] == "failure"


def test_a_partial_graduation_leaves_the_tests_step_open(repo, bot_cli):
    pr = repo.add_pull(REPO, f"Graduate {FEATURE} (part 1).", [RECORD_REMOVED, CODE_MOVED, SWAP])
    assert check(bot_cli, pr).exit_code == 0
    body = comment_of(repo, pr)
    assert boxes(body) == {1: False, 2: True, 3: True, 4: False, 5: False, 6: False, 7: False}
    assert f"**not yet**: no test of `{TESTS_DIR}/` was moved to the stable lane in this PR" in step_line(body, 6)
    assert step_line(body, 5).endswith("— not in this PR (only needed if kernels ship prebuilt)")
    assert "(2 of 7)" in body


def test_tests_still_changed_in_the_experimental_lane_keep_step_6_open(repo, bot_cli):
    files = [RECORD_REMOVED, CODE_MOVED, SWAP, TESTS_MOVED, (f"{TESTS_DIR}/conftest.py", "+x", "modified")]
    pr = repo.add_pull(REPO, None, files)
    assert check(bot_cli, pr).exit_code == 0
    line = step_line(comment_of(repo, pr), 6)
    assert line.startswith("- [ ] 6.") and f"1 file still changed under `{TESTS_DIR}/`" in line


def test_tests_removed_count_only_beside_new_stable_tests(repo, bot_cli):
    gone = (f"{TESTS_DIR}/test_gated_rmsnorm.py", "@@ -1 +0,0 @@\n-def test(): ...", "removed")
    pr = repo.add_pull(REPO, None, [RECORD_REMOVED, CODE_MOVED, SWAP, gone])
    assert check(bot_cli, pr).exit_code == 0
    assert "but no stable test was added under `tests/`" in step_line(comment_of(repo, pr), 6)
    added = ("tests/test_gated_norm.py", "+x", "added")
    pr = repo.add_pull(REPO, None, [RECORD_REMOVED, CODE_MOVED, SWAP, gone, added])
    assert check(bot_cli, pr).exit_code == 0
    assert boxes(comment_of(repo, pr))[6]


def test_a_gate_still_added_leaves_the_decorator_step_open(repo, bot_cli):
    still = ("flashinfer/gemm.py", "@@ -5,0 +5,2 @@\n+    require_experimental_auto_backends(backend)\n+    x = 1",
             "modified")
    pr = repo.add_pull(REPO, None, [RECORD_REMOVED, CODE_MOVED, SWAP, still])
    assert check(bot_cli, pr).exit_code == 0
    line = step_line(comment_of(repo, pr), 3)
    assert line.startswith("- [ ] 3.")
    assert "still uses an experimental decorator or gate in `flashinfer/gemm.py`" in line


def test_a_graduation_beside_other_experimental_work_still_needs_the_declaration(repo, bot_cli):
    other = ("flashinfer/experimental/splitk/kernel.py", "+def faster(): ...", "modified")
    pr = repo.add_pull(REPO, None, FULL + [other])
    assert check(bot_cli, pr).exit_code == 1
    body = comment_of(repo, pr)
    assert "does not declare it" in body and "**Graduation checklist**" in body


def test_files_without_a_patch(repo, bot_cli):
    """GitHub sends no diff for binary files and diffs too large to show: what it does send still counts."""
    record_no_diff = (RECORD_REMOVED[0], None, "removed")
    binary = ("flashinfer/data/gated.cubin", None, "added")
    pr = repo.add_pull(REPO, DECLARED, [record_no_diff, CODE_MOVED, SWAP, TESTS_MOVED, binary])
    assert check(bot_cli, pr).exit_code == 0
    body = comment_of(repo, pr)
    assert boxes(body) == {1: False, 2: True, 3: True, 4: False, 5: False, 6: True, 7: False}
    assert step_line(body, 7).endswith("tracking issue `#1` (open)")  # the PR's reference, the record unread
    # Without the core file's diff the swap cannot be seen: no graduation is claimed.
    pr = repo.add_pull(REPO, None, [record_no_diff, CODE_MOVED, (SWAP[0], None, "modified")])
    assert check(bot_cli, pr).exit_code == 1
    assert "Graduation checklist" not in comment_of(repo, pr)


def test_the_record_names_no_issue_the_bot_knows(repo, bot_cli):
    record = (RECORD_REMOVED[0], removed(RECORD_TEXT.replace("tracking_issue = 1\n", "")), "removed")
    pr = repo.add_pull(REPO, None, [record, CODE_MOVED, SWAP])
    assert check(bot_cli, pr).exit_code == 0
    assert step_line(comment_of(repo, pr), 7).endswith("— for a person (the bot does not know the tracking issue)")


def shim_of(module: str, marker: bool) -> str:
    """The diff of an experimental module rewritten into a re-export shim, as ``policy-check graduate`` does."""
    lines = ["@@ -1,6 +1,9 @@", "-from flashinfer.experimental import experimental_backend", "-@experimental_backend",
             "-def kernel(): ...", "+import warnings as _warnings", "+", f"+from {module} import *  # noqa: F401,F403"]
    lines += [f'+__graduated_to__ = "{HOME}"'] if marker else []
    return "\n".join(lines + ["+_warnings.warn(", "+    DeprecationWarning,", "+)"])


HOME = "flashinfer.gated_norm"


def test_the_listing_policy_check_graduate_leaves(repo, bot_cli):
    """The shape of the listing GitHub shows for ``policy-check graduate gated_rmsnorm --to flashinfer.gated_norm
    --aot``: Python modules rewritten into shims (modified) beside new copies (added), other files and the tests
    renamed, the record removed; declared, on a 100-file PR, within the request budget."""
    files = [("docs/api/norm.rst", DOCS[1], "modified"), AOT, RECORD_REMOVED,
             (f"{CODE_DIR}/__init__.py", shim_of(HOME, marker=True), "modified"),
             (f"{CODE_DIR}/kernel.py", shim_of(f"{HOME}.kernel", marker=False), "modified"),
             ("flashinfer/gated_norm/README.md", None, "renamed", f"{CODE_DIR}/README.md"),
             ("flashinfer/gated_norm/__init__.py", "@@ -0,0 +1 @@\n+from .kernel import gated_rmsnorm", "added"),
             ("flashinfer/gated_norm/gated_rmsnorm.cu", None, "renamed", f"{CODE_DIR}/gated_rmsnorm.cu"),
             ("flashinfer/gated_norm/kernel.py", "@@ -0,0 +1 @@\n+def kernel(): ...", "added"),
             ("flashinfer/norm.py", "@@ -1,3 +1,3 @@\n-@flashinfer_experimental_api(trace=t)\n"
                                    "+@flashinfer_api(trace=t)\n def gated_rmsnorm(x): ...", "modified")]
    files += [(f"tests/flashinfer/gated_norm/test_{i}.py", None, "renamed", f"{TESTS_DIR}/test_{i}.py")
              for i in range(100 - len(files))]
    pr = repo.add_pull(REPO, DECLARED, files)
    repo.requests.clear()
    assert check(bot_cli, pr).exit_code == 0
    assert len(repo.requests) <= 8, repo.requests
    body = comment_of(repo, pr)
    assert f"**Graduation checklist**: `gated_rmsnorm`, to `{HOME}`" in body
    assert boxes(body) == {1: False, 2: True, 3: True, 4: False, 5: True, 6: True, 7: False}
    assert "a re-export shim in `flashinfer/experimental/gated_rmsnorm/__init__.py`" in step_line(body, 2)
    assert "e.g. to `flashinfer/gated_norm/gated_rmsnorm.cu`" in step_line(body, 2)  # the README is not code
    assert "90 files moved out of" in step_line(body, 6)
    assert "experimental" in repo.labels_of(REPO, pr)  # declared: labelled as before


HOSTILE = "x`@everyone`[a](https:evil.example)<details>#1 evil/repo#2 @octocat"
_parser = MarkdownIt("commonmark")


def live_text(markdown: str) -> list[str]:
    """Links, HTML and text outside code spans that holds what GitHub would make live."""
    found = []
    for block in _parser.parse(markdown):
        for token in block.children or []:
            if token.type in ("link_open", "image", "html_inline"):
                found.append(token.content or token.type)
            elif token.type == "text" and re.search(r"@\w|#\d|https?:|<", token.content):
                found.append(token.content)
    return found


def test_hostile_feature_names_and_paths_render_inert(repo, bot_cli):
    name = HOSTILE.replace("/", "_")
    code_dir, tests_dir = f"flashinfer/experimental/{name}", f"tests/experimental/{name}"
    record = removed(RECORD_TEXT.replace("tracking_issue = 1", 'tracking_issue = "evil/repo#9"'))
    files = [(f"{code_dir}/FEATURE.toml", record, "removed"),
             (f"{code_dir}/__init__.py", f'+__graduated_to__ = "flashinfer.{name}"', "modified"),
             (f"flashinfer/{HOSTILE}.py", None, "renamed", f"{code_dir}/{HOSTILE}.py"),
             (f"flashinfer/{HOSTILE}/norm.py", SWAP[1], "modified"),
             (f"tests/{HOSTILE}.py", None, "renamed", f"{tests_dir}/{HOSTILE}.py")]
    pr = repo.add_pull(REPO, None, files)
    assert check(bot_cli, pr).exit_code == 0
    body = comment_of(repo, pr)
    assert "**Graduation checklist**" in body and boxes(body)[2] and boxes(body)[6]
    assert "tracking issue `evil/repo#9`" in body  # named, in a code span: no cross-reference
    assert live_text(body) == [], live_text(body)
    assert "@everyone" not in body and "@octocat" not in body  # each @ carries a zero-width joiner


# ----- the recognition on its own ---------------------------------------------------------


def listing(*files: tuple) -> list[Listed]:
    """Entries as the fake's ``add_pull`` takes them: ``(path, patch[, status[, previous]])``."""
    padded = ((*f, "modified", None)[:4] if len(f) == 2 else (*f, None)[:4] for f in files)
    return [Listed(path, status, previous, patch) for path, patch, status, previous in padded]


def test_recognition_reads_pygithub_files_and_listed_entries_alike():
    pygithub_like = [SimpleNamespace(filename=f.path, status=f.status, patch=f.patch, previous_filename=f.previous)
                     for f in listing(*FULL)]
    [a] = recognise(pygithub_like)
    [b] = recognise(listing(*FULL))
    assert a == b and a.feature == FEATURE and a.new_home == "flashinfer.gated_norm"
    assert a.tracking == TrackingRef(1) and a.done == 4


def test_only_the_relocated_feature_of_several_removed_records_graduates():
    gone = [("flashinfer/experimental/old_moe/FEATURE.toml", None, "removed"),
            ("flashinfer/experimental/old_moe/moe.py", "-x", "removed")]
    [graduation] = recognise(listing(*FULL, *gone))
    assert graduation.feature == FEATURE


@pytest.mark.parametrize("path", ["flashinfer/experimental/FEATURE.toml",
                                  "flashinfer/experimental/_shared/FEATURE.toml",
                                  "flashinfer/experimental/a/b/FEATURE.toml", "examples/experimental/a/FEATURE.toml"])
def test_only_a_features_own_record_counts(path):
    assert recognise(listing((path, None, "removed"), CODE_MOVED, SWAP)) == []


def test_the_tracking_reference_of_the_pr_is_the_fallback():
    record = (RECORD_REMOVED[0], None, "removed")
    [graduation] = recognise(listing(record, CODE_MOVED, SWAP), TrackingRef(5, "acme/roadmap"))
    assert graduation.tracking == TrackingRef(5, "acme/roadmap")
    [graduation] = recognise(listing(*FULL), TrackingRef(5, "acme/roadmap"))
    assert graduation.tracking == TrackingRef(1)  # the feature's own record comes first


@pytest.mark.parametrize("line, name", [
    ("@flashinfer_api", "flashinfer_api"),
    ("    @flashinfer_experimental_api(feature='x')", "flashinfer_experimental_api"),
    ("@api_logging.flashinfer_api", "flashinfer_api"), ("@ flashinfer_api", "flashinfer_api"),
    ("x = '@flashinfer_api'", None), ("# @flashinfer_api", None), ("@flashinfer_api_v2", "flashinfer_api_v2"),
])
def test_decorator_names(line, name):
    assert decorator_name(line) == name


@pytest.mark.parametrize("line, calls", [
    ("    require_experimental_auto_backends(backend)", True), ("x = require_experimental_auto_backends ()", True),
    ("def require_experimental_auto_backends(x):", False), ("from flashinfer import require_experimental_x", False),
    ("# require_experimental_auto_backends()", False), ("my_require_experimental_x()", False),
    ("require_experimental_auto_backends", False),
])
def test_gate_calls(line, calls):
    assert calls_gate(line) is calls


def test_diff_lines_split_at_newlines_only():
    patch = " context\u2028+@flashinfer_api\n-@flashinfer_experimental_api\n+++ b/x\r\n+@flashinfer_api\r"
    assert list(graduation_pr.changed_lines(patch)) == [("-", "@flashinfer_experimental_api"), ("+", "@flashinfer_api")]


def test_adversarial_patches_are_read_in_linear_time():
    """Untrusted diffs: long lines built to make a backtracking regex go quadratic."""
    n = 200_000
    lines = ["+" + "require_experimental_" * (n // 21), "+" + "@" + "a." * (n // 2), "+" + " " * n + "@x",
             "+__graduated_to__ = '" + "a" * n, "-@" + "flashinfer_experimental_api" * (n // 27)]
    patch = "\n".join(lines)
    files = listing(RECORD_REMOVED, (f"{CODE_DIR}/__init__.py", patch, "modified"), ("flashinfer/norm.py", patch),
                    SWAP)
    start = time.perf_counter()
    recognise(files)
    assert time.perf_counter() - start < 2.0


def test_a_comment_shows_a_bounded_number_of_checklists():
    files = [SWAP]
    for i in range(5):
        files += [(f"flashinfer/experimental/f{i}/FEATURE.toml", None, "removed"),
                  (f"flashinfer/experimental/f{i}/__init__.py", f'+__graduated_to__ = "flashinfer.f{i}"', "modified")]
    graduations = recognise(listing(*files))
    assert [g.feature for g in graduations] == [f"f{i}" for i in range(5)]
    lines = graduation_pr.checklist_lines(graduations, REPO)
    assert sum(line.startswith("**Graduation checklist**") for line in lines) == graduation_pr.MAX_CHECKLISTS
    assert "2 more features graduate in this PR:" in lines and lines[-3:-1] == ["- `f3`", "- `f4`"]
