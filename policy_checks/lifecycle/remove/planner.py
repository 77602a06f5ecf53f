"""Plans a removal: the table of its steps, run in order into one `Plan`.

What goes whole comes first: the directory, its tests, its examples. Then come
what in core reaches the feature and the kept files' uses of it. Then come the
edits and what they leave.

Every refusal comes before anything is written. Core imports that no edit
removes refuse before any edit is planned. They are named in one answer with the
kept files' uses of the feature. The kept files' uses of what the edits take
away are gathered after the plan of core. They are refused with the others, so a
person fixes them all in one pass.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, List, Optional

from ...model import parsed
from ...editing.changes import ChangeSet
from ...editing.target import FixTarget, Refused, project_model
from ..plan import Edits, Plan, Step, run_steps
from ..texts import GoneFiles, Texts, feature_spelling, uses_pattern
from .attached import closing_note, how_to_post, own_examples, plan_docs, prune_baseline
from .debris import clear_debris
from .emptied import Edited, apply_core_edits, refuse_imported_emptied
from .entry_points import remove_backend_mentions
from .exports import Exports, plan_exports
from .kept import Lost, kept_python_files, kept_refusal, left_in_losing_apis, retired_backends, scan_kept_files
from .model import CoreEdits, Feature
from .reach import find_reach, plan_entry_points


@dataclass
class Removing:
    """What the steps of one removal read and find, in the order they find it."""

    target: FixTarget
    feature: Feature
    texts: Texts
    hits: list = field(default_factory=list)  # core imports of the feature (`reach.Hit`)
    reached: Any = None  # helpers followed to their users (`helpers.Reached`)
    kept: list = field(default_factory=list)  # every Python file the removal keeps (`kept.KeptFile`)
    core: Optional[CoreEdits] = None
    exports: Optional[Exports] = None
    edited: Optional[Edited] = None
    lost: Optional[Lost] = None
    unremovable: Optional[Refused] = None  # core's imports no edit removes, named together

    @cached_property
    def model(self):
        """The checker's project model, built on first use. It reads and parses each file once."""
        return project_model(self.target, self.texts)


def own_directories(plan: Plan, found: Removing) -> Edits:
    """The feature's directory and its tests go whole.

    A link or a special file in either refuses now, before anything else is read.
    """
    directories = [d for d in (found.feature.directory, found.feature.tests) if d is not None]
    for directory in directories:
        plan.changes.files_under(directory)
    return Edits(deletions=directories)


def examples(plan: Plan, found: Removing) -> Edits:
    return Edits(deletions=own_examples(found.target, found.model, found.feature))


def reach_in_core(plan: Plan, found: Removing) -> None:
    """Find core's imports of the feature.

    What no edit removes refuses at the next gate. By then the kept files' uses
    are gathered too.
    """
    try:
        found.hits, found.reached = find_reach(found.model, found.texts, plan, found.feature,
                                               feature_spelling(found.feature.path_segments))
    except Refused as why:
        found.unremovable = why


def uses_before_the_edits(plan: Plan, found: Removing) -> None:
    """Find kept files that import or load the feature, whatever the plan of core.

    Core's own imports of it are `reach_in_core`'s to judge. So when that step
    refused, core files are not read here.
    """
    found.kept = kept_python_files(found.model, plan)
    early = _feature_lost(found.model, plan, found.feature)
    skip = {hit.rel for hit in found.hits}
    if found.unremovable is not None:
        settings = found.model.settings
        skip |= {file.rel for file in found.kept if settings.is_core(file.module)}
    blocking, notes = scan_kept_files(found.model, found.texts, found.kept, early, skip=skip)
    plan.block(blocking)
    for note in notes:
        plan.ask(KEPT, note)


def core_refuses(plan: Plan, found: Removing) -> None:
    """A gate. Core's imports that no edit removes refuse here, with the kept uses."""
    if found.unremovable is not None:
        raise found.unremovable


def core_entry_points(plan: Plan, found: Removing) -> None:
    """Remove the entry points and the helpers only they reach.

    A removed backend's branches and listed names also go from the modules that
    declare it.
    """
    core = found.core = CoreEdits()
    model = found.model
    plan_entry_points(found.target, model, found.hits, core, found.reached)
    for rel in sorted(core.modules):
        module = model.files[rel].module
        for name in sorted(core.modules[rel].names):
            plan.did(CORE, f"{module}.{name}")
    if core.backends:
        for mod in core.modules.values():
            remove_backend_mentions(mod, core.backends)
    for backend in sorted(core.backends):
        plan.did(CORE, f"backend {backend!r}")


def exports(plan: Plan, found: Removing) -> None:
    found.exports = plan_exports(found.target, found.model, found.texts, plan, found.core, found.feature)


def core_rewrites(plan: Plan, found: Removing) -> None:
    """Each edited core module's new bytes, less the debris of the edit."""
    found.edited = apply_core_edits(found.target, found.model, plan, found.core)
    clear_debris(found.target, found.model, found.texts, plan, found.edited.after_of, found.kept)


def uses_after_the_edits(plan: Plan, found: Removing) -> None:
    """Kept files that use what the edits take away."""
    found.lost = _lost(found.model, found.texts, plan, found.feature, found.core, found.exports, found.edited)
    kept = [file for file in found.kept if not plan.gone(file.rel)]
    problems, notes = scan_kept_files(found.model, found.texts, kept, found.lost, found.edited.after_of)
    plan.block(problems)
    _ask_once(plan, notes)


def emptied_modules(plan: Plan, found: Removing) -> None:
    refuse_imported_emptied(found.model, found.texts, plan, found.edited)


