"""Helpers, followed to the entry points that call them.

A helper is a core function that imports a feature without being an entry point
(`policy_checks/model/entry_points.py`).

The call graph is read with ``ast``, one walk per module. It covers the core
modules that spell the helper's name. It finds:

- calls, or any use, by name within the helper's module;
- uses through imports of it elsewhere: ``from m import _helper``,
  ``m._helper``, or an import in a function body;
- for a method, every ``x.name`` of the core modules that spell its name. That
  includes ``self.name()`` in its class, and in a base class whose template
  method calls it.

A use in a function that is itself a private helper is followed further. At most
`_MAX_HELPERS` helpers are followed per feature.

Both lifecycle commands read the same walk. ``remove`` takes a helper along when
only the feature's entry points reach it. Otherwise it refuses, naming each use
that stays. ``graduate`` swaps the markers of the entry points it finds through
helpers. The helpers themselves stay in core, retargeted.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, List, NamedTuple, Optional, Set, Tuple

from ..model import entry_points as ep
from ..model.facts import FUNCTION, ModuleBinding, FromBinding
from ..model.project import DefTarget, ModuleTarget

_MAX_HELPERS = 200


class Use(NamedTuple):
    """A use of a helper: the file, the line, and the functions around it.

    The functions run outermost first. They are empty at module level or in a class
    body.
    """

    rel: str
    line: int
    functions: tuple


class Blocked(NamedTuple):
    """A helper that a kept definition, or module-level code, uses."""

    rel: str  # the helper's file
    qualname: str
    line: int  # of its import of the feature
    use: Use
    why: str  # "public" or "kept"


class Reached(NamedTuple):
    """What the helpers lead to."""

    helpers: Set[Tuple[str, str]]  # (rel, qualname) of helpers reached only from entry points
    entry_points: Set[Tuple[str, str]]  # (rel, qualname) of experimental functions / classes reached
    blocked: List[Blocked]


class _Index(ast.NodeVisitor):
    """Every name use of one module: ``name -> [(line, functions)]``.

    Attribute uses are keyed ``(base name, attr) -> [...]``. Whatever the base, they
    are also keyed ``attr -> [...]``.
    """

    def __init__(self) -> None:
        self.names: Dict[str, list] = {}
        self.attributes: Dict[Tuple[str, str], list] = {}
        self.any_attribute: Dict[str, list] = {}  # attr -> every ``x.attr``, whatever x is
        self.stack: List[Tuple[str, bool]] = []

    def _functions(self) -> tuple:
        return tuple(".".join(n for n, _ in self.stack[:i + 1]) for i, (_, f) in enumerate(self.stack) if f)

    def _scope(self, node, is_function: bool) -> None:
        for child in (*node.decorator_list, *getattr(node, "bases", ()), *getattr(node, "keywords", ())):
            self.visit(child)
        if is_function:
            for default in (*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)):
                self.visit(default)
        self.stack.append((node.name, is_function))
        for statement in node.body:
            self.visit(statement)
        self.stack.pop()

    def visit_FunctionDef(self, node) -> None:
        self._scope(node, True)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node) -> None:
        self._scope(node, False)

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Store):
            self.names.setdefault(node.id, []).append((node.lineno, self._functions()))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.any_attribute.setdefault(node.attr, []).append((node.lineno, self._functions()))
        if isinstance(node.value, ast.Name):
            self.attributes.setdefault((node.value.id, node.attr), []).append((node.lineno, self._functions()))
        self.generic_visit(node)


class CallGraph:
    """Uses of core functions, read on demand.

    `tree_of(rel)` gives a module's ``ast``, or None when it does not parse.
    `read(rel)` gives its bytes. A cheap search runs first. Only the modules whose
    text could use the name are parsed.
    """

    def __init__(self, project, tree_of: Callable[[str], Optional[ast.Module]],
                 read: Callable[[str], bytes], kept: Callable[[str], bool]):
        self.project = project
        self._tree_of = tree_of
        self._read = read
        self._kept = kept
        self._indexes: Dict[str, Optional[_Index]] = {}

    def _index(self, rel: str) -> Optional[_Index]:
        if rel not in self._indexes:
            tree = self._tree_of(rel)
            index = None
            if tree is not None:
                index = _Index()
                index.visit(tree)
            self._indexes[rel] = index
        return self._indexes[rel]

    def uses(self, rel: str, qualname: str) -> List[Use]:
        """Where the function `qualname` of `rel` is used, outside its own body.

        A method is named ``Class.name``.
        """
        found: List[Use] = []
        own = self._index(rel)
        owner, _, name = qualname.rpartition(".")
        if owner:  # a method: any ``x.name`` may reach it (a base class's ``self.name()``, say)
            for other in self._core(rel, [b"." + name.encode()], also_own=True):
                index = self._index(other)
                if index is not None:
                    found += [Use(other, line, functions) for line, functions in index.any_attribute.get(name, [])]
        else:
            if own is not None:
                found += [Use(rel, line, functions) for line, functions in own.names.get(name, [])]
            found += self._uses_elsewhere(rel, name)
        return [u for u in found if not (u.rel == rel and u.functions and _within(u.functions[0], qualname))]

    def _core(self, rel: str, words: List[bytes], also_own: bool = False) -> List[str]:
        """The kept core modules whose text spells every one of `words` as a whole word.

        `rel` is left out unless `also_own`. A plain substring search runs first.
        Most files hold none, and that search is many times faster than a pattern.
        """
        project = self.project
        compiled = [re.compile((rb"" if w[:1] == b"." else rb"\b") + re.escape(w) + rb"\b") for w in words]

        def spells(data: bytes) -> bool:
            return all(w in data for w in words) and all(c.search(data) for c in compiled)

        return [other for other in sorted(project.files)
                if (also_own or other != rel) and project.settings.is_core(project.files[other].module)
                and self._kept(other)
                and (other == rel or spells(self._read(other)))]

    def _uses_elsewhere(self, rel: str, name: str) -> List[Use]:
        """Uses of `name` of module `rel` in the other core modules that import it."""
        project = self.project
        module = project.files[rel].module
        found: List[Use] = []
        # an import of it names its module's last part (``from .m import _x``, ``import a.m``)
        last = module.rpartition(".")[2]
        for other in self._core(rel, [name.encode(), last.encode()]):
            source = project.files[other]
            facts = project.facts(other)
            if facts.syntax_error is not None:
                continue
            index = self._index(other)
            for imp in facts.imports:  # imports in function bodies: the function uses it
                if imp.scope == FUNCTION and imp.module == module and any(n == name for n, _ in imp.names):
                    found.append(Use(other, imp.line, tuple(imp.functions)))
            if index is None:
                continue
            for bound, binding in facts.bindings.items():
                if isinstance(binding, FromBinding) and binding.name == name:
                    target = project.resolve(source.module, bound)
                    if isinstance(target, DefTarget) and target.module == module:
                        found += [Use(other, line, functions) for line, functions in index.names.get(bound, [])]
                elif isinstance(binding, (ModuleBinding, FromBinding)):
                    target = project.resolve(source.module, bound)
                    if isinstance(target, ModuleTarget) and target.name == module:
                        found += [Use(other, line, functions)
                                  for line, functions in index.attributes.get((bound, name), [])]
        return found


def _within(qualname: str, outer: str) -> bool:
    return qualname == outer or qualname.startswith(outer + ".")


def is_private(qualname: str) -> bool:
    """Is it a helper a user cannot be calling? Its own name starts with ``_``, and is no dunder."""
    name = qualname.rpartition(".")[2]
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def follow(graph: CallGraph, starts: List[Tuple[str, str, int]], going: Set[Tuple[str, str]],
           first_block: bool = False) -> Reached:
    """Every use reached from the helpers `starts`.

    Each start is ``(rel, qualname, line of the import)``. A use may sit inside a
    definition that goes anyway (`going`: ``(rel, qualname)``). It may sit inside an
    experimental entry point, which is the feature's, reached through the helper.
    It may sit in another private helper, which is followed. Any other use blocks
    the helper. With `first_block`, the walk stops at the first, since a refusal
    needs one reason.
    """
    project = graph.project
    helpers: Set[Tuple[str, str]] = set()
    entry: Set[Tuple[str, str]] = set()
    blocked: List[Blocked] = []
    queue = list(starts)
    while queue and len(helpers) < _MAX_HELPERS and not (first_block and blocked):
        rel, qualname, line = queue.pop(0)
        if (rel, qualname) in helpers:
            continue
        if not is_private(qualname):
            blocked.append(Blocked(rel, qualname, line, Use(rel, line, (qualname,)), "public"))
            continue
        helpers.add((rel, qualname))
        for use in graph.uses(rel, qualname):
            if not use.functions:
                blocked.append(Blocked(rel, qualname, line, use, "kept"))
                continue
            if any(r == use.rel and _within(use.functions[0], q) for r, q in going | entry | helpers):
                continue
            facts = project.facts(use.rel)
            found = ep.entry_point(project, facts, use.functions)
            if found is not None and found.kind in (ep.EXPERIMENTAL, ep.CLASS):
                entry.add((use.rel, found.qualname))
            elif found is None and is_private(use.functions[0]):
                queue.append((use.rel, use.functions[0], use.line))
            else:
                blocked.append(Blocked(rel, qualname, line, use, "kept"))
    for rel, qualname, line in ([] if blocked else queue):  # past the bound: not followed, so not known to go
        blocked.append(Blocked(rel, qualname, line, Use(rel, line, (qualname,)), "kept"))
    # a use found before its user was known to go is no block
    blocked = [b for b in blocked if b.why == "public" or not (b.use.functions and any(
        r == b.use.rel and _within(b.use.functions[0], q) for r, q in going | entry | helpers))]
    return Reached(helpers, entry, blocked)
