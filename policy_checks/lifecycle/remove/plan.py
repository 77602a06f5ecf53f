"""The plan of a removal, step by step, each step a module of this package: what goes
whole (the directory, its tests, its examples), what in core reaches the feature, the
repository's other uses of it, then the edits and what they leave. Every refusal
comes before anything is written. What core holds that no edit removes refuses before
any edit is planned; the kept files' uses are gathered before the plan and after it,
and refused in one answer, so a person fixes them all in one pass."""

from __future__ import annotations

import os
from typing import NamedTuple

from ...model import parsed
from ...editing.changes import ChangeSet
from ...editing.target import FixTarget, Refused, project_model
from .attached import own_examples, plan_docs
from .baseline_entries import prune_baseline
from .closing import closing_note, how_to_post
from .debris import clear_debris
from .emptied import Edited, apply_core_edits, refuse_imported_emptied
from .entry_points import remove_backend_mentions
from .exports import Exports, plan_exports
from .kept import Lost, kept_refusal, left_in_losing_apis, retired_backends, scan_kept_files
from .model import CoreEdits, Feature, Removal
from .reach import find_reach, plan_entry_points
from .repository import kept_python_files
from ..texts import GoneFiles, Texts, feature_spelling, uses_pattern


@parsed.shared
def plan_removal(target: FixTarget, name: str) -> Removal:
    """The whole removal, or `Refused`; reads the tree, writes nothing."""
    feature = _feature(target, name)
    removal = Removal(target, name, ChangeSet(target.root))
    _own_directories(removal, feature)
    texts = Texts(target.root)
    project = project_model(target, texts)  # one read and one parse of each file, shared
    removal.deletions += own_examples(target, project, feature)
    hits, reached = find_reach(project, texts, removal, feature, feature_spelling(feature.path_segments))
    kept = kept_python_files(project, removal)
    early = _feature_lost(project, removal, feature)
    blocking, notes = scan_kept_files(project, texts, kept, early, skip={hit.rel for hit in hits})
    removal.notes += notes
    try:
        planned = _plan_edits(target, project, texts, removal, feature, hits, reached, kept)
    except Refused as why:  # the uses found before are named too: one answer, not one per attempt
        if blocking:
            raise Refused(f"{kept_refusal(blocking)}\nand: {why}") from None
        raise
    if blocking or planned.blocking:
        raise kept_refusal(blocking + planned.blocking)
    refuse_imported_emptied(project, texts, removal, planned.edited)
    core, exports, lost = planned.core, planned.exports, planned.lost
    removal.notes += [n for n in left_in_losing_apis(core, planned.edited.after_of) if n not in removal.notes]
    plan_docs(target, project, removal, [feature.name, *lost.retired, *exports.public])
    prune_baseline(project, removal, feature, core.names_by_module)
    removal.closing_note = closing_note(removal, feature, target.root / feature.directory)
    removal.closing_how = how_to_post(target.root / feature.directory)
    removal.changes.add_planned(removal.rewrites, deletions=removal.deletions)
    return removal


class _Planned(NamedTuple):
    core: CoreEdits
    exports: Exports
    edited: Edited
    lost: Lost
    blocking: list  # the kept files' uses of what the edits take away


def _plan_edits(target: FixTarget, project, texts: Texts, removal: Removal, feature: Feature, hits, reached,
                kept) -> _Planned:
    """Core's edits and what they take away, with every kept file's use of it."""
    core = _plan_core(target, project, removal, hits, reached)
    exports = plan_exports(target, project, texts, removal, core, feature)
    edited = apply_core_edits(target, project, removal, core)
    clear_debris(target, project, texts, removal, edited.after_of, kept)
    lost = _lost(project, texts, removal, feature, core, exports, edited)
    kept = [file for file in kept if not removal.gone(file.rel)]
    problems, notes = scan_kept_files(project, texts, kept, lost, edited.after_of)
    removal.notes += [n for n in notes if n not in removal.notes]
    return _Planned(core, exports, edited, lost, problems)


def _feature(target: FixTarget, name: str) -> Feature:
    """The feature's names and paths; `Refused` for a name that is none, or no directory."""
    settings = target.settings
    if not name.isidentifier():
        raise Refused(f"{name!r} is not a feature name")
    directory = f"{settings.experimental_dir}/{name}"
    if not os.path.lexists(target.root / directory):
        raise Refused(f"no feature directory {directory}")
    tests = f"{settings.experimental_tests}/{name}"
    tests = tests if os.path.lexists(target.root / tests) else None
    return Feature(name, directory, f"{settings.experimental_package}.{name}", tests, settings.experimental_dir)


def _own_directories(removal: Removal, feature: Feature) -> None:
    """The feature's directory and its tests go whole; a link or a special file in
    either (or either being a link) refuses now, before anything else is read."""
    for directory in (feature.directory, feature.tests):
        if directory is not None:
            removal.changes.files_under(directory)
            removal.deletions.append(directory)


def _plan_core(target: FixTarget, project, removal: Removal, hits, reached) -> CoreEdits:
    """The edits of the core modules that reach the feature: the entry points go (with
    the helpers only they reach), and a removed backend's branches and listed names in
    the modules declaring it."""
    core = CoreEdits()
    plan_entry_points(target, project, hits, core, reached)
    for rel in sorted(core.modules):
        module = project.files[rel].module
        removal.removed += [f"{module}.{n}" for n in sorted(core.modules[rel].names)]
    if core.backends:
        for mod in core.modules.values():
            remove_backend_mentions(mod, core.backends)
    removal.removed += [f"backend {b!r}" for b in sorted(core.backends)]
    return core


def _gone_files(project, removal: Removal, feature: Feature) -> GoneFiles:
    modules = {feature.module} | {project.files[rel].module for rel in project.files if removal.gone(rel)}
    return GoneFiles(frozenset(modules), feature.path_segments, feature.directory)


def _feature_lost(project, removal: Removal, feature: Feature) -> Lost:
    """The feature's own modules and files, before any edit: what no kept file may
    import or load, whatever the plan of core turns out to be. Only the files that
    spell the feature's name where an import or a path would are read."""
    files = _gone_files(project, removal, feature)
    return Lost(set(), {}, set(), {feature.name}, files, set(), feature_spelling(feature.path_segments))


def _lost(project, texts: Texts, removal: Removal, feature: Feature, core: CoreEdits, exports: Exports,
          edited: Edited) -> Lost:
    """Everything the plan takes away. A file that uses any of it spells a backend,
    a lazy key, an emptied module or the removed name itself (a method: its own
    name); one that imports the feature was refused before (`_feature_lost`)."""
    names_by_module = core.names_by_module
    emptied = {project.files[rel].module.rpartition(".")[2] for rel in edited.emptied}
    retired = retired_backends(project, texts, removal, core.backends, edited.after_of)
    # a backend other APIs still serve is only wrong in a call of an API that loses it:
    # such a file spells that API too (`Lost.may_use`), not only the backend's name
    plain = {*retired, *exports.served, *emptied}
    names = {n.rpartition(".")[2] for names in names_by_module.values() for n in names} - plain
    names = {n for n in names if not (n.startswith("__") and n.endswith("__"))}  # called implicitly, never spelt
    files = _gone_files(project, removal, feature)
    return Lost(
        defs={(m, n) for m, names in names_by_module.items() for n in names},
        backends=core.backends,
        retired=retired,
        words=plain | set(core.backends) | names | {feature.name},
        files=files,
        plain=plain,
        name_uses=uses_pattern(names),
    )
