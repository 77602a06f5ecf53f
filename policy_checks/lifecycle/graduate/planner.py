"""Plans a graduation and prints its checklist.

Every refusal that needs no plan comes first, named in one answer. Then the
table of steps runs in order into one `Plan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

from ...model import parsed
from ...model import markers
from ...editing import docs_tree
from ...editing.changes import ChangeSet
from ...editing.target import FixTarget, Refused, project_model
from ...model import records as feature_records
from ...model.window import GRADUATION_STEPS
from ..plan import Plan, Step, run_steps
from ..texts import Texts
from . import refusals
from .aot import check_shape, register_aot
from .core import CoreFound, swap_core
from .elsewhere import retarget_elsewhere, strings_naming_the_old_path
from .leftovers import check_planned
from .listing import export_top_level, list_in_docs, retarget_lazy_exports
from .move import move_feature
from .rewrite import must_parse
from .stable_lane import move_tests

RECORD = markers.RECORD


@dataclass
class Graduating:
    """What the steps of one graduation read and find, in the order they find it."""

    project: Any  # the checker's project model
    feature_dir: Path
    reaching: Dict[str, list]  # core file -> its imports of the feature
    aot_shape: Any  # the AOT module's shape, with --aot; else None
    core: Optional[CoreFound] = None

    @cached_property
    def record(self):
        """The feature's ``FEATURE.toml``, or None without one."""
        path = self.feature_dir / RECORD
        return feature_records.read(path) if path.is_file() else None

    @property
    def entry_points(self) -> List[Tuple[str, str]]:
        """(module, function) of each swapped entry point. Methods are not listed."""
        return [(m, q) for m, q in self.core.swapped if "." not in q]


def code_moves(plan: Plan, found: Graduating) -> None:
    move_feature(plan, found.feature_dir)


def core_marks(plan: Plan, found: Graduating) -> None:
    found.core = swap_core(plan, found.project, found.reaching, _backends(found.record))


def tests_move(plan: Plan, found: Graduating) -> None:
    move_tests(plan)


def elsewhere(plan: Plan, found: Graduating) -> None:
    retarget_elsewhere(plan, found.project)


def lazy_exports(plan: Plan, found: Graduating) -> None:
    retarget_lazy_exports(plan, found.project)


def docs_listing(plan: Plan, found: Graduating) -> None:
    list_in_docs(plan, found.project, found.entry_points)


def top_level_export(plan: Plan, found: Graduating) -> None:
    export_top_level(plan, found.project, found.entry_points)


def aot(plan: Plan, found: Graduating) -> None:
    if found.aot_shape is not None:
        register_aot(plan, found.aot_shape)
    else:
        plan.ask(5, "if the kernels ship prebuilt, run again with --aot or register their specs by hand")


def old_path_strings(plan: Plan, found: Graduating) -> None:
    strings_naming_the_old_path(plan, found.project)


def what_still_reaches(plan: Plan, found: Graduating) -> None:
    check_planned(plan, found.project, found.core)


def docs_to_reread(plan: Plan, found: Graduating) -> None:
    """List docs lines that name the feature or its entry points (step 4).

    They were written while the feature was experimental. Only pages this run did
    not edit are listed.
    """
    words = {plan.feature, *(name for _, name in found.entry_points)}
    rewritten = {fix.path for fix in plan.rewrites}
    for rel, number, text in docs_tree.lines_naming(plan.target, found.project, words):
        if rel not in rewritten:
            plan.ask(4, f"reread this docs line, written while it was experimental: {rel}:{number}: {text[:120]}")


def for_a_person(plan: Plan, found: Graduating) -> None:
    """The steps no rewrite can take."""
    record = found.record
    plan.ask(1, "settle the API contract: names, dtypes, keyword-only performance arguments")
    plan.ask(4, "add the trace template and its example test")
    tracking = f" ({record.tracking.render('')})" if record and record.tracking else ""
    plan.ask(7, f"close the tracking issue{tracking}, naming the release {plan.feature} graduated in")


