"""The one directory walker: a stable order, links yielded and never followed, the
caller's say on which directories to enter, and a directory it cannot list noted."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_checks.model import walk


def plant(root, files):
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)


def test_a_directorys_own_entries_come_before_what_lies_below_them(tmp_path):
    plant(tmp_path, ["b/z.py", "b/a/deep.py", "a.py", "c.py", "b/y.txt"])
    rels = [entry.rel for entry in walk.walk(tmp_path)]
    assert rels == ["a.py", "b", "c.py", "b/a", "b/y.txt", "b/z.py", "b/a/deep.py"]
    assert [e.rel for e in walk.files(tmp_path, "b")] == ["b/y.txt", "b/z.py", "b/a/deep.py"]


def test_links_are_yielded_and_never_followed(tmp_path):
    plant(tmp_path, ["pkg/mod.py", "outside/secret.py"])
    os.symlink(tmp_path / "outside", tmp_path / "pkg" / "linked_dir")
    os.symlink(tmp_path / "outside" / "secret.py", tmp_path / "pkg" / "linked.py")
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "loop")  # a loop ends at once
    entries = {entry.rel: entry.kind for entry in walk.walk(tmp_path, "pkg")}
    assert entries == {"pkg/linked.py": walk.LINK, "pkg/linked_dir": walk.LINK, "pkg/loop": walk.LINK,
                       "pkg/mod.py": walk.FILE}
    assert [e.rel for e in walk.files(tmp_path, "pkg")] == ["pkg/mod.py"]


def test_the_caller_decides_which_directories_to_enter(tmp_path):
    plant(tmp_path, ["keep/a.py", "__pycache__/x.pyc", "skip/b.py"])
    rels = [e.rel for e in walk.walk(tmp_path, enter=lambda e: e.name not in ("__pycache__", "skip"))]
    assert rels == ["__pycache__", "keep", "skip", "keep/a.py"]


def test_no_directory_yields_nothing(tmp_path):
    plant(tmp_path, ["file.py"])
    assert list(walk.walk(tmp_path, "missing")) == [] and list(walk.walk(tmp_path, "file.py")) == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root lists any directory")
def test_a_directory_it_cannot_list_is_noted(tmp_path):
    plant(tmp_path, ["open/a.py", "shut/b.py"])
    (tmp_path / "shut").chmod(0)
    try:
        problems: walk.Problems = []
        rels = [e.rel for e in walk.walk(tmp_path, problems=problems)]
    finally:
        (tmp_path / "shut").chmod(0o755)
    assert rels == ["open", "shut", "open/a.py"]
    assert problems == [("shut", "cannot list directory: Permission denied")]


NAMES = st.sampled_from(["a", "b", "c.py", "d.txt", "__pycache__"])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(NAMES, min_size=1, max_size=4), max_size=12))
def test_every_file_once_as_os_walk_finds_it(tmp_path_factory, paths):
    """Without links the walker lists what ``os.walk`` lists, each path once."""
    root = tmp_path_factory.mktemp("tree")
    for parts in paths:
        directory = root.joinpath(*parts[:-1])
        if any(p.is_file() for p in [directory, *directory.parents] if p != root and p.is_relative_to(root)):
            continue
        directory.mkdir(parents=True, exist_ok=True)
        if not (directory / parts[-1]).is_dir():
            (directory / parts[-1]).write_text("x")
    expected = sorted(os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/")
                      for d, _, names in os.walk(root) for n in names)
    found = [e.rel for e in walk.files(root)]
    assert sorted(found) == expected and len(found) == len(set(found))
