"""``policy-check audit``: containment judged by what the code does when it runs.

The static rules (``policy_checks.rules``) judge the source text. The audit runs the
tree under test in isolated subprocesses. It records what actually happened:

- which experimental modules an import of core loaded;
- what the AOT listing returned;
- which tests the stable lane collected.

Its rule ids (AUDnnn) live in `policy_checks.audit.rules`.
"""
