"""Per-file facts: what one Python file imports, defines and binds, and where.

Rules never look at syntax trees; they read these facts. A file's facts depend only
on its bytes and its module name, so they are cached by content hash (see
`cache.py`) and computed in worker processes.

Facts come from the standard library's `ast` (CPython's C parser): parsing the
whole FlashInfer tree with libcst takes minutes, `ast` takes seconds. Positions are
what every report format carries (docs/policy_check.rst, "Running it"): 1-based
line, 1-based column in characters of the statement's first character (``ast``
gives UTF-8 byte offsets), so that a finding points where an editor puts the cursor.

Every fact is a named, immutable tuple (`typing.NamedTuple`): the cheapest typed
record to build in the extractor's hot loop and to write to the JSON cache (a
tuple encodes as a JSON array with no conversion). The facts that come in several
forms, a value expression (`Ref`) and a module-level binding (`Binding`), carry
their form as the first field, ``tag``: it is what `from_data` dispatches on when
it reads the cache back, and it keeps each fact equal to the plain tagged tuple it
stands for.

A *reference* (`Ref`) is how a value expression is recorded: a dotted name as
written (``"eb"``, ``"fu.experimental_backend"``), a call, a string, an inline dict.
Cross-module resolution (re-exports) is the project model's job (`project.py`).
"""

from __future__ import annotations

import ast
import bisect
import io
import re
import symtable
import tokenize
from dataclasses import dataclass, field
from typing import NamedTuple, Optional, Union

from . import markers
from .markers import dotted_name

# Bump when the shape or meaning of facts changes: it invalidates every cache entry.
FACTS_VERSION = "9"

# calls that import the module their first argument names (``pytest.importorskip``
# too: stable tests use it, EXP008); the track's vocabulary lives in `markers`
IMPORT_FUNCTIONS = markers.IMPORT_FUNCTIONS

# import scopes; "module level" is defined in docs/policy_check.rst ("Rules")
MODULE = "module"  # runs at import time
FUNCTION = "function"  # inside a function or lambda body
TYPE_CHECKING = "type-checking"  # inside `if TYPE_CHECKING:` at module level
MODULE_SCOPE = "<module>"  # `FileFacts.scope_at` of a line outside every def and class


class Import(NamedTuple):
    """One imported module: a statement may yield several (``import a, b``).

    `module` is absolute (relative forms resolved with the file's own module name),
    or None when a relative import climbs above the top-level package.
    `names` holds ``(name, bound_as)`` pairs of a ``from`` import (``("*", "*")`` for a
    star), empty for ``import a.b`` and for dynamic imports. Whether a name is a
    submodule is decided by the project model, which knows the files.
    """

    module: Optional[str]
    names: tuple
    line: int
    column: int
    scope: str
    functions: tuple  # qualnames of the enclosing defs, outermost first
    dynamic: bool = False  # importlib.import_module / __import__ with literal args


class Definition(NamedTuple):
    qualname: str
    kind: str  # "function" or "class"
    line: int  # of the ``def`` / ``class`` keyword (decorators are above it)
    column: int
    decorators: tuple  # resolved dotted names of the decorators (calls unwrapped)
    end_line: int = 0  # last line of the body: lines line..end_line are inside it


# References: a value expression in a checks mapping or a dict -------------------


class NameRef(NamedTuple):
    """A name or attribute path: ``checker``, ``support.checker``."""

    tag: str  # "name"
    dotted: str


class CallRef(NamedTuple):
    """A call: ``experimental_backend(check)``; `func` is "" when not a dotted name."""

    tag: str  # "call"
    func: str
    args: tuple  # Refs


class StrRef(NamedTuple):
    """A string literal (the values of a lazy-export table)."""

    tag: str  # "str"
    text: str


class DictRef(NamedTuple):
    """An inline dict literal or ``dict(...)`` call."""

    tag: str  # "dict"
    entries: tuple  # Entry values


class OtherRef(NamedTuple):
    """Any other expression: nothing to follow."""

    tag: str  # "other"


