"""Where a package publishes what the removal deletes.

A package may publish it by a lazy-export table entry, or by a top-level
``from .module import name`` re-export. Typed ones under ``TYPE_CHECKING`` count.
It may also list it in ``__all__``. The same holds for packages re-exporting
those, to any depth. Each goes with the name; nothing else in the module changes.
The exports are read through `policy_checks.model.exports`. They are edited
through its libcst editor.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, Iterator, NamedTuple, Set, Tuple

from ...model import exports
from ...model.config import module_under
from ...model.facts import DefBinding, FromBinding
from ...editing.exports import all_elements, table_elements
from ...editing.target import FixTarget
from .entry_points import drop_imported_names, remove_element
from ..plan import Plan as Removal
from .model import CoreEdits, Feature, ModuleEdits
from .reach import core_files
from ..texts import Texts, feature_spelling, uses_pattern


class Exports(NamedTuple):
    """What the packages published of the removed code."""

    public: Set[str]  # "module.name" of each removed API, lazy export and re-export of one (for the docs)
    served: Set[str]  # names a package served lazily from a module that loses them


def plan_exports(target: FixTarget, project, texts: Texts, removal: Removal, core: CoreEdits,
                 feature: Feature) -> Exports:
    """Drop the removed names from lazy tables, re-exports and ``__all__``.

    This follows chains of re-exports of any depth. A package that re-exported a
    removed name no longer binds it. So a re-export of it from that package goes
    too (`_follow_reexports`).

    A module that lists a removed name quotes it or imports it. It quotes it in
    ``__all__`` or a lazy table. So only the core modules spelling one are read. A
    package serving a name from the feature's own modules loses it too. That covers
    a lazy entry and its typed face.
    """
    lost = {module: set(names) for module, names in core.names_by_module.items()}
    also = set(core.modules)
    for rel, _, facts in core_files(project, texts, removal, spelling=feature_spelling(feature.path_segments)):
        for module, name in _served_from(facts, feature.module):
            lost.setdefault(module, set()).add(name)
            also.add(rel)
    public, served = core.removed_names(), set()
    publishing = _follow_reexports(project, texts, removal, lost, also=also)
    for rel, (source, lazy, reexports) in sorted(publishing.items()):
        public.update(f"{source.module}.{key}" for key, _ in lazy)
        public.update(f"{source.module}.{r.bound}" for r in reexports)
        served.update(key for key, _ in lazy)
        listed = core.names_by_module.get(source.module, set()) | publishing[rel].names()
        if not lazy and not listed:
            continue
        mod = core.of(target, rel)
        _remove_dict_keys(mod, {key for key, _ in lazy})
        _remove_reexports(mod, reexports, rel)
        _remove_all_entries(mod, listed)
    return Exports(public, served)


def _follow_reexports(project, texts: Texts, removal: Removal, lost: Dict[str, Set[str]], also) -> Dict[str, "_Published"]:
    """The kept core modules publishing a name that goes, by rel.

    `lost` maps a module to the names it no longer binds. It grows with each module
    whose re-export or lazy entry goes and that binds the name no other way. It
    grows until nothing changes. Each round reads only the modules spelling a name
    new to it. A (module, name) is added once, so a cycle of re-exports ends.
    """
    found: Dict[str, tuple] = {}
    words = {n.partition(".")[0] for names in lost.values() for n in names}
    while words:
        for rel, source, facts in core_files(project, texts, removal, spelling=uses_pattern(sorted(words), quoted=True),
                                             also=also):
            found[rel] = (source, facts)
        also, words = (), set()
        for rel, (source, facts) in found.items():
            for name in _published(texts, rel, source, facts, lost).names():
                if name not in lost.setdefault(source.module, set()) and not _bound_otherwise(facts, name, lost):
                    lost[source.module].add(name)
                    words.add(name)
    return {rel: _published(texts, rel, source, facts, lost) for rel, (source, facts) in found.items()}


class _Published(NamedTuple):
    """One kept core module's lazy entries and re-exports of names that go."""

    source: object
    lazy: list  # (key, module)
    reexports: list  # exports.Reexport

    def names(self) -> Set[str]:
        """The names the module stops publishing: lazy keys, re-exported names."""
        return {key for key, _ in self.lazy} | {r.bound for r in self.reexports}


