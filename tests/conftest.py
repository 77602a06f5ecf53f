"""Fixtures shared by both test lanes.

Every test starts with the experimental gate unset and with no experimental
warning emitted yet, whatever the environment running pytest holds, so tests of
once-only warnings and of the gate never depend on test order.
"""

from __future__ import annotations

import pytest

from flashinfer import api_logging


@pytest.fixture(autouse=True)
def _fresh_experimental_state(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(api_logging.EXPERIMENTAL_AUTO_ENV_VAR, raising=False)
    api_logging._reset_warnings_for_tests()
    yield
    api_logging._reset_warnings_for_tests()


@pytest.fixture
def gate_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1 for the test."""
    monkeypatch.setenv(api_logging.EXPERIMENTAL_AUTO_ENV_VAR, "1")