Ref = Union[NameRef, CallRef, StrRef, DictRef, OtherRef]
OTHER = OtherRef("other")


class Entry(NamedTuple):
    """One item of a dict: ``key: value``, or ``**value`` (key None)."""

    key: Optional[str]
    value: Ref


class DictValue(NamedTuple):
    """A module-level dict literal (or ``dict(...)`` call), plus later ``D[k] = v``."""

    entries: tuple  # Entry values
    line: int


class BackendCall(NamedTuple):
    """A ``backend_requirement(...)`` call (decorator or plain call)."""

    checks: Optional[Ref]  # the backend_checks argument
    line: int
    column: int


class Suppression(NamedTuple):
    line: int
    column: int
    ids: tuple  # rule ids named in the brackets
    reason: str
    text: str  # the comment as written
    problem: Optional[str]  # why it is malformed, None when well formed


# Bindings: what a module-level name is bound to -----------------------------------


class ModuleBinding(NamedTuple):
    """``import a.b as c`` (`module` "a.b") or ``import a.b`` (the name ``a``, module "a")."""

    tag: str  # "module"
    module: str


class FromBinding(NamedTuple):
    """``from <module> import <name> [as ...]``; `module` is absolute."""

    tag: str  # "from"
    module: str
    name: str


class DefBinding(NamedTuple):
    """A ``def`` or ``class`` statement at module level."""

    tag: str  # "def"
    qualname: str


class AliasBinding(NamedTuple):
    """``x = y.z``: another name for a dotted name."""

    tag: str  # "alias"
    dotted: str


class DictBinding(NamedTuple):
    """A dict literal or ``dict(...)`` call (EXP004's checks mappings, lazy-export tables)."""

    tag: str  # "dict"
    value: DictValue


class NamesBinding(NamedTuple):
    """A list or tuple of string literals (``__all__``, read by EXP006)."""

    tag: str  # "names"
    names: tuple


Binding = Union[ModuleBinding, FromBinding, DefBinding, AliasBinding, DictBinding, NamesBinding]


class SyntaxProblem(NamedTuple):
    """Why a file could not be read or parsed (EXP000), and where."""

    line: int
    column: int
    message: str


@dataclass
class FileFacts:
    module: str
    is_package: bool
    imports: list = field(default_factory=list)
    definitions: dict = field(default_factory=dict)  # qualname -> Definition
    bindings: dict = field(default_factory=dict)  # top-level name -> Binding
    backend_calls: list = field(default_factory=list)
    syntax_error: Optional[SyntaxProblem] = None
    suppressions: list = field(default_factory=list)
    complete: bool = True  # False: only syntax_error and suppressions were computed
    # definitions a later one of the same qualname replaced in `definitions` (a
    # ``def`` in each branch of an ``if``): still places a line can be inside
    shadowed: list = field(default_factory=list)

    def scope_at(self, line: int) -> str:
        """The qualname of the innermost ``def`` or ``class`` whose lines hold
        `line`, else ``"<module>"`` (complete facts only)."""
        best = None
        for d in (*self.definitions.values(), *self.shadowed):
            if d.line <= line <= d.end_line and (best is None or (d.line, len(d.qualname)) > (best.line, len(best.qualname))):
                best = d
        return best.qualname if best is not None else MODULE_SCOPE

    def resolve_local(self, dotted: str, _depth: int = 0) -> str:
        """Rewrite the first component of `dotted` through this module's top-level bindings."""
        first, dot, rest = dotted.partition(".")
        binding = self.bindings.get(first)
        if binding is None or _depth > 20:  # unbound, or a cycle of aliases
            return dotted
        if isinstance(binding, ModuleBinding):
            base = binding.module
        elif isinstance(binding, FromBinding):
            base = f"{binding.module}.{binding.name}" if binding.module else binding.name
        elif isinstance(binding, DefBinding):
            base = f"{self.module}.{binding.qualname}"
        elif isinstance(binding, AliasBinding) and binding.dotted.partition(".")[0] != first:
            return self.resolve_local(binding.dotted + dot + rest, _depth + 1)
        else:
            return dotted
        return base + dot + rest


