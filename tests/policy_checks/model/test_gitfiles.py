"""Which files a run reads in a git work tree (`policy_checks.model.gitfiles`): never a gitignored
one; in staged mode (the pre-commit hook's) only those in the index; outside a repository,
or without git, every file the walk finds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from policy_checks.model import gitfiles
from policy_checks.model.config import from_table
from policy_checks.model.project import Project
from policy_checks.engine.runner import run

from ..conftest import write_raw_name, write_tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

IDENTITY = ["-c", "user.name=policy-check test", "-c", "user.email=test@example.invalid"]
VIOLATION = "from .experimental import splitk\n"  # EXP001: core imports experimental code
CLEAN = "def mm(x):\n    return x\n"
BASE = {
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/gemm.py": CLEAN,
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def repository(root: Path, files: dict = BASE) -> Path:
    """A repository whose first commit holds `files`."""
    write_tree(root, files)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def findings(root: Path, settings: dict = None, **options) -> list:
    result = run(root, from_table(settings or {}), use_cache=False, progress=False, **options)
    return [(f.path, f.rule) for f in result.findings]


@pytest.fixture
def tree(tmp_path) -> Path:
    """A repository with a gitignored violation, an untracked one and a staged one."""
    root = repository(tmp_path / "repo", {**BASE, ".gitignore": "flashinfer/generated.py\nbuild/\n"})
    write_tree(root, {
        "flashinfer/generated.py": VIOLATION,  # gitignored: what a build step writes
        "flashinfer/scratch.py": VIOLATION,  # untracked, not ignored: a scratch file
        "flashinfer/new_op.py": VIOLATION,  # about to be committed
    })
    git(root, "add", "flashinfer/new_op.py")
    return root


def test_a_gitignored_file_is_never_read(tree):
    assert findings(tree) == [("flashinfer/new_op.py", "EXP001"), ("flashinfer/scratch.py", "EXP001")]


def test_staged_mode_reads_only_what_the_index_holds(tree):
    with gitfiles.selecting(gitfiles.STAGED):
        assert findings(tree) == [("flashinfer/new_op.py", "EXP001")]
    assert gitfiles.mode() == gitfiles.WORK_TREE  # the mode does not outlive the block


def test_the_project_takes_the_mode_as_an_argument_too(tree):
    settings = from_table({})
    staged = Project(tree, settings, load_facts=None, files=gitfiles.STAGED)
    work_tree = Project(tree, settings, load_facts=None, files=gitfiles.WORK_TREE)
    assert sorted(work_tree.files) == sorted(staged.files) + ["flashinfer/scratch.py"]
    assert "flashinfer/generated.py" not in work_tree.files
    assert work_tree.excluded("flashinfer/generated.py") and not work_tree.excluded("flashinfer/scratch.py")
    assert staged.excluded("flashinfer/scratch.py") and not staged.excluded("flashinfer")


def test_a_tracked_file_is_read_even_when_an_ignore_pattern_names_it(tree):
    (tree / "flashinfer/generated.py").write_text(VIOLATION)
    git(tree, "add", "--force", "flashinfer/generated.py")
    assert ("flashinfer/generated.py", "EXP001") in findings(tree)
    with gitfiles.selecting(gitfiles.STAGED):
        assert ("flashinfer/generated.py", "EXP001") in findings(tree)


def test_the_staged_mode_from_the_command_line(tree):
    """``policy-check run --staged``, the hook's entry, and plain ``policy-check run``."""
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}

    def policy_check(*extra):
        return subprocess.run([sys.executable, "-m", "policy_checks", "run", "--root", str(tree), "--no-cache", *extra],
                              capture_output=True, text=True, env=environment, timeout=120)

    staged = policy_check("--staged")
    assert staged.returncode == 1, staged.stderr
    assert "flashinfer/new_op.py:1:1: EXP001" in staged.stdout and "scratch.py" not in staged.stdout
    assert "generated.py" not in staged.stdout
    whole = policy_check()
    assert whole.returncode == 1, whole.stderr
    assert "flashinfer/scratch.py:1:1: EXP001" in whole.stdout and "generated.py" not in whole.stdout


