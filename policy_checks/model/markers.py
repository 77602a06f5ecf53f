"""The experimental track's vocabulary, and the one reading of its markers.

Many parts of the toolkit ask whether a thing is an experimental API, an experimental
backend or a stable API. They are the checker's facts and rules, the fixer, ``policy-check remove``
and ``graduate``, and the bot's graduation-PR reader. Each takes the names from here.
Each resolves a decorator's spelling here. So no two of them can disagree about what a
marker looks like.

A decorator marks a definition when the expression it applies resolves to a marker. The
spelling does not matter:

* a bare name or an attribute: ``@flashinfer_experimental_api``,
  ``@api_logging.flashinfer_experimental_api`` (the last component decides);
* in parentheses or with blanks: ``@(flashinfer_experimental_api)``, ``@ name``;
* called, once or more: ``@name(feature="x")``, ``@(name)(feature="x")``, ``@name(a)(b)``;
* through another name this file binds to it: ``import ... as``, ``from ... import
  ... as``, ``fx = flashinfer_experimental_api``;
* through any expression that mentions a marker: ``fx = [flashinfer_experimental_api][0]``,
  a ``partial`` of it, a ``def`` or ``lambda`` whose body uses it;
* ``getattr(module, "flashinfer_experimental_api")``;
* a marker passed bare to a decorator factory: ``@apply(flashinfer_experimental_api)``.

Names are followed inside one file, flow-insensitively. A name bound anywhere in the file
to something that mentions a marker means that marker everywhere in the file. That errs
towards "marked". It is the safe side for what reads it. An experimental addition must be
declared, and an entry point still marked has not graduated. The checker follows names
across modules on top of this (`policy_checks.model.project.Project.decorated_with`).

A binding ``x = <marker>(...)(f)`` marks ``x`` as a definition too. It is the decorator
applied by hand.

Standard library only (``ast``). The bot imports this module too, and reads untrusted
files with it. `marked_definitions` never raises on any text; a file that does not parse
is None. Its work is linear in the size of the tree. One iterative walk builds a graph of
the file's names (`_Names`). One backward search per kind of mark reads it. Each
decorator is looked at once. A text that spells no marker's name is not walked at all.
"""

from __future__ import annotations

import ast
import warnings
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple, Union

from . import parsed

# --- the vocabulary ------------------------------------------------------------------

EXPERIMENTAL_API = "flashinfer_experimental_api"  # decorator: an experimental API
STABLE_API = "flashinfer_api"  # decorator: a public (stable) API
EXPERIMENTAL_BACKEND = "experimental_backend"  # decorator: an experimental backend's checker
EXPERIMENTAL_FLAG = "is_experimental"  # a class attribute set True: the class is an experimental API
BACKEND_REQUIREMENT = "backend_requirement"  # decorator: a dispatching API and its backends
# decorator stacked on an experimental API so that type checkers report its calls (PEP 702)
EXPERIMENTAL_NOTICE = "experimental_notice"

# The kinds of mark, as `Marked.kind` spells them.
KIND_EXPERIMENTAL_API = "experimental_api"
KIND_EXPERIMENTAL_BACKEND = "experimental_backend"
KIND_STABLE_API = "stable_api"
KINDS = {EXPERIMENTAL_API: KIND_EXPERIMENTAL_API, EXPERIMENTAL_BACKEND: KIND_EXPERIMENTAL_BACKEND,
         STABLE_API: KIND_STABLE_API}
EXPERIMENTAL_KINDS = frozenset({KIND_EXPERIMENTAL_API, KIND_EXPERIMENTAL_BACKEND})
# Decorators that make a function an entry point of the package (a public API or a dispatcher).
ENTRY_POINT_DECORATORS = frozenset({STABLE_API, EXPERIMENTAL_API, BACKEND_REQUIREMENT})

# The gate: calls that hold an experimental backend back from automatic routing or warn
# when one is used (flashinfer/api_logging.py). Every ``require_experimental*`` name is a gate.
GATE_PREFIX = "require_experimental"
BACKEND_WARNING = "warn_experimental_backend_once"  # announces an explicit experimental backend
GATE_FUNCTIONS = ("require_experimental_auto_backends", "require_experimental", BACKEND_WARNING)
AUTO_BACKENDS_ENV = "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS"  # the gate's environment variable