def package_of(module: str, is_package: bool) -> str:
    """The package that relative imports in `module` are relative to."""
    return module if is_package else module.rpartition(".")[0]


def resolve_relative(package: str, level: int, name: Optional[str]) -> Optional[str]:
    """Absolute module for ``from <level dots><name> import ...`` inside `package`."""
    if level == 0:
        return name
    parts = package.split(".") if package else []
    if level - 1 >= len(parts):
        return None  # beyond the top-level package: ImportError at run time
    base = parts[: len(parts) - (level - 1)]
    if name:
        base.append(name)
    return ".".join(base) or None


def _literal_str(node: Optional[ast.AST]) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _string_sequence(node: ast.AST) -> Optional[tuple]:
    """The strings of a list or tuple literal holding only strings, else None."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    items = tuple(_literal_str(e) for e in node.elts)
    return None if None in items else items


def _module_literal(node: Optional[ast.AST]) -> Optional[str]:
    """The module a dynamic import's name argument certainly imports: a literal, or
    the dotted prefix an f-string starts with (``f"a.b.{x}"`` imports ``a.b``)."""
    text = _literal_str(node)
    if text is not None or not isinstance(node, ast.JoinedStr) or not node.values:
        return text
    prefix = _literal_str(node.values[0])
    package = prefix.rpartition(".")[0] if prefix else ""
    return package if package.strip(".") else None


class _Columns:
    """Converts ast's column offsets (UTF-8 bytes of the decoded line) to 1-based
    character columns. Lines end as Python's tokenizer ends them (``\\n``,
    ``\\r\\n`` or a lone ``\\r``); a file in another declared encoding (PEP 263) is
    decoded with it."""

    def __init__(self, source: bytes):
        self.source = source
        self.lines = source.splitlines()  # bytes: only \n, \r\n and \r end a line
        self.encoding = None  # found on first need

    def column(self, line: int, col_offset: int) -> int:
        raw = self.lines[line - 1] if 0 < line <= len(self.lines) else b""
        if raw[:col_offset].isascii():
            return col_offset + 1
        if self.encoding is None:
            try:
                self.encoding = tokenize.detect_encoding(io.BytesIO(self.source).readline)[0]
            except SyntaxError:
                self.encoding = "utf-8"
        if line == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        text = raw.decode(self.encoding, "replace").encode("utf-8")
        return len(text[:col_offset].decode("utf-8", "replace")) + 1


class _Extractor(ast.NodeVisitor):
    """One pass over a module's tree, tracking scope, collecting facts."""

    def __init__(self, facts: FileFacts, columns: _Columns, aliases: frozenset, token_lines: list):
        self.facts = facts
        self.columns = columns
        self.aliases = aliases  # absolute names other modules bind to backend_requirement
        # local names that may be backend_requirement
        self.call_names = frozenset({markers.BACKEND_REQUIREMENT} | {a.rpartition(".")[2] for a in aliases})
        # Expressions matter only for calls (dynamic imports, backend_requirement);
        # one spanning no line that names such a call is skipped, which keeps the
        # walk over big files cheap. An alias of backend_requirement (``br``) makes
        # every later expression worth visiting.
        self.token_lines = token_lines
        self.every_expression = False
        self.package = package_of(facts.module, facts.is_package)
        self.scope = MODULE
        self.functions: list = []  # enclosing def qualnames
        self.qualname: list = []  # enclosing def/class names
        self.raw_decorators: dict = {}  # qualname -> [raw dotted]
        self.pending_calls: list = []  # (raw func dotted, node)
        self.import_functions = {f: f for f in IMPORT_FUNCTIONS}  # local name -> which
        self.postponed_annotations = False  # `from __future__ import annotations`
        self.statement: Optional[ast.stmt] = None  # the innermost statement being visited
        self.tree: Optional[ast.AST] = None
        self.file_names = None  # `markers` reading of the file's names, built on first need

    def visit(self, node: ast.AST):
        if isinstance(node, ast.expr):
            if not self.every_expression:
                at = bisect.bisect_left(self.token_lines, node.lineno)
                if at == len(self.token_lines) or self.token_lines[at] > (node.end_lineno or node.lineno):
                    return None
        elif isinstance(node, ast.stmt):
            saved, self.statement = self.statement, node
            super().visit(node)
            self.statement = saved
            return None
        return super().visit(node)

    # positions -------------------------------------------------------------
    def _pos(self, node: ast.AST) -> tuple:
        return node.lineno, self.columns.column(node.lineno, node.col_offset)

    def _add_import(self, module, names, node, dynamic=False):
        line, column = self._pos(node)
        self.facts.imports.append(
            Import(module, tuple(names), line, column, self.scope, tuple(self.functions), dynamic)
        )

    def _bind(self, name: str, binding: Binding) -> None:
        if self.scope != FUNCTION and not self.qualname:
            self.facts.bindings[name] = binding

    # imports ---------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add_import(alias.name, (), node)
            if alias.asname:
                self._bind(alias.asname, ModuleBinding("module", alias.name))
            else:
                top = alias.name.partition(".")[0]
                self._bind(top, ModuleBinding("module", top))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = resolve_relative(self.package, node.level, node.module)
        names = [(a.name, a.asname or a.name) for a in node.names]
        self._add_import(module, names, node)
        if module == "__future__" and ("annotations", "annotations") in names:
            self.postponed_annotations = True
        for name, bound in names:
            if module in ("importlib", "builtins", "pytest") and name in IMPORT_FUNCTIONS:
                self._alias_import_function(bound, name)
            if name in self.call_names and bound != name:
                self.call_names = self.call_names | {bound}  # `import ... as br`
                self.every_expression = True
            if module is not None and name != "*":
                self._bind(bound, FromBinding("from", module, name))

    def visit_Call(self, node: ast.Call) -> None:
        func = dotted_name(node.func)
        if func is not None:
            self._dynamic_import(func, node)
            if func.rpartition(".")[2] in self.call_names or func in self.call_names:
                self.pending_calls.append((func, node))
        self.generic_visit(node)

    def _alias_import_function(self, name: str, which: str) -> None:
        """`name` now means one of the `IMPORT_FUNCTIONS` here."""
        if name != which:
            self.import_functions[name] = which
            self.every_expression = True  # calls of `name` lie on no token line

    def _dynamic_import(self, func: str, node: ast.Call) -> None:
        short = self.import_functions.get(func) or func.rpartition(".")[2]
        if short not in IMPORT_FUNCTIONS:
            return
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        name = _module_literal(keywords.get("name", node.args[0] if node.args else None))
        if name is None:
            return
        if short == markers.IMPORT_FUNCTIONS[0]:  # import_module: its package argument
            package = keywords.get("package", node.args[1] if len(node.args) > 1 else None)
            level = len(name) - len(name.lstrip("."))
            if level:
                base = _literal_str(package)
                anchor = dotted_name(package) if package is not None else None
                if base is None and anchor in ("__package__", "__spec__.parent"):
                    base = self.package
                elif base is None and anchor == "__name__":
                    base = self.facts.module  # import_module anchors at the named package
                if base is None:
                    return
                module = resolve_relative(base, level, name[level:] or None)
            else:
                module = name
        elif short in markers.TEST_SKIP_FUNCTIONS:  # pytest's: absolute names only
            module = name
        else:
            level_node = keywords.get("level", node.args[4] if len(node.args) > 4 else None)
            level = level_node.value if isinstance(level_node, ast.Constant) else 0
            if not isinstance(level, int):
                return
            module = resolve_relative(self.package, level, name or None) if level else name
        # reported at the statement's first character, as every finding on Python code is
        self._add_import(module, (), self.statement or node, dynamic=True)

    # scopes ----------------------------------------------------------------
    def _visit_def(self, node, kind: str) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        qualname = ".".join(self.qualname + [node.name])
        line, column = self._pos(node)
        self.raw_decorators[qualname] = [self._decorator(d) for d in node.decorator_list]
        replaced = self.facts.definitions.get(qualname)
        if replaced is not None:
            self.facts.shadowed.append(replaced)
        self.facts.definitions[qualname] = Definition(qualname, kind, line, column, (), node.end_lineno or line)
        self._bind(node.name, DefBinding("def", qualname))
        if kind == "function":
            args = node.args
            for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
                self.visit(default)
            if not self.postponed_annotations:  # evaluated when the def runs
                every = args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]
                for annotation in [a.annotation for a in every if a is not None] + [node.returns]:
                    if annotation is not None:
                        self.visit(annotation)
            saved = self.scope
            self.scope = FUNCTION
            self.functions.append(qualname)
            self.qualname.append(node.name)
            for stmt in node.body:
                self.visit(stmt)
            self.qualname.pop()
            self.functions.pop()
            self.scope = saved
        else:
            for base in node.bases + [k.value for k in node.keywords]:
                self.visit(base)
            self.qualname.append(node.name)
            for stmt in node.body:
                self.visit(stmt)
            self.qualname.pop()

    def _decorator(self, node: ast.expr) -> str:
        """The dotted name a decorator applies, however it is spelt (`markers.decorator_target`:
        parentheses, calls, ``getattr``); for any other expression, the marker it stands for in
        this file (``@[fx][0]``), else ""."""
        target = markers.decorator_target(node)
        if target is not None:
            return target
        if self.file_names is None:
            self.file_names = markers.file_names(self.tree)
        kinds = self.file_names.of_decorator(node)
        return next((name for name, kind in markers.KINDS.items() if kind in kinds), "")

    def visit_FunctionDef(self, node) -> None:
        self._visit_def(node, "function")

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node) -> None:
        self._visit_def(node, "class")

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)
        saved, self.scope = self.scope, FUNCTION
        self.functions.append(".".join(self.qualname + ["<lambda>"]))
        self.visit(node.body)
        self.functions.pop()
        self.scope = saved

    def visit_If(self, node: ast.If) -> None:
        negated = isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
        test = dotted_name(node.test.operand if negated else node.test)
        if self.scope == MODULE and test and test.rpartition(".")[2] == "TYPE_CHECKING":
            # `if TYPE_CHECKING:` runs only under a type checker; `if not TYPE_CHECKING:`'s else does
            checking, running = (node.orelse, node.body) if negated else (node.body, node.orelse)
            self.scope = TYPE_CHECKING
            for stmt in checking:
                self.visit(stmt)
            self.scope = MODULE
            for stmt in running:
                self.visit(stmt)
        else:
            self.generic_visit(node)

    # module-level values ---------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        if self.scope == FUNCTION or self.qualname:
            return
        for target in node.targets:
            if isinstance(target, ast.Name):
                self._bind_value(target.id, node.value, node)
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                self._add_dict_item(target.value.id, target.slice, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        if self.scope != FUNCTION and not self.postponed_annotations:
            self.visit(node.annotation)  # evaluated at module and class level only
        if node.value is not None and isinstance(node.target, ast.Name):
            if self.scope != FUNCTION and not self.qualname:
                self._bind_value(node.target.id, node.value, node)

    def _bind_value(self, name: str, value: ast.AST, node: ast.AST) -> None:
        dotted = dotted_name(value)
        if dotted is not None:
            self._bind(name, AliasBinding("alias", dotted))
            which = self.import_functions.get(dotted) or dotted.rpartition(".")[2]
            if which in IMPORT_FUNCTIONS:
                self._alias_import_function(name, which)
            if dotted.rpartition(".")[2] in self.call_names:
                self.call_names = self.call_names | {name}  # `br = backend_requirement`
                self.every_expression = True
            return
        entries = self._dict_entries(value)
        names = _string_sequence(value)
        if entries is not None:
            self._bind(name, DictBinding("dict", DictValue(tuple(entries), node.lineno)))
        elif names is not None:
            self._bind(name, NamesBinding("names", names))  # `__all__ = [...]` (EXP006 reads it)
        else:
            self.facts.bindings.pop(name, None)  # rebound to something we do not follow

    def _add_dict_item(self, name: str, key: ast.AST, value: ast.AST) -> None:
        binding = self.facts.bindings.get(name)
        if isinstance(binding, DictBinding):
            old = binding.value
            entry = Entry(_literal_str(key), self._ref(value))
            self.facts.bindings[name] = DictBinding("dict", DictValue(old.entries + (entry,), old.line))

    def _dict_entries(self, value: ast.AST) -> Optional[list]:
        if isinstance(value, ast.Dict):
            return [
                Entry(_literal_str(k) if k is not None else None, self._ref(v))
                for k, v in zip(value.keys, value.values)
            ]
        if isinstance(value, ast.Call) and dotted_name(value.func) == "dict" and not value.args:
            return [Entry(k.arg, self._ref(k.value)) for k in value.keywords]
        return None

    def _ref(self, node: ast.AST) -> Ref:
        dotted = dotted_name(node)
        if dotted is not None:
            return NameRef("name", dotted)
        entries = self._dict_entries(node)
        if entries is not None:
            return DictRef("dict", tuple(entries))
        if isinstance(node, ast.Call):
            func = dotted_name(node.func)
            inner = self._ref(node.func) if func is None else None
            args = tuple(self._ref(a) for a in node.args)
            if isinstance(inner, CallRef):
                return CallRef("call", inner.func, inner.args + args)  # f(x)(checker): keep both
            return CallRef("call", func or "", args)
        text = _literal_str(node)
        if text is not None:
            return StrRef("str", text)
        return OTHER

    # post-pass: resolve what needed the complete top-level bindings --------
    def finish(self) -> None:
        facts = self.facts
        for qualname, raw in self.raw_decorators.items():
            d = facts.definitions[qualname]
            facts.definitions[qualname] = d._replace(
                decorators=tuple(facts.resolve_local(r) if r else "" for r in raw)
            )
        for func, node in self.pending_calls:
            resolved = facts.resolve_local(func)
            if not markers.is_marker(resolved, markers.BACKEND_REQUIREMENT) and resolved not in self.aliases:
                continue
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            checks = keywords.get("backend_checks", node.args[0] if node.args else None)
            line, column = self._pos(node)
            facts.backend_calls.append(
                BackendCall(self._ref(checks) if checks is not None else None, line, column)
            )


def extract(source: bytes, module: str, is_package: bool, aliases=frozenset(), tree=None) -> FileFacts:
    """Facts of one file. A file that does not parse gets only `syntax_error` set.

    `aliases` are absolute names other modules bind to ``backend_requirement``
    (``flashinfer.dispatch.requires``); calls through them count as its calls.
    `tree`: the ``ast`` of `source` where the caller has parsed it already (it is
    only read), so that no file is parsed twice.
    """
    facts = FileFacts(module, is_package)
    tree = _parse(source, facts) if tree is None else tree
    if tree is not None:
        extractor = _Extractor(facts, _Columns(source), frozenset(aliases), [])
        extractor.token_lines = _token_lines(source, extractor.call_names)
        extractor.tree = tree
        try:
            extractor.visit(tree)
            extractor.finish()
        except RecursionError:
            facts.syntax_error = SyntaxProblem(1, 1, "too deeply nested to analyse")
    if may_hold_suppressions(source):
        facts.suppressions = python_suppressions(source)
    return facts


CALL_TOKENS = tuple(f.encode() for f in IMPORT_FUNCTIONS)


def _token_lines(source: bytes, names) -> list:
    """Sorted numbers of the lines naming a call the facts record."""
    lines = set()
    for token in CALL_TOKENS + tuple(n.encode() for n in names):
        at = source.find(token)
        while at >= 0:
            lines.add(source.count(b"\n", 0, at) + 1)
            at = source.find(token, at + len(token))
    return sorted(lines)


def _parse(source: bytes, facts: FileFacts) -> Optional[ast.AST]:
    try:
        return ast.parse(source)
    except SyntaxError as error:
        facts.syntax_error = _error_position(error)
    except (ValueError, UnicodeDecodeError, RecursionError, MemoryError) as error:
        facts.syntax_error = SyntaxProblem(1, 1, f"{type(error).__name__}: {error}")
    return None


def syntax_error(source: bytes) -> Optional[SyntaxProblem]:
    """Where and why `source` is not valid Python, or None.

    Cheaper than `extract`: the C parser and symbol table run, no Python-level AST
    objects are built. Used for files no rule needs facts of (EXP000 only).
    """
    try:
        symtable.symtable(source, "<checked>", "exec")
    except SyntaxError as error:
        return _error_position(error)
    except (ValueError, UnicodeDecodeError, RecursionError, MemoryError) as error:
        return SyntaxProblem(1, 1, f"{type(error).__name__}: {error}")
    return None


def _error_position(error: SyntaxError) -> SyntaxProblem:
    return SyntaxProblem(error.lineno or 1, max(error.offset or 1, 1), f"{type(error).__name__}: {error.msg}")


# suppressions -------------------------------------------------------------------

_SUPPRESSION = re.compile(r"policy\s*:\s*ignore\b(?P<rest>.*)$")
_BRACKETS = re.compile(r"\s*\[(?P<ids>[^\]]*)\]\s*(?P<reason>.*)$")
_RULE_ID = re.compile(r"^[A-Z]{3}\d{3}$")


def parse_suppression(comment: str, line: int, column: int) -> Optional[Suppression]:
    """A `Suppression` if `comment` holds ``policy: ignore...``, else None."""
    match = _SUPPRESSION.search(comment)
    if match is None:
        return None
    text = comment[match.start():].strip()
    brackets = _BRACKETS.match(match.group("rest"))
    if brackets is None:
        return Suppression(line, column, (), "", text, "names no rule id: write `policy: ignore[EXP00N] reason`")
    ids = tuple(i.strip() for i in brackets.group("ids").split(",") if i.strip())
    reason = brackets.group("reason").strip()
    problem = None
    bad = [i for i in ids if not _RULE_ID.match(i)]
    if not ids:
        problem = "names no rule id: write `policy: ignore[EXP00N] reason`"
    elif bad:
        problem = f"names an invalid rule id {bad[0]!r}"
    elif not reason:
        problem = "gives no reason: write the reason after the brackets"
    return Suppression(line, column, ids, reason, text, problem)


# A suppression is a comment holding ``policy``, ``:`` and ``ignore`` with only
# whitespace between them (`_SUPPRESSION`). In the bytes of a source file, in any
# encoding Python reads source in, that comment's line holds those three ASCII
# words in that order with no line break between them. A file without such a line
# is not tokenized: tokenizing runs in Python and is slow, and FlashInfer has many
# files that say "policy:" in another sense (a third of a cold run went there).
_MAY_SUPPRESS = re.compile(rb"policy[^\r\n]*?:[^\r\n]*?ignore")


def may_hold_suppressions(source: bytes) -> bool:
    """Could `source` hold a suppression comment? (False means it certainly does not.)"""
    return b"policy:" in source and _MAY_SUPPRESS.search(source) is not None


def python_suppressions(source: bytes) -> list:
    """Suppressions in the comments of a Python file (strings do not count)."""
    found = []
    try:
        for token in tokenize.tokenize(io.BytesIO(source).readline):
            if token.type == tokenize.COMMENT:
                s = parse_suppression(token.string, token.start[0], token.start[1] + 1)
                if s is not None:
                    found.append(s)
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, ValueError):
        return text_suppressions(source.decode("utf-8", "replace"), ("#",))
    return found