def test_ignored_pages_and_features_are_not_read_either(tmp_path):
    """EXP006 reads docs pages, EXP009 feature directories: a gitignored page (generated
    docs) or feature directory (an untracked copy) is not checked; a tracked one is."""
    root = repository(tmp_path / "repo", {
        **BASE,
        "flashinfer/experimental/api.py": "def fast():\n    pass\n",
        ".gitignore": "docs/api/generated.rst\nflashinfer/experimental/scratch_feature/\n",
    })
    write_tree(root, {
        "docs/api/generated.rst": ".. autofunction:: flashinfer.experimental.api.fast\n",
        "flashinfer/experimental/scratch_feature/__init__.py": "",
    })
    assert findings(root) == []
    (root / ".gitignore").write_text("")
    assert sorted(set(findings(root))) == [  # EXP009: one finding per item the feature lacks
        ("docs/api/generated.rst", "EXP006"),
        ("flashinfer/experimental/scratch_feature/__init__.py", "EXP009"),
    ]
    with gitfiles.selecting(gitfiles.STAGED):  # untracked now, not ignored: not in a commit
        assert findings(root) == []


def test_outside_a_repository_every_file_is_read(tmp_path, monkeypatch):
    root = write_tree(tmp_path / "plain", {**BASE, ".gitignore": "flashinfer/generated.py\n",
                                           "flashinfer/generated.py": VIOLATION})

    def no_process(*args, **kwargs):
        raise AssertionError("no git process for a tree outside every repository")

    monkeypatch.setattr(gitfiles.subprocess, "run", no_process)
    assert gitfiles.listing(root) is None
    monkeypatch.undo()
    assert findings(root) == [("flashinfer/generated.py", "EXP001")]
    with gitfiles.selecting(gitfiles.STAGED):
        assert findings(root) == [("flashinfer/generated.py", "EXP001")]


def test_without_git_every_file_is_read(tree, monkeypatch, tmp_path):
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert gitfiles.listing(tree) is None
    assert findings(tree) == [("flashinfer/generated.py", "EXP001"), ("flashinfer/new_op.py", "EXP001"),
                              ("flashinfer/scratch.py", "EXP001")]


def test_a_root_its_repository_ignores_is_walked(tmp_path):
    """An unpacked tree under an ignored folder (``build/``) is checked whole, not skipped."""
    outer = repository(tmp_path / "outer", {"README.md": "x\n", ".gitignore": "build/\n"})
    unpacked = write_tree(outer / "build" / "unpacked", {**BASE, "flashinfer/bad.py": VIOLATION})
    assert gitfiles.listing(unpacked, package_dir="flashinfer") is None
    assert findings(unpacked) == [("flashinfer/bad.py", "EXP001")]


def test_a_nested_repository_is_read_whole(tree):
    """git shows an untracked nested repository as one ``dir/`` entry and does not look
    inside; neither does the selection: everything below it is read."""
    vendored = write_tree(tree / "flashinfer" / "vendored", {"__init__.py": "", "fast.py": "import flashinfer.experimental\n"})
    git(vendored, "init", "-q")
    assert ("flashinfer/vendored/fast.py", "EXP001") in findings(tree)


def test_a_name_that_is_not_utf8_is_still_reported_when_tracked(tree):
    write_raw_name(tree, b"flashinfer/\xff.py", b"x = 1\n")
    git(tree, "add", "--", os.fsdecode(b"flashinfer/\xff.py"))
    assert ("flashinfer/\\xff.py", "EXP000") in findings(tree)


def test_the_listing_reads_paths_relative_to_a_root_below_the_top(tmp_path):
    outer = repository(tmp_path / "outer", {**{f"project/{k}": v for k, v in BASE.items()}, "other/x.py": ""})
    listing = gitfiles.listing(outer / "project", gitfiles.STAGED)
    assert listing is not None and listing.files == frozenset(BASE)
    assert listing.has_directory("flashinfer/experimental") and not listing.has_directory("other")


def test_an_unknown_mode_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="unknown file selection"):
        with gitfiles.selecting("everything"):
            pass
    with pytest.raises(ValueError, match="unknown file selection"):
        gitfiles.listing(tmp_path, "everything")