def _published(texts: Texts, rel: str, source, facts, lost) -> _Published:
    """What the module publishes of the lost names.

    A package ``__init__`` publishes every module-level import of one. Another
    module publishes only one it says it re-exports and does not use. It says so by
    ``from m import name as name``, or by listing the name in its ``__all__``.
    """
    lazy = _lazy_entries(facts, lost)
    reexports = _reexports(facts, lost)
    if not source.is_package and reexports:
        tree = texts.tree(rel)
        reexports = [r for r in reexports if _said_reexported(tree, facts, r) and not _used_here(tree, r.bound)]
    return _Published(source, lazy, reexports)


def _said_reexported(tree, facts, reexport: exports.Reexport) -> bool:
    """``from m import name as name`` at the import's line, or the name in ``__all__``."""
    if reexport.bound in (exports.listed(facts) or ()):
        return True
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.ImportFrom) and node.lineno == reexport.imp.line:
            return any(a.name == reexport.name and a.asname == reexport.name for a in node.names)
    return False


def _bound_otherwise(facts, name: str, lost: Dict[str, Set[str]]) -> bool:
    """Does the module still bind `name` once its imports of lost names go?

    A definition, an assignment, or an import of a name that stays binds it.
    """
    binding = facts.bindings.get(name)
    if binding is None:
        return False
    if isinstance(binding, FromBinding):
        return binding.name not in lost.get(binding.module, ())
    if isinstance(binding, DefBinding):
        return binding.qualname not in lost.get(facts.module, ())
    return True


def _used_here(tree, name: str) -> bool:
    """Is `name` read by the module's own code?

    It is read as a name, or as a word of a string other than an ``__all__`` entry.
    Then its import is no mere re-export, and stays. The check of kept files
    refuses the import of a name that goes.
    """
    if tree is None:
        return True
    listed = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                listed |= {id(n) for n in ast.walk(node.value)}
    word = re.compile(r"\b" + re.escape(name) + r"\b")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name:
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in listed and word.search(node.value):
            return True
    return False


def _served_from(facts, package: str) -> Iterator[Tuple[str, str]]:
    """``(module, name)`` of what a package's lazy table and typed face serve from modules under `package`."""
    for entry in exports.lazy_entries(facts):
        for module in exports.lazy_candidates(facts, entry):
            if module_under(module, package):
                yield module, entry.name
    for reexport in exports.typed_face(facts).values():
        if module_under(reexport.imp.module, package):
            yield reexport.imp.module, reexport.name


def _lazy_entries(facts, names_by_module) -> list:
    """``(key, module)`` of this package ``__init__``'s lazy-export entries that serve a removed name.

    Each serves it from the module that loses it.
    """
    return [(entry.name, module) for entry in exports.lazy_entries(facts)
            for module in exports.lazy_candidates(facts, entry) if entry.name in names_by_module.get(module, ())]


def _reexports(facts, names_by_module) -> list:
    """The module-level re-exports of a name its module loses (FlashInfer's top-level exports).

    They are `exports.Reexport` values, typed ones included.
    """
    return [r for r in exports.reexports(facts) if r.name in names_by_module.get(r.imp.module, ())]


def _remove_reexports(mod: ModuleEdits, reexports, rel: str) -> None:
    """Drop the re-exported names from their import statements. A statement left importing nothing goes."""
    drop_imported_names(mod, rel, [(r.imp.line, r.imp.column, r.bound) for r in reexports])


def _remove_dict_keys(mod: ModuleEdits, keys) -> None:
    """The entries of module-level dict displays keyed by one of `keys`."""
    for element in table_elements(mod.file, set(keys)):
        remove_element(mod, element)


def _remove_all_entries(mod: ModuleEdits, names) -> None:
    """The strings of ``__all__`` naming one of `names`."""
    for element in all_elements(mod.file, set(names)):
        remove_element(mod, element)
