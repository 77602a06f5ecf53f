"""Step 4, its mechanical part: each entry point is listed on the ``docs/api`` page of
its stable neighbours and exported from the top-level package as they are."""

from __future__ import annotations

import re
from typing import List, Optional, Set, Tuple

import libcst as cst

from ...editing.cst_tools import (
    PythonFile, add_edit, apply_edits, bound_name, dotted_name, module_small_statements, with_aliases,
)
from ...model.project import Project
from .exports import exported_names
from .plan import Graduation
from .rewrite import dotted_node, parse_file

_AUTOSUMMARY_RE = re.compile(r"^\.\. autosummary::[^\n]*\n(?:[ \t]+:[^\n]*\n)*\n?((?:[ \t]+\S[^\n]*\n)+)", re.M)
_AUTOFUNCTION_RE = re.compile(r"^\.\. autofunction:: (\S+)[^\n]*\n", re.M)


def list_in_docs(graduation: Graduation, project: Project, entry_points: List[Tuple[str, str]]) -> None:
    """Add each entry point to the ``docs/api`` page that documents a stable neighbour
    from the same module (its autosummary list and an ``autofunction``)."""
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


def export_top_level(graduation: Graduation, project: Project, entry_points: List[Tuple[str, str]]) -> None:
    """Each entry point is exported from the top-level package when its module's
    stable names are (in a lazy-export table, or by ``from .module import name``);
    a module whose names are reached through the module itself is left so."""
    target = graduation.target
    s = target.settings
    rel = project.rel_of(s.package)
    if rel is None:
        return
    file = parse_file(target, rel, graduation.planned(rel))
    table = next((small.value for small in module_small_statements(file)
                  if isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(small.value, cst.Dict)
                  and _is_lazy_table(small.value)), None)
    served = _served_modules(file, table)
    exported = exported_names(project, s.package)
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
        _export_by_import(file, missing, edits)
    else:
        add_edit(edits, table, _with_entries(missing))
    graduation.rewrite(rel, apply_edits(file, edits))
    for name, _ in missing:
        graduation.did(4, f"{rel}: exports {name}")


def _served_modules(file: PythonFile, table: Optional[cst.Dict]) -> Set[str]:
    """Modules (relative to the package) whose names the package ``__init__`` exports."""
    if table is not None:
        return {e.value.evaluated_value.lstrip(".") for e in table.elements}
    return {dotted_name(small.module) for small in module_small_statements(file)
            if isinstance(small, cst.ImportFrom) and len(small.relative) == 1 and small.module is not None}


def _with_entries(missing: List[Tuple[str, str]]):
    def edit(updated: cst.Dict) -> cst.Dict:
        """New entries at the end, separated as the others are (one per line in a table
        written one per line); the old last entry's trailing comma ends the new last."""
        elements = list(updated.elements)
        last_comma = elements[-1].comma
        earlier = elements[-2].comma if len(elements) > 1 else None
        separator = earlier if isinstance(earlier, cst.Comma) else cst.Comma(whitespace_after=updated.lbrace.whitespace_after)
        elements[-1] = elements[-1].with_changes(comma=separator)
        for index, (name, relative) in enumerate(missing):
            comma = last_comma if index == len(missing) - 1 else separator
            elements.append(cst.DictElement(cst.SimpleString(f'"{name}"'), cst.SimpleString(f'"{relative}"'), comma=comma))
        return updated.with_changes(elements=elements)

    return edit


def _export_by_import(file: PythonFile, missing: List[Tuple[str, str]], edits: dict) -> None:
    """A package ``__init__`` that imports its exports (``from .decode import f as f``):
    the name joins the import from its module, or a new line after the last relative
    import, spelt as the others are (with the redundant ``as`` when most use it)."""
    relative_imports = [small for small in module_small_statements(file)
                        if isinstance(small, cst.ImportFrom) and small.relative
                        and not isinstance(small.names, cst.ImportStar)]
    aliases = [a for small in relative_imports for a in small.names]
    redundant = sum(1 for a in aliases if a.asname is not None and bound_name(a, None) == dotted_name(a.name))
    spell_as = bool(aliases) and redundant * 2 > len(aliases)

    def alias(name: str) -> cst.ImportAlias:
        return cst.ImportAlias(cst.Name(name), asname=cst.AsName(cst.Name(name)) if spell_as else None)

    new_lines = []
    for name, relative in missing:
        same = next((s for s in relative_imports if len(s.relative) == 1 and s.module is not None
                     and dotted_name(s.module) == relative), None)
        if same is not None:
            add_edit(edits, same, lambda updated, name=name: with_aliases(updated, [*updated.names, alias(name)]))
        else:
            new_lines.append(cst.SimpleStatementLine([cst.ImportFrom(
                module=dotted_node(relative), relative=[cst.Dot()], names=[alias(name)])]))
    if not new_lines:
        return
    lines = list(file.tree.body)
    anchor = max((i for i, line in enumerate(lines) if isinstance(line, cst.SimpleStatementLine)
                  and any(s in relative_imports for s in line.body)), default=None)
    if anchor is None:
        add_edit(edits, file.tree, lambda updated: updated.with_changes(body=[*updated.body, *new_lines]))
        return
    add_edit(edits, lines[anchor], lambda updated: cst.FlattenSentinel([updated, *new_lines]))


def _is_lazy_table(mapping: cst.Dict) -> bool:
    return bool(mapping.elements) and all(
        isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) and isinstance(e.value, cst.SimpleString)
        for e in mapping.elements
    )