# A graduated feature leaves a shim package at its old path for one release; its
# ``__init__`` binds this name to the stable home (``policy-check graduate`` writes it).
SHIM_MARKER = "__graduated_to__"
RECORD = "FEATURE.toml"  # a feature's record, in its directory
README = "README.md"

# Calls that import the module their first argument names: importlib's, the builtin,
# and the test-skip helper (``pytest.importorskip``: stable tests use it too, EXP008).
TEST_SKIP_FUNCTIONS = ("importorskip",)
IMPORT_FUNCTIONS = ("import_module", "__import__") + TEST_SKIP_FUNCTIONS
# Other loaders that import what a literal names (facts read them as imports): a module
# name (``pkgutil.resolve_name``, ``runpy.run_module``, ``importlib.util.find_spec``) or
# a file's path (``runpy.run_path``, ``importlib.util.spec_from_file_location``).
NAME_LOADERS = ("resolve_name", "run_module", "find_spec")
PATH_LOADERS = ("run_path", "spec_from_file_location")
LOADER_HOMES = ("runpy", "pkgutil", "importlib", "importlib.util")  # where those loaders live
# what a file calling one of them spells (the module, or importlib.util's loader names)
LOADER_SPELLINGS = ("runpy", "pkgutil", "find_spec", "spec_from_file_location")

_MAX_CHAIN = 10_000  # calls unwrapped in one decorator (a longer chain is read as unresolvable)


def is_marker(name: str, marker: str) -> bool:
    """Whether a resolved dotted name (``flashinfer.api_logging.experimental_backend``) is `marker`."""
    return name.rpartition(".")[2] == marker


def is_gate_name(name: str) -> bool:
    """Whether a resolved dotted name is one of the gate's functions."""
    last = name.rpartition(".")[2]
    return last in GATE_FUNCTIONS or last.startswith(GATE_PREFIX)


# --- decorator spellings ---------------------------------------------------------------


def dotted_name(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain (parentheses leave no trace in ``ast``), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _getattr_name(node: ast.Call) -> Optional[str]:
    """``getattr(x, "name")`` -> ``x.name`` spelt as a dotted name (``?.name`` when x is no dotted name)."""
    if dotted_name(node.func) not in ("getattr", "builtins.getattr") or len(node.args) < 2:
        return None
    attr = node.args[1]
    if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
        return None
    owner = dotted_name(node.args[0]) or "?"
    return f"{owner}.{attr.value}"


def decorator_callee(node: ast.AST) -> ast.AST:
    """The expression a decorator applies once its calls are unwrapped: ``@(f)(a)(b)`` -> ``f``.

    ``(name := value)`` is its value; ``getattr(x, "n")`` is left as it is (see `decorator_target`).
    """
    for _ in range(_MAX_CHAIN):
        if isinstance(node, ast.NamedExpr):
            node = node.value
        elif isinstance(node, ast.Call) and _getattr_name(node) is None:
            node = node.func
        else:
            break
    return node


def decorator_target(node: ast.AST) -> Optional[str]:
    """The dotted name a decorator applies, calls unwrapped, as written in the file (not
    followed through aliases): ``api_logging.flashinfer_api`` for
    ``@(api_logging.flashinfer_api)(trace=t)``; None when it is no dotted name."""
    callee = decorator_callee(node)
    if isinstance(callee, ast.Call):
        return _getattr_name(callee)
    return dotted_name(callee)


# --- names bound in one file -------------------------------------------------------------


def _targets(node: ast.AST) -> Iterator[str]:
    """The names an assignment target binds: names, tuples and starred unpacked. For
    ``ns.fx = ...`` that is the attribute (``fx``). For ``d[k] = ...`` it is the
    container (``d``)."""
    stack = [node]
    while stack:
        target = stack.pop()
        if isinstance(target, ast.Name):
            yield target.id
        elif isinstance(target, ast.Attribute):
            yield target.attr
        elif isinstance(target, (ast.Tuple, ast.List)):
            stack.extend(target.elts)
        elif isinstance(target, (ast.Starred, ast.Subscript)):
            stack.append(target.value)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LEAVES = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop, ast.Constant)


