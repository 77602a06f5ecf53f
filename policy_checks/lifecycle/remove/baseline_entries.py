"""The removed feature's entries of the baseline go in the same change, so the next
``policy-check run`` does not report them as fixed debt and ask for ``baseline
--prune`` (docs/policy_check.rst, "Adopting policy-check on an existing tree").

An entry is the feature's when what it fingerprints goes with the removal: a module
or path the removal deletes, a removed definition's scope (or one nested in it), or a
subject naming the feature's module or directory (a core import of it, say). Only
entries go; counts of the others stay as they are.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, Set

from ...engine import baseline as baseline_file
from ...model.config import module_under, under
from ...editing.changes import Rewrite
from .model import Feature, Removal


def prune_baseline(project, removal: Removal, feature: Feature, removed_defs: Dict[str, Set[str]]) -> None:
    """Plan the baseline file without the feature's entries (nothing when there is no
    baseline or it holds none); an unreadable baseline is left for a person."""
    path = baseline_file.default_path(removal.target.root)
    if not path.is_file():
        return
    rel = path.relative_to(removal.target.root).as_posix()
    try:
        current = baseline_file.read(path, rel)
    except baseline_file.BaselineError as error:
        removal.notes.append(f"{rel}: not pruned: {error.problem}")
        return
    gone_modules = {feature.module} | {project.files[r].module for r in project.files if removal.gone(r)}
    belongs = _belongs(gone_modules, removal.deletions, removed_defs, [feature.module, feature.directory])
    kept = {fp: count for fp, count in current.counts.items() if not belongs(fp)}
    if len(kept) == len(current.counts):
        return
    before = path.read_bytes()
    removal.rewrites.append(Rewrite(rel, before, baseline_file.dumps(kept).encode("ascii")))
    removal.removed.append(f"{rel}: {len(current.counts) - len(kept)} entries of {feature.name}")


def _belongs(gone_modules: Set[str], deletions: Iterable[str], removed_defs: Dict[str, Set[str]], words):
    deletions = list(deletions)
    named = re.compile("|".join(r"(?<![\w.])" + re.escape(w) + r"(?![\w])" for w in words))

    def belongs(fp: baseline_file.Fingerprint) -> bool:
        if any(module_under(fp.module, m) for m in gone_modules) or any(under(fp.module, d) for d in deletions):
            return True
        scopes = removed_defs.get(fp.module, ())
        if any(fp.scope == s or fp.scope.startswith(s + ".") for s in scopes):
            return True
        return named.search(fp.subject) is not None

    return belongs
