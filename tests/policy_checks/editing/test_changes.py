"""The change set's promises: its diff is its apply (through ``git apply``), it never
leaves the root or follows a link, and a failure half-way leaves the tree as it was."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from policy_checks.editing.changes import ChangeSet
from policy_checks.editing.target import Refused

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


def snapshot(root: Path) -> dict:
    """Every file under `root` (``.git`` and ``__pycache__`` aside): bytes and mode."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git" or "__pycache__" in rel.parts or path.is_dir():
            continue
        out[rel.as_posix()] = (path.read_bytes(), os.lstat(path).st_mode & 0o111 != 0)
    return out


def write(root: Path, files: dict) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def git_apply(root: Path, patch: str) -> None:
    subprocess.run([GIT, "init", "-q", str(root)], check=True)
    done = subprocess.run([GIT, "apply", "--whitespace=nowarn", "-"], cwd=root, input=patch.encode("utf-8"),
                          capture_output=True)
    assert done.returncode == 0, done.stderr.decode()


CONTENTS = st.one_of(
    st.just(b""),
    st.binary(max_size=40),
    st.lists(st.sampled_from([b"a\n", b"b\r\n", b"\x0c\n", b"x = 1\n", b"\xe2\x80\xa8\n", b"tail"]), max_size=8)
    .map(b"".join),
)
NAMES = st.sampled_from(["a.py", "b.txt", "pkg/c.py", "pkg/d.json", "pkg/sub/e.py", "empty.py", "build.json"])


@needs_git
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.dictionaries(NAMES, CONTENTS, max_size=6),
    edits=st.lists(st.tuples(st.sampled_from(["rewrite", "delete", "create", "rmdir", "move", "shim"]), NAMES, CONTENTS),
                   max_size=6),
    executable=st.booleans(),
)
@example(before={"a.py": b"", "pkg/d.json": b""}, edits=[("rmdir", "pkg/c.py", b""), ("create", "pkg/c.py", b"")],
         executable=False)  # a folder deleted, then a file made in it: the folder stays
@example(before={"a.py": b"", "b.txt": b""}, edits=[("delete", "b.txt", b""), ("create", "b.txt", b"")],
         executable=True)  # deleted and made again with another mode: the patch says so
@example(before={"a.py": b"x = 1\na\na\n", "pkg/c.py": b"a\n"}, edits=[("move", "a.py", b"tail"), ("move", "pkg/c.py", b"")],
         executable=True)  # two moves, one edited, one with a new mode: git's rename form
@example(before={"a.py": b"x = 1\na\na\n"}, edits=[("shim", "a.py", b"shim\n")], executable=True)
def test_the_diff_applied_with_git_gives_the_tree_the_apply_leaves(tmp_path_factory, before, edits, executable):
    run_root, patch_root = tmp_path_factory.mktemp("run"), tmp_path_factory.mktemp("patched")
    for root in (run_root, patch_root):
        write(root, before)
        if executable and before:
            os.chmod(root / sorted(before)[0], 0o755)
    changes = ChangeSet(run_root)
    for kind, rel, data in edits:
        try:
            if kind == "rewrite":
                changes.rewrite(rel, data)
            elif kind == "delete":
                changes.delete(rel)
            elif kind == "create":
                changes.create(rel, data, 0o755 if executable else 0o644)
            elif kind == "move":  # the file moves to pkg/moved/, the data appended: a rename to detect
                moved = changes.read(rel) + data
                changes.delete(rel)
                changes.create(f"pkg/moved/{rel.rpartition('/')[2]}", moved, 0o755 if executable else 0o644)
            elif kind == "shim":  # moved, and the old path rewritten with `data`: a copy to detect
                moved = changes.read(rel)
                changes.rewrite(rel, data)
                changes.create(f"pkg/moved/{rel.rpartition('/')[2]}", moved + b"x\n")
            else:
                changes.delete(rel.rpartition("/")[0] or rel)
        except Refused:
            continue
    patch = changes.diff()
    changes.apply()
    if patch:
        git_apply(patch_root, patch)
    assert snapshot(patch_root) == snapshot(run_root)


@needs_git
def test_a_moved_file_is_shown_in_gits_rename_form_with_only_the_hunks_of_its_edit(tmp_path):
    body = b"".join(b"line %d\n" % n for n in range(300))
    write(tmp_path, {"feat/kernel.py": body, "feat/same.json": b"{}\n", "gone.py": b"other\n"})
    changes = ChangeSet(tmp_path)
    changes.delete("feat")
    changes.delete("gone.py")
    changes.create("home/kernel.py", body.replace(b"line 7\n", b"line seven\n"))
    changes.create("home/same.json", b"{}\n")
    changes.create("home/unrelated.py", b"something else\n")
    patch = changes.diff()
    assert ("diff --git a/feat/kernel.py b/home/kernel.py\nsimilarity index 99%\n"
            "rename from feat/kernel.py\nrename to home/kernel.py\n--- a/feat/kernel.py\n+++ b/home/kernel.py\n") in patch
    assert "-line 7\n+line seven\n" in patch and "+line 200" not in patch  # the hunk, not the whole file
    assert ("diff --git a/feat/same.json b/home/same.json\nsimilarity index 100%\n"
            "rename from feat/same.json\nrename to home/same.json\n") in patch
    assert "deleted file mode 100644" in patch.split("diff --git a/gone.py")[1]  # nothing alike: a deletion
    assert "new file mode 100644" in patch.split("diff --git a/home/unrelated.py")[1]
    assert patch.count("\n") < 40
    copy = tmp_path.parent / (tmp_path.name + "-copy")
    shutil.copytree(tmp_path, copy)
    changes.apply()
    git_apply(copy, patch)
    assert snapshot(copy) == snapshot(tmp_path)