def text_suppressions(text: str, markers: tuple) -> list:
    """Suppressions in a non-Python file: a comment marker then ``policy: ignore``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if "policy" not in line:
            continue
        for marker in markers:
            at = line.find(marker)
            if at >= 0:
                s = parse_suppression(line[at + len(marker):], number, at + 1)
                if s is not None:
                    found.append(s._replace(text=line[at:].strip()))
                    break
    return found



def syntax_only(source: bytes, module: str, is_package: bool) -> FileFacts:
    """Facts of a file no rule inspects: its syntax error (EXP000) and suppressions."""
    facts = FileFacts(module, is_package, complete=False)
    facts.syntax_error = syntax_error(source)
    if may_hold_suppressions(source):
        facts.suppressions = python_suppressions(source)
    return facts


# plain data (for the cache) -------------------------------------------------------
# The cache is JSON, not pickle: whoever writes a cache file decides what the
# checker believes, and loading JSON runs no code (docs/policy_check.rst, "Where the
# cache lives"). Facts are tuples, so they are written as JSON arrays as they are;
# reading them back rebuilds each named tuple, dispatching on the tag of a `Ref` or
# a `Binding`. A malformed entry raises TypeError, ValueError, KeyError or
# IndexError (the cache then recomputes it).


def to_data(facts: FileFacts) -> list:
    """`facts` as JSON-ready data (tuples encode as arrays)."""
    return [
        facts.module, facts.is_package, facts.complete, facts.syntax_error, facts.imports,
        list(facts.definitions.values()), facts.bindings, facts.backend_calls, facts.suppressions,
        facts.shadowed,
    ]


def _ref(data) -> Ref:
    tag = data[0]
    if tag == "name":
        return NameRef(tag, data[1])
    if tag == "call":
        return CallRef(tag, data[1], tuple(_ref(a) for a in data[2]))
    if tag == "str":
        return StrRef(tag, data[1])
    if tag == "dict":
        return DictRef(tag, _entries(data[1]))
    if tag == "other":
        return OTHER
    raise KeyError(tag)


def _entries(data) -> tuple:
    return tuple(Entry(key, _ref(value)) for key, value in data)


def _binding(data) -> Binding:
    tag = data[0]
    if tag == "from":
        return FromBinding(tag, data[1], data[2])
    if tag == "module":
        return ModuleBinding(tag, data[1])
    if tag == "def":
        return DefBinding(tag, data[1])
    if tag == "alias":
        return AliasBinding(tag, data[1])
    if tag == "dict":
        return DictBinding(tag, DictValue(_entries(data[1][0]), data[1][1]))
    if tag == "names":
        return NamesBinding(tag, tuple(data[1]))
    raise KeyError(tag)


def from_data(data: list) -> FileFacts:
    module, is_package, complete, error, imports, definitions, bindings, calls, suppressions, shadowed = data
    facts = FileFacts(module, is_package, complete=complete)
    if error is not None:
        facts.syntax_error = SyntaxProblem(*error)
    if imports:
        facts.imports = [
            Import(m, tuple(map(tuple, names)), line, column, scope, tuple(functions), dynamic)
            for m, names, line, column, scope, functions, dynamic in imports
        ]
    if definitions:
        facts.definitions = {
            qualname: Definition(qualname, kind, line, column, tuple(decorators), end_line)
            for qualname, kind, line, column, decorators, end_line in definitions
        }
    if shadowed:
        facts.shadowed = [
            Definition(qualname, kind, line, column, tuple(decorators), end_line)
            for qualname, kind, line, column, decorators, end_line in shadowed
        ]
    if bindings:
        facts.bindings = {name: _binding(b) for name, b in bindings.items()}
    if calls:
        facts.backend_calls = [
            BackendCall(None if checks is None else _ref(checks), line, column) for checks, line, column in calls
        ]
    if suppressions:
        facts.suppressions = [
            Suppression(line, column, tuple(ids), reason, text, problem)
            for line, column, ids, reason, text, problem in suppressions
        ]
    return facts


def docstring_ids(nodes) -> set:
    """Ids of the docstring constants among `nodes` (a module's walked nodes): prose,
    which the lifecycle commands list for a person rather than read as code."""
    found = set()
    for node in nodes:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found
