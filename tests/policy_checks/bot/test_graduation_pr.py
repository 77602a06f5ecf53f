"""Graduation PRs: recognised from what the PR's code says at base and head, answered with the
graduation checklist.

Against the fake GitHub API over real HTTP (the listing carries ``status``, ``previous_filename``
and ``patch`` as GitHub's REST API does), plus the recognition on its own, from a listing, the
files' texts at base and head and the listing of each feature directory at head.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from markdown_it import MarkdownIt

from ..conftest import grows_linearly, python_calls
from policy_checks.bot import graduation_pr
from policy_checks.bot.graduation_pr import Listed, NotRecognised, added_experimental, recognise, unjudged
from policy_checks.bot.pr_check import PR_MARKER
from policy_checks.bot.revisions import FileAtRevisions
from policy_checks.model.records import TrackingRef
from policy_checks.lifecycle.graduate import _shim
from policy_checks.model.window import GRADUATION_STEPS
from policy_checks.model.markers import Marked

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
AOT = ("flashinfer/aot.py", "@@ -20,0 +21 @@\n+SPECS.append(gen_gated_norm_module())", "modified")
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
    assert len(repo.requests) <= 10, repo.requests  # the budget of docs/bot.rst for 100 files
    body = comment_of(repo, pr)
    assert "**Graduation checklist**: `gated_rmsnorm`, to `flashinfer.gated_norm`" in body
    assert boxes(body) == {1: False, 2: True, 3: True, 4: False, 5: True, 6: True, 7: False}
    for step in GRADUATION_STEPS:
        assert step.text in step_line(body, step.number)
    assert step_line(body, 1).endswith("— for a person") and step_line(body, 4).endswith("— for a person")
    assert step_line(body, 7).endswith("— for a person: tracking issue `#1`")  # from the removed record
    assert f"done: `{CODE_DIR}/` is a pure re-export shim (1 file); 1 file moved out, e.g. to " \
           "`flashinfer/gated_norm.py`" in step_line(body, 2)
    assert "done: no entry point of the feature is marked experimental at the head commit (seen in " \
           "`flashinfer/norm.py`)" in step_line(body, 3)
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
    assert len(repo.requests) <= 10
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
    pr = repo.add_pull(REPO, f"Graduate {FEATURE} (part 1).", [RECORD_REMOVED, SHIM, CODE_MOVED, SWAP])
    assert check(bot_cli, pr).exit_code == 0
    body = comment_of(repo, pr)
    assert boxes(body) == {1: False, 2: True, 3: True, 4: False, 5: False, 6: False, 7: False}
    assert f"**not yet**: no test of `{TESTS_DIR}/` was moved to the stable lane in this PR" in step_line(body, 6)
    assert step_line(body, 5).endswith("— not in this PR (only needed if kernels ship prebuilt)")
    assert "(2 of 7)" in body


def test_tests_still_changed_in_the_experimental_lane_keep_step_6_open(repo, bot_cli):
    files = [RECORD_REMOVED, SHIM, CODE_MOVED, SWAP, TESTS_MOVED, (f"{TESTS_DIR}/conftest.py", "+x", "modified")]
    pr = repo.add_pull(REPO, None, files)
    assert check(bot_cli, pr).exit_code == 0
    line = step_line(comment_of(repo, pr), 6)
    assert line.startswith("- [ ] 6.") and f"1 file still changed under `{TESTS_DIR}/`" in line


def test_tests_removed_count_only_beside_new_stable_tests(repo, bot_cli):
    gone = (f"{TESTS_DIR}/test_gated_rmsnorm.py", "@@ -1 +0,0 @@\n-def test(): ...", "removed")
    pr = repo.add_pull(REPO, None, [RECORD_REMOVED, SHIM, CODE_MOVED, SWAP, gone])
    assert check(bot_cli, pr).exit_code == 0
    assert "but no stable test was added under `tests/`" in step_line(comment_of(repo, pr), 6)
    added = ("tests/test_gated_norm.py", "+x", "added")
    pr = repo.add_pull(REPO, None, [RECORD_REMOVED, SHIM, CODE_MOVED, SWAP, gone, added])
    assert check(bot_cli, pr).exit_code == 0
    assert boxes(comment_of(repo, pr))[6]


def test_a_gate_still_added_leaves_the_decorator_step_open(repo, bot_cli):
    still = ("flashinfer/gemm.py", "@@ -5,0 +5,2 @@\n+require_experimental_auto_backends(backend)\n+x = 1",
             "modified")
    pr = repo.add_pull(REPO, None, [RECORD_REMOVED, SHIM, CODE_MOVED, SWAP, still])
    assert check(bot_cli, pr).exit_code == 0
    line = step_line(comment_of(repo, pr), 3)
    assert line.startswith("- [ ] 3.")
    assert "a gate call stays or is added in `flashinfer/gemm.py`" in line


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
    pr = repo.add_pull(REPO, DECLARED, [record_no_diff, SHIM, CODE_MOVED, SWAP, TESTS_MOVED, binary])
    repo.set_contents(REPO, pr, base={RECORD_REMOVED[0]: RECORD_TEXT})  # read whole, not from a diff
    assert check(bot_cli, pr).exit_code == 0
    body = comment_of(repo, pr)
    assert boxes(body) == {1: False, 2: True, 3: True, 4: False, 5: False, 6: True, 7: False}
    assert step_line(body, 7).endswith("tracking issue `#1` (open)")
    # Without the record's text nothing can be decided: no graduation is claimed.
    pr = repo.add_pull(REPO, None, [record_no_diff, SHIM, CODE_MOVED, SWAP])
    assert check(bot_cli, pr).exit_code == 1
    assert "Graduation checklist" not in comment_of(repo, pr)
    # Nor without the core file's text.
    pr = repo.add_pull(REPO, None, [RECORD_REMOVED, SHIM, CODE_MOVED, (SWAP[0], None, "modified")])
    assert check(bot_cli, pr).exit_code == 1
    assert "Graduation checklist" not in comment_of(repo, pr)


def test_the_record_names_no_issue_the_bot_knows(repo, bot_cli):
    record = (RECORD_REMOVED[0], removed(RECORD_TEXT.replace("tracking_issue = 1\n", "")), "removed")
    pr = repo.add_pull(REPO, None, [record, SHIM, CODE_MOVED, SWAP])
    assert check(bot_cli, pr).exit_code == 0
    assert step_line(comment_of(repo, pr), 7).endswith("— for a person (the bot does not know the tracking issue)")


def shim_of(module: str, marker: bool) -> str:
    """The diff of an experimental module rewritten into a re-export shim, as ``policy-check graduate`` does."""
    old = f"flashinfer.experimental.{FEATURE}" + module[len(HOME):]
    shim = _shim(FEATURE, old, module, marker, HOME).decode().rstrip("\n").split("\n")
    lines = ["@@ -1,3 +1,22 @@", "-from flashinfer.experimental import experimental_backend", "-@experimental_backend",
             "-def kernel(): ..."]
    return "\n".join(lines + ["+" + line for line in shim])


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
    assert len(repo.requests) <= 10, repo.requests  # the budget of docs/bot.rst for 100 files
    body = comment_of(repo, pr)
    assert f"**Graduation checklist**: `gated_rmsnorm`, to `{HOME}`" in body
    assert boxes(body) == {1: False, 2: True, 3: True, 4: False, 5: True, 6: True, 7: False}
    assert "`flashinfer/experimental/gated_rmsnorm/` is a pure re-export shim (2 files)" in step_line(body, 2)
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
             (f"{code_dir}/__init__.py", '+__graduated_to__ = "flashinfer.hostile"', "modified"),
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
#
# A PR is modelled as the files at its base and head commits (path -> text, None: absent) and
# its renames (new path -> old path); `pr` derives what GitHub and the PR check's reader give:
# the listing, each listed file's texts and each feature directory's files at head.

NORM_BASE = f'''"""Norms."""

from .api_logging import flashinfer_api, flashinfer_experimental_api


@flashinfer_api
def rmsnorm(x):
    return x


@flashinfer_experimental_api(feature="gated_rmsnorm")
def gated_rmsnorm(x, gate):
    from .experimental.{FEATURE}.kernel import run

    return run(x, gate)
'''
NORM_HEAD = (NORM_BASE.replace('@flashinfer_experimental_api(feature="gated_rmsnorm")', "@flashinfer_api")
             .replace(f"from .experimental.{FEATURE}.kernel", "from .gated_norm.kernel")
             .replace("flashinfer_api, flashinfer_experimental_api", "flashinfer_api"))
GEMM = '"""GEMM."""\n\nfrom .api_logging import flashinfer_api\n\n\n@flashinfer_api\ndef mm(a, b):\n    return a\n'
KERNEL = "def run(x, gate):\n    return x\n"
BASE = {
    f"{CODE_DIR}/FEATURE.toml": RECORD_TEXT,
    f"{CODE_DIR}/README.md": "# gated_rmsnorm\n",
    f"{CODE_DIR}/gated_rmsnorm.cu": "// kernel\n",
    f"{CODE_DIR}/__init__.py": '"""Gated RMSNorm."""\n\nfrom .kernel import run\n',
    f"{CODE_DIR}/kernel.py": KERNEL,
    f"{TESTS_DIR}/test_gated_rmsnorm.py": "def test():\n    pass\n",
    "flashinfer/norm.py": NORM_BASE,
    "flashinfer/gemm.py": GEMM,
    "flashinfer/aot.py": "SPECS = []\n",
}
HEAD = {
    **BASE,
    f"{CODE_DIR}/FEATURE.toml": None,
    f"{CODE_DIR}/README.md": None,
    f"{CODE_DIR}/gated_rmsnorm.cu": None,
    f"{CODE_DIR}/__init__.py": _shim(FEATURE, f"flashinfer.experimental.{FEATURE}", HOME, True, HOME).decode(),
    f"{CODE_DIR}/kernel.py": _shim(FEATURE, f"flashinfer.experimental.{FEATURE}.kernel", f"{HOME}.kernel", False,
                                   HOME).decode(),
    "flashinfer/gated_norm/__init__.py": "from .kernel import run\n",
    "flashinfer/gated_norm/kernel.py": KERNEL,
    "flashinfer/gated_norm/README.md": "# gated_rmsnorm\n",
    "flashinfer/gated_norm/gated_rmsnorm.cu": "// kernel\n",
    f"{TESTS_DIR}/test_gated_rmsnorm.py": None,
    "tests/test_gated_norm.py": "def test():\n    pass\n",
    "flashinfer/norm.py": NORM_HEAD,
    "flashinfer/aot.py": "SPECS = ['gated_norm']\n",
}
RENAMES = {"flashinfer/gated_norm/README.md": f"{CODE_DIR}/README.md",
           "flashinfer/gated_norm/gated_rmsnorm.cu": f"{CODE_DIR}/gated_rmsnorm.cu",
           "tests/test_gated_norm.py": f"{TESTS_DIR}/test_gated_rmsnorm.py"}


def pr(base: dict, head: dict, renames: dict | None = None):
    """``(listing, texts, trees)`` of the PR that turns ``base`` into ``head``."""
    renames = renames or {}
    listing, texts = [], {}
    for path in sorted(set(base) | set(head)):
        old, now = base.get(renames.get(path, path)), head.get(path)
        if path in renames.values() and head.get(path) is None:
            continue  # the old path of a rename
        if path in renames:
            listing.append(Listed(path, "renamed", renames[path], None))
        elif old is None and now is None or old == now:
            continue
        else:
            listing.append(Listed(path, "added" if old is None else "removed" if now is None else "modified", None,
                                  "@@ -1 +1 @@"))
        texts[path] = FileAtRevisions(path, old, now)
    trees = {}
    for directory in graduation_pr.directories_to_list(listing):
        trees[directory] = [p for p, text in head.items() if text is not None and p.startswith(directory + "/")]
        for path in trees[directory]:
            texts.setdefault(path, FileAtRevisions(path, base.get(path), head[path]))  # unchanged, still there
    return listing, texts, trees


def recognised(base=BASE, head=HEAD, renames=RENAMES, tracking=None, **changes):
    listing, texts, trees = pr(base, {**head, **changes}, renames)
    return recognise(listing, tracking, texts=texts, trees=trees)


def reason_of(result) -> str:
    assert list(result) == [], result
    [item] = result.not_recognised
    return item.reason


def test_a_graduation_is_recognised_from_the_code():
    result = recognised()
    [graduation] = result
    assert result.not_recognised == []
    assert graduation.feature == FEATURE and graduation.new_home == HOME and graduation.tracking == TrackingRef(1)
    states = {s.step.number: s for s in graduation.steps}
    assert {n: s.done for n, s in states.items()} == {1: False, 2: True, 3: True, 4: False, 5: True, 6: True, 7: False}
    assert f"`{CODE_DIR}/` is a pure re-export shim (2 files)" in states[2].detail
    assert "1 file moved out, e.g. to `flashinfer/gated_norm/gated_rmsnorm.cu`" in states[2].detail  # README: no code
    assert "seen in `flashinfer/norm.py`" in states[3].detail
    assert f"1 file moved out of `{TESTS_DIR}/` into the stable lane" in states[6].detail
    lines = graduation_pr.checklist_lines(result, REPO)
    assert f"**Graduation checklist**: `{FEATURE}`, to `{HOME}`" in lines and "(4 of 7)" in "\n".join(lines)


def test_pygithub_files_and_listed_entries_read_alike():
    listing, texts, trees = pr(BASE, HEAD, RENAMES)
    pygithub_like = [SimpleNamespace(filename=f.path, status=f.status, patch=f.patch, previous_filename=f.previous)
                     for f in listing]
    assert recognise(pygithub_like, texts=texts, trees=trees) == recognise(listing, texts=texts, trees=trees)
    assert graduation_pr.paths_needed(listing, trees) == sorted(
        {f.path for f in listing if f.path.endswith(".py")} | {f"{CODE_DIR}/FEATURE.toml"})


def test_without_the_texts_nothing_is_recognised_and_the_reason_says_so():
    """How the PR check calls it until its reader passes the texts: no graduation, and a reason."""
    listing, _, _ = pr(BASE, HEAD, RENAMES)
    result = recognise(listing, TrackingRef(1))
    assert result == [] and result.not_recognised == [NotRecognised(FEATURE, graduation_pr.NEEDS_TEXTS)]
    assert result.reasons == [f"`{FEATURE}`: {graduation_pr.NEEDS_TEXTS}"]
    assert graduation_pr.checklist_lines(result, REPO) == []


@pytest.mark.parametrize("spoil, reason", [
    (lambda texts, trees: trees.clear(), f"the files of `{CODE_DIR}/` at the head commit are needed"),
    (lambda texts, trees: texts.pop(f"{CODE_DIR}/FEATURE.toml"),
     f"the text of `{CODE_DIR}/FEATURE.toml` at the base commit is needed"),
    (lambda texts, trees: texts.pop(f"{CODE_DIR}/__init__.py"),
     f"the text of `{CODE_DIR}/__init__.py` at the head commit is needed"),
    (lambda texts, trees: texts.update({"flashinfer/norm.py": FileAtRevisions(
        "flashinfer/norm.py", None, None, complete=False, problem="too large")}),
     "the text of `flashinfer/norm.py` could not be read whole (`too large`)"),
    (lambda texts, trees: texts.update({"flashinfer/norm.py": FileAtRevisions("flashinfer/norm.py", "def (", NORM_HEAD)}),
     "`flashinfer/norm.py` is not Python at the base commit"),
])
def test_what_the_decision_needs_is_missing_so_it_fails_closed(spoil, reason):
    listing, texts, trees = pr(BASE, HEAD, RENAMES)
    spoil(texts, trees)
    assert reason_of(recognise(listing, texts=texts, trees=trees)) == reason


@pytest.mark.parametrize("head", [
    # the decorator re-spelt, a docstring line starting "@flashinfer_api"
    NORM_BASE.replace('@flashinfer_experimental_api(feature="gated_rmsnorm")',
                      '@(flashinfer_experimental_api)(feature="gated_rmsnorm")').replace(
        "def gated_rmsnorm(x, gate):\n", 'def gated_rmsnorm(x, gate):\n    """\n@flashinfer_api\n    """\n'),
    NORM_BASE.replace("@flashinfer_experimental_api(", "@api_logging.flashinfer_experimental_api(").replace(
        "from .api_logging", "from . import api_logging\nfrom .api_logging"),
    NORM_BASE.replace('@flashinfer_experimental_api(feature="gated_rmsnorm")', "@ flashinfer_api").replace(
        "import flashinfer_api, flashinfer_experimental_api", "import flashinfer_experimental_api as flashinfer_api"),
    NORM_BASE.replace('@flashinfer_experimental_api(feature="gated_rmsnorm")',
                      "# @flashinfer_api\n@fx").replace("flashinfer_experimental_api\n",
                                                        "flashinfer_experimental_api\n\nfx = flashinfer_experimental_api\n"),
], ids=["parenthesised-and-docstring", "attribute", "alias-named-stable", "assigned-alias-and-comment"])
def test_a_swap_seen_only_in_the_text_is_no_swap(head):
    reason = reason_of(recognised(**{"flashinfer/norm.py": head}))
    assert reason == "`flashinfer/norm.py`: `gated_rmsnorm` is still marked experimental at the head commit"


BACKEND_RECORD = RECORD_TEXT.replace('kind = "api"', 'kind = "backend"').replace(
    'apis = ["flashinfer.gated_rmsnorm"]', "apis = []").replace("backends = []", 'backends = ["mm_bf16:splitk"]')
SPLITK = "flashinfer/experimental/splitk_gemm"
SUPPORT = ('from flashinfer.experimental import experimental_backend\n\n\n'
           '@experimental_backend\ndef check_splitk(a, b):\n    return True\n')
ROUTE6_BASE = {
    **BASE,
    f"{SPLITK}/FEATURE.toml": BACKEND_RECORD,
    f"{SPLITK}/README.md": "# splitk\n",
    f"{SPLITK}/__init__.py": '"""Split-K."""\n',
    f"{SPLITK}/support.py": SUPPORT,
    f"{SPLITK}/kernel.py": "def run(a, b):\n    return a\n",
    "flashinfer/gemm.py": GEMM.replace('"""GEMM."""\n', '"""GEMM."""\n\nfrom .experimental.splitk_gemm.support import '
                                                       'check_splitk\n'),
}
FAST = ("from flashinfer.experimental import experimental_backend\n\n\n"
        "@experimental_backend\ndef check_fast(a, b):\n    return True\n")
ROUTE6_HEAD = {
    **ROUTE6_BASE,
    f"{SPLITK}/FEATURE.toml": None,
    f"{SPLITK}/__init__.py": _shim("splitk_gemm", "flashinfer.experimental.splitk_gemm", "flashinfer.splitk", True,
                                   "flashinfer.splitk").decode(),
    f"{SPLITK}/fast.py": FAST,  # a brand-new undeclared experimental backend inside the "shim"
    # another feature's decorator "swapped": re-spelt, with a docstring line that starts "@flashinfer_api"
    "flashinfer/norm.py": NORM_BASE.replace('@flashinfer_experimental_api(feature="gated_rmsnorm")',
                                            '@(flashinfer_experimental_api)(feature="gated_rmsnorm")').replace(
        '"""Norms."""', '"""Norms.\n\n@flashinfer_api\n"""'),
}


def test_the_fake_graduation_of_route_6_is_not_recognised():
    listing, texts, trees = pr(ROUTE6_BASE, ROUTE6_HEAD)
    result = recognise(listing, texts=texts, trees=trees)
    assert result == []
    [item] = result.not_recognised
    assert item.feature == "splitk_gemm"
    assert item.reason.startswith(f"`{SPLITK}/` at the head commit is not a pure re-export shim: ")
    assert (f"{SPLITK}/fast.py", Marked("check_fast", 5, "experimental_backend")) in added_experimental(texts)
    # Even with the new file left out of the directory's listing, its old code is still there.
    trees[SPLITK] = [p for p in trees[SPLITK] if not p.endswith("fast.py")]
    assert recognise(listing, texts=texts, trees=trees) == []


def test_a_shim_beside_other_code_is_not_a_graduation_and_the_new_code_is_listed():
    result = recognised(**{f"{CODE_DIR}/fast.py": FAST})
    assert "at the head commit is not a pure re-export shim: `fast.py line 1: imports from" in reason_of(result)
    listing, texts, _ = pr(BASE, {**HEAD, f"{CODE_DIR}/fast.py": FAST}, RENAMES)
    assert added_experimental(texts) == [(f"{CODE_DIR}/fast.py", Marked("check_fast", 5, "experimental_backend"))]


def test_a_shim_binding_the_experimental_package_is_no_shim():
    init = HEAD[f"{CODE_DIR}/__init__.py"].replace(HOME, "flashinfer.experimental.other")
    kernel = HEAD[f"{CODE_DIR}/kernel.py"].replace(HOME, "flashinfer.experimental.other")
    result = recognised(**{f"{CODE_DIR}/__init__.py": init, f"{CODE_DIR}/kernel.py": kernel})
    assert "names flashinfer.experimental.other, inside flashinfer.experimental" in reason_of(result)


def test_a_removal_is_not_a_graduation():
    head = {**HEAD, f"{CODE_DIR}/__init__.py": None, f"{CODE_DIR}/kernel.py": None,
            "flashinfer/norm.py": NORM_BASE.split("\n\n@flashinfer_experimental_api")[0] + "\n"}
    assert "it leaves no re-export shim" in reason_of(recognised(head=head))


def test_an_entry_point_the_pr_leaves_alone_keeps_the_feature_from_graduating():
    result = recognised(**{"flashinfer/norm.py": NORM_BASE})
    assert "no definition marked experimental for it at the base commit is among this PR's files" in reason_of(result)
    # Another entry point swapped, the record's own API untouched.
    base = {**BASE, "flashinfer/gemm.py": GEMM + '\n\n@flashinfer_experimental_api(feature="gated_rmsnorm")\n'
                                                 "def gated_mm(a):\n    return a\n"}
    head = {**HEAD, "flashinfer/norm.py": NORM_BASE, "flashinfer/gemm.py": base["flashinfer/gemm.py"].replace(
        '@flashinfer_experimental_api(feature="gated_rmsnorm")', "@flashinfer_api")}
    reason = reason_of(recognised(base=base, head=head))
    assert reason == ("the record's API `flashinfer.gated_rmsnorm` is not among the definitions this PR changes: "
                      "it stays experimental")


def test_step_3_is_read_from_the_resolved_decorators_and_gates():
    plain = NORM_HEAD.replace("@flashinfer_api\ndef gated_rmsnorm", "def gated_rmsnorm")
    [graduation] = recognised(**{"flashinfer/norm.py": plain})
    step = graduation.steps[2]
    assert not step.done and "`gated_rmsnorm` in `flashinfer/norm.py` is not marked `@flashinfer_api`" in step.detail
    gated = GEMM.replace("    return a\n", "    require_experimental_auto_backends('x')\n    return a\n")
    [graduation] = recognised(**{"flashinfer/gemm.py": gated})
    assert not graduation.steps[2].done and "a gate call stays or is added in `flashinfer/gemm.py`" in \
        graduation.steps[2].detail
    added = GEMM + "\n\n@api_logging.flashinfer_experimental_api\ndef mm2(a):\n    return a\n"
    [graduation] = recognised(**{"flashinfer/gemm.py": added})
    assert "an experimental mark is added on `mm2` in `flashinfer/gemm.py`" in graduation.steps[2].detail


def test_the_tests_step():
    [graduation] = recognised(**{f"{TESTS_DIR}/conftest.py": "x = 1\n"})
    assert f"1 file still changed under `{TESTS_DIR}/`" in graduation.steps[5].detail
    renames = {k: v for k, v in RENAMES.items() if not k.startswith("tests/")}
    [graduation] = recognised(renames=renames, **{"tests/test_gated_norm.py": None})
    assert "but no stable test was added under `tests/`" in graduation.steps[5].detail


def test_only_the_graduating_feature_of_several_removed_records_graduates():
    other = "flashinfer/experimental/old_moe"
    base = {**BASE, f"{other}/FEATURE.toml": RECORD_TEXT, f"{other}/moe.py": "def moe():\n    pass\n"}
    head = {**HEAD, f"{other}/FEATURE.toml": None, f"{other}/moe.py": None}
    result = recognised(base=base, head=head)
    assert [g.feature for g in result] == [FEATURE]
    assert [n.feature for n in result.not_recognised] == ["old_moe"]


@pytest.mark.parametrize("path", ["flashinfer/experimental/FEATURE.toml",
                                  "flashinfer/experimental/_shared/FEATURE.toml",
                                  "flashinfer/experimental/a/b/FEATURE.toml", "examples/experimental/a/FEATURE.toml"])
def test_only_a_features_own_record_counts(path):
    result = recognised(base={**BASE, path: RECORD_TEXT}, head={**BASE, path: None}, renames={})
    assert result == [] and result.not_recognised == []


def test_the_tracking_reference_of_the_pr_is_the_fallback():
    base = {**BASE, f"{CODE_DIR}/FEATURE.toml": RECORD_TEXT.replace("tracking_issue = 1\n", "")}
    [graduation] = recognised(base=base, tracking=TrackingRef(5, "acme/roadmap"))
    assert graduation.tracking == TrackingRef(5, "acme/roadmap")
    [graduation] = recognised(tracking=TrackingRef(5, "acme/roadmap"))
    assert graduation.tracking == TrackingRef(1)  # the feature's own record comes first


SPELLINGS = [
    "@flashinfer_experimental_api\ndef new_api(x):",
    "@api_logging.flashinfer_experimental_api\ndef new_api(x):",
    "@ flashinfer_experimental_api\ndef new_api(x):",
    "@(flashinfer_experimental_api)\ndef new_api(x):",
    "@(flashinfer_experimental_api)(feature='new')\ndef new_api(x):",
    "@fx(feature='new')\ndef new_api(x):",
    "@fa\ndef new_api(x):",
    "@getattr(api_logging, 'flashinfer_experimental_api')\ndef new_api(x):",
    "@[fx][0]\ndef new_api(x):",
    "@flashinfer_experimental_api_v2\ndef new_api(x):",
]
PRELUDE = ("from . import api_logging\nfrom .api_logging import flashinfer_experimental_api as fx\n"
           "fa = api_logging.flashinfer_experimental_api\nflashinfer_experimental_api_v2 = fx\n\n\n")


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_route_7_each_spelling_of_a_new_experimental_api_is_added_experimental(spelling):
    head = GEMM + "\n\n" + PRELUDE + spelling + "\n    return x\n"
    texts = {"flashinfer/gemm.py": FileAtRevisions("flashinfer/gemm.py", GEMM, head)}
    [(path, marked)] = added_experimental(texts)
    assert path == "flashinfer/gemm.py" and marked.qualname == "new_api" and marked.kind == "experimental_api"
    # Already there at base: nothing added.
    assert added_experimental({"flashinfer/gemm.py": FileAtRevisions("flashinfer/gemm.py", head, head)}) == []


@pytest.mark.parametrize("text", [
    '@flashinfer_api\ndef new_api(x):\n    """@flashinfer_experimental_api"""\n',
    "# @flashinfer_experimental_api\ndef new_api(x):\n    pass\n",
    "x = '@flashinfer_experimental_api'\n\n\n@flashinfer_experimental_api_like\ndef new_api(x):\n    pass\n",
])
def test_what_is_not_an_experimental_mark(text):
    texts = {"flashinfer/gemm.py": FileAtRevisions("flashinfer/gemm.py", GEMM, GEMM + text)}
    assert added_experimental(texts) == []


def test_unjudged_files_are_named_for_the_caller():
    texts = {"a.py": FileAtRevisions("a.py", None, None, complete=False, problem="binary"),
             "b.py": FileAtRevisions("b.py", "x = 1\n", "def ("),
             "c.md": FileAtRevisions("c.md", None, "def ("),
             "d.py": FileAtRevisions("d.py", "x = 1\n", None)}
    assert unjudged(texts) == [("a.py", "binary"), ("b.py", "its text at the head commit is not Python")]
    assert added_experimental(texts) == []


def _adversarial_pr(n: int):
    chain = "a0 = flashinfer_experimental_api\n" + "".join(f"a{i} = a{i - 1}\n" for i in range(1, n))
    decorated = "".join(f"@a{i}\ndef f{i}():\n    pass\n" for i in range(n - 1, 0, -500))
    hostile = {
        f"{CODE_DIR}/__init__.py": chain + decorated,
        "flashinfer/norm.py": NORM_HEAD + "\nx = " + "f(" * 150 + ")" * 150 + "\n" + "y = a" + ".b" * n + "\n",
        "flashinfer/gemm.py": "\n".join(f"z{i} = " + " = ".join(f"t{j}" for j in range(50)) + " = 1"
                                        for i in range(n // 10)) + "\n",
    }
    return pr(BASE, {**HEAD, **hostile}, RENAMES)


def test_adversarial_texts_are_read_in_linear_work():
    """Untrusted texts: long chains and nestings built to make a naive resolver go
    quadratic. The work is counted in calls at two sizes, not timed."""
    n = 2_500
    listing, texts, trees = _adversarial_pr(n)
    result = recognise(listing, texts=texts, trees=trees)
    added = added_experimental(texts)
    assert result == [] and len(added) == len(range(n - 1, 0, -500))

    def work_at(size):
        listing, texts, trees = _adversarial_pr(size)
        return python_calls(lambda: (recognise(listing, texts=texts, trees=trees), added_experimental(texts)))

    assert grows_linearly(work_at, n)


def test_a_comment_shows_a_bounded_number_of_checklists():
    graduations = [graduation_pr.Graduation(feature=f"f{i}") for i in range(5)]
    lines = graduation_pr.checklist_lines(graduations, REPO)
    assert sum(line.startswith("**Graduation checklist**") for line in lines) == graduation_pr.MAX_CHECKLISTS
    assert "2 more features graduate in this PR:" in lines and lines[-3:-1] == ["- `f3`", "- `f4`"]


def test_diff_lines_split_at_newlines_only():
    patch = " context\u2028+@flashinfer_api\n-@flashinfer_experimental_api\n+++ b/x\r\n+@flashinfer_api\r"
    assert list(graduation_pr.changed_lines(patch)) == [("-", "@flashinfer_experimental_api"), ("+", "@flashinfer_api")]
