"""How to report, beside what (`Options`): the command line's report options."""

from __future__ import annotations

from typing import NamedTuple


class Options(NamedTuple):
    """``--statistics`` (text: a count per rule instead of the findings; json: adds
    ``statistics``), ``--quiet`` (text: the findings and nothing else),
    ``--sarif-suppressed`` (SARIF: also the baselined findings, as suppressed
    results, and the fixed baseline entries), and `fix`: the ``policy-check fix``
    command line that would see the run's findings (its baseline options), for the
    text report's hint."""

    statistics: bool = False
    quiet: bool = False
    sarif_suppressed: bool = False
    fix: str = "policy-check fix"
