"""Every rule's VALID and INVALID examples (Fixit-style): valid ones produce no
finding of the rule, invalid ones exactly the listed ones; with and without the
prefilter, and with one and two worker processes."""

from __future__ import annotations

import pytest

from policy_checks.rules import RULES

from .conftest import located

CASES = [
    pytest.param(rule, example, valid, id=f"{rule.id}-{'valid' if valid else 'invalid'}-{n}")
    for rule in RULES.values()
    for valid, examples in ((True, rule.VALID), (False, rule.INVALID))
    for n, example in enumerate(examples)
]


@pytest.mark.parametrize("rule,example,valid", CASES)
@pytest.mark.parametrize("prefilter", [True, False])
def test_example(check, rule, example, valid, prefilter):
    result = check(example.files, example.settings, prefilter=prefilter, jobs=1)
    expected = [] if valid else sorted(example.expect)
    assert located(result, rule.id) == expected, [f for f in result.findings if f.rule == rule.id]


def test_every_rule_has_examples():
    assert sorted(RULES) == [f"EXP00{n}" for n in range(10)]
    for rule in RULES.values():
        assert rule.VALID and rule.INVALID, rule.id
        assert rule.__doc__ and len(rule.__doc__.split()) > 30, rule.id