def left_in_kept_apis(plan: Plan, found: Removing) -> None:
    """Ask about lines of an API that lost a backend where a string still names it.

    No step edits them (a backend list, an error message). So a person reads each.
    """
    _ask_once(plan, left_in_losing_apis(found.core, found.edited.after_of))


def docs(plan: Plan, found: Removing) -> Edits:
    return plan_docs(found.target, found.model, plan, [found.feature.name, *found.lost.retired, *found.exports.public])


def baseline(plan: Plan, found: Removing) -> Edits:
    return prune_baseline(found.model, plan, found.feature, found.core.names_by_module)


def closing(plan: Plan, found: Removing) -> None:
    directory = found.target.root / found.feature.directory
    plan.notes += [f"closing note for the tracking issue ({how_to_post(directory)}):",
                   closing_note(plan, found.feature, directory)]


KEPT, CORE = "kept files", "core"

STEPS = (
    Step("the feature's directory and tests", own_directories),
    Step("its examples", examples),
    Step("core's imports of it", reach_in_core),
    Step("kept files' uses of it", uses_before_the_edits),
    Step("core's imports that no edit removes, with the kept files' uses", core_refuses),
    Step("core's entry points and backends", core_entry_points),
    Step("exports of what goes", exports),
    Step("core modules rewritten", core_rewrites),
    Step("kept files' uses of what the edits take away", uses_after_the_edits),
    Step("every kept file's blocking use, before and after the edits, in one answer"),
    Step("core modules left with nothing", emptied_modules),
    Step("strings left in APIs that lost a backend", left_in_kept_apis),
    Step("docs pages and lines", docs),
    Step("baseline entries", baseline),
    Step("closing note", closing),
)


@parsed.shared
def plan_removal(target: FixTarget, name: str) -> Plan:
    """Plan the whole removal, or raise `Refused`. It reads the tree and writes nothing."""
    found = Removing(target, _feature(target, name), Texts(target.root))
    plan = Plan(target, name, ChangeSet(target.root), report, found.texts)
    return run_steps(STEPS, plan, found, _refusal).finish()


def report(plan: Plan, applied: bool) -> List[str]:
    """What went (or would go), what was rewritten, what is left for a person."""
    verb = "removed" if applied else "would remove"
    lines = [f"{verb}: {item}" for _, item in plan.done]
    lines += [f"{verb}: {rel}" for rel in plan.deletions]
    lines += [f"{'rewrote' if applied else 'would rewrite'}: {path}" for path, _, _ in plan.rewrites]
    lines += [f"left for a person: {note}" for _, note in plan.asked]
    return lines + plan.notes


def _refusal(blocking: List[str], why: Optional[Refused]) -> Refused:
    """The reason a step refused, if one did, then the kept files' uses."""
    if why is None:
        return kept_refusal(blocking)
    return Refused(f"{why}\nand {kept_refusal(blocking)}")


def _ask_once(plan: Plan, notes: List[str]) -> None:
    asked = {text for _, text in plan.asked}
    for note in notes:
        if note not in asked:
            plan.ask(KEPT, note)
            asked.add(note)


def _feature(target: FixTarget, name: str) -> Feature:
    """The feature's names and paths.

    Raises `Refused` when the name is not an identifier or has no directory.
    """
    settings = target.settings
    if not name.isidentifier():
        raise Refused(f"{name!r} is not a feature name")
    directory = f"{settings.experimental_dir}/{name}"
    if not os.path.lexists(target.root / directory):
        raise Refused(f"no feature directory {directory}")
    tests = f"{settings.experimental_tests}/{name}"
    tests = tests if os.path.lexists(target.root / tests) else None
    return Feature(name, directory, f"{settings.experimental_package}.{name}", tests, settings.experimental_dir)


def _gone_files(project, plan: Plan, feature: Feature) -> GoneFiles:
    modules = {feature.module} | {project.files[rel].module for rel in project.files if plan.gone(rel)}
    return GoneFiles(frozenset(modules), feature.path_segments, feature.directory)


def _feature_lost(project, plan: Plan, feature: Feature) -> Lost:
    """The feature's own modules and files, before any edit.

    No kept file may import or load them, whatever the plan of core turns out to
    be. Only files that spell the feature's name where an import or a path would
    are read.
    """
    files = _gone_files(project, plan, feature)
    return Lost(set(), {}, set(), {feature.name}, files, set(), feature_spelling(feature.path_segments))


def _lost(project, texts: Texts, plan: Plan, feature: Feature, core: CoreEdits, exports: Exports,
          edited: Edited) -> Lost:
    """Everything the plan takes away.

    A file that uses any of it spells a backend, a lazy key, an emptied module, or
    the removed name itself. For a method, that is its own name. A file that
    imports the feature was refused before (`_feature_lost`).
    """
    names_by_module = core.names_by_module
    emptied = {project.files[rel].module.rpartition(".")[2] for rel in edited.emptied}
    retired = retired_backends(project, texts, plan, core.backends, edited.after_of)
    # a backend other APIs still serve is only wrong in a call of an API that loses it:
    # such a file spells that API too (`Lost.may_use`), not only the backend's name
    plain = {*retired, *exports.served, *emptied}
    names = {n.rpartition(".")[2] for names in names_by_module.values() for n in names} - plain
    names = {n for n in names if not (n.startswith("__") and n.endswith("__"))}  # called implicitly, never spelt
    files = _gone_files(project, plan, feature)
    return Lost(
        defs={(m, n) for m, names in names_by_module.items() for n in names},
        backends=core.backends,
        retired=retired,
        words=plain | set(core.backends) | names | {feature.name},
        files=files,
        plain=plain,
        name_uses=uses_pattern(names),
    )
