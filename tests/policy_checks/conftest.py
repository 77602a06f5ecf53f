"""Helpers for the checker's tests: write a tiny project, run the checker on it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from policy_checks.engine import store
from policy_checks.model.config import from_table
from policy_checks.engine.runner import run


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """No test reads or writes this machine's real user cache directory: the cache
    and the XDG cache home (what platformdirs reads on Linux) are scratch folders,
    outside every test's tree. Subprocesses inherit them."""
    base = tmp_path_factory.mktemp("user-cache")
    monkeypatch.setenv(store.ENVIRONMENT, str(base / "policy-check"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "xdg"))
    return base


def write_tree(root: Path, files: dict) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def write_raw_name(root: Path, rel: bytes, content: bytes = b"") -> None:
    """Write a file whose path is given as bytes (not valid UTF-8, say); skips the
    test where the file system refuses such a name."""
    path = os.path.join(os.fsencode(root), rel)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    except OSError as error:
        pytest.skip(f"the file system refuses the name {rel!r}: {error}")
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)


@pytest.fixture
def check(tmp_path):
    """check(files, settings=None, **run_options) -> Result over a fresh tree."""

    def _check(files: dict, settings: dict = None, root: Path = None, **options):
        root = write_tree(root or tmp_path / "project", files)
        options.setdefault("use_cache", False)
        options.setdefault("progress", False)
        return run(root, from_table(settings or {}), **options)

    return _check


def located(result, rule=None) -> list:
    return sorted((f.path, f.line) for f in result.findings if rule is None or f.rule == rule)


def python_calls(thunk) -> int:
    """How many Python-level function calls `thunk()` makes: a measure of work that,
    unlike a stopwatch, does not depend on the machine or its load. Comparing it at two
    input sizes tells linear work from quadratic."""
    import sys

    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        thunk()
    finally:
        sys.setprofile(None)
    return count


def grows_linearly(work_at, n: int) -> bool:
    """Does `work_at(size)` (a `python_calls` count) at most about double when the size
    doubles? Quadratic work would quadruple."""
    small, large = work_at(n), work_at(2 * n)
    return large <= 2.6 * small