# -- the bytes git vouches for ---------------------------------------------------------
# A warm run keys a file by git's object id instead of hashing it only where that id is
# the id of the bytes on disk (`gitfiles.vouched`); every other file is hashed.


def told(root: Path, function):
    """`function()` answered from `gitfiles.state(root)` (`gitfiles.known`), as a run
    that made the replay key first gets it."""
    tree = gitfiles.state(root)
    assert tree is not None
    with gitfiles.known(tree):
        return function()


def answers(root: Path) -> tuple:
    """`vouched` and each mode's listing (files, directories) of `root`."""
    listings = [gitfiles.listing(root, chosen) for chosen in gitfiles.MODES]
    return gitfiles.vouched(root), [(found.files, found.directories) for found in listings]


def blob_id(root: Path, rel: str) -> str:
    """Git's own id of the bytes on disk (no conversion: ``--no-filters``)."""
    return git(root, "hash-object", "--no-filters", rel).strip()


def test_git_vouches_only_for_unchanged_regular_files_it_looks_at(tmp_path):
    files = {name: f"# {name}\n" for name in (
        "clean.py", "edited.py", "staged.py", "staged_then_edited.py", "assumed.py", "skipped.py",
        "assumed_unchanged_untouched.py", "converted.py", "intent.py")}
    root = repository(tmp_path / "repo", {**files, ".gitattributes": "converted.py text eol=crlf\n"})
    os.symlink("clean.py", root / "link.py")
    git(root, "add", "link.py")
    git(root, "commit", "-q", "-m", "a link")
    (root / "edited.py").write_text("# edited, not staged\n")
    (root / "staged.py").write_text("# staged as it is on disk\n")
    git(root, "add", "staged.py")
    (root / "staged_then_edited.py").write_text("# staged\n")
    git(root, "add", "staged_then_edited.py")
    (root / "staged_then_edited.py").write_text("# staged, then edited again\n")
    for name, flag in (("assumed.py", "--assume-unchanged"), ("skipped.py", "--skip-worktree"),
                       ("assumed_unchanged_untouched.py", "--assume-unchanged")):
        git(root, "update-index", flag, name)
    (root / "assumed.py").write_text("# git was told not to look\n")
    (root / "skipped.py").write_text("# nor here\n")
    (root / "untracked.py").write_text("# untracked\n")
    (root / "intent.py").unlink()
    git(root, "rm", "-q", "--cached", "intent.py")
    (root / "intent.py").write_text("# added with --intent-to-add\n")
    git(root, "add", "-N", "intent.py")

    blobs = gitfiles.vouched(root)
    assert sorted(blobs) == ["clean.py", "staged.py"]  # Python files only
    assert all(blobs[rel] == blob_id(root, rel) for rel in blobs)
    for chosen in gitfiles.MODES:  # the staged mode reads the work tree's bytes too
        assert gitfiles.listing(root, chosen).blobs() == blobs
    assert told(root, lambda: answers(root)) == answers(root)  # the tree's state says the same


def test_a_conflicted_file_is_not_vouched_for(tmp_path):
    root = repository(tmp_path / "repo", {"a.py": "x = 1\n", "b.py": "y = 1\n"})
    oid = blob_id(root, "a.py")
    stages = "".join(f"100644 {oid} {stage}\ta.py\n" for stage in (1, 2, 3))
    subprocess.run(["git", "update-index", "--index-info"], cwd=root, input=f"0 {'0' * 40}\ta.py\n" + stages,
                   text=True, check=True)
    assert sorted(gitfiles.vouched(root)) == ["b.py"]
    assert told(root, lambda: answers(root)) == answers(root)


