"""The feature's own examples and docs pages, found by exact names: a name that merely
starts with the feature's (``gated_rmsnorm_demo.py`` for a feature ``gate``) or a
directory the settings name (``docs/api`` for a feature ``api``) belongs to others."""

from __future__ import annotations

import os
from typing import List

from ...model.config import module_under
from ...model.facts import extract
from ...editing import docs_tree
from ...editing.changes import Rewrite
from ...editing.target import FixTarget
from .model import Feature, Removal

# an example named after the feature: ``feat.py``, ``feat_demo.py``, ``feat_example.py``
EXAMPLE_SUFFIXES = ("", "_demo", "_example", "_examples")


def own_examples(target: FixTarget, project, feature: Feature) -> List[str]:
    """The examples that go: a directory ``<examples>/<feature>/``, the files named
    after the feature, and those importing its modules."""
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


def plan_docs(target: FixTarget, project, removal: Removal, words) -> None:
    """The feature's pages go with their toctree lines; other lines that name the
    feature, a retired backend or a removed API are listed for a person."""
    pattern = docs_tree.word_pattern(words)
    reserved = docs_tree.setting_dirs(target)
    for top in docs_tree.docs_dirs(target):
        files = docs_tree.docs_files(target, project, top)
        pages = [rel for rel in files if docs_tree.is_feature_page(rel, top, removal.feature, reserved)]
        removal.deletions += pages
        gone_pages = {rel.rpartition(".")[0] for rel in pages}
        for rel in files:
            if rel not in pages:
                _plan_page(target, removal, rel, top, gone_pages, pattern)


def _plan_page(target: FixTarget, removal: Removal, rel: str, top: str, gone_pages, pattern) -> None:
    """A kept page loses its toctree lines naming a deleted page; its other lines
    naming what goes are listed for a person."""
    before = (target.root / rel).read_bytes()
    lines = before.splitlines(keepends=True)
    dropped = set()
    if rel.endswith(docs_tree.PAGE_SUFFIXES):
        dropped = docs_tree.toctree_lines(lines, rel, docs_tree.source_dir(target, rel, top), gone_pages)
    if dropped:
        removal.rewrites.append(Rewrite(rel, before, b"".join(l for i, l in enumerate(lines) if i not in dropped)))
    for index, line in enumerate(lines):
        text = line.decode("utf-8", "replace").strip()
        if index not in dropped and pattern.search(text):
            removal.notes.append(f"{rel}:{index + 1}: {text}")