def python_parses(plan: Plan, found: Graduating) -> None:
    """A safety net: every planned Python file parses."""
    for rel, data in [*plan.creations.items(), *((fix.path, fix.after) for fix in plan.rewrites)]:
        if rel.endswith(".py"):
            must_parse(rel, data)


STEPS = (
    Step("2. the code moves", code_moves),
    Step("3. the markers go in core", core_marks),
    Step("6. the tests move", tests_move),
    Step("2. the old path elsewhere", elsewhere),
    Step("2. lazy exports and their typed face", lazy_exports),
    Step("4. listed in the docs", docs_listing),
    Step("4. exported at the top level", top_level_export),
    Step("5. AOT", aot),
    Step("2. strings naming the old path", old_path_strings),
    Step("3. what still reaches experimental code", what_still_reaches),
    Step("4. docs lines to reread", docs_to_reread),
    Step("1, 4, 7. a person's part", for_a_person),
    Step("the planned Python parses", python_parses),
)


@parsed.shared
def plan_graduation(target: FixTarget, feature: str, home: str, aot: bool = False) -> Plan:
    """Plan the whole graduation, or raise `Refused`. It reads the tree and writes nothing."""
    changes = ChangeSet(target.root)
    feature_dir = refusals.check_feature(target, changes, feature)
    aot_shape = check_shape(target) if aot else None  # a tree of neither shape refuses before any other work
    texts = Texts(target.root)
    project = project_model(target, texts)
    reaching = _before_the_plan(target, project, texts, changes, feature, home)
    plan = Plan(target, feature, changes, report, texts, home=home)
    return run_steps(STEPS, plan, Graduating(project, feature_dir, reaching, aot_shape), _refusal).finish()


def _before_the_plan(target: FixTarget, project, texts: Texts, changes: ChangeSet, feature: str,
                     home: str) -> Dict[str, list]:
    """Decide the refusals that need no plan.

    They cover the home, what in core reaches the feature, and the moved code's
    imports at module level. Each one is decided. One answer names every one that
    refuses, so a person settles them in one pass. Returns what in core reaches
    the feature.
    """
    reasons: List[str] = []
    reaching: Dict[str, list] = {}
    try:
        refusals.check_home(target, project, feature, home)
    except Refused as why:
        reasons.append(str(why))
    try:
        reaching = refusals.reaching_core(target, project, texts, feature)
    except Refused as why:
        reasons.append(str(why))
    try:
        refusals.check_module_level_reach(target, project, changes, feature, home)
    except Refused as why:
        reasons.append(str(why))
    if reasons:
        raise Refused("\nand: ".join(reasons))
    return reaching


def report(plan: Plan, applied: bool) -> List[str]:
    return [f"Graduation checklist for {plan.feature} -> {plan.home}:", *checklist(plan, applied)]


def checklist(plan: Plan, applied: bool) -> List[str]:
    """The seven steps, each with what this run did and what is left for a person.

    A step is ticked only when this run did it whole.
    """
    lines = []
    for step in GRADUATION_STEPS:
        done, left = plan.did_in(step.number), plan.asked_in(step.number)
        mark = "x" if done and not left and applied else " "
        lines.append(f"[{mark}] {step.number}. {step.text}")
        verb = "" if applied else "would: "
        lines += [f"      {verb}{item}" for item in done]
        lines += [f"      for a person: {item}" for item in left]
    return lines


def _refusal(blocking: list, why: Optional[Refused]) -> Refused:
    """A graduation refuses at its first blocking reason. Each reason names its uses."""
    return why if why is not None else Refused("; ".join(map(str, blocking)))


def _backends(record) -> Set[str]:
    """The backends the record names. A gate call naming one guarded the feature."""
    return set(record.backends or ()) if record else set()
