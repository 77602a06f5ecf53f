"""The scratch project fixture, `tree` (tests/policy_checks/scratch.py)."""

from ..scratch import tree  # noqa: F401  (a fixture)
