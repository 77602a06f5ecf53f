"""The consumer check's rule ids (CONnnn), as data only.

So the rule table lists them (``policy-check rules`` / ``explain``) without importing
`policy_checks.consumer`. ``policy-check consumer`` judges code that *calls* FlashInfer,
such as a serving framework. It judges it against the experimental surface of one FlashInfer
version. ``policy-check run`` never selects these ids: `registry.selected_ids` leaves them
out.
"""

from __future__ import annotations

from .meta import MetaRule

EXPERIMENTAL_API_CALL = MetaRule(
    "CON001", "experimental-api-call", "downstream code calls an experimental FlashInfer API",
    """Calling an ``@flashinfer_experimental_api`` function is an explicit opt-in: it carries no
compatibility guarantee and may change or disappear in any FlashInfer release. The consumer
check resolves the caller's imports (``import flashinfer``, module aliases,
``from flashinfer.x import y as z``, re-export paths) against the experimental surface of the
FlashInfer version the code is judged by, and reports each call with its file and line.
A supported framework release should not reach one by default (docs/consumer.rst).""",
)
EXPERIMENTAL_BACKEND_NAMED = MetaRule(
    "CON002", "experimental-backend-named", "downstream code passes an experimental backend name to a stable API",
    """``backend="<experimental>"`` on a stable API selects an experimental backend: an opt-in
with no compatibility guarantee. The name is found as a literal, through a variable assigned a
literal in the same function or module, or through a parameter's default.""",
)
GATE_ENABLED = MetaRule(
    "CON003", "experimental-gate-enabled",
    "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1 is set in code or configuration",
    """The gate lets ``backend="auto"`` (dispatch and autotuning) pick experimental backends for
every stable API of the process. The contract (docs/experimental.rst) says a supported
framework release must not enable it by default. Found in Python (``os.environ[...] = "1"``,
``setdefault``, ``update``, ``putenv``, environment dicts handed to subprocesses), shell
scripts, Dockerfiles (``ENV``/``ARG``), YAML/TOML/INI configuration and CI workflows.""",
)

CONSUMER_RULES = {rule.id: rule for rule in (EXPERIMENTAL_API_CALL, EXPERIMENTAL_BACKEND_NAMED, GATE_ENABLED)}
