"""Helpers for the checker's tests: write a tiny project, run the checker on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy_checks.config import from_table
from policy_checks.runner import run


def write_tree(root: Path, files: dict) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


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
