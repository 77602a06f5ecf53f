"""How to report, beside what (`Options`): the command line's report options."""

from __future__ import annotations

from typing import NamedTuple


class Options(NamedTuple):
    """The report options of a run.

    - ``--statistics``: text gives a count per rule instead of the findings; json adds
      ``statistics``.
    - ``--quiet``: text gives the findings and nothing else.
    - ``--sarif-suppressed``: SARIF also gives the baselined findings, as suppressed
      results, and the fixed baseline entries.
    - `fix`: the ``policy-check fix`` command line that would see the run's findings, with
      its baseline options. The text report's hint uses it."""

    statistics: bool = False
    quiet: bool = False
    sarif_suppressed: bool = False
    fix: str = "policy-check fix"