class _Names:
    """What the names and expressions of one file may stand for.

    The file is read as a graph. There is a vertex per node of its tree (its ``id``) and
    per name (the string). An expression leads to its parts. A name leads to what the
    file binds it to: assignments of every form, imports ``as``, loop and ``with``
    targets, walrus. A ``def`` or ``class`` name leads to its body. An attribute leads to
    its last component, and ``getattr(x, "n")`` to ``n``. A vertex stands for a mark when
    a marker's name is reachable from it. Building the graph visits every vertex and edge
    once. So does each of the few backward searches: one per kind of mark, one for the
    gate. The work is linear in the tree.
    """

    def __init__(self, tree: ast.AST, imported: Optional[Mapping[str, Iterable[str]]] = None):
        back: Dict[object, List[object]] = defaultdict(list)  # vertex -> the vertices with an edge to it
        self.back = back
        self.tree = tree  # node vertices are ids: the nodes stay alive as long as the graph
        self.defs: List[Tuple[ast.AST, str]] = []  # every def and class, with the qualname it lies in
        self.assigns: List[Tuple[ast.AST, str]] = []  # assignments of a call (``x = marker(...)(f)``)
        self.calls: List[Tuple[ast.Call, str]] = []  # calls of anything but a call, for the gate
        # One iterative walk that keeps the enclosing qualname; leaves that name nothing
        # (contexts, operators, constants) get no vertex.
        stack: List[Tuple[ast.AST, str]] = [(tree, "")]
        while stack:
            node, scope = stack.pop()
            here = id(node)
            inner = scope
            if isinstance(node, _DEFS):
                self.defs.append((node, scope))
                inner = f"{scope}.{node.name}" if scope else node.name
                back[node.name].append(here)
                body = set()
                for statement in node.body:
                    back[id(statement)].append(node.name)
                    body.add(id(statement))
                    stack.append((statement, inner))
                for child in ast.iter_child_nodes(node):  # decorators, arguments, bases: the enclosing scope
                    if id(child) not in body and not isinstance(child, _LEAVES):
                        stack.append((child, scope))
                continue  # what the name stands for is its body, not its decorators
            for field_name in node._fields:
                value = getattr(node, field_name, None)
                if isinstance(value, list):
                    for item in value:
                        if isinstance(item, ast.AST) and not isinstance(item, _LEAVES):
                            back[id(item)].append(here)
                            stack.append((item, inner))
                elif isinstance(value, ast.AST) and not isinstance(value, _LEAVES):
                    back[id(value)].append(here)
                    stack.append((value, inner))
            if isinstance(node, ast.Name):
                back[node.id].append(here)
            elif isinstance(node, ast.Attribute):
                back[node.attr].append(here)
            elif isinstance(node, ast.Call):
                found = _getattr_name(node)
                if found is not None:
                    back[found.rpartition(".")[2]].append(here)
                if not isinstance(node.func, ast.Call):
                    self.calls.append((node, scope))
            else:
                self._binding(node, scope)
        # Names another module binds to a marker, as this file imports them (the bot's cross-module
        # table, `policy_checks.bot.aliases`): the local name leads to the marker's name.
        for local, marker_names in (imported or {}).items():
            for marker in marker_names:
                back[marker].append(local)

    def _binding(self, node: ast.AST, scope: str) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind(target, node.value)
            if isinstance(node.value, ast.Call):
                self.assigns.append((node, scope))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            if node.value is not None:
                self._bind(node.target, node.value)
            if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Call):
                self.assigns.append((node, scope))
        elif isinstance(node, ast.NamedExpr):
            self._bind(node.target, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self._bind(node.target, node.iter)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, item.context_expr)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.back[alias.name.rpartition(".")[2]].append(alias.asname)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname and alias.name != "*":
                    self.back[alias.name].append(alias.asname)

    @cached_property
    def reach(self) -> Dict[str, Set[object]]:
        """Kind -> every vertex from which that marker's name is reachable."""
        return {kind: self._reaching([name]) for name, kind in KINDS.items()}

    def _bind(self, target: ast.AST, value: ast.AST) -> None:
        for name in _targets(target):
            self.back[id(value)].append(name)

    def _reaching(self, starts) -> Set[object]:
        """Every vertex from which one of `starts` is reachable (the starts included)."""
        seen = set(starts)
        stack = list(seen)
        back = self.back
        while stack:
            vertex = stack.pop()
            for source in (back[vertex] if vertex in back else ()):
                if source not in seen:
                    seen.add(source)
                    stack.append(source)
        return seen

    def kinds_of(self, vertex: object) -> frozenset:
        """The kinds of mark a vertex (a name, or ``id`` of a node) may stand for."""
        return frozenset(kind for kind, reaching in self.reach.items() if vertex in reaching)

    @cached_property
    def _gates(self) -> Set[object]:
        return self._reaching([v for v in list(self.back) if isinstance(v, str) and is_gate_name(v)])

    def is_gate(self, vertex: object) -> bool:
        return (isinstance(vertex, str) and is_gate_name(vertex)) or vertex in self._gates

    @staticmethod
    def names_in(node: ast.AST) -> List[str]:
        """The name vertices an expression leads to. For a dotted name, that is its last
        component (or ``getattr``'s literal name). For any other expression, it is every
        name it mentions."""
        if isinstance(node, ast.Call):
            found = _getattr_name(node)
            if found is not None:
                return [found.rpartition(".")[2]]
        dotted = dotted_name(node)
        if dotted is not None:
            return [dotted.rpartition(".")[2]]
        found_names = []
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name):
                found_names.append(inner.id)
            elif isinstance(inner, ast.Attribute):
                found_names.append(inner.attr)
            elif isinstance(inner, ast.Call) and _getattr_name(inner) is not None:
                found_names.append(_getattr_name(inner).rpartition(".")[2])
        return found_names

    def kinds_in(self, node: ast.AST) -> Set[str]:
        kinds: Set[str] = set()
        for name in self.names_in(node):
            kinds |= self.kinds_of(name)
        return kinds

    def gate_in(self, node: ast.AST) -> bool:
        return any(self.is_gate(name) for name in self.names_in(node))

    def of_decorator(self, node: ast.AST) -> frozenset:
        """The kinds of mark a decorator expression applies. That is what its callee
        stands for, with calls unwrapped. It also counts any marker passed bare to a
        factory (``@apply(flashinfer_experimental_api)``).

        Only names are looked up. So the expression may come from another parse of the
        same file; the fixer parses a decorator's code again."""
        kinds: Set[str] = set()
        current = node
        for _ in range(_MAX_CHAIN):
            if isinstance(current, ast.NamedExpr):
                current = current.value
                continue
            if not isinstance(current, ast.Call) or _getattr_name(current) is not None:
                break
            for argument in [*current.args, *(k.value for k in current.keywords)]:
                if isinstance(argument, ast.Starred):
                    argument = argument.value
                if dotted_name(argument) is not None:
                    kinds |= self.kinds_in(argument)
            current = current.func
        else:
            return frozenset(KINDS.values())  # a chain too long to read: taken for every mark
        return frozenset(kinds | self.kinds_in(current))


