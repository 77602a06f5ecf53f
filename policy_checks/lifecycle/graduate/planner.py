"""`plan_graduation`: every refusal that needs no plan first, then the steps in order,
then the checks of what the plan leaves; nothing is written here."""

from __future__ import annotations

from typing import Set

from ...model import parsed
from ...model import markers
from ...editing import docs_tree
from ...editing.changes import ChangeSet
from ...editing.target import FixTarget, project_model
from ...model import records as feature_records
from . import refusals
from .aot import check_shape, register_aot
from .core import swap_core
from .elsewhere import retarget_elsewhere, strings_naming_the_old_path
from .leftovers import check_planned
from .listing import export_top_level, list_in_docs, retarget_lazy_exports
from .move import move_feature
from .plan import Graduation
from .rewrite import must_parse
from .stable_lane import move_tests

RECORD = markers.RECORD


@parsed.shared
def plan_graduation(target: FixTarget, feature: str, home: str, aot: bool = False) -> Graduation:
    """The whole graduation, or `Refused`; reads the tree, writes nothing."""
    changes = ChangeSet(target.root)
    feature_dir = refusals.check_feature(target, changes, feature)
    aot_shape = check_shape(target) if aot else None  # a tree of neither shape refuses before any other work
    project = project_model(target)
    refusals.check_home(target, project, feature, home)
    reaching = refusals.reaching_core(target, project, feature)
    refusals.check_module_level_reach(target, project, changes, feature, home)

    graduation = Graduation(target, feature, home, changes)
    record = feature_records.read(feature_dir / RECORD) if (feature_dir / RECORD).is_file() else None
    move_feature(graduation, feature_dir)
    entry_points = [(m, q) for m, q in swap_core(graduation, project, reaching, _backends(record)) if "." not in q]
    move_tests(graduation)
    retarget_elsewhere(graduation, project)
    retarget_lazy_exports(graduation, project)
    list_in_docs(graduation, project, entry_points)
    export_top_level(graduation, project, entry_points)
    if aot:
        register_aot(graduation, aot_shape)
    else:
        graduation.ask(5, "if the kernels ship prebuilt, run again with --aot or register their specs by hand")
    strings_naming_the_old_path(graduation, project)
    check_planned(graduation, project)
    _reread_docs(graduation, project, {feature, *(name for _, name in entry_points)})
    _for_a_person(graduation, record)
    for rel, data in [*graduation.creations.items(), *((fix.path, fix.after) for fix in graduation.rewrites)]:
        if rel.endswith(".py"):
            must_parse(rel, data)
    changes.add_planned(graduation.rewrites, graduation.creations, graduation.deletions, graduation.modes)
    return graduation


def _backends(record) -> Set[str]:
    """The backends the record names: a gate call naming one guarded the feature."""
    return set(record.backends or ()) if record else set()


def _reread_docs(graduation: Graduation, project, words) -> None:
    """Docs lines that name the feature or its entry points were written while it was
    experimental; each page this run did not edit is listed (step 4)."""
    rewritten = {fix.path for fix in graduation.rewrites}
    for rel, number, text in docs_tree.lines_naming(graduation.target, project, words):
        if rel not in rewritten:
            graduation.ask(4, f"reread this docs line, written while it was experimental: {rel}:{number}: {text[:120]}")


def _for_a_person(graduation: Graduation, record) -> None:
    """The steps no rewrite can take."""
    graduation.ask(1, "settle the API contract: names, dtypes, keyword-only performance arguments")
    graduation.ask(4, "add the trace template and its example test")
    tracking = f" ({record.tracking.render('')})" if record and record.tracking else ""
    graduation.ask(7, f"close the tracking issue{tracking}, naming the release {graduation.feature} graduated in")
