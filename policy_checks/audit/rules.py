"""The audit's rule ids, declared beside the rules (`policy_checks.rules.audit`).

So the rule table lists them without importing the audit.
"""

from ..rules.audit import (  # noqa: F401
    AOT_LISTS_EXPERIMENTAL, AUDIT_RULES, CORE_LOADS_EXPERIMENTAL, NOT_AUDITED, STABLE_LANE_COLLECTS_EXPERIMENTAL,
)