def file_names(tree: ast.AST) -> _Names:
    """The reading of one parsed file's names that `marked_definitions` uses, for a caller
    that has the tree already (the checker's facts); ``.of_decorator(node)`` gives the kinds
    of mark a decorator expression applies."""
    return _Names(tree)


# --- marked definitions --------------------------------------------------------------------


@dataclass(frozen=True)
class Marked:
    """A definition that carries a mark of the track."""

    qualname: str  # "Class.method" or "func" (nested functions: "outer.inner")
    line: int  # of the def/class keyword (or of the binding ``x = marker(...)(f)``)
    kind: str  # "experimental_api" | "experimental_backend" | "stable_api"


def _spells_any(source: Union[str, bytes], words) -> bool:
    """Whether the text holds one of `words`. Bytes are searched as UTF-8. A file in
    another encoding whose names are ASCII spells them the same way."""
    if isinstance(source, bytes):
        return any(word.encode() in source for word in words)
    return any(word in source for word in words)


def parse(source: Union[str, bytes]) -> Optional[ast.Module]:
    """The module's tree, or None when it is not Python (or too deep or large for the
    parser). The parser's own warnings about the text are not ours to print (an invalid
    escape sequence). The text is someone else's, judged, not run."""
    try:
        if isinstance(source, bytes):
            return parsed.tree(source)  # shared within a lifecycle command
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError, OverflowError):
        return None


