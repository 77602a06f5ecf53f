"""What an entry point is: the one definition EXP007 checks and the lifecycle commands
act on (docs/policy_check.rst, EXP007; docs/lifecycle.rst).

Core may hand off to experimental code only in an entry point. There are three kinds.

A *function* can be one. Either it is marked ``@flashinfer_experimental_api`` (kind
``experimental``). Or it is a public API, ``@flashinfer_api`` / ``@backend_requirement``,
that selects an experimental backend (kind ``public``). Of a public API, only its
*backend branch* belongs to the feature. That is an arm of an ``if``/``elif`` chain
whose test selects that one backend (`branch_backend`). The arm must be able to go alone
(`arm_goes_alone`).

A *class* that is an experimental API can be one (kind ``class``). It is decorated with
one of those markers, or has an ``@flashinfer_experimental_api`` method, or its body sets
``is_experimental = True``. Its methods, ``__init__`` included, are inside it. The class
goes, or graduates, whole.

The module ``__getattr__`` of a package ``__init__.py`` can be one (kind ``lazy``).

What a caller of FlashInfer meets is read here too: the consumer's surface. It has the
experimental APIs of a module (`experimental_apis`). Those are marked functions and
methods, and the classes that are experimental as a whole; constructing one is a use. It
has the experimental backends of stable APIs (`experimental_backends`). Those are
checkers marked ``@experimental_backend`` in a ``backend_requirement`` mapping. They are
also the backend branches that hand off to experimental code. `announced_in` finds
literal ``warn_experimental_backend_once`` calls, wherever they are written.

A nested function counts as inside its enclosing definition. Anything else that imports
experimental code is a helper, which EXP007 reports. The lifecycle commands follow a
helper to the entry points that call it (`policy_checks/lifecycle/helpers.py`).
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, Iterator, NamedTuple, Optional, Sequence, Tuple

from . import markers
from .facts import CallRef

EXPERIMENTAL = "experimental"
PUBLIC = "public"
CLASS = "class"
LAZY = "lazy"

_PUBLIC_MARKERS = (markers.STABLE_API, markers.BACKEND_REQUIREMENT)
_ALL_MARKERS = (markers.EXPERIMENTAL_API, *_PUBLIC_MARKERS)


class EntryPoint(NamedTuple):
    """The entry point around an import: its qualname in its module and its kind."""

    qualname: str
    kind: str


def entry_point(project, facts, functions: Sequence[str]) -> Optional[EntryPoint]:
    """The outermost entry point among `functions` (qualnames of the defs around an
    import, outermost first) and the classes holding them; None when there is none."""
    for qualname in functions:
        owner = experimental_class(project, facts, qualname.rpartition(".")[0])
        if owner is not None:
            return EntryPoint(owner, CLASS)
        if qualname == "__getattr__" and facts.is_package:
            return EntryPoint(qualname, LAZY)
        definition = facts.definitions.get(qualname)
        if definition is None or definition.kind != "function":
            continue
        if _marked(project, facts, definition, (markers.EXPERIMENTAL_API,)):
            return EntryPoint(qualname, EXPERIMENTAL)
        if _marked(project, facts, definition, _PUBLIC_MARKERS):
            return EntryPoint(qualname, PUBLIC)
    return None


def experimental_class(project, facts, qualname: str, wanted: Sequence[str] = _ALL_MARKERS) -> Optional[str]:
    """`qualname` when it names a class that is an experimental API, else None. A class
    decorated with one of `wanted` counts. The surface asks for the experimental marker
    alone. A stable marker on a class makes it an entry point, not experimental."""
    cls = facts.definitions.get(qualname) if qualname else None
    if cls is None or cls.kind != "class":
        return None
    if getattr(cls, "flagged", False) or _marked(project, facts, cls, wanted):
        return qualname
    prefix = qualname + "."
    for name, method in facts.definitions.items():
        if (name.startswith(prefix) and "." not in name[len(prefix):] and method.kind == "function"
                and _marked(project, facts, method, (markers.EXPERIMENTAL_API,))):
            return qualname
    return None


def experimental_apis(project, facts) -> Iterator[str]:
    """Qualnames of the experimental APIs defined in the module of `facts`. Those are
    functions and methods marked ``@flashinfer_experimental_api``. They are also classes
    that are experimental as a whole (`experimental_class`); constructing one is a use of
    the API."""
    for qualname, definition in facts.definitions.items():
        if definition.kind == "class":
            if experimental_class(project, facts, qualname, (markers.EXPERIMENTAL_API,)):
                yield qualname
        elif _marked(project, facts, definition, (markers.EXPERIMENTAL_API,)):
            yield qualname


def experimental_backends(project, facts, tree: Callable[[], Optional[ast.Module]]) -> Iterator[Tuple[str, str]]:
    """``(api qualname, backend)`` of each experimental backend that a stable API of the
    module of `facts` declares. That is a checker marked ``@experimental_backend`` in its
    ``backend_requirement`` mapping. It is also a backend branch handing off to
    experimental code. `tree` gives the module's ``ast``, or None when it does not parse.
    It is asked only when a function imports experimental code."""
    for call in facts.backend_calls:
        api = _decorated_by(facts, call.line)
        if api is None:
            continue
        for key, where, ref in project.backend_entries(facts.module, call.checks):
            if key is not None and _experimental_checker(project, where, ref):
                yield api, key
    yield from _branch_backends(project, facts, tree)


def announced_in(facts, tree: ast.Module) -> Iterator[Tuple[str, str]]:
    """``(api, backend)`` of each backend the module announces (`announced_backends`).
    `api` is the qualname of the module's definition of that name. Else it is the bare
    name: the API is defined elsewhere."""
    names = {d.qualname.rpartition(".")[2]: d.qualname for d in facts.definitions.values()}
    for api, backend in announced_backends(tree):
        yield names.get(api, api), backend


def _decorated_by(facts, line: int) -> Optional[str]:
    """The qualname of the definition a ``backend_requirement`` call on `line` decorates.
    That is the first definition at or below it carrying that marker."""
    best = None
    for definition in facts.definitions.values():
        if definition.line >= line and any(markers.is_marker(d, markers.BACKEND_REQUIREMENT)
                                            for d in definition.decorators):
            if best is None or definition.line < best.line:
                best = definition
    return None if best is None else best.qualname


def _experimental_checker(project, module: str, ref) -> bool:
    """Is a mapping value marked ``@experimental_backend`` (inline, or on its definition)?"""
    if isinstance(ref, CallRef):
        return markers.is_marker(ref.func, markers.EXPERIMENTAL_BACKEND) or any(
            _experimental_checker(project, module, arg) for arg in ref.args)
    found = project.checker_of(module, ref)
    return found is not None and project.decorated_with(found[0], found[1], markers.EXPERIMENTAL_BACKEND)


def _branch_backends(project, facts, tree: Callable[[], Optional[ast.Module]]) -> Iterator[Tuple[str, str]]:
    """``(api, backend)`` of each public API's backend branch that imports experimental code."""
    parents: Optional[Dict[ast.AST, ast.AST]] = None
    for imp in facts.imports:
        if not imp.functions or not any(project.settings.is_experimental_module(t)
                                        for t in project.import_targets(imp)):
            continue
        found = entry_point(project, facts, imp.functions)
        if found is None or found.kind != PUBLIC:
            continue
        if parents is None:
            module = tree()
            parents = parent_map(module) if module is not None else {}
        arm = branch_around(parents, imp.line)
        if arm is not None:
            yield found.qualname, branch_backend(arm.test)


