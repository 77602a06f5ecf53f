"""The audit's rule ids (``policy-check audit``, `policy_checks.audit`), as data only.

So the rule table can list them without importing the audit itself, which starts
subprocesses. Each id is a `MetaRule`: id, name, summary, and the doc
``policy-check explain`` prints. It has the same shape as the suppressions' meta rules.
"""

from __future__ import annotations

from .meta import MetaRule

NOT_AUDITED = MetaRule(
    "AUD000", "not-audited", "a module, listing or lane could not be run, so the audit says nothing of it",
    """A core module that fails to import for its own reasons, times out, or needs what the
audit cannot give it is reported here with the error, never counted clean.""",
)
CORE_LOADS_EXPERIMENTAL = MetaRule(
    "AUD001", "core-loads-experimental",
    "importing a core module loaded or executed experimental code beyond the support modules",
    """Importing ``flashinfer`` or any core module must not load or execute code of the
experimental package, except the support modules the static rules allow (EXP001, EXP003).
The audit imports each core module in an isolated interpreter and records every module or
file of the experimental package loaded or executed, however it got there (the import
system, ``exec``/``compile``, ``runpy``, spec loaders, ``.pyc`` files, paths through links).
The finding's message is the chain that led there: core module and line, then the loader.""",
)
AOT_LISTS_EXPERIMENTAL = MetaRule(
    "AUD002", "aot-lists-experimental",
    "the AOT listing loaded experimental code or returned an experimental JIT spec",
    """AOT pre-builds stable kernels only; experimental kernels are JIT-only (EXP005).
The audit calls the AOT listing (this repository's ``_register_builtin()`` shape and
FlashInfer's ``gen_all_modules()`` shape) under the same tracing as AUD001.""",
)
STABLE_LANE_COLLECTS_EXPERIMENTAL = MetaRule(
    "AUD003", "stable-lane-collects-experimental",
    "the stable test lane, collected exactly as CI runs it, collected an experimental test",
    """``pytest tests/`` must never collect ``tests/experimental/`` (EXP008). The audit runs
the stable lane's collection (``pytest --collect-only``) as CI runs it and reports every
collected test whose file resolves under the experimental test directory.""",
)

AUDIT_RULES = {
    rule.id: rule
    for rule in (NOT_AUDITED, CORE_LOADS_EXPERIMENTAL, AOT_LISTS_EXPERIMENTAL, STABLE_LANE_COLLECTS_EXPERIMENTAL)
}