def _marked(names: _Names) -> List[Tuple[Marked, ast.AST]]:
    found: List[Tuple[Marked, ast.AST]] = []
    for node, scope in names.defs:
        qualname = f"{scope}.{node.name}" if scope else node.name
        kinds: Set[str] = set()
        for decorator in node.decorator_list:
            kinds |= names.of_decorator(decorator)
        found += [(Marked(qualname, node.lineno, kind), node) for kind in sorted(kinds)]
    for node, scope in names.assigns:
        kinds = set(names.of_decorator(node.value))  # ``x = marker(...)(f)``: applied by hand
        if kinds:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in _targets(target):
                    qualname = f"{scope}.{name}" if scope else name
                    found += [(Marked(qualname, node.lineno, kind), node) for kind in sorted(kinds)]
    found.sort(key=lambda pair: (pair[0].line, pair[0].qualname, pair[0].kind))
    return found


Imported = Optional[Mapping[str, Iterable[str]]]  # local name -> the marker names another module binds it to


def marked_nodes(source: Union[str, bytes], imported: Imported = None) -> Optional[List[Tuple[Marked, ast.AST]]]:
    """`marked_definitions`, each with its node: the ``def``/``class``, or the
    assignment. It serves a caller that reads more of it. The bot, for one, reads which
    feature a decorator names."""
    tree = parse(source)
    if tree is None:
        return None
    if not imported and not _spells_any(source, KINDS):
        return []  # every name comes from the text: one that spells no marker marks nothing
    try:
        return _marked(_Names(tree, imported))
    except (RecursionError, MemoryError):  # pragma: no cover - every walk here is iterative
        return None


def marked_definitions(source: Union[str, bytes], imported: Imported = None) -> Optional[List[Marked]]:
    """Every definition of a file that carries a mark, one `Marked` per (definition, kind),
    in the order of their lines; None when the text is not Python. Never raises otherwise.

    ``imported`` maps names this file imports to the markers another module binds them to (a
    caller that reads several modules: ``from .helpers import mark`` where helpers binds
    ``mark`` to ``flashinfer_experimental_api``)."""
    pairs = marked_nodes(source, imported)
    return None if pairs is None else [marked for marked, _ in pairs]


def exported_marks(source: Union[str, bytes], imported: Imported = None) -> Optional[Dict[str, frozenset]]:
    """Name -> the marker names it may stand for. It covers every name of a module that
    leads to a marker: what another module gets by importing it from here. An example is
    ``mark`` for
    ``from flashinfer.api_logging import flashinfer_experimental_api as mark``.
    Flow-insensitive, like every reading here. None when the text is not Python."""
    tree = parse(source)
    if tree is None:
        return None
    if not imported and not _spells_any(source, KINDS):
        return {}
    try:
        names = _Names(tree, imported)
        found: Dict[str, Set[str]] = defaultdict(set)
        for marker, kind in KINDS.items():
            for vertex in names.reach[kind]:
                if isinstance(vertex, str) and vertex.isidentifier() and vertex not in KINDS:
                    found[vertex].add(marker)
    except (RecursionError, MemoryError):  # pragma: no cover - every walk here is iterative
        return None
    return {name: frozenset(markers) for name, markers in found.items()}


