"""A private JIT cache directory and an empty in-process memo for every JIT test."""

import pytest

from flashinfer.jit import cache


@pytest.fixture(autouse=True)
def jit_cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "jit-cache"
    monkeypatch.setenv(cache.CACHE_DIR_ENV_VAR, str(root))
    cache.clear_memo()
    yield root
    cache.clear_memo()
