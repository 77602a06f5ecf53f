"""Where a package publishes what the removal deletes: a lazy-export table entry, a
top-level ``from .module import name`` re-export, an ``__all__`` entry. Each goes with
the name; nothing else in the module changes."""

from __future__ import annotations

from typing import NamedTuple, Set

import libcst as cst

from ...facts import MODULE, StrRef
from ...project import DictBinding
from ...editing.cst_tools import all_assignments, module_small_statements
from ...editing.target import FixTarget
from .entry_points import drop_imported_names, remove_element
from .model import CoreEdits, ModuleEdits, Removal
from .reach import core_files
from .texts import Texts, uses_pattern


class Exports(NamedTuple):
    """What the packages published of the removed code."""

    public: Set[str]  # "module.name" of each removed API and each lazy export of one (for the docs)
    served: Set[str]  # names a package served lazily from a module that loses them


def plan_exports(target: FixTarget, project, texts: Texts, removal: Removal, core: CoreEdits) -> Exports:
    """Drop the removed names from lazy tables, re-exports and ``__all__``. A module
    that lists a removed name quotes it (``__all__``, a lazy table) or imports it, so
    only the core modules spelling one are read."""
    names_by_module = core.names_by_module
    removed = sorted({n.partition(".")[0] for names in names_by_module.values() for n in names})
    public, served = core.removed_names(), set()
    edited = set(core.modules)
    for rel, source, facts in core_files(project, texts, removal, spelling=uses_pattern(removed, quoted=True), also=edited):
        lazy = _lazy_entries(facts, names_by_module)
        reexports = _reexports(facts, names_by_module) if source.is_package else []
        public.update(f"{source.module}.{key}" for key, _ in lazy)
        served.update(key for key, _ in lazy)
        listed = names_by_module.get(source.module, set())
        if source.is_package:
            listed = listed | {key for key, _ in lazy} | {bound for _, _, bound in reexports}
        if not lazy and not listed:
            continue
        mod = core.of(target, rel)
        _remove_dict_keys(mod, {key for key, _ in lazy})
        _remove_reexports(mod, reexports, rel)
        _remove_all_entries(mod, listed)
    return Exports(public, served)


def _lazy_entries(facts, names_by_module) -> list:
    """``(key, module)`` of lazy-export table entries of this package ``__init__`` that
    serve a removed name from the module that loses it."""
    if not facts.is_package or "__getattr__" not in facts.definitions:
        return []
    found = []
    for binding in facts.bindings.values():
        if not isinstance(binding, DictBinding):
            continue
        for key, ref in binding.value.entries:
            if not isinstance(ref, StrRef):
                continue
            for module in (f"{facts.module}.{ref.text.lstrip('.')}", ref.text):
                if key in names_by_module.get(module, ()):
                    found.append((key, module))
    return found


def _reexports(facts, names_by_module) -> list:
    """``(import, name, bound)`` of a package ``__init__``'s module-level ``from .module
    import name [as bound]`` of a name its module loses (FlashInfer's top-level exports)."""
    found = []
    for imp in facts.imports:
        if imp.scope != MODULE or imp.module is None:
            continue
        for name, bound in imp.names:
            if name in names_by_module.get(imp.module, ()):
                found.append((imp, name, bound))
    return found


def _remove_reexports(mod: ModuleEdits, reexports, rel: str) -> None:
    """Drop the re-exported names from their import statements (a statement left
    importing nothing goes)."""
    drop_imported_names(mod, rel, [(imp.line, imp.column, bound) for imp, _, bound in reexports])


def _remove_dict_keys(mod: ModuleEdits, keys) -> None:
    """The entries of module-level dict displays keyed by one of `keys`."""
    if not keys:
        return
    for small in module_small_statements(mod.file):
        value = getattr(small, "value", None)
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(value, cst.Dict):
            for element in value.elements:
                if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                    if element.key.evaluated_value in keys:
                        remove_element(mod, element)


def _remove_all_entries(mod: ModuleEdits, names) -> None:
    """The strings of ``__all__`` naming one of `names`."""
    if not names:
        return
    for small in all_assignments(mod.file):
        if isinstance(small.value, (cst.List, cst.Tuple)):
            for element in small.value.elements:
                if isinstance(element.value, cst.SimpleString) and element.value.evaluated_value in names:
                    remove_element(mod, element)