def gate_calls(source: Union[str, bytes]) -> Optional[List[Tuple[str, int]]]:
    """``(qualname of the enclosing def or "", line)`` of each call of a gate function, by
    name or through the file's names (``from ... import require_experimental as r``, ``r()``);
    None when the text is not Python."""
    tree = parse(source)
    if tree is None:
        return None
    if not _spells_any(source, (GATE_PREFIX, *GATE_FUNCTIONS)):
        return []
    try:
        names = _Names(tree)
        found = [(scope, node.lineno) for node, scope in names.calls if names.gate_in(node.func)]
    except (RecursionError, MemoryError):  # pragma: no cover - every walk here is iterative
        return None
    return sorted(found, key=lambda item: (item[1], item[0]))


# --- the shim a graduated feature leaves ------------------------------------------------------


def shim_home(source: Union[str, bytes]) -> Optional[str]:
    """The value a module binds to ``__graduated_to__`` at top level (a string), or None."""
    tree = parse(source)
    if tree is None:
        return None
    for node in tree.body:
        value = _shim_binding(node)
        if value is not None:
            return value
    return None


def _shim_binding(node: ast.stmt) -> Optional[str]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, value = node.targets[0], node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target, value = node.target, node.value
    else:
        return None
    if isinstance(target, ast.Name) and target.id == SHIM_MARKER and isinstance(value, ast.Constant) \
            and isinstance(value.value, str):
        return value.value
    return None


def _under(module: str, home: str) -> bool:
    return module == home or module.startswith(home + ".")


