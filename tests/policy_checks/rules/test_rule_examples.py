"""Every rule's VALID and INVALID examples (Fixit-style): valid ones produce no
finding of the rule, invalid ones exactly the listed ones; with and without the
prefilter, with every rule selected and with the rule alone (its own declaration is
then the whole prefilter)."""

from __future__ import annotations

import pytest

from policy_checks.rules.registry import RULES

from ..conftest import located

CASES = [
    pytest.param(rule, example, valid, id=f"{rule.id}-{'valid' if valid else 'invalid'}-{n}")
    for rule in RULES.values()
    for valid, examples in ((True, rule.VALID), (False, rule.INVALID))
    for n, example in enumerate(examples)
]


@pytest.mark.parametrize("rule,example,valid", CASES)
@pytest.mark.parametrize("prefilter", [True, False])
@pytest.mark.parametrize("alone", [False, True], ids=["all-rules", "alone"])
def test_example(check, rule, example, valid, prefilter, alone):
    select = [rule.id] if alone else None
    result = check(example.files, example.settings, prefilter=prefilter, jobs=1, select=select)
    expected = [] if valid else sorted(example.expect)
    assert located(result, rule.id) == expected, [f for f in result.findings if f.rule == rule.id]


def test_every_rule_has_examples():
    assert RULES and all(rule_id.startswith("EXP") for rule_id in RULES)  # the registry's, whatever their number
    for rule in RULES.values():
        assert rule.VALID and rule.INVALID, rule.id
        assert rule.__doc__ and len(rule.__doc__.split()) > 30, rule.id
