"""Fixtures shared by both test lanes.

Every test starts with the experimental gate unset and with no experimental
warning emitted yet, whatever the environment running pytest holds, so tests of
once-only warnings and of the gate never depend on test order.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# CI runs the property tests on a fixed sequence of examples, so that a submission's result
# does not depend on the draw; a developer's runs keep exploring new examples (and a failure
# found there becomes an @example).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

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