def _is_dotted_module(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


class _ShimReader:
    """Whether one module is exactly what ``policy-check graduate`` writes at an old path."""

    def __init__(self, home: str):
        self.home = home
        self.importlib: Set[str] = set()  # names bound to the importlib module
        self.warnings: Set[str] = set()  # names bound to the warnings module
        self.warn: Set[str] = set()  # names bound to warnings.warn

    def problem(self, source: Union[str, bytes]) -> Optional[str]:
        tree = parse(source)
        if tree is None:
            return "is not Python"
        body = tree.body
        if body and _docstring(body[0]):
            body = body[1:]
        for node in body:
            why = self._statement(node)
            if why is not None:
                return f"line {node.lineno}: {why}"
        return None

    def _statement(self, node: ast.stmt) -> Optional[str]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name
                if alias.name == "importlib":
                    self.importlib.add(bound)
                elif alias.name == "warnings":
                    self.warnings.add(bound)
                elif not _under(alias.name, self.home):  # the new home itself: a lazy module's shim
                    return f"imports {alias.name}"
            return None
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 0 and module == "__future__":
                return None
            if node.level == 0 and module == "warnings" and all(a.name == "warn" for a in node.names):
                self.warn |= {a.asname or a.name for a in node.names}
                return None
            if node.level or not _under(module, self.home):
                return f"imports from {'.' * node.level}{module}, not from the new home {self.home}"
            return None
        if _shim_binding(node) is not None:
            return None if _shim_binding(node) == self.home else "names another home"
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            value = node.value
            if isinstance(value, (ast.List, ast.Tuple)) and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
                return None
            return "binds __all__ to something other than a list of strings"
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and self._deprecation(node.value):
            return None
        if isinstance(node, ast.FunctionDef) and self._forwarder(node):
            return None
        return f"holds code other than a re-export ({type(node).__name__})"

    def _deprecation(self, call: ast.Call) -> bool:
        """``warnings.warn("...", DeprecationWarning, stacklevel=N)``."""
        func = dotted_name(call.func)
        if func is None or not (func in self.warn or (
                func.count(".") == 1 and func.partition(".")[0] in self.warnings and func.endswith(".warn"))):
            return False
        keywords = {k.arg: k.value for k in call.keywords}
        if None in keywords or set(keywords) - {"category", "stacklevel"} or not 1 <= len(call.args) <= 2:
            return False
        message = call.args[0]
        category = call.args[1] if len(call.args) == 2 else keywords.get("category")
        stacklevel = keywords.get("stacklevel")
        return (isinstance(message, ast.Constant) and isinstance(message.value, str)
                and category is not None and dotted_name(category) == "DeprecationWarning"
                and (stacklevel is None or (isinstance(stacklevel, ast.Constant) and type(stacklevel.value) is int)))

    def _forwarder(self, node: ast.FunctionDef) -> bool:
        """``def __getattr__(name): return getattr(importlib.import_module("<home...>"), name)``."""
        args = node.args
        if node.name != "__getattr__" or node.decorator_list or node.returns is not None or len(args.args) != 1 \
                or args.posonlyargs or args.kwonlyargs or args.vararg or args.kwarg or args.defaults:
            return False
        body = node.body[1:] if node.body and _docstring(node.body[0]) else node.body
        if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
            return False
        outer = body[0].value
        name = args.args[0].arg
        if dotted_name(outer.func) != "getattr" or outer.keywords or len(outer.args) != 2 \
                or dotted_name(outer.args[1]) != name or not isinstance(outer.args[0], ast.Call):
            return False
        inner = outer.args[0]
        func = dotted_name(inner.func)
        if func is None or func.count(".") != 1 or func.partition(".")[0] not in self.importlib \
                or not func.endswith(".import_module") or inner.keywords or len(inner.args) != 1:
            return False
        target = inner.args[0]
        return isinstance(target, ast.Constant) and isinstance(target.value, str) \
            and _is_dotted_module(target.value) and _under(target.value, self.home)


def _docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def shim_problem(sources: Mapping[str, Union[str, bytes, None]], outside: Optional[str] = None) -> Optional[str]:
    """Why a feature directory is not a pure re-export shim, or None when it is.

    ``sources`` maps each file's path relative to the directory to its text. Paths look
    like ``__init__.py``, ``kernel.py``, ``sub/x.py``. Anything under a ``__pycache__``
    directory is ignored. A text of None means the file could not be read.

    Pure means two things. First, an ``__init__.py`` binds ``__graduated_to__`` to the
    new home. Whether that is a dotted module name outside the experimental package is
    the caller's check. Second, every file is a Python module that holds only the
    statements below, after an optional docstring. That is what ``policy-check graduate``
    writes, comments and layout aside. No other file is allowed.

    The statements are these. ``import importlib`` and ``import warnings`` (any alias).
    ``import <home...>`` (any alias). ``from __future__ import ...``. Absolute
    ``from <home...> import *`` or ``import names`` re-exports.
    ``__graduated_to__ = "<home>"``. ``__all__ = [<strings>]``.
    ``warnings.warn("<text>", DeprecationWarning[, stacklevel=N])``. The forwarder
    ``def __getattr__(name): return getattr(importlib.import_module("<home...>"), name)``.

    With ``outside`` (the experimental package), the new home must not lie under it.
    """
    files = {path: text for path, text in sources.items() if "__pycache__" not in path.split("/")}
    init = files.get("__init__.py")
    if init is None:
        return "it has no readable __init__.py" if "__init__.py" in files else "it has no __init__.py"
    home = shim_home(init)
    if home is None or not _is_dotted_module(home):
        return f"its __init__.py binds no {SHIM_MARKER} to a module name"
    if outside and _under(home, outside):
        return f"its {SHIM_MARKER} names {home}, inside {outside}"
    for path in sorted(files):
        text = files[path]
        if not path.endswith(".py"):
            return f"it holds {path}, which is not a re-export module"
        if text is None:
            return f"{path} could not be read as a file"
        why = _ShimReader(home).problem(text)
        if why is not None:
            return f"{path} {why}"
    return None


def is_pure_shim(sources: Mapping[str, Union[str, bytes, None]], outside: Optional[str] = None) -> bool:
    """True only when a directory is a pure re-export shim (`shim_problem`). ``sources``
    are its files: path relative to the directory -> text."""
    try:
        return shim_problem(sources, outside) is None
    except (RecursionError, MemoryError):  # pragma: no cover - defensive: untrusted text
        return False


# --- loading by name or path (``policy-check remove``) ------------------------------------

# Calls that load a module or a file by the name or path they are given, beyond
# IMPORT_FUNCTIONS (importlib's finders and loaders, runpy); ``sys.path`` is where a
# directory becomes importable. A kept file handing them what a removal deletes refuses it.
LOADING_FUNCTIONS = IMPORT_FUNCTIONS + ("find_spec", "spec_from_file_location", "SourceFileLoader",
                                        "run_module", "run_path")
SEARCH_PATH = "sys.path"