@pytest.mark.parametrize("attributes, config", [
    ("*.py filter=crypt\n", None), ("*.py ident\n", None), ("*.py working-tree-encoding=UTF-16\n", None),
    ("*.py text\n", None), ("*.py eol=lf\n", None), ("*.py crlf\n", None), ("", "true"), ("", "input"),
])
def test_a_file_git_may_convert_is_not_vouched_for(tmp_path, attributes, config):
    """Git's id is then the id of the converted bytes, not of those on disk."""
    root = repository(tmp_path / "repo", {"a.py": "x = 1\n"})
    (root / ".gitattributes").write_text(attributes)  # read from the work tree, tracked or not
    if config:
        git(root, "config", "core.autocrlf", config)
    assert "a.py" not in gitfiles.vouched(root)
    assert "a.py" not in told(root, lambda: gitfiles.vouched(root))


def test_binary_files_and_unset_attributes_are_no_conversion(tmp_path):
    root = repository(tmp_path / "repo", {"a.py": "x = 1\n", "b.py": "y = 1\n",
                                          ".gitattributes": "a.py binary\nb.py -text -filter\n"})
    assert {"a.py", "b.py"} <= set(gitfiles.vouched(root))


def test_no_repository_vouches_for_nothing(tmp_path):
    write_tree(tmp_path, {"a.py": ""})
    assert gitfiles.vouched(tmp_path) == {}
    assert gitfiles.Listing(["a.py"], gitfiles.WORK_TREE).blobs() == {}


def test_the_listing_names_every_directory_above_a_file():
    found = gitfiles.Listing(["a/b/c.py", "a/b/d.py", "a/e/f.py", "g.py", "h/"], gitfiles.WORK_TREE)
    assert found.directories == {"a", "a/b", "a/e"}
    assert found.files == {"a/b/c.py", "a/b/d.py", "a/e/f.py", "g.py", "h"}
    assert found.has_file("h/below.py") and not found.has_directory("g")


def test_object_ids_are_named_relative_to_a_root_below_the_top(tmp_path):
    top = repository(tmp_path / "repo", {"sub/a.py": "x = 1\n", "b.py": "y = 1\n", ".gitattributes": "sub/c.py text\n"})
    write_tree(top, {"sub/c.py": "z = 1\n"})
    git(top, "add", "sub/c.py")
    blobs = gitfiles.vouched(top / "sub")
    assert blobs == {"a.py": blob_id(top, "sub/a.py")}  # c.py: an attribute converts it
    assert told(top / "sub", lambda: answers(top / "sub")) == answers(top / "sub")


def test_the_trees_state_selects_what_git_selects(tree):
    """A run inside `gitfiles.known` lists the files git lists, in both modes, and finds
    the same (ignored, untracked and staged files in the tree)."""
    assert told(tree, lambda: answers(tree)) == answers(tree)
    for chosen in gitfiles.MODES:
        with gitfiles.selecting(chosen):
            assert told(tree, lambda: findings(tree)) == findings(tree)
    assert gitfiles.state(tree.parent) is None  # not a repository: no state, no listing from it


@pytest.mark.parametrize("named", [256, 1])
def test_the_trees_state_lists_the_untracked_files_git_does_not_ignore(tmp_path, monkeypatch, named):
    """`state` walks the tree once, ignored entries included, and asks git which untracked
    files it does not ignore below those entries only (or, past `_MAX_NAMED` of them, in the
    whole tree): the files it lists are ``git ls-files --cached --others --exclude-standard``'s,
    whatever the ignore rules (a negated pattern, an ignored directory, a name with a tab)."""
    monkeypatch.setattr(gitfiles, "_MAX_NAMED", named)
    root = repository(tmp_path / "repo", {**BASE, ".gitignore": "build/\n*.log\nkeep/*\n!keep/this.py\n"})
    write_tree(root, {"build/out.py": "", "a.log": "", "keep/this.py": "", "keep/that.py": "",
                      "new/deep/op.py": "", "flashinfer/scratch.py": "", "flashinfer/tab\there.py": ""})
    os.mkdir(root / "empty")
    expected = set(git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")) - {""}
    tree = gitfiles.state(root)
    assert tree.files() == expected and "keep/this.py" in expected and "build/out.py" not in expected
    before = tree.digest
    (root / "empty/x.log").write_text("")  # inside a directory holding no listed file: its contents do not count
    assert gitfiles.state(root).digest == before
    (root / "b.log").write_text("")  # an ignored name beside listed files: a new entry
    assert gitfiles.state(root).digest != before
