"""What one run gives the report formats: `Result`. Imports nothing of the checker, so
that a replayed run (`replay`) hands the formats a result without loading the runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class Result:
    findings: list  # with a baseline: the new ones only
    files_checked: int
    warnings: list = field(default_factory=list)
    parsed: int = 0  # files whose facts were computed this run (not from the cache)
    # `baseline.Fingerprint` of each of `findings`, in the same order (None when the
    # run was told not to compute them: `run`'s `fingerprints`, without a baseline).
    fingerprints: Optional[list] = None
    # With a baseline (`baseline.Baseline`): its name, the findings it accepts (and
    # their fingerprints, in the same order), and ``(Fingerprint, count)`` of what it
    # accepts beyond today's findings (paid-off debt, until pruned). Without one:
    # None and empty.
    baseline: Optional[str] = None
    baselined: list = field(default_factory=list)
    baselined_fingerprints: list = field(default_factory=list)
    fixed: list = field(default_factory=list)
    # With ``--policy-from`` (`policy_change.judge`): the findings the base
    # revision's policy reports and this tree's policy hides (`policy_change.Hidden`),
    # the revision as given and its commit, and whether a maintainer approved the
    # policy change. Without it: empty, None, False.
    hidden: list = field(default_factory=list)
    policy_from: Optional[tuple] = None  # (revision as given, commit)
    approved: bool = False
    # The experimental package's directory when the tree has none (FlashInfer before
    # its experimental track): the containment rules then had nothing to check, which
    # the text report says. None when the package is there.
    no_experimental_package: Optional[str] = None