def announced_backends(tree: ast.Module) -> Iterator[Tuple[str, str]]:
    """``(api, backend)`` of each ``warn_experimental_backend_once("api", "backend")``
    with two literal strings. Hand-routed code announces an experimental backend so."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and len(node.args) >= 2:
            name = markers.dotted_name(node.func) or ""
            if name.rpartition(".")[2] != markers.BACKEND_WARNING:
                continue
            api, backend = node.args[0], node.args[1]
            if all(isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value for a in (api, backend)):
                yield api.value, backend.value


def parent_map(tree: ast.AST) -> Dict[ast.AST, ast.AST]:
    """Each node of `tree` -> the node holding it."""
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def branch_around(parents: Dict[ast.AST, ast.AST], line: int) -> Optional[ast.If]:
    """The innermost backend branch (`branch_backend`) holding the import on `line`,
    within its function; None when the import sits in no such branch."""
    node = next((n for n in parents if isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno == line), None)
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(node, ast.If) and branch_backend(node.test) is not None:
            return node
        node = parents.get(node)
    return None


def _marked(project, facts, definition, wanted) -> bool:
    return any(project.decorated_with(facts.module, definition, m) for m in wanted)


def branch_backend(test: ast.AST) -> Optional[str]:
    """``"x"`` when the ``if`` test `test` selects the one backend ``"x"``, else None.
    The branch then hands off to it.

    A selection compares a name with ``"x"``: ``backend == "x"``, ``"x" == backend``. Or
    it compares a name, ``list(name)`` or ``tuple(name)`` with a one-element list or
    tuple of ``"x"``: ``list(backends) == ["x"]``, ``backends == ("x",)``. ``list(...)``
    only equals a list, and ``tuple(...)`` a tuple. ``"x" in backends`` selects no
    branch, since other backends may run too."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    for subject, value in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        if isinstance(subject, ast.Name):
            found = _string(value) or _one_string(value, (ast.List, ast.Tuple))
        elif _converted(subject) is not None:
            found = _one_string(value, _converted(subject))
        else:
            found = None
        if found is not None:
            return found
    return None


def _converted(node: ast.AST):
    """The display type ``list(name)`` / ``tuple(name)`` can equal, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple")
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Name)):
        return ast.List if node.func.id == "list" else ast.Tuple
    return None


def _string(node: ast.AST) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _one_string(node: ast.AST, displays) -> Optional[str]:
    """The string of a one-element display of one of the types `displays`."""
    if isinstance(node, displays) and len(node.elts) == 1:
        return _string(node.elts[0])
    return None


def arm_goes_alone(arm: ast.If, parent: Optional[ast.AST]) -> bool:
    """Can the ``if``/``elif`` arm `arm` be deleted, leaving every other backend's path
    as it was? `parent` is the node holding it. Yes when it has no else part. Yes when an
    ``elif`` follows it, since that becomes the ``if``. Yes when it is an ``elif``
    itself, since what follows it moves up. Not for an ``if`` whose ``else:`` would have
    to take its place."""
    if not arm.orelse:
        return True
    if is_elif(arm, parent):
        return True
    return len(arm.orelse) == 1 and is_elif(arm.orelse[0], arm)


def is_elif(node: ast.AST, parent: Optional[ast.AST]) -> bool:
    """Is `node` written ``elif`` (not ``else:`` holding an ``if``)? ``ast`` places
    both in the parent's else part; an ``elif`` starts in the parent's column."""
    return (isinstance(node, ast.If) and isinstance(parent, ast.If) and parent.orelse == [node]
            and node.col_offset == parent.col_offset and node.lineno > parent.lineno)
