"""Step 4, its mechanical part.

Each entry point is listed on the ``docs/api`` page of its stable neighbours. It is
exported from the top-level package as they are.
"""

from __future__ import annotations

import re
from typing import List, Set, Tuple

from ...editing.cst_tools import apply_edits
from ...editing.exports import add_lazy_entries, export_by_import, lazy_table, retarget_table_values, served_modules
from ...model import exports
from ...model.config import module_under
from ...model.project import Project
from .elsewhere import names_the_feature
from ..plan import Plan
from .rewrite import parse_file

_AUTOSUMMARY_RE = re.compile(r"^\.\. autosummary::[^\n]*\n(?:[ \t]+:[^\n]*\n)*\n?((?:[ \t]+\S[^\n]*\n)+)", re.M)
_AUTOFUNCTION_RE = re.compile(r"^\.\. autofunction:: (\S+)[^\n]*\n", re.M)


def list_in_docs(graduation: Plan, project: Project, entry_points: List[Tuple[str, str]]) -> None:
    """Add each entry point to the ``docs/api`` page that documents a stable neighbour.

    The neighbour comes from the same module. The entry point joins its autosummary
    list and gets an ``autofunction``.
    """
    pages = dict(project.docs_pages())
    original = dict(pages)
    for module, name in entry_points:
        neighbours = _module_names(project, module) - {name}
        page = next((rel for rel, text in sorted(pages.items())
                     if any(n in neighbours for n in _AUTOFUNCTION_RE.findall(text))), None)
        if page is None:
            graduation.ask(4, f"list {module}.{name} on a docs/api page (no page documents its neighbours)")
            continue
        if re.search(rf"^\.\. autofunction:: {re.escape(name)}\b", pages[page], re.M):
            continue
        pages[page] = _add_to_page(pages[page], name)
        graduation.did(4, f"{page}: lists {name}")
    for rel, text in pages.items():
        if text != original[rel]:
            graduation.rewrite(rel, text.encode("utf-8"))


def _module_names(project: Project, module: str) -> Set[str]:
    rel = project.rel_of(module)
    return set() if rel is None else set(project.facts(rel).definitions)


def _add_to_page(text: str, name: str) -> str:
    """`text` with `name` in its autosummary list and an ``autofunction`` after the last one."""
    summary = _AUTOSUMMARY_RE.search(text)
    if summary:
        indent = re.match(r"[ \t]+", summary.group(1)).group(0)
        text = text[: summary.end(1)] + f"{indent}{name}\n" + text[summary.end(1):]
    last = None
    for last in _AUTOFUNCTION_RE.finditer(text):
        pass
    addition = f"\n.. autofunction:: {name}\n"
    if last is None:
        return text.rstrip("\n") + "\n" + addition
    return text[: last.end()] + addition + text[last.end():]


def export_top_level(graduation: Plan, project: Project, entry_points: List[Tuple[str, str]]) -> None:
    """Export each entry point from the top-level package when its module's stable names are.

    They may be exported in a lazy-export table, or by ``from .module import name``.
    A module whose names are reached through the module itself is left so.
    """
    target = graduation.target
    s = target.settings
    rel = project.rel_of(s.package)
    if rel is None:
        return
    file = parse_file(target, rel, graduation.planned(rel))
    table = lazy_table(file)
    served = served_modules(file, table)
    exported = exports.exported_names(project.module_facts, s.package)
    missing = []
    for module, name in entry_points:
        relative = module[len(s.package) + 1:]
        if name in exported:
            graduation.did(4, f"{rel}: already exports {name}")
        elif relative not in served:
            graduation.did(4, f"{rel}: {name} not exported, as no name of {module} is")
        else:
            missing.append((name, relative))
    if not missing:
        return
    edits: dict = {}
    if table is None:
        export_by_import(file, missing, edits)
    else:
        add_lazy_entries(file, table, missing, edits)
    graduation.rewrite(rel, apply_edits(file, edits))
    for name, _ in missing:
        graduation.did(4, f"{rel}: exports {name}")


def retarget_lazy_exports(graduation: Plan, project: Project) -> None:
    """Point a core package's lazy entries at the new home (step 2).

    Otherwise the shim would warn on every first use. The typed face, whose imports
    point at the new home, would also disagree with the table.
    """
    spelt, settings = names_the_feature(graduation.feature), graduation.target.settings
    for rel, source in sorted(project.files.items()):
        if not source.is_package or not settings.is_core(source.module) or not spelt(graduation.planned(rel)):
            continue
        values = _retargeted(project.facts(rel), graduation.old, graduation.home, project.is_module)
        if not values:
            continue
        file = parse_file(graduation.target, rel, graduation.planned(rel))
        edits: dict = {}
        names = retarget_table_values(file, values, edits)
        graduation.rewrite(rel, apply_edits(file, edits))
        graduation.did(2, f"{rel}: its lazy table serves {', '.join(sorted(names))} from {graduation.home}")


def _retargeted(facts, old: str, home: str, is_module) -> dict:
    """Old text -> new text of the package's lazy entries that name a module under `old`.

    A relative entry stays relative where the new module is below the package.
    """
    values = {}
    for entry in exports.lazy_entries(facts):
        relative, absolute = exports.lazy_candidates(facts, entry)
        found = relative if is_module(relative) else absolute
        if not module_under(found, old):
            continue
        new = home + found[len(old):]
        if found == relative and module_under(new, facts.module) and new != facts.module:
            new = ("." if entry.module.startswith(".") else "") + new[len(facts.module) + 1:]
        values[entry.module] = new
    return values
