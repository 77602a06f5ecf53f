"""What goes with the feature outside core, and the note that closes it.

Its own examples and docs pages are found by exact names. A name that merely
starts with the feature's belongs to others: ``gated_rmsnorm_demo.py`` for a
feature ``gate``. So does a directory the settings name: ``docs/api`` for a
feature ``api``.

Its entries of the baseline go in the same change. So the next
``policy-check run`` reports no fixed debt (docs/policy_check.rst, "Adopting
policy-check on an existing tree"). An entry is the feature's when what it
fingerprints goes. That is a deleted module or path, or a removed definition's
scope, or one nested in it. It is also a subject naming the feature's module or
directory. Counts of the other entries stay as they are.

The closing note ends the guide's removal path. It says which issue, what went,
and where a person fills in the change. ``policy-check bot note`` posts it. The
lifecycle commands sit below the bot and never talk to GitHub.
"""

from __future__ import annotations

import os
import re
from typing import Dict, Iterable, List, Set

from ...engine import baseline as baseline_file
from ...model import markers
from ...model import records as feature_records
from ...model.config import module_under, under
from ...model.facts import extract
from ...editing import docs_tree
from ...editing.changes import Rewrite
from ...editing.target import FixTarget
from ..plan import Edits, Plan
from .model import Feature

DOCS, BASELINE = "docs", "baseline"  # the steps that record here, as the plan names them

# an example named after the feature: ``feat.py``, ``feat_demo.py``, ``feat_example.py``
EXAMPLE_SUFFIXES = ("", "_demo", "_example", "_examples")


def own_examples(target: FixTarget, project, feature: Feature) -> List[str]:
    """The examples that go.

    They are a directory ``<examples>/<feature>/``, the files named after the
    feature, and those importing its modules.
    """
    examples = project.settings.examples
    found = []
    if os.path.lexists(target.root / examples / feature.name):
        found.append(f"{examples}/{feature.name}")
    names = {f"{feature.name}{suffix}.py" for suffix in EXAMPLE_SUFFIXES}
    for rel, text in sorted(project.example_texts().items()):
        if found and rel.startswith(found[0] + "/"):
            continue
        if rel.rpartition("/")[2] in names or _imports(project, rel, text, feature.module):
            found.append(rel)
    return found


def _imports(project, rel: str, text: str, module: str) -> bool:
    facts = extract(text.encode("utf-8"), rel[:-3].replace("/", "."), False)
    return any(module_under(t, module) for imp in facts.imports for t in [imp.module, *project.import_targets(imp)])


def plan_docs(target: FixTarget, project, removal: Plan, words) -> Edits:
    """Remove the feature's pages with their toctree lines.

    Other lines that name the feature, a retired backend or a removed API are
    listed for a person.
    """
    pattern = docs_tree.word_pattern(words)
    reserved = docs_tree.setting_dirs(target)
    deletions: List[str] = []
    rewrites: List[Rewrite] = []
    for top in docs_tree.docs_dirs(target):
        files = docs_tree.docs_files(target, project, top)
        pages = [rel for rel in files if docs_tree.is_feature_page(rel, top, removal.feature, reserved)]
        deletions += pages
        gone_pages = {rel.rpartition(".")[0] for rel in pages}
        for rel in files:
            if rel not in pages:
                rewrites += _plan_page(target, removal, rel, top, gone_pages, pattern)
    return Edits(rewrites=rewrites, deletions=deletions)


def _plan_page(target: FixTarget, removal: Plan, rel: str, top: str, gone_pages, pattern) -> List[Rewrite]:
    """Remove a kept page's toctree lines naming a deleted page.

    Its other lines naming what goes are listed for a person.
    """
    before = (target.root / rel).read_bytes()
    lines = before.splitlines(keepends=True)
    dropped = set()
    if rel.endswith(docs_tree.PAGE_SUFFIXES):
        dropped = docs_tree.toctree_lines(lines, rel, docs_tree.source_dir(target, rel, top), gone_pages)
    for index, line in enumerate(lines):
        text = line.decode("utf-8", "replace").strip()
        if index not in dropped and pattern.search(text):
            removal.ask(DOCS, f"{rel}:{index + 1}: {text}")
    if not dropped:
        return []
    return [Rewrite(rel, before, b"".join(l for i, l in enumerate(lines) if i not in dropped))]


def prune_baseline(project, removal: Plan, feature: Feature, removed_defs: Dict[str, Set[str]]) -> Edits:
    """Plan the baseline file without the feature's entries.

    Nothing is planned when there is no baseline or it holds none. An unreadable
    baseline is left for a person.
    """
    path = baseline_file.default_path(removal.target.root)
    if not path.is_file():
        return Edits()
    rel = path.relative_to(removal.target.root).as_posix()
    try:
        current = baseline_file.read(path, rel)
    except baseline_file.BaselineError as error:
        removal.ask(BASELINE, f"{rel}: not pruned: {error.problem}")
        return Edits()
    gone_modules = {feature.module} | {project.files[r].module for r in project.files if removal.gone(r)}
    belongs = _belongs(gone_modules, removal.deletions, removed_defs, [feature.module, feature.directory])
    kept = {fp: count for fp, count in current.counts.items() if not belongs(fp)}
    if len(kept) == len(current.counts):
        return Edits()
    removal.did(BASELINE, f"{rel}: {len(current.counts) - len(kept)} entries of {feature.name}")
    return Edits(rewrites=[Rewrite(rel, path.read_bytes(), baseline_file.dumps(kept).encode("ascii"))])


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


CHANGE_PLACEHOLDER = "<commit or PR>"


def how_to_post(feature_dir) -> str:
    """The bot command that posts the note. The checker itself never talks to GitHub."""
    record_path = feature_dir / markers.RECORD
    record = feature_records.read(record_path) if record_path.is_file() else None
    if record is None or record.tracking is None:
        return "post it when the change lands"
    repo = record.tracking.repo or "OWNER/NAME"
    return (f"fill in {CHANGE_PLACEHOLDER} once the change lands, then post it with `GITHUB_TOKEN=... "
            f"policy-check bot note --repo {repo} --issue {record.tracking.number} --body-file NOTE`")


def closing_note(removal: Plan, feature: Feature, feature_dir) -> str:
    """``Close #N: feature X removed in <commit or PR>.`` and what went.

    Without a tracking issue in the record, it says what a person does instead.
    """
    record_path = feature_dir / markers.RECORD
    record = feature_records.read(record_path) if record_path.is_file() else None
    if record is None or record.tracking is None:
        where = f"{feature.directory}/{markers.RECORD}"
        return (f"{where} names no tracking issue: close the issue that tracked {feature.name} by hand, "
                f"naming {CHANGE_PLACEHOLDER} that removed it")
    removed = [item for _, item in removal.done]
    went = [item for item in removed if not item.startswith("backend ")]
    backends = [item for item in removed if item.startswith("backend ")]
    lines = [f"Close {record.tracking.render('')}: feature {feature.name} removed in {CHANGE_PLACEHOLDER}."]
    lines.append(f"Removed: {feature.directory}/" + (f" and its tests {feature.tests}/" if feature.tests else ""))
    lines += [f"- {item}" for item in went]
    lines += [f"- {item}" for item in backends]
    return "\n".join(lines)
