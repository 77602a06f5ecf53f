"""What one downstream Python file does with FlashInfer's experimental surface, read with `ast`.

Nothing is imported or run. One pass over the tree records how the file names
FlashInfer. Examples are ``import flashinfer``, ``import flashinfer.gemm as g``,
``from flashinfer import x as y``, ``from flashinfer.norm import *`` and
``f = flashinfer.gated_rmsnorm``. The pass also records the string literals each
function and the module assign to a name. It records each parameter's string
default, and every call. Then each call is resolved to a dotted path and judged
against the `Surface`:

- CON001: the path is an experimental API.
- CON002: its ``backend=`` argument can be an experimental backend of that API.
  The argument may be a literal or a conditional of literals. It may be a name the
  enclosing function, or the module, assigns a literal. It may be a parameter with
  a literal default.
- CON003: the gate's variable is set to ``"1"``. Forms are ``X[GATE] = "1"``, where
  X is ``os.environ`` or a copy of it, and
  ``setdefault``/``putenv``/``setenv(GATE, "1")``. Others are ``GATE="1"`` as a
  keyword (``dict(...)``, ``update(...)``), and ``{GATE: "1"}``, an ``env=`` for a
  subprocess. ``"GATE=1 ..."`` in a command string counts too.

The file is never trusted. The caller bounds parsing with a size limit. The walk is
linear in the tree. A tree too deep for the parser is reported as unread.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

from ..model.markers import dotted_name
from ..model.visitor import QuickVisitor
from .settings_text import gate_assignments
from .surface import Surface

# Bump when what a file's findings are changes: remembered findings (`check`) are keyed by it.
READER_VERSION = "2"
ROOT_PACKAGE = "flashinfer"
_SETTERS = frozenset({"setdefault", "putenv", "setenv"})  # X.setdefault(GATE, "1"), os.putenv, monkeypatch.setenv


@dataclass
class Hit:
    """One finding before it has a path: rule, position, message, subject, and enclosing scope."""

    rule: str
    line: int
    column: int
    message: str
    subject: str
    scope: str


@dataclass
class _Scope:
    qualname: str
    literals: Dict[str, Set[str]] = field(default_factory=dict)  # name -> str literals assigned


class _Reader(QuickVisitor):
    def __init__(self, surface: Surface):
        self.surface = surface
        self.gate = surface.gate
        self.names: Dict[str, str] = {}  # local name -> dotted FlashInfer path
        self.scopes: List[_Scope] = [_Scope("<module>")]
        self.calls: List[Tuple[ast.Call, Tuple[_Scope, ...]]] = []
        self.hits: List[Hit] = []

    # -- names ----------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == ROOT_PACKAGE or alias.name.startswith(ROOT_PACKAGE + "."):
                if alias.asname:
                    self.names[alias.asname] = alias.name
                else:
                    self.names[ROOT_PACKAGE] = ROOT_PACKAGE

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or not (module == ROOT_PACKAGE or module.startswith(ROOT_PACKAGE + ".")):
            return
        for alias in node.names:
            if alias.name == "*":  # the surface says which experimental names a star brings
                prefix = module + "."
                for api in (*self.surface.apis, *self.surface.backends):
                    if api.startswith(prefix) and "." not in api[len(prefix):]:
                        self.names[api[len(prefix):]] = api
            else:
                self.names[alias.asname or alias.name] = f"{module}.{alias.name}"

    def resolve(self, node: ast.AST) -> Optional[str]:
        """The dotted FlashInfer path an expression names, or None."""
        if isinstance(node, ast.Call) and _is_getattr(node):
            base = self.resolve(node.args[0])
            attribute = node.args[1]
            if base is not None and isinstance(attribute, ast.Constant) and isinstance(attribute.value, str):
                return f"{base}.{attribute.value}"
            return None
        dotted = dotted_name(node)
        if dotted is None:
            return None
        first, dot, rest = dotted.partition(".")
        base = self.names.get(first)
        return None if base is None else base + dot + rest

    # -- scopes and literals ----------------------------------------------------------
    def _function(self, node) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        args = node.args
        for default in (*args.defaults, *[d for d in args.kw_defaults if d is not None]):
            self.visit(default)
        scope = _Scope(f"{self.scopes[-1].qualname}.{node.name}" if len(self.scopes) > 1 else node.name)
        positional = [*args.posonlyargs, *args.args]
        pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        for arg, default in pairs:
            values = _literals(default)
            if values:
                scope.literals.setdefault(arg.arg, set()).update(values)
        self.scopes.append(scope)
        for statement in node.body:
            self.visit(statement)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in (*node.decorator_list, *node.bases, *node.keywords):
            self.visit(expression)
        self.scopes.append(_Scope(f"{self.scopes[-1].qualname}.{node.name}" if len(self.scopes) > 1 else node.name))
        for statement in node.body:
            self.visit(statement)
        self.scopes.pop()

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._assigned(target, node.value, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._assigned(node.target, node.value, node)
        self.generic_visit(node)

    def _assigned(self, target: ast.AST, value: ast.AST, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            path = self.resolve(value)
            if path is not None:
                self.names[target.id] = path  # another name for a FlashInfer object
            values = _literals(value)
            if values:
                self.scopes[-1].literals.setdefault(target.id, set()).update(values)
        elif isinstance(target, ast.Subscript) and _is_text(target.slice, self.gate) and _is_on(value):
            self._gate(node, f"{dotted_name(target.value) or 'a mapping'}[{self.gate!r}] = '1'")

    # -- calls and the gate -------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        self.calls.append((node, tuple(self.scopes)))
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _SETTERS and len(node.args) >= 2:
            if _is_text(node.args[0], self.gate) and _is_on(node.args[1]):
                self._gate(node, f"{dotted_name(func) or func.attr}({self.gate!r}, '1')")
        for keyword in node.keywords:
            if keyword.arg == self.gate and _is_on(keyword.value):
                self._gate(node, f"{self.gate}='1' passed to {dotted_name(func) or 'a call'}")
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values):
            if key is not None and _is_text(key, self.gate) and _is_on(value):
                self._gate(key, f"{{{self.gate!r}: '1'}} (an environment for a process)")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and self.gate in node.value:
            if any(True for _ in gate_assignments(node.value, self.gate)):
                self._gate(node, f"'{self.gate}=1' in a command string")

    def _gate(self, node: ast.AST, what: str) -> None:
        self.hits.append(Hit(
            "CON003", node.lineno, node.col_offset + 1,
            f"enables experimental automatic backends for the whole process: {what}; a supported release "
            f"must not set {self.gate}=1 by default",
            f"{self.gate}:code", self.scopes[-1].qualname))

    # -- judging the calls, once every name and literal is known --------------------------
    def judge(self) -> List[Hit]:
        for node, scopes in self.calls:
            path = self.resolve(node.func)
            if path is None:
                continue
            scope = scopes[-1].qualname
            if path in self.surface.apis:
                self.hits.append(Hit(
                    "CON001", node.lineno, node.col_offset + 1,
                    f"calls the experimental API {path} (FlashInfer {self.surface.version}): no compatibility "
                    f"guarantee, it may change or be removed in any release", path, scope))
            experimental = self.surface.backends_of(path)
            if not experimental:
                continue
            for keyword in node.keywords:
                if keyword.arg != "backend":
                    continue
                for name in sorted(_values(keyword.value, scopes) & experimental):
                    how = "" if isinstance(keyword.value, ast.Constant) else f" (through {_spelt(keyword.value)})"
                    self.hits.append(Hit(
                        "CON002", keyword.value.lineno, keyword.value.col_offset + 1,
                        f"selects the experimental backend {name!r} of {path}{how} (FlashInfer "
                        f"{self.surface.version}): no compatibility guarantee", f"{path}:{name}", scope))
        return self.hits


def read(tree: ast.AST, surface: Surface) -> List[Hit]:
    """Every finding in the parsed file `tree`, in the order met."""
    reader = _Reader(surface)
    reader.visit(tree)
    return reader.judge()


# ``import flashinfer...`` or ``from flashinfer... import``: a literal anchor and blanks only,
# so the search is linear. (``import os, flashinfer`` and ``importlib.import_module`` are not
# seen: docs/consumer.rst, "Limits".)
_IMPORTS_FLASHINFER = re.compile(rb"\b(?:import|from)[ \t]+" + ROOT_PACKAGE.encode() + rb"\b")


def mentions(data: bytes, surface: Surface) -> bool:
    """Can the file say anything to the check?

    A file that imports no FlashInfer and does not spell the gate cannot. So most of
    a framework's files are skipped unparsed.
    """
    if surface.gate.encode() in data:
        return True
    return ROOT_PACKAGE.encode() in data and _IMPORTS_FLASHINFER.search(data) is not None


# -- small readers of expressions ---------------------------------------------------------


def _is_getattr(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2


def _is_text(node: ast.AST, text: str) -> bool:
    return isinstance(node, ast.Constant) and node.value == text


def _is_on(node: ast.AST) -> bool:
    """Is it the gate's one value that opens it?

    That is the string ``"1"``. ``1`` counts too, as a config loader would write it.
    """
    return isinstance(node, ast.Constant) and (node.value == "1" or (node.value == 1 and node.value is not True))


def _literals(node: ast.AST) -> Set[str]:
    """The string literals an expression can evaluate to.

    The expression may be a literal, or a conditional or ``or`` of literals.
    Anything else gives none.
    """
    if isinstance(node, ast.Constant):
        return {node.value} if isinstance(node.value, str) else set()
    if isinstance(node, ast.IfExp):
        return _literals(node.body) | _literals(node.orelse)
    if isinstance(node, ast.BoolOp):
        return set().union(*(_literals(v) for v in node.values))
    return set()


def _values(node: ast.AST, scopes: Iterable[_Scope]) -> Set[str]:
    """`_literals` of a ``backend=`` value.

    A name is looked up in the enclosing scopes, innermost first. That is a
    function's assignments and parameter defaults, then the module.
    """
    found = _literals(node)
    names = [node] if isinstance(node, ast.Name) else [
        n for n in (getattr(node, "body", None), getattr(node, "orelse", None), *getattr(node, "values", ()))
        if isinstance(n, ast.Name)]
    for name in names:
        for scope in reversed(tuple(scopes)):
            if name.id in scope.literals:
                found |= scope.literals[name.id]
                break
    return found


def _spelt(node: ast.AST) -> str:
    name = dotted_name(node)
    return f"`{name}`" if name else "an expression"
