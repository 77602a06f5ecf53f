"""The refusals that need no plan of the move.

They are decided first, so a graduation that cannot happen says so in seconds.
They check:

- the feature directory: links, or a shim;
- the new home: its name, its place, what it would shadow;
- whether core reaches the feature at all;
- whether the moved code would import other experimental code at module level.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Dict, List

from ...model import exports, markers
from ...model.config import module_under
from ...editing.changes import ChangeSet
from ...editing.target import FixTarget, Refused
from ...model.facts import Import, extract
from ...model.project import Project
from ...model import records as feature_records
from . import reach
from ..texts import Texts, feature_spelling
from .elsewhere import names_the_feature
from .stable_lane import stable_tests_dir


def check_feature(target: FixTarget, changes: ChangeSet, feature: str) -> Path:
    """The feature's directory.

    It and its tests must hold only regular files. It must not be a graduated shim
    already.
    """
    s = target.settings
    if not feature.isidentifier():
        raise Refused(f"{feature!r} is not a feature name")
    feature_dir = target.root / s.experimental_dir / feature
    if not os.path.lexists(feature_dir):
        raise Refused(f"no feature directory {s.experimental_dir}/{feature}")
    changes.files_under(f"{s.experimental_dir}/{feature}")  # a link, a FIFO or a device refuses
    if os.path.lexists(target.root / s.experimental_tests / feature):
        changes.files_under(f"{s.experimental_tests}/{feature}")
    home_before = feature_records.graduated_to(feature_dir, s.experimental_package)
    if home_before is not None:
        raise Refused(f"{feature} already graduated to {home_before}")
    if feature_records.binds_shim_marker(feature_dir):
        why = feature_records.shim_problem(feature_dir, s.experimental_package)
        raise Refused(f"{s.experimental_dir}/{feature} binds {markers.SHIM_MARKER} but is no pure re-export shim "
                      f"({why}); finish or undo the earlier graduation by hand")
    if not (feature_dir / "__init__.py").is_file():
        init = f"{s.experimental_dir}/{feature}/__init__.py"
        raise Refused(f"{s.experimental_dir}/{feature} has no __init__.py; only a package can graduate: "
                      f"add {init} (it may be empty), then run graduate again")
    return feature_dir


def check_home(target: FixTarget, project: Project, feature: str, home: str) -> None:
    """Check that `home` is a free module name under the package.

    It must lie outside the experimental package. Its parent package must exist and
    serve no attribute of that name, so every public name keeps its kind. The
    feature's tests must have a free place in the stable lane.
    """
    s = target.settings
    parts = home.split(".")
    if not all(p.isidentifier() for p in parts) or not module_under(home, s.package) or home == s.package:
        raise Refused(f"--to {home}: not a module under {s.package}")
    if s.is_experimental_module(home):
        raise Refused(f"--to {home}: inside the experimental package")
    path = target.root.joinpath(*parts)
    for taken in (path, path.with_suffix(".py")):
        if os.path.lexists(taken):
            raise Refused(f"--to {home}: {taken.relative_to(target.root).as_posix()} already exists")
    parent = ".".join(parts[:-1])
    if not (path.parent / "__init__.py").is_file():
        raise Refused(f"--to {home}: its parent package {parent} has no __init__.py")
    exported = exports.exported_names(project.module_facts, parent)
    if parts[-1] in exported:
        raise Refused(
            f"--to {home}: {parent} exports a name {parts[-1]!r} ({exported[parts[-1]]}); importing the new "
            f"package would replace it with the module, and calls of {home} would fail. "
            f"Choose another name, e.g. --to {free_name(project, parent, parts[-1], exported)}")
    tests = stable_tests_dir(target, home)
    if os.path.lexists(target.root / s.experimental_tests / feature) and os.path.lexists(target.root / tests):
        raise Refused(f"the tests would move to {tests}, which already exists")


def reaching_core(target: FixTarget, project: Project, texts: Texts, feature: str) -> Dict[str, List[Import]]:
    """Core files that reach the feature: rel -> their imports of it.

    The imports are empty when only an ``@flashinfer_experimental_api(feature=...)``
    names it. Raises `Refused` when no core file does.
    """
    s = target.settings
    old = f"{s.experimental_package}.{feature}"
    found: Dict[str, List[Import]] = {}
    spelt = names_the_feature(feature)
    for rel in sorted(project.files):
        source = project.files[rel]
        if not s.is_core(source.module):
            continue
        data = texts.read(rel)
        if b"experimental" not in data or not spelt(data):
            continue  # an import of the feature, and a marker naming it, spell both (the name as a word)
        facts = project.facts(rel)
        if facts.syntax_error is not None:
            continue
        hits = [imp for imp in facts.imports if any(module_under(t, old) for t in project.import_targets(imp))]
        if hits or _marks_feature(data, feature):
            found[rel] = hits
    if not found:
        raise Refused(f"no core module reaches {feature}: nothing imports it or marks it "
                      f"@{markers.EXPERIMENTAL_API}(feature={feature!r}){_reached_elsewhere(target, project, texts, feature)}")
    return found


def _reached_elsewhere(target: FixTarget, project: Project, texts: Texts, feature: str) -> str:
    """What to do next for a feature no core module reaches.

    It names the files of the rest of the repository that load it, by import,
    module name or path. They are grouped by top-level package, folder or script.
    When none does, it says the feature can be removed.
    """
    spelling = feature_spelling((target.settings.experimental_dir.rpartition("/")[2], feature))
    users: Dict[str, List[str]] = {}
    for source in project.rest_of_repository():
        if spelling.found_in(texts.read(source.rel)):
            top, slash, _ = source.rel.partition("/")
            kind = ("package" if (target.root / top / "__init__.py").is_file() else "folder") if slash else "script"
            users.setdefault(f"{kind} {top}", []).append(source.rel)
    mark = f"@{markers.EXPERIMENTAL_API}(feature={feature!r})"
    if not users:
        return (f". Nothing else loads it either: remove it (policy-check remove {feature}), or mark the core "
                f"function that should serve it {mark}")
    named = "; ".join(f"{who} ({', '.join(rels[:3])}{', ...' if len(rels) > 3 else ''})"
                      for who, rels in sorted(users.items()))
    return (f"; it is reached from outside core by {named}. Graduate moves what core hands off to: mark the core "
            f"function that serves it {mark} (or import the feature there), or move it by hand and point those "
            "files at the new home")


def _marks_feature(data: bytes, feature: str) -> bool:
    """Does an ``@flashinfer_experimental_api(feature="<feature>")`` decorate a definition here?"""
    if f'"{feature}"'.encode() not in data and f"'{feature}'".encode() not in data:
        return False  # the literal is spelt with one quote or the other (a file that parses)
    for marked, node in markers.marked_nodes(data) or ():
        if marked.kind != markers.KIND_EXPERIMENTAL_API:
            continue
        for decorator in getattr(node, "decorator_list", ()):
            if isinstance(decorator, ast.Call) and any(
                    k.arg == "feature" and isinstance(k.value, ast.Constant) and k.value.value == feature
                    for k in decorator.keywords):
                return True
    return False


def check_module_level_reach(target: FixTarget, project: Project, changes: ChangeSet, feature: str, home: str) -> None:
    """Refuse when the moved code would import other experimental code when imported.

    Once it is core, EXP001 would report that. Nothing stable may run experimental
    code at import time.
    """
    s = target.settings
    old = f"{s.experimental_package}.{feature}"
    found: List[reach.Reach] = []
    for rel in changes.files_under(f"{s.experimental_dir}/{feature}"):
        if not rel.endswith(".py") or "__pycache__" in rel.split("/"):
            continue
        module, is_package = target.module_of(rel)
        facts = extract(changes.read(rel), module, is_package)
        if facts.syntax_error is None:
            found += reach.module_level(project, rel, facts, moving=old)
    if found:
        raise Refused(module_level_refusal(found, home, s.experimental_package, old))


def module_level_refusal(found: List[reach.Reach], home: str, experimental_package: str, old: str) -> str:
    """Why the graduation refuses.

    It names the first import and what to do first. Then it names every other such
    import, so one pass settles them all.
    """
    first = found[0]
    more = f" (and {len(found) - 1} more, below)" if len(found) > 1 else ""
    what = (f"once in {home}, {first.where()} would import {first.module} at module level{more}: stable code may "
            "not run experimental code when it is imported (EXP001). ")
    if module_under(first.module, old):
        what += f"A string names that old path, which the move does not rewrite: name {home} there first"
    else:
        other = first.module[len(experimental_package) + 1:].partition(".")[0] or first.module
        what += (f"Graduate {other} first, or move the import into the function that uses it (then it is listed "
                 "for a person)")
    return what + "".join(f"\n  also: {r.where()} would import {r.module}" for r in found[1:])


def free_name(project: Project, parent: str, last: str, exported: Dict[str, str]) -> str:
    """A public name beside `last` that `parent` neither serves nor holds, to suggest instead.

    A graduated API lives in a public module, never one starting with ``_``.
    """
    folder = project.root.joinpath(*parent.split("."))
    base = last.lstrip("_") or "graduated"
    candidates = [f"{base}_api", f"{base}_impl", f"{base}_kernels", f"{base}_ops"]
    candidates += [f"{base}_api{n}" for n in range(2, 100)]
    for candidate in candidates:
        taken = os.path.lexists(folder / candidate) or os.path.lexists(folder / f"{candidate}.py")
        if candidate not in exported and not taken:
            return f"{parent}.{candidate}"
    return f"{parent}.{base}_graduated"
