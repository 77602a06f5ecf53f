"""What a module publishes, read from its facts: one model for every command.

A module publishes names three ways: its ``__all__``, a PEP 562 lazy-export table
served by its ``__getattr__``, and re-exports (``from .x import y [as z]``). The
imports under ``if TYPE_CHECKING:`` that bind a lazy name are the package's typed
face: they belong to the table, so whatever edits the table edits them too. The
checker's resolution, ``remove``, ``graduate`` and the consumer's surface all read
exports here, never from syntax of their own.
"""

from __future__ import annotations

from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Set

from .facts import COMPUTED_ALL, FUNCTION, LITERAL_ALL, MODULE, TYPE_CHECKING, FileFacts, Import, LazyExport

FactsOf = Callable[[str], Optional[FileFacts]]


class Reexport(NamedTuple):
    """A module-level ``from module import name as bound`` (typed: under ``TYPE_CHECKING``)."""

    imp: Import
    name: str
    bound: str

    @property
    def typed(self) -> bool:
        return self.imp.scope == TYPE_CHECKING


def lazy_entries(facts: FileFacts) -> tuple:
    """The `LazyExport` entries of a package ``__init__`` that defines ``__getattr__``."""
    if not facts.is_package or facts.published is None:
        return ()
    return facts.published.lazy


def lazy_candidates(facts: FileFacts, entry: LazyExport) -> tuple:
    """The modules an entry's string may name: relative to the package, then absolute."""
    return f"{facts.module}.{entry.module.lstrip('.')}", entry.module


def lazy_module(facts: FileFacts, name: str, is_module: Callable[[str], bool]) -> Optional[str]:
    """The module of the project the package's lazy table serves `name` from, or None."""
    for entry in lazy_entries(facts):
        if entry.name == name:
            found = next((c for c in lazy_candidates(facts, entry) if is_module(c)), None)
            if found is not None:
                return found
    return None


def listed(facts: FileFacts) -> Optional[Set[str]]:
    """The names of a literal ``__all__``; None where there is none or it is computed."""
    published = facts.published
    if published is None or published.all_form != LITERAL_ALL:
        return None
    return {entry.name for entry in published.listed}


def reexports(facts: FileFacts) -> Iterator[Reexport]:
    """Every module-level ``from module import name`` of the module, typed ones included."""
    for imp in facts.imports:
        if imp.scope in (MODULE, TYPE_CHECKING) and imp.module is not None:
            for name, bound in imp.names:
                if name != "*":
                    yield Reexport(imp, name, bound)


def typed_face(facts: FileFacts) -> Dict[str, Reexport]:
    """Lazy name -> the ``if TYPE_CHECKING:`` import binding it, of a package ``__init__``."""
    served = {entry.name for entry in lazy_entries(facts)}
    return {r.bound: r for r in reexports(facts) if r.typed and r.bound in served}


def face_problems(facts: FileFacts) -> List[str]:
    """Where the typed face and the lazy table disagree: a name missing from one, or
    imported from another module than the table serves it from."""
    face, problems = typed_face(facts), []
    for entry in lazy_entries(facts):
        found = face.get(entry.name)
        if found is None:
            problems.append(f"{entry.name}: in {entry.table}, not under TYPE_CHECKING")
        elif found.imp.module not in lazy_candidates(facts, entry) or found.name != entry.name:
            problems.append(f"{entry.name}: {entry.table} serves {entry.module}, "
                            f"TYPE_CHECKING imports {found.imp.module}.{found.name}")
    served = {entry.name for entry in lazy_entries(facts)}
    problems += [f"{r.bound}: under TYPE_CHECKING, not in the lazy table" for r in reexports(facts)
                 if r.typed and r.bound not in served and r.imp.module.startswith(facts.module + ".")]
    return problems


def lazy_shim_names(facts: FileFacts) -> Optional[List[str]]:
    """For a module that serves names lazily (a ``__getattr__`` beside an ``__all__``),
    the names of its ``__all__`` (empty when computed); None for any other module."""
    published = facts.published
    if published is None or "__getattr__" not in facts.definitions or not published.all_form:
        return None
    if published.all_form == COMPUTED_ALL or not all(e.name.isidentifier() for e in published.listed):
        return []
    return [entry.name for entry in published.listed]


def exported_names(facts_of: FactsOf, package: str) -> Dict[str, str]:
    """name -> how `package` serves it (its ``__init__`` binds it, a star import brings
    it, its ``__getattr__`` serves it lazily, its ``__all__`` declares it)."""
    facts = facts_of(package)
    if facts is None or facts.published is None:
        return {}
    found: Dict[str, str] = {}
    for name in sorted(listed(facts) or ()):
        found.setdefault(name, "declared in its __all__")
    for name in sorted(facts.published.served.split()):
        found.setdefault(name, "served lazily by its __getattr__")
    for source, names in _star_imports(facts_of, facts, {package}):
        for name in sorted(names):
            found.setdefault(name, f"bound through `from {source} import *`")
    for name in sorted(facts.published.bound.split()):
        found[name] = "bound in its __init__"
    return found


def _star_imports(facts_of: FactsOf, facts: FileFacts, seen: Set[str]):
    """``(source, names)`` for each module-level ``from source import *`` of the module."""
    for imp in facts.imports:
        if imp.scope == FUNCTION or imp.dynamic or ("*", "*") not in imp.names or imp.module in (None, *seen):
            continue
        seen.add(imp.module)
        yield imp.module, _star_names(facts_of, imp.module, seen)


def _star_names(facts_of: FactsOf, module: str, seen: Set[str]) -> Set[str]:
    """What ``from module import *`` binds: its ``__all__``, else its public top-level
    names (those it star-imports itself included); nothing for a module not read."""
    facts = facts_of(module)
    if facts is None or facts.published is None:
        return set()
    declared = listed(facts)
    if declared is not None:
        return declared
    names = set(facts.published.bound.split())
    for _, more in _star_imports(facts_of, facts, seen):
        names |= more
    return {name for name in names if not name.startswith("_")}