@needs_git
def test_a_module_moved_with_a_shim_left_at_its_old_path_is_shown_as_a_copy(tmp_path):
    body = b"".join(b"line %d\n" % n for n in range(300))
    write(tmp_path, {"exp/feat/kernel.py": body})
    changes = ChangeSet(tmp_path)
    changes.rewrite("exp/feat/kernel.py", b"from home.kernel import *\n")
    changes.create("home/kernel.py", body + b"added\n")
    patch = changes.diff()
    assert ("diff --git a/exp/feat/kernel.py b/home/kernel.py\nsimilarity index 99%\n"
            "copy from exp/feat/kernel.py\ncopy to home/kernel.py\n") in patch
    assert "+line 5\n" not in patch and "+added\n" in patch  # the new file's hunk is its edit only
    copy = tmp_path.parent / (tmp_path.name + "-copy")
    shutil.copytree(tmp_path, copy)
    changes.apply()
    git_apply(copy, patch)
    assert snapshot(copy) == snapshot(tmp_path)


def test_renames_pair_each_file_once_and_below_half_alike_stay_apart(tmp_path):
    write(tmp_path, {"a.py": b"a\nb\nc\nd\n", "b.py": b"a\nb\nc\nd\n"})
    changes = ChangeSet(tmp_path)
    changes.delete("a.py")
    changes.delete("b.py")
    changes.create("x/a.py", b"a\nb\nc\nd\n")
    changes.create("x/far.py", b"a\nq\nr\ns\n")  # 2 bytes of 8 alike: 25%
    patch = changes.diff()
    assert patch.count("rename from") == 1 and "rename from a.py\nrename to x/a.py" in patch
    assert "deleted file mode" in patch and "new file mode" in patch


@needs_git
def test_deletions_are_written_to_dev_null_and_empty_and_non_python_files_included(tmp_path):
    write(tmp_path, {"feat/__init__.py": b"", "feat/build.json": b"{}\n", "feat/k.py": b"x = 1\n", "keep.py": b"k\n"})
    changes = ChangeSet(tmp_path)
    changes.delete("feat")
    patch = changes.diff()
    assert patch.count("+++ /dev/null") == 2 and patch.count("deleted file mode 100644") == 3
    assert "feat/__init__.py" in patch and "feat/build.json" in patch
    copy = tmp_path.parent / (tmp_path.name + "-copy")
    shutil.copytree(tmp_path, copy)
    changes.apply()
    git_apply(copy, patch)
    assert snapshot(copy) == snapshot(tmp_path) == {"keep.py": (b"k\n", False)}


def test_paths_outside_the_root_and_links_are_refused_when_planned(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"s")
    root = tmp_path / "repo"
    write(root, {"pkg/a.py": b"a\n"})
    os.symlink(outside, root / "pkg" / "linked_dir")
    os.symlink(outside / "secret", root / "pkg" / "linked_file")
    os.mkfifo(root / "pkg" / "fifo")
    changes = ChangeSet(root)
    for attempt in (
        lambda: changes.delete("../outside/secret"),
        lambda: changes.create("/tmp/x", b""),
        lambda: changes.read("pkg/linked_file"),
        lambda: changes.delete("pkg/linked_file"),
        lambda: changes.create("pkg/linked_dir/new", b""),
        lambda: changes.rewrite("pkg/fifo", b""),
        lambda: changes.delete("pkg"),  # holds a link and a FIFO
    ):
        with pytest.raises(Refused):
            attempt()
    assert not changes and (outside / "secret").read_bytes() == b"s"


@pytest.mark.parametrize("fail_at", [0, 1, 2, 3, 4])
def test_a_failure_half_way_puts_the_tree_back(tmp_path, fail_at):
    write(tmp_path, {"a.py": b"a\n", "gone/b.py": b"b\n", "gone/c.txt": b"c\n", "d.py": b"d\n"})
    before = snapshot(tmp_path)
    changes = ChangeSet(tmp_path)
    changes.rewrite("a.py", b"A\n")
    changes.delete("gone")
    changes.create("new/pkg/e.py", b"e\n")
    changes.delete("d.py")
    seen = []

    def fail(change):
        if len(seen) == fail_at:
            raise OSError("disk full")
        seen.append(change.path)

    with pytest.raises(OSError):
        changes.apply(before_each=fail)
    assert snapshot(tmp_path) == before
    assert not (tmp_path / "new").exists()


def test_a_file_changed_since_the_plan_refuses_the_whole_apply(tmp_path):
    write(tmp_path, {"a.py": b"a\n", "b.py": b"b\n"})
    changes = ChangeSet(tmp_path)
    changes.rewrite("a.py", b"A\n")
    changes.rewrite("b.py", b"B\n")
    (tmp_path / "b.py").write_bytes(b"edited\n")
    with pytest.raises(Refused, match="b.py changed on disk"):
        changes.apply()
    assert (tmp_path / "a.py").read_bytes() == b"a\n"
