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
import builtins
import io
import re
import _symtable  # the raw tables `symtable` wraps (`_module_level_names`)
import tokenize
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple, Optional, Union

from . import markers, parsed
from .markers import dotted_name
from .visitor import QuickVisitor

# Bump when the shape or meaning of facts changes: it invalidates every cache entry.
FACTS_VERSION = "17"

# calls that import the module their first argument names (``pytest.importorskip``
# too: stable tests use it, EXP008); the track's vocabulary lives in `markers`
IMPORT_FUNCTIONS = markers.IMPORT_FUNCTIONS
# every call the extractor reads as an import (`markers`): import functions, loaders of a
# literal name or path, builtins that run source text
# builtins that run source text: a literal holding an import is that import (the
# prefilter's `needs.RUNS_SOURCE` spells them too)
SOURCE_RUNNERS = ("exec", "eval", "compile")
LOADERS = IMPORT_FUNCTIONS + markers.NAME_LOADERS + markers.PATH_LOADERS + SOURCE_RUNNERS
LOADER_MODULES = markers.LOADER_HOMES + ("builtins", "pytest")  # `from X import loader`
_RUN_PATH, _SPEC_FROM_FILE = markers.PATH_LOADERS

# what runs at import and cannot be resolved (`Load`; EXP010, policy_checks/analysis/import_time.py)

# Calls whose effect outlives the statement or loads code by a route an import statement
# does not show, by their resolved dotted name, with the kind of load a finding names.
STARTS = "starts a thread or process"
HOOKS = "registers a hook that runs later"
LIBRARY = "loads a shared library"
ALWAYS_LOADS = "loads a module from a spec or by a lazy loader"
UNRESOLVED_CALLS = {
    **dict.fromkeys((
        "threading.Thread", "threading.Timer", "_thread.start_new_thread", "_thread.start_new",
        "concurrent.futures.ThreadPoolExecutor", "concurrent.futures.ProcessPoolExecutor",
        "concurrent.futures.thread.ThreadPoolExecutor", "concurrent.futures.process.ProcessPoolExecutor",
        "multiprocessing.Process", "multiprocessing.Pool", "multiprocessing.get_context",
        "subprocess.Popen", "subprocess.run", "subprocess.call", "subprocess.check_call",
        "subprocess.check_output", "subprocess.getoutput", "subprocess.getstatusoutput",
        "os.system", "os.popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.posix_spawnp",
        *(f"os.{name}" for name in ("spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp",
                                     "spawnvpe", "execl", "execle", "execlp", "execlpe", "execv", "execve",
                                     "execvp", "execvpe")),
    ), STARTS),
    **dict.fromkeys((
        "atexit.register", "weakref.finalize", "signal.signal", "os.register_at_fork", "sys.addaudithook",
        "sys.settrace", "sys.setprofile", "threading.settrace", "threading.setprofile",
    ), HOOKS),
    **dict.fromkeys((
        "ctypes.CDLL", "ctypes.PyDLL", "ctypes.WinDLL", "ctypes.OleDLL", "ctypes.cdll.LoadLibrary",
        "ctypes.pydll.LoadLibrary", "ctypes.windll.LoadLibrary", "ctypes.LibraryLoader",
    ), LIBRARY),
    **dict.fromkeys((
        "importlib.util.module_from_spec", "importlib.util.LazyLoader", "importlib.util.LazyLoader.factory",
        "pkgutil.walk_packages", "importlib.machinery.SourceFileLoader", "importlib.machinery.SourcelessFileLoader",
        "importlib.machinery.ExtensionFileLoader",
    ), ALWAYS_LOADS),
}
# Methods that run a module whatever object they are called on (``spec.loader.exec_module(m)``).
LOADING_METHODS = ("exec_module", "load_module")
# The import system's state: changing it at import changes what later imports load.
IMPORT_STATE = ("sys.meta_path", "sys.path_hooks", markers.SEARCH_PATH, "sys.modules", "sys.path_importer_cache",
                "sys.excepthook", "sys.displayhook", "builtins.__import__")
PACKAGE_PATH = "__path__"
# The last names a file spells where it makes one of those calls or changes that state:
# the extractor visits the expressions on lines spelling them (`facts._token_lines`).
UNRESOLVED_NAMES = tuple(sorted(
    {name.rpartition(".")[2] for name in UNRESOLVED_CALLS}
    | set(LOADING_METHODS) | {name.rpartition(".")[2] for name in IMPORT_STATE} | {PACKAGE_PATH}))
# Module names whose use at import (or in a function's body) may start one of those loads;
# the syntax check's symbol table says which a file's import-time code uses.
LOAD_VOCABULARY = frozenset(
    {name.partition(".")[0] for name in (*UNRESOLVED_CALLS, *IMPORT_STATE) if "." in name}
    | {"builtins", "exec", "eval", "compile", "module_from_spec", "LazyLoader", PACKAGE_PATH}
    | set(markers.LOADER_HOMES) | set(markers.IMPORT_FUNCTIONS[:2]) | set(markers.NAME_LOADERS)
    | set(markers.PATH_LOADERS)
    | set(UNRESOLVED_NAMES)
) - set(LOADING_METHODS)  # methods of a loader object, never a name of their own

# import scopes; "module level" is defined in docs/policy_check.rst ("Rules")
MODULE = "module"  # runs at import time
FUNCTION = "function"  # inside a function or lambda body
TYPE_CHECKING = "type-checking"  # inside `if TYPE_CHECKING:` at module level
MAIN = "main"  # inside `if __name__ == "__main__":` at module level: runs as a script, not at import
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


class ModuleCall(NamedTuple):
    """A call that runs when the module is imported (module body, class bodies,
    decorators, default values; `scope` MODULE or TYPE_CHECKING), of a dotted name as
    written; a bare decorator ``@helper`` is a call of ``helper``. `args`: the
    positional arguments that fold to a string (`_fold`), None for the others (at most
    `MAX_CALL_ARGS`). EXP001/EXP002 resolve `func` to a project function that defers an
    experimental import, or hands a parameter to an import function."""

    func: str
    args: tuple
    line: int
    column: int
    scope: str


class ParamImport(NamedTuple):
    """The function `qualname` hands its parameter `name` (positional index `index`,
    -1 for keyword-only) to an import function: a call of it imports its argument."""

    qualname: str
    index: int
    name: str


class Load(NamedTuple):
    """Code that loads or runs something by a route no import statement shows, which the
    facts cannot resolve to a module (`policy_checks.analysis.import_time`, EXP010): a loader given
    a computed name, source text that is not a literal, a shared library, a thread or
    process started, a hook registered, the import system's state changed. `what` says
    which, in words; `scope` and `functions` as an `Import`'s."""

    what: str
    line: int
    column: int
    scope: str
    functions: tuple
    path: str = ""  # a shared library's literal path: the analysis judges it with the settings


class BodyCall(NamedTuple):
    """A function's own body calls `func` (a dotted name as written, whose first name the
    module binds to something of the project): what `policy_checks.analysis.import_time` follows
    from a call run at import into the functions it runs."""

    qualname: str
    func: str


class Definition(NamedTuple):
    qualname: str
    kind: str  # "function" or "class"
    line: int  # of the ``def`` / ``class`` keyword (decorators are above it)
    column: int
    decorators: tuple  # resolved dotted names of the decorators (calls unwrapped)
    end_line: int = 0  # last line of the body: lines line..end_line are inside it
    # the statement's first line: its first decorator's, else `line` (where a finding on
    # the definition points: docs/policy_check.rst, "Running it")
    first_line: int = 0
    # a class whose body sets ``is_experimental = True`` (an entry point: policy_checks/model/entry_points.py)
    flagged: bool = False


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


# What a module publishes: read through `policy_checks.model.exports` ------------------


class Listed(NamedTuple):
    """One string of an ``__all__`` list, at its line."""

    name: str
    line: int


class LazyExport(NamedTuple):
    """One entry of a PEP 562 lazy-export table: a module-level dict of a module that
    defines ``__getattr__``. `module` is the string as written, maybe relative."""

    name: str
    module: str
    table: str  # the dict's variable
    line: int


class Published(NamedTuple):
    """What the import-time code of a module publishes besides its imports.

    Re-exports are `Import` facts already; these are the rest a reader needs."""

    listed: tuple  # Listed: the strings of every ``__all__`` binding, in order
    all_form: str  # "" (no ``__all__``), LITERAL_ALL, or COMPUTED_ALL (one binding is no literal)
    lazy: tuple  # LazyExport
    bound: str  # every name the import-time code binds, separated by spaces
    served: str  # names ``__getattr__`` may serve (its tables' and comparisons' strings)


LITERAL_ALL, COMPUTED_ALL = "literal", "computed"


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
    # False: not even syntax-checked; only the bytes were read (`bytes_only`): suppressions
    checked: bool = True
    # definitions a later one of the same qualname replaced in `definitions` (a
    # ``def`` in each branch of an ``if``): still places a line can be inside
    shadowed: list = field(default_factory=list)
    calls: list = field(default_factory=list)  # ModuleCall: calls run at import
    # syntax-only facts: `_module_level_names` (None: unknown, the file did not parse)
    top_names: Optional[str] = None
    # syntax-only facts: `_load_summary`, the load vocabulary its import-time code uses and
    # the functions whose bodies use it (None: unknown)
    load_words: Optional[str] = None
    suspects: Optional[str] = None
    # bytes-only facts of a core module: `project_words` (None: not read)
    import_words: Optional[str] = None
    class_words: Optional[str] = None
    param_imports: list = field(default_factory=list)  # ParamImport
    loads: list = field(default_factory=list)  # Load, at any scope
    body_calls: list = field(default_factory=list)  # BodyCall
    published: Optional[Published] = None  # complete facts only

    def scope_at(self, line: int) -> str:
        """The qualname of the innermost ``def`` or ``class`` whose lines, its
        decorators' included, hold `line`, else ``"<module>"`` (complete facts only).
        A finding on a decorated definition points at its first decorator and still
        belongs to the definition."""
        best = None
        for d in (*self.definitions.values(), *self.shadowed):
            start = d.first_line or d.line
            if start <= line <= d.end_line and (best is None or (start, len(d.qualname)) > (best.first_line or best.line, len(best.qualname))):
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


_BUILTINS = frozenset(dir(builtins))
_NO_CALLS = frozenset({ast.Constant, ast.Name, type(None)})  # leaves (and a dict's `**` key)
MAX_FOLDED = 10_000  # characters of a string built from literal pieces
MAX_FOLD_DEPTH = 20  # nested pieces followed
MAX_CALL_ARGS = 4  # positional arguments of a module-level call kept
MAX_CALLS = 5_000  # module-level calls kept per file
MAX_SOURCE_TEXT = 100_000  # characters of an exec/eval/compile literal parsed
_FORMAT_FIELD = re.compile(r"\{(\d*)\}")
MAX_BODY_CALLS = 20_000  # calls of project names kept per file, in function bodies
# methods that change a list or dict of the import system's state (``sys.path.insert``)
_MUTATORS = frozenset({"append", "insert", "extend", "remove", "pop", "clear", "update", "setdefault", "popitem",
                       "__setitem__", "__delitem__", "__iadd__"})
_UNRESOLVED_LAST = frozenset(name.rpartition(".")[2] for name in UNRESOLVED_CALLS)
_STATE_LAST = frozenset(name.rpartition(".")[2] for name in IMPORT_STATE)
_LIBRARY_LAST = frozenset(n.rpartition(".")[2] for n, kind in UNRESOLVED_CALLS.items() if kind == LIBRARY)


def _fold(node: Optional[ast.AST], constants: Optional[dict] = None, depth: int = 0) -> Optional[str]:
    """The string `node` certainly evaluates to when built from literal pieces: a
    literal, ``+`` of pieces, an f-string of pieces, ``sep.join([pieces])``, ``%`` and
    ``.format`` of pieces, or a module-level name bound to one (`constants`); else None.
    Bounded in depth and length: hostile text never grows without bound."""
    if node is None or depth > MAX_FOLD_DEPTH:
        return None
    text = _literal_str(node)
    if text is not None:
        return text if len(text) <= MAX_FOLDED else None
    again = lambda n: _fold(n, constants, depth + 1)  # noqa: E731
    if isinstance(node, ast.Name) and constants:
        return constants.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _bounded(again(node.left), again(node.right))
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            piece = again(value.value if isinstance(value, ast.FormattedValue) else value)
            if piece is None or (isinstance(value, ast.FormattedValue) and (value.conversion not in (-1, 115) or value.format_spec)):
                return None
            parts.append(piece)
        return _bounded(*parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        template = again(node.left)
        items = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        pieces = [again(item) for item in items]
        if template is None or None in pieces or not template.count("%") == template.count("%s") == len(pieces):
            return None
        return _bounded(template % tuple(pieces))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        owner = again(node.func.value)
        if owner is None:
            return None
        if node.func.attr == "join" and len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)):
            pieces = [again(item) for item in node.args[0].elts]
            return None if None in pieces else _bounded(owner.join(pieces)) if len(pieces) < MAX_FOLDED else None
        if node.func.attr == "format":
            pieces = [again(item) for item in node.args]
            fields = _FORMAT_FIELD.findall(owner)
            if None in pieces or owner.count("{") != len(fields) or owner.count("}") != len(fields):
                return None
            try:
                return _bounded(owner.format(*pieces))
            except (IndexError, ValueError):
                return None
    return None


def _bounded(*parts) -> Optional[str]:
    if None in parts or sum(len(p) for p in parts) > MAX_FOLDED:
        return None
    return "".join(parts)


def module_of_path(path: str, top: str) -> Optional[str]:
    """The module of the package `top` a file path names (``.../flashinfer/experimental/x.py``
    -> ``flashinfer.experimental.x``), or None: the last ``top/`` component on and below."""
    parts = path.replace("\\", "/").split("/")
    if top not in parts[:-1] or not parts[-1].endswith(".py"):
        return None
    at = len(parts) - 1 - parts[::-1].index(top)
    names = [p for p in parts[at:-1] if p not in ("", ".")] + [parts[-1][:-3]]
    if names[-1] == "__init__":
        names.pop()
    if not all(n.isidentifier() for n in names):
        return None
    return ".".join(names)


def _module_literal(node: Optional[ast.AST], constants: Optional[dict] = None) -> Optional[str]:
    """The module a dynamic import's name argument certainly imports: a string built
    from literal pieces (`_fold`), or the dotted prefix an f-string starts with
    (``f"a.b.{x}"`` imports ``a.b``)."""
    text = _fold(node, constants)
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


class _Extractor(QuickVisitor):
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
        self.guards = None  # `type_checking_guards` of the tree, built on first need
        self.constants: dict = {}  # module-level name -> the string it was bound to (`_fold`)
        self.params: list = []  # parameter names of each enclosing def, innermost last
        self.in_expression = False  # inside a module-level expression whose calls are recorded
        self.pending_loads: list = []  # (resolved later) raw dotted name, what, position, scope, functions, path
        self.project_names: frozenset = frozenset()  # module-level names a body call may follow
        self.sequences: dict = {}  # name -> the strings of the tuple or list literal it was bound to
        self.loop_values: dict = {}  # a for loop's target -> the literal strings it takes
        self.load_aliases: frozenset = frozenset()  # names bound to a call of `UNRESOLVED_CALLS` (``as go``)
        self.entry_lines: dict = {}  # module-level dict name -> {key: line of its entry}

    def visit(self, node: ast.AST):
        if isinstance(node, ast.expr):
            if self.scope != FUNCTION and not self.in_expression:
                self.in_expression = True
                try:
                    self._record_calls(node)
                    return self.visit(node)
                finally:
                    self.in_expression = False
            if not self.every_expression:
                at = bisect.bisect_left(self.token_lines, node.lineno)
                if at == len(self.token_lines) or self.token_lines[at] > (node.end_lineno or node.lineno):
                    return None
        elif isinstance(node, ast.stmt):
            saved, self.statement = self.statement, node
            self.dispatch(node)
            self.statement = saved
            return None
        return self.dispatch(node)

    def _record_calls(self, node: ast.expr) -> None:
        """Every call in a module-level expression (not in a lambda's body), as a
        `ModuleCall` at the statement holding it."""
        stack = [node]
        while stack and len(self.facts.calls) < MAX_CALLS:
            current = stack.pop()
            kind = type(current)
            if kind in _NO_CALLS:
                continue
            if kind is ast.Lambda:
                stack.extend(current.args.defaults)
                stack.extend(d for d in current.args.kw_defaults if d is not None)
                continue
            if kind is ast.Call:
                func = dotted_name(current.func)
                if func is not None:
                    self._add_call(func, current.args)
            for name in current._fields:  # ast.iter_child_nodes, less the generator
                value = getattr(current, name, None)
                if type(value) is list:
                    stack.extend(value)
                elif isinstance(value, ast.expr):
                    stack.append(value)

    def _add_call(self, func: str, args) -> None:
        first = func.partition(".")[0]
        binding = self.facts.bindings.get(first)
        top = self.facts.module.partition(".")[0]
        if binding is None and first in _BUILTINS:
            return  # print(), len(): no function of the project
        if isinstance(binding, (ModuleBinding, FromBinding)) and binding.module.partition(".")[0] != top:
            if first not in self.import_functions:
                return  # torch.x(), os.path.join(): another package's (loaders are read as imports)
        line, column = self._pos(self.statement) if self.statement is not None else (1, 1)
        folded = tuple(_fold(a, self.constants) for a in args[:MAX_CALL_ARGS])
        self.facts.calls.append(ModuleCall(func, folded, line, column, self.scope))

    # positions -------------------------------------------------------------
    def _pos(self, node: ast.AST) -> tuple:
        """Where a finding on `node` points: its first line and column; for a decorated
        ``def`` or ``class`` statement, its first decorator's line."""
        line = node.lineno
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
            line = node.decorator_list[0].lineno
        return line, self.columns.column(line, node.col_offset)

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
            if alias.asname and alias.name.partition(".")[0].encode() in _LOAD_HOMES:
                self.every_expression = True  # `import os as o`: o.system(...) spells no `os`
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
            if module in LOADER_MODULES and name in LOADERS:
                self._alias_import_function(bound, name)
            if bound != name and name in _UNRESOLVED_LAST:
                self.every_expression = True  # `from subprocess import run as go`: go(...) spells no token
                self.load_aliases = self.load_aliases | {bound}
            if name in self.call_names and bound != name:
                self.call_names = self.call_names | {bound}  # `import ... as br`
                self.every_expression = True
            if module is not None and name != "*":
                self._bind(bound, FromBinding("from", module, name))

    def visit_Call(self, node: ast.Call) -> None:
        func = dotted_name(node.func)
        if func is not None:
            self._dynamic_import(func, node)
            self._unresolved_call(func, node)
            if self.scope == FUNCTION and self.functions and func.partition(".")[0] in self.project_names:
                self.facts.body_calls.append(BodyCall(self.functions[-1], func))
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
        if short not in LOADERS:
            return
        if short in SOURCE_RUNNERS:
            if short == func or func in ("builtins." + short, "__builtins__." + short) or func in self.import_functions:
                self._source_imports(node, short)
            return
        if short in markers.NAME_LOADERS + markers.PATH_LOADERS and func not in self.import_functions:
            owner = func.rpartition(".")[0]
            if not owner or self.facts.resolve_local(owner) not in markers.LOADER_HOMES:
                return  # another object's method of that name: only runpy's, pkgutil's, importlib's load
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        if short in markers.PATH_LOADERS:
            argument = node.args[1] if short == _SPEC_FROM_FILE and len(node.args) > 1 else (
                node.args[0] if short == _RUN_PATH and node.args else None)
            argument = keywords.get("location" if short == _SPEC_FROM_FILE else "path_name", argument)
            path = _fold(argument, self.constants)
            if path is None:
                self._load(f"{func}() of a computed path", node)
            module = module_of_path(path, self.facts.module.partition(".")[0]) if path else None
            if module is not None:
                self._add_import(module, (), self.statement or node, dynamic=True)
            return
        argument = keywords.get("name", keywords.get("mod_name", node.args[0] if node.args else None))
        handed = self._parameter_import(argument)
        name = _module_literal(argument, self.constants)
        values = self.loop_values.get(argument.id) if name is None and isinstance(argument, ast.Name) else None
        if values is not None and short in IMPORT_FUNCTIONS[:2]:
            for value in values:  # `for name in ("a.b", "c"): import_module(name)`: each is an import
                if value and not value.startswith("."):
                    self._add_import(value, (), self.statement or node, dynamic=True)
            return
        if name is None:
            if not handed and short not in markers.TEST_SKIP_FUNCTIONS:
                self._load(f"{func}() of a computed module name", node)
            return
        if short in markers.NAME_LOADERS:
            name = name.partition(":")[0]  # pkgutil.resolve_name("pkg.mod:attr")
            if not name or name.startswith("."):
                return
            self._add_import(name, (), self.statement or node, dynamic=True)
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
                    self._load(f"{func}() of a relative name in a computed package", node)
                    return
                module = resolve_relative(base, level, name[level:] or None)
            else:
                module = name
        elif short in markers.TEST_SKIP_FUNCTIONS:  # pytest's: absolute names only
            module = name
        else:
            level_node = keywords.get("level", node.args[4] if len(node.args) > 4 else None)
            level = level_node.value if isinstance(level_node, ast.Constant) else (0 if level_node is None else None)
            if not isinstance(level, int):
                self._load(f"{func}() at a computed level", node)
                return
            module = resolve_relative(self.package, level, name or None) if level else name
        # reported at the statement's first character, as every finding on Python code is
        self._add_import(module, (), self.statement or node, dynamic=True)

    def _load(self, what: str, node: ast.AST, raw: str = "", path: str = "") -> None:
        """A load the facts cannot resolve; `raw`, a dotted name still to resolve through the
        module's bindings (`finish`): the load stands only if it names one of `markers`'."""
        line, column = self._pos(self.statement or node)
        self.pending_loads.append((raw, what, line, column, self.scope, tuple(self.functions), path))

    def _unresolved_call(self, func: str, node: ast.Call) -> None:
        """Calls of `UNRESOLVED_CALLS`, `LOADING_METHODS` and changes of the
        import system's state through a method (``sys.path.insert``): kept with their raw
        names, judged in `finish`."""
        owner, _, short = func.rpartition(".")
        if short in LOADING_METHODS and owner:
            self._load(f"{func}() runs a module from a loader", node)
        elif short in _MUTATORS and (owner.rpartition(".")[2] in _STATE_LAST | {PACKAGE_PATH} or owner in self.load_aliases):
            if owner == PACKAGE_PATH or owner.endswith("." + PACKAGE_PATH):
                self._load(f"{func}() changes the package's search path", node)
                return
            self._load(f"{func}() changes the import system's state", node, raw=owner)
        elif short in _UNRESOLVED_LAST or func in self.load_aliases:
            argument = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
            if isinstance(argument, ast.Constant) and argument.value is None and short in _LIBRARY_LAST:
                return  # ctypes.CDLL(None): the program's own symbols, no library loaded
            path = _fold(argument, self.constants) if argument is not None else None
            self._load(func, node, raw=func, path=path or "")

    def _parameter_import(self, argument) -> bool:
        """The innermost enclosing function hands its parameter to an import function:
        its callers say what it imports (`policy_checks.analysis.import_time`)."""
        if not isinstance(argument, ast.Name) or not self.params or not self.functions:
            return False
        positional, keyword_only = self.params[-1]
        if argument.id in positional:
            index = positional.index(argument.id)
        elif argument.id in keyword_only:
            index = -1
        else:
            return False
        self.facts.param_imports.append(ParamImport(self.functions[-1], index, argument.id))
        return True

    def _source_imports(self, node: ast.Call, short: str) -> None:
        """``exec``/``eval``/``compile`` of a string built from literal pieces: each import
        the text holds (statements, and import functions called with a literal) is an
        import at the call's statement. Parsed once, bounded; text that does not parse
        imports nothing."""
        text = _fold(node.args[0] if node.args else None, self.constants)
        if text is None or len(text) > MAX_SOURCE_TEXT:
            self._load(f"{short}() of text that is not a literal", node)
            return
        try:
            inner = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        at = self.statement or node
        try:
            for child in ast.walk(inner):
                if isinstance(child, ast.Import):
                    for alias in child.names:
                        self._add_import(alias.name, (), at, dynamic=True)
                elif isinstance(child, ast.ImportFrom):
                    module = resolve_relative(self.package, child.level, child.module)
                    self._add_import(module, tuple((a.name, a.asname or a.name) for a in child.names), at, dynamic=True)
                elif isinstance(child, ast.Call) and child.args:
                    short = (dotted_name(child.func) or "").rpartition(".")[2]
                    name = _fold(child.args[0]) if short in IMPORT_FUNCTIONS + markers.NAME_LOADERS else None
                    if name and not name.startswith("."):
                        self._add_import(name.partition(":")[0], (), at, dynamic=True)
        except RecursionError:
            return

    # scopes ----------------------------------------------------------------
    def _visit_def(self, node, kind: str) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
            name = dotted_name(decorator)
            if name is not None and self.scope != FUNCTION and len(self.facts.calls) < MAX_CALLS:
                saved, self.statement = self.statement, node
                self._add_call(name, ())  # `@helper` calls helper at import
                self.statement = saved
            if name is not None and name.rpartition(".")[2] in _UNRESOLVED_LAST:
                saved, self.statement = self.statement, node
                self._load(name, decorator, raw=name)  # `@atexit.register`
                self.statement = saved
        qualname = ".".join(self.qualname + [node.name])
        line, column = node.lineno, self.columns.column(node.lineno, node.col_offset)
        self.raw_decorators[qualname] = [self._decorator(d) for d in node.decorator_list]
        replaced = self.facts.definitions.get(qualname)
        if replaced is not None:
            self.facts.shadowed.append(replaced)
        first = node.decorator_list[0].lineno if node.decorator_list else line
        self.facts.definitions[qualname] = Definition(qualname, kind, line, column, (), node.end_lineno or line, first,
                                                      kind == "class" and _sets_experimental_flag(node))
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
            self.params.append(([a.arg for a in args.posonlyargs + args.args], [a.arg for a in args.kwonlyargs]))
            for stmt in node.body:
                self.visit(stmt)
            self.params.pop()
            self.qualname.pop()
            self.functions.pop()
            self.scope = saved
        else:
            for base in node.bases + [k.value for k in node.keywords]:
                self.visit(base)
            if self.scope != FUNCTION:
                self._class_hooks(node)
            self.qualname.append(node.name)
            for stmt in node.body:
                self.visit(stmt)
            self.qualname.pop()

    def _class_hooks(self, node: ast.ClassDef) -> None:
        """Defining a class runs its bases' ``__init_subclass__`` and its metaclass: calls
        run at import (`ModuleCall`), which the import-time analysis follows."""
        saved, self.statement = self.statement, node
        for base in node.bases:
            name = dotted_name(base)
            if name is not None and len(self.facts.calls) < MAX_CALLS:
                self._add_call(f"{name}.__init_subclass__", ())
        for keyword in node.keywords:
            name = dotted_name(keyword.value) if keyword.arg == "metaclass" else None
            if name is not None and len(self.facts.calls) < MAX_CALLS:
                self._add_call(name, ())
        self.statement = saved

    def _state_change(self, target: ast.AST, node: ast.stmt) -> None:
        """An assignment, augmented assignment or ``del`` of the import system's state
        (``sys.modules[name] = m``, ``sys.path += [...]``, ``__path__ = ...``)."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._state_change(element, node)
            return
        if isinstance(target, ast.Subscript):
            target = target.value
        name = dotted_name(target)
        if name is None or name.rpartition(".")[2] not in _STATE_LAST | {PACKAGE_PATH}:
            return
        if name == PACKAGE_PATH or name.endswith("." + PACKAGE_PATH):
            self._load(f"{name} changed: the package's search path", node)
        elif "." in name or name in self.facts.bindings:
            self._load(f"{name} changed: the import system's state", node, raw=name)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._state_change(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if not isinstance(target, ast.Name):  # `del path` unbinds a name, changing nothing else
                self._state_change(target, node)
        self.generic_visit(node)

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
        if self.scope == MODULE and _is_main_guard(node.test) and not _rebinds_name(self.columns.source):
            self.scope = MAIN  # run as a script only (a module that rebinds __name__ is not trusted)
            for stmt in node.body:
                self.visit(stmt)
            self.scope = MODULE
            for stmt in node.orelse:
                self.visit(stmt)
            return
        negated = isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
        test = node.test.operand if negated else node.test
        if self.scope == MODULE and self._is_type_checking(test):
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

    def _is_type_checking(self, test: ast.AST) -> bool:
        """Is `test` typing's own ``TYPE_CHECKING`` (`type_checking_guards`)?"""
        dotted = dotted_name(test)
        if dotted is None or dotted.rpartition(".")[2] != "TYPE_CHECKING":
            return False
        if self.guards is None:
            self.guards = type_checking_guards(self.tree, self.columns.source)
        names, modules = self.guards
        first, _, rest = dotted.partition(".")
        return (not rest and first in names) or (rest == "TYPE_CHECKING" and first in modules)

    # module-level values ---------------------------------------------------
    def visit_For(self, node) -> None:
        """A loop over string literals (a tuple or list, or a name bound to one) gives its
        target each of them: a loader called with the target loads one of those names."""
        values = _string_sequence(node.iter)
        if values is None and isinstance(node.iter, ast.Name):
            name = node.iter.id
            values = self.sequences.get((tuple(self.functions), name))
            if values is None and not any(name in group for group in (self.params[-1] if self.params else ())):
                values = self.sequences.get(((), name))  # a module-level tuple, not shadowed by a parameter
        if values is None or not isinstance(node.target, ast.Name):
            self.generic_visit(node)
            return
        self.visit(node.iter)
        saved = self.loop_values.get(node.target.id)
        self.loop_values[node.target.id] = values
        for stmt in node.body:
            self.visit(stmt)
        if saved is None:
            self.loop_values.pop(node.target.id, None)
        else:
            self.loop_values[node.target.id] = saved
        for stmt in node.orelse:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                sequence = _string_sequence(node.value)
                key = (tuple(self.functions), target.id)
                if sequence is not None and key not in self.sequences:
                    self.sequences[key] = sequence
                else:  # bound twice, or to something else: not one literal sequence
                    self.sequences[key] = None
        for target in node.targets:
            if _replaces_itself(target, node.value, self.constants):
                continue  # sys.modules[__name__] = import_module("a.literal"): an alias the imports resolve
            if not isinstance(target, ast.Name) or target.id == PACKAGE_PATH:
                self._state_change(target, node)
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
        folded = _fold(value, self.constants)
        if folded is not None:
            self.constants[name] = folded  # a name for an import built from pieces
        else:
            self.constants.pop(name, None)
        dotted = dotted_name(value)
        if dotted is not None:
            self._bind(name, AliasBinding("alias", dotted))
            which = self.import_functions.get(dotted) or dotted.rpartition(".")[2]
            if which in LOADERS:
                self._alias_import_function(name, which)
            if (which in _UNRESOLVED_LAST or which in _STATE_LAST) and name != which:
                self.every_expression = True  # `go = subprocess.run`, `P = sys.path`
                self.load_aliases = self.load_aliases | {name}
            if dotted.rpartition(".")[2] in self.call_names:
                self.call_names = self.call_names | {name}  # `br = backend_requirement`
                self.every_expression = True
            return
        entries = self._dict_entries(value)
        names = _string_sequence(value)
        if entries is not None:
            self._bind(name, DictBinding("dict", DictValue(tuple(entries), node.lineno)))
            self.entry_lines[name] = _entry_lines(value)
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
            if entry.key is not None:
                self.entry_lines.setdefault(name, {})[entry.key] = key.lineno

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
        for raw, what, line, column, scope, functions, path in self.pending_loads:
            if raw:
                resolved = facts.resolve_local(raw)
                kind = UNRESOLVED_CALLS.get(resolved)
                if kind is not None:
                    what = f"{raw}() {kind}" + (f" ({resolved})" if resolved != raw else "")
                    path = path if kind == LIBRARY else ""
                elif resolved not in IMPORT_STATE:
                    continue
            facts.loads.append(Load(what, line, column, scope, functions, path))
        facts.body_calls = list(dict.fromkeys(facts.body_calls))[:MAX_BODY_CALLS]
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


def _entry_lines(value: ast.AST) -> dict:
    """key -> line of each string-keyed entry of a dict display or ``dict(...)`` call."""
    if isinstance(value, ast.Dict):
        return {k.value: k.lineno for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return {k.arg: k.value.lineno for k in getattr(value, "keywords", ()) if k.arg}


_BLOCKS = (ast.If, ast.Try, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ())
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _published(tree: ast.AST, facts: FileFacts, entry_lines: dict) -> Published:
    """What the module publishes: its ``__all__``, its lazy tables, every name its
    import-time code binds, and what its ``__getattr__`` may serve."""
    statements = list(_top_statements(getattr(tree, "body", [])))
    listed, form = _declared_all(statements)
    lazy = ()
    if "__getattr__" in facts.definitions:
        lazy = tuple(
            LazyExport(entry.key, entry.value.text, name, entry_lines.get(name, {}).get(entry.key, binding.value.line))
            for name, binding in facts.bindings.items() if isinstance(binding, DictBinding)
            for entry in binding.value.entries if entry.key is not None and isinstance(entry.value, StrRef))
    bound = _bound_names(statements)
    served = _lazy_names(statements) if "__getattr__" in bound else set()
    return Published(listed, form, lazy, " ".join(sorted(bound)), " ".join(sorted(served)))


def _top_statements(body: list) -> Iterator[ast.stmt]:
    """The statements that run when the module is imported, inside ``if``/``try``/``with``/
    loops and ``match`` cases too, not inside a ``def`` or ``class`` body."""
    for statement in body:
        yield statement
        if isinstance(statement, _BLOCKS):
            for part in ("body", "orelse", "finalbody"):
                yield from _top_statements(getattr(statement, part, []) or [])
            for handler in getattr(statement, "handlers", []) or []:
                yield from _top_statements(handler.body)
        elif hasattr(ast, "Match") and isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from _top_statements(case.body)


def _bound_names(statements: list) -> set:
    """Every name the statements bind: definitions, imports, assignment targets."""
    names: set = set()
    for statement in statements:
        if isinstance(statement, _DEFS):
            names.add(statement.name)
        elif isinstance(statement, ast.Import):
            names |= {a.asname or a.name.partition(".")[0] for a in statement.names}
        elif isinstance(statement, ast.ImportFrom):
            names |= {a.asname or a.name for a in statement.names if a.name != "*"}
        elif isinstance(statement, ast.Assign):
            names |= {n for target in statement.targets for n in _target_names(target)}
        elif isinstance(statement, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            names |= _target_names(statement.target)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            names |= {n for item in statement.items if item.optional_vars for n in _target_names(item.optional_vars)}
    return names


def _target_names(target: ast.AST) -> set:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {n for element in target.elts for n in _target_names(element)}
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return set()


def _declared_all(statements: list) -> tuple:
    """``(Listed entries, form)`` of the ``__all__`` bindings (``=``, ``:``, ``+=``):
    form "" where there is none, COMPUTED_ALL where one is not a list of strings."""
    listed: list = []
    form = ""
    for statement in statements:
        targets = statement.targets if isinstance(statement, ast.Assign) else (
            [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else [])
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        value = getattr(statement, "value", None)
        if form != COMPUTED_ALL and isinstance(value, (ast.List, ast.Tuple)) and _string_sequence(value) is not None:
            listed += [Listed(e.value, e.lineno) for e in value.elts]
            form = LITERAL_ALL
        else:
            form = COMPUTED_ALL
    return tuple(listed), form


def _lazy_names(statements: list) -> set:
    """Names a module-level ``__getattr__`` may serve: the identifier strings of every
    module-level table it reads, directly or through the helpers and tables it names
    (a dict's keys; a set's, frozenset's, tuple's or list's items, however built), and
    the strings it compares ``name`` with."""
    values: dict = {}  # name -> the values the module binds it to (functions as their ``def``)
    for statement in statements:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            values.setdefault(statement.name, []).append(statement)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                for name in _target_names(target):
                    values.setdefault(name, []).append(statement.value)
    if "__getattr__" not in values:
        return set()
    names: set = set()
    todo, seen = ["__getattr__"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in values.get(name, ()):
            reader = _compared_strings if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else _table_strings
            names |= reader(node)
            todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    return names


def _table_strings(value: ast.AST) -> set:
    """Identifier strings in a table's value, except a dict's plain string values (the
    modules a name maps to)."""
    skipped = {id(v) for node in ast.walk(value) if isinstance(node, ast.Dict)
               for v in node.values if _literal_str(v) is not None}
    found = {_literal_str(node) for node in ast.walk(value) if id(node) not in skipped}
    found |= {k.arg for node in ast.walk(value) if isinstance(node, ast.Call) for k in node.keywords if k.arg}
    return {name for name in found if name and name.isidentifier()}


def _compared_strings(function: ast.AST) -> set:
    """Identifier strings a function compares with (``name == "x"``, ``name in ("a", "b")``,
    ``case "x":``)."""
    found: set = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                found |= {_literal_str(n) for n in ast.walk(side)}
        elif hasattr(ast, "MatchValue") and isinstance(node, ast.MatchValue):
            found.add(_literal_str(node.value))
    return {name for name in found if name and name.isidentifier()}


# a module binding its own __name__ (an assignment, a walrus, globals() or setattr with the name)
_NAME_ASSIGNED = re.compile(rb"__name__\s*(?:=(?!=)|:=)")
_NAME_SET = (re.compile(rb"globals\(\)\s*\[\s*[\"']__name__"), re.compile(rb"setattr\([^)\n]*[\"']__name__"))
_DOT_OR_NAME = frozenset(b".abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _rebinds_name(source: bytes) -> bool:
    """Could the module rebind ``__name__``: ``__name__ =`` (not ``x.__name__ =``), ``:=``,
    ``globals()["__name__"]``, ``setattr(..., "__name__"``? Each pattern starts with a
    literal, which the regex engine skips to; a pattern headed by a look-behind is tried
    at every position of the file."""
    for match in _NAME_ASSIGNED.finditer(source):
        if match.start() == 0 or source[match.start() - 1] not in _DOT_OR_NAME:
            return True
    return any(pattern.search(source) is not None for pattern in _NAME_SET)


def _replaces_itself(target: ast.AST, value: ast.AST, constants: dict) -> bool:
    """``sys.modules[__name__] = importlib.import_module("flashinfer.other")``: the module
    makes its own name an alias of a module named by a literal, which the import facts
    already record (and the rules judge)."""
    if not (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Name) and target.slice.id == "__name__"
            and (dotted_name(target.value) or "").rpartition(".")[2] == "modules"):
        return False
    if not (isinstance(value, ast.Call) and (dotted_name(value.func) or "").rpartition(".")[2] in IMPORT_FUNCTIONS):
        return False
    return bool(value.args) and _module_literal(value.args[0], constants) is not None


def _is_main_guard(test: ast.AST) -> bool:
    """``__name__ == "__main__"``, either way round."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = (test.left, test.comparators[0])
    return any(isinstance(a, ast.Name) and a.id == "__name__" and _literal_str(b) == "__main__"
               for a, b in (sides, sides[::-1]))


TYPING_MODULES = ("typing", "typing_extensions")
_GUARD = "TYPE_CHECKING"
_GUARD_KIND, _MODULE_KIND, _OTHER_KIND = "guard", "typing", "other"


# A line that only tests the guard, or only imports typing's (one name a line each).
_BENIGN_GUARD_LINE = re.compile(
    rb"^[ \t]*(?:(?:el)?if[ \t]+(?:not[ \t]+)?TYPE_CHECKING[ \t]*:"
    rb"|from[ \t]+typing(?:_extensions)?[ \t]+import[ \t]+(?:\w+[ \t]*,[ \t]*)*TYPE_CHECKING(?:[ \t]*,[ \t]*\w+)*)"
    rb"[ \t]*\r?$",
    re.M,
)
_IMPORTS_TYPING_GUARD = re.compile(rb"^[ \t]*from[ \t]+typing(?:_extensions)?[ \t]+import[ \t]", re.M)


def _only_benign_guards(source: bytes) -> bool:
    """Does every ``TYPE_CHECKING`` of `source` stand on a line that only tests it or
    only imports typing's, with some import of typing's and no star import? Then it
    is bound only by those imports, and `type_checking_guards` needs no walk."""
    total = source.count(b"TYPE_CHECKING")
    benign = _BENIGN_GUARD_LINE.findall(source)
    return (total == len(benign) and re.search(rb"import[ \t(]*\*", source) is None
            and any(_IMPORTS_TYPING_GUARD.match(line) for line in benign))


def type_checking_guards(tree: ast.AST, source: Optional[bytes] = None) -> tuple:
    """``(names, modules)``: the names of a module that certainly hold typing's own
    ``TYPE_CHECKING`` (bound only by ``from typing import TYPE_CHECKING [as x]``, or
    typing_extensions', never bound any other way anywhere in the file), and those that
    certainly hold the module ``typing`` (for ``typing.TYPE_CHECKING``).

    Any other binding of such a name (an assignment, an augmented or annotated one, a
    ``for`` or ``with`` target, a walrus, ``del``, an import of something else under
    that name, a ``global`` or ``nonlocal``, a ``def``/``class``, an ``except`` or
    ``match`` capture, a star import from another module) makes it untrusted: an
    ``if`` on it then guards nothing, its block is module level. An attribute
    ``.TYPE_CHECKING`` assigned or deleted anywhere, or the string ``"TYPE_CHECKING"``
    passed to a call (``setattr``) or used as a subscript (``globals()[...]``), trusts
    nothing in the file. One walk of the tree, only for files that test the name, and
    none when the `source` shows only lines testing the name or importing typing's
    (`_only_benign_guards`: ``typing.TYPE_CHECKING`` is then trusted through no name)."""
    if source is not None and _only_benign_guards(source):
        return frozenset({_GUARD}), frozenset()
    kinds: dict = {}
    anything = False  # a star import or a write no name tells: every name may be rebound

    def bind(name: str, kind: str) -> None:
        kinds.setdefault(name, set()).add(kind)

    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                bind(node.id, _OTHER_KIND)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.partition(".")[0]
                typing_module = alias.name in TYPING_MODULES
                bind(bound, _MODULE_KIND if typing_module else _OTHER_KIND)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    anything = anything or node.module not in TYPING_MODULES or node.level != 0
                    continue
                own = node.level == 0 and node.module in TYPING_MODULES and alias.name == _GUARD
                bind(alias.asname or alias.name, _GUARD_KIND if own else _OTHER_KIND)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bind(name, _OTHER_KIND)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name, _OTHER_KIND)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bind(node.name, _OTHER_KIND)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bind(node.name, _OTHER_KIND)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bind(node.rest, _OTHER_KIND)
        elif isinstance(node, ast.Attribute):
            anything = anything or (node.attr == _GUARD and not isinstance(node.ctx, ast.Load))
        elif isinstance(node, ast.Call):
            anything = anything or any(_literal_str(a) == _GUARD for a in (*node.args, *(k.value for k in node.keywords)))
        elif isinstance(node, ast.Subscript):
            anything = anything or _literal_str(node.slice) == _GUARD
    if anything:
        return frozenset(), frozenset()
    names = frozenset(name for name, found in kinds.items() if found == {_GUARD_KIND})
    modules = frozenset(name for name, found in kinds.items() if found == {_MODULE_KIND})
    return names, modules


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
        extractor.project_names = _project_names(tree, module)
        extractor.token_lines = _token_lines(source, extractor.call_names, extractor.project_names)
        extractor.tree = tree
        try:
            extractor.visit(tree)
            extractor.finish()
            facts.published = _published(tree, facts, extractor.entry_lines)
        except RecursionError:
            facts.syntax_error = SyntaxProblem(1, 1, "too deeply nested to analyse")
    if may_hold_suppressions(source):
        facts.suppressions = python_suppressions(source)
    return facts


CALL_TOKENS = tuple(f.encode() for f in LOADERS)
# the loads `Load` records: each last name, with the modules a file making such a call
# spells (an import of the module, or of the name from it); "" for one any object has
def _load_token_homes() -> dict:
    tokens: dict = {}
    for name in (*UNRESOLVED_CALLS, *IMPORT_STATE):
        tokens.setdefault(name.rpartition(".")[2].encode(), set()).add(name.partition(".")[0].encode())
    tokens.update({name.encode(): {b""} for name in (*LOADING_METHODS, PACKAGE_PATH)})
    return tokens


_LOAD_TOKENS = _load_token_homes()


_LOAD_HOMES = frozenset().union(*_LOAD_TOKENS.values()) - {b""}


def _load_offsets(source: bytes, words: frozenset) -> list:
    """Where the last names of loads stand that are worth visiting the lines of: on a line
    that spells their module too (``sys.path.insert``, not ``os.path.join``), anywhere in a
    file that imports the name from its module (``from sys import path``). A module bound
    under another name (``import os as o``) has every expression visited (`_Extractor`).
    `words` are the file's `whole_words`: a token not among them stands nowhere whole."""
    offsets = []
    for token, homes in _LOAD_TOKENS.items():
        if token not in words:
            continue
        homes = [home for home in homes if home in source]  # a line can spell only these
        if not homes:
            continue
        if b"" in homes or any(re.search(rb"from[ \t]+" + home + rb"[\w.]*[ \t]+import", source) for home in homes):
            offsets.extend(word_offsets(source, token))
            continue
        for at in word_offsets(source, token):
            start, stop = source.rfind(b"\n", 0, at) + 1, source.find(b"\n", at)
            line = source[start:stop if stop >= 0 else len(source)]
            if any(home in line for home in homes):
                offsets.append(at)
    return offsets


_NOT_NAME = bytes(b if b in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_" else 32 for b in range(256))


def whole_words(source: bytes) -> frozenset:
    """Every run of ASCII name characters in `source`, whole: `word_offsets` finds a word
    exactly when it is one of them. One pass in C, where a search per word would read the
    file once for each of the seventy-odd load tokens; a third of the time of
    ``re.findall(rb"\\w+", source)``, which finds the same runs."""
    return frozenset(source.translate(_NOT_NAME).split())


def word_offsets(source: bytes, word: bytes) -> Iterator[int]:
    """Where `word` stands whole in `source`: no ASCII name character on either side
    (``exec`` in ``exec(``, not in ``execute``)."""
    at = source.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or source[at - 1] not in _NAME_BYTES) and (end == len(source) or source[end] not in _NAME_BYTES):
            yield at
        at = source.find(word, end)


def _project_names(tree: ast.AST, module: str) -> frozenset:
    """The names a module's top level binds to something of its own project (imports of
    it, relative ones, its own ``def`` and ``class`` statements): a function's body that
    calls one of them may run project code (`BodyCall`)."""
    top = module.partition(".")[0]
    names = set()
    stack = list(getattr(tree, "body", ()))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level or (node.module or "").partition(".")[0] == top:
                names.update(a.asname or a.name for a in node.names if a.name != "*")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition(".")[0] == top:
                    names.add(alias.asname or top)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for part in ("body", "orelse", "finalbody", "handlers"):
                stack.extend(getattr(node, part, ()))
        elif isinstance(node, ast.ExceptHandler):
            stack.extend(node.body)
    return frozenset(names)
_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _token_lines(source: bytes, names, words=()) -> list:
    """Sorted numbers of the lines naming a call the facts record.

    A loader's call is recognised by its last name (``exec``, ``importlib.import_module``),
    so it spells that name whole: an occurrence inside a longer name (``execute``,
    ``evaluate``, ``compiled``: an ASCII name character on either side) names no such
    call, and its line is not kept. `names` (``backend_requirement`` and its aliases)
    count wherever they are spelt. Lines are counted once, in order of the occurrences."""
    present = whole_words(source)
    offsets = _load_offsets(source, present)
    for token in CALL_TOKENS + tuple(w.encode() for w in words):
        if token in present or not token.isascii():  # a name with other letters is searched for
            offsets.extend(word_offsets(source, token))
    for token in (n.encode() for n in names):
        at = source.find(token)
        while at >= 0:
            offsets.append(at)
            at = source.find(token, at + len(token))
    lines, line, counted = [], 1, 0
    for at in sorted(offsets):
        line += source.count(b"\n", counted, at)
        counted = at
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def _parse(source: bytes, facts: FileFacts) -> Optional[ast.AST]:
    try:
        return parsed.tree(source)
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
    return _checked(source)[0]


def _checked(source: bytes) -> tuple:
    """``(syntax error or None, the symbol table or None)`` of `source`, from one run of
    the parser and the symbol table."""
    try:
        table = _symtable.symtable(source, "<checked>", "exec")
    except SyntaxError as error:
        return _error_position(error), None
    except (ValueError, UnicodeDecodeError, RecursionError, MemoryError) as error:
        return SyntaxProblem(1, 1, f"{type(error).__name__}: {error}"), None
    return None, table


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



_COMPREHENSIONS = frozenset({"listcomp", "setcomp", "dictcomp", "genexpr"})
_CLASS_TABLE = _symtable.TYPE_CLASS


_USE = _symtable.USE
_DEF_IMPORT = _symtable.DEF_IMPORT
_FUNCTION_TABLE = _symtable.TYPE_FUNCTION
_BOUND_HERE = _symtable.DEF_LOCAL | _symtable.DEF_PARAM | _symtable.DEF_IMPORT


def _module_level_names(table) -> str:
    """The identifiers the code run at import binds or uses: those of the module's
    symbol table, and of class bodies and comprehensions there (not of function or
    lambda bodies). An attribute (``entry.fast``) gives its first name only, an import
    the name it binds (``import a.b as c``: ``c``). A name the import-time code uses
    (reads, calls) is written ``+name``; one it only binds (an import kept for functions,
    a re-export) plain. Sorted, as one string separated by spaces: the warm cache reads
    one JSON string per file, not a list of them.

    `table` is the raw table `_symtable.symtable` gives (what `symtable.SymbolTable`
    wraps: ``symbols``, ``children``, ``type``, ``name``): wrapping every function's
    table only to skip it cost a tenth of a cold run's syntax checks."""
    names: dict = {}
    stack = [table]
    while stack:
        current = stack.pop()
        for name, flags in current.symbols.items():
            names[name] = names.get(name, False) or bool(flags & _USE)
        for child in current.children:
            if child.type == _CLASS_TABLE or child.name in _COMPREHENSIONS:
                stack.append(child)
    return " ".join(sorted(("+" + name) if used else name for name, used in names.items()))


# Names of the load vocabulary that are also everyday identifiers: one counts only where
# the file's bytes show the load itself (`_REFINED`), so that ``os.environ`` or a lock
# from ``threading`` does not make a file worth a parse.
_MODULE_CALLS = {
    "os": rb"os\s*\.\s*(?:system|popen|fork|spawn|exec|posix_spawn|register_at_fork)",
    "sys": rb"sys\s*\.\s*(?:path|modules|meta_path|path_hooks|path_importer_cache|excepthook|displayhook|addaudithook"
           rb"|settrace|setprofile)",
    "signal": rb"signal\s*\.\s*signal",
    "threading": rb"threading\s*\.\s*(?:Thread|Timer|settrace|setprofile|excepthook)",
    "weakref": rb"weakref\s*\.\s*finalize",
    "ctypes": rb"ctypes\s*\.\s*(?:CDLL|PyDLL|WinDLL|OleDLL|LibraryLoader|cdll|pydll|windll|oledll)",
    markers.LOADER_HOMES[2]: rb"importlib\s*\.\s*(?:import_module|__import__|reload|util|machinery)",
}
_REFINED = {name: re.compile(pattern) for name, pattern in _MODULE_CALLS.items()}
# A bare name counts only where the file spells the module it comes from.
_FROM_MODULE = {
    **dict.fromkeys(("path", "modules", "meta_path", "path_hooks", "path_importer_cache", "excepthook", "displayhook",
                     "addaudithook", "settrace", "setprofile"), b"sys"),
    **dict.fromkeys(("system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp", "register_at_fork"), b"os"),
    **dict.fromkeys(("run", "call", "check_call", "check_output", "getoutput", "getstatusoutput", "Popen"), b"subprocess"),
    **dict.fromkeys(("Thread", "Timer"), b"threading"),
    **dict.fromkeys(("Process", "Pool", "get_context"), b"multiprocessing"),
    "register": b"atexit", "finalize": b"weakref", "factory": b"LazyLoader",
}
# ``import threading as t`` or ``from os import system as s``: a vocabulary name bound under
# a name no vocabulary holds (an import without ``as`` binds the vocabulary's own name).
_VOCABULARY_MODULES = rb"(?:os|sys|signal|threading|_thread|weakref|atexit|ctypes|subprocess|multiprocessing" \
                      rb"|concurrent|importlib|runpy|pkgutil|builtins)"
_IMPORT_AS = re.compile(rb"import[ \t]+(" + _VOCABULARY_MODULES + rb")\b[\w.]*[ \t]+as[ \t]+(\w+)")
_FROM_AS = re.compile(rb"from[ \t]+" + _VOCABULARY_MODULES + rb"\b[\w.]*[ \t]+import[ \t]*(?:\(((?:[^()#]|#[^\n]*)*)\)|([^\n]*))")
_NAME_AS = re.compile(rb"(\w+)[ \t]+as[ \t]+(\w+)")


def _aliases(source: bytes) -> dict:
    """Names bound under ``as`` to a vocabulary module, or to a name imported from one:
    alias -> what it stands for (the module's own name, or the imported name)."""
    found: dict = {}
    if b" as " not in source and b"\tas " not in source:
        return found
    for module, alias in _IMPORT_AS.findall(source):
        found[alias.decode()] = module.decode()
    for listed, line in _FROM_AS.findall(source):
        for name, alias in _NAME_AS.findall(listed or line):
            found[alias.decode()] = name.decode()
    return found


def _vocabulary(words: set, source: bytes, aliases: dict) -> set:
    """`words` (names of `LOAD_VOCABULARY`, or `aliases` of them) less the everyday ones
    whose load the file's bytes do not show; an alias is kept as what it stands for (the
    bytes spell the alias, not the module)."""
    kept = set()
    for word in words:
        if word in aliases:
            kept.add(aliases[word])
            continue
        pattern = _REFINED.get(word)
        home = _FROM_MODULE.get(word)
        if pattern is not None:
            if pattern.search(source) or re.search(rb"from\s+" + word.encode() + rb"\s+import", source):
                kept.add(word)
        elif home is not None:
            if re.search(rb"from[ \t]+" + home + rb"[ \t]+import[ \t]*(?:\([^()]*|[^\n]*)(?<!\w)" + word.encode()
                         + rb"(?!\w)", source):
                kept.add(word)
        else:
            kept.add(word)
    return kept


def _load_summary(table, source: bytes) -> tuple:
    """``(load words, suspects)``: the names of the load vocabulary (`LOAD_VOCABULARY`)
    the import-time code uses, and the qualnames of the module-level functions and methods
    whose bodies (nested functions included) use one, or call such a function of the
    module by name, as strings separated by spaces; a name bound under ``as`` counts as
    what it stands for. What the runner's follow-ups read to parse only the files that
    may load at import (`policy_checks.analysis.import_time`). A loader's method called on any
    object (``spec.loader.exec_module(m)``) is not a name: the spec or module it runs
    comes from a loader the vocabulary names (``module_from_spec``, ``find_spec``,
    ``sys.modules``) or from a function of the project, followed there."""
    aliases = _aliases(source)
    vocabulary = LOAD_VOCABULARY | aliases.keys() if aliases else LOAD_VOCABULARY
    words: set = set()
    suspects: dict = {}  # qualname -> words
    functions = []  # (qualname, table) of module-level functions, for the second pass
    stack = [(table, "", False)]
    while stack:
        current, prefix, inside = stack.pop()
        names = current.symbols.keys() & vocabulary
        if inside:
            if names:
                suspects.setdefault(prefix, set()).update(names)
            if "." not in prefix and current.type == _FUNCTION_TABLE:
                functions.append((prefix, current))
        elif names:
            words.update(n for n in names if current.symbols[n] & _USE)
        for child in current.children:
            if child.type == _FUNCTION_TABLE and not inside:
                qualname = f"{prefix}.{child.name}" if prefix else child.name
                stack.append((child, qualname, True))
            elif child.type == _CLASS_TABLE and not inside:
                stack.append((child, f"{prefix}.{child.name}" if prefix else child.name, False))
            else:
                stack.append((child, prefix, inside))
    words = _vocabulary(words, source, aliases)
    kept = {q for q, used in suspects.items() if _vocabulary(used, source, aliases)}
    if kept:  # a function of the module calling one of them by name may reach it too
        calls = {q: {n for n, flags in t.symbols.items() if flags & _USE and not flags & _BOUND_HERE}
                 for q, t in functions}
        grew = True
        while grew:
            grew = False
            for qualname, used in calls.items():
                if qualname not in kept and not used.isdisjoint(kept):
                    kept.add(qualname)
                    grew = True
    return " ".join(sorted(words)), " ".join(sorted(kept))


def project_words(source: bytes, top: str) -> tuple:
    """``(import words, class words)``, each a string of names separated by spaces: every
    name spelled in the file's imports of the project (relative ones, or of the top
    package `top`: the modules of their paths and the names they import), and the names
    of the classes it defines. Read from the bytes: where a function the import-time
    analysis follows may come from (`import_time.follow_calls`)."""
    words, head = set(), top.encode()
    for pattern in (_FROM_PROJECT, _IMPORT_PROJECT):
        for match in pattern.finditer(source):
            first = match.group(1)
            if first == head or pattern is _FROM_PROJECT and (first.startswith(b".") or first.split(b".")[0] == head):
                words.update(w.decode("utf-8", "replace") for w in _WORD.findall(match.group(0)))
    classes = {c.decode("utf-8", "replace") for c in _class_names(source)}
    return " ".join(sorted(words)), " ".join(sorted(classes))


# A parenthesised list of names ends at its ")", and never runs past the next "(": an
# unclosed one (hostile bytes) then costs a scan to the next import, not to the end of the
# file (which, repeated, is quadratic). Comments inside the list are skipped whole.
_FROM_PROJECT = re.compile(rb"from[ \t\\\n]+([\w.\x80-\xff]+)[ \t\\\n]+import[ \t\\]*(?:\((?:[^()#]|#[^\n]*)*\)|(?:[^\n\\]|\\.|\\\n)*)", re.S)
_IMPORT_PROJECT = re.compile(rb"import[ \t\\]+([\w\x80-\xff]+)(?:[\w.\x80-\xff \t,]|\\\n)*")
_WORD = re.compile(rb"[\w\x80-\xff]+")
_CLASS = re.compile(rb"class[ \t]+([\w\x80-\xff]+)")  # a class of its own: its methods' home


def _class_names(source: bytes) -> Iterator[bytes]:
    """The name of each ``class`` statement, the word first on its line but for spaces and
    tabs. Found by the word, then its line checked: a pattern anchored at every line's
    start is tried at every line (a third of a second on FlashInfer's core modules)."""
    for match in _CLASS.finditer(source):
        start = match.start()
        if not source[source.rfind(b"\n", 0, start) + 1:start].strip(b" \t"):
            yield match.group(1)


def unreadable(module: str, is_package: bool, error: OSError) -> FileFacts:
    """Facts of a file that could not be read: an EXP000 finding."""
    facts = FileFacts(module, is_package)
    facts.syntax_error = SyntaxProblem(1, 1, f"cannot read: {error.strerror or error}")
    return facts


def bytes_only(source: bytes, module: str, is_package: bool, top: Optional[str] = None) -> FileFacts:
    """Facts of a file no rule needs parsed: its suppression comments, found in its
    bytes, and with `top` (a core module's package) its `project_words` if it is ASCII. Not
    syntax-checked: a file whose bytes can concern no rule is not parsed at all (EXP000
    reports the files the checker must read and cannot)."""
    facts = FileFacts(module, is_package, complete=False, checked=False)
    if may_hold_suppressions(source):
        facts.suppressions = python_suppressions(source)
    if top is not None and source.isascii():  # else Python's reading of its names (NFKC) may differ
        facts.import_words, facts.class_words = project_words(source, top)
    return facts


def syntax_only(source: bytes, module: str, is_package: bool) -> FileFacts:
    """The summary of a file the import-time analysis's follow-ups ask about
    (`policy_checks.analysis.import_time`): its syntax error (EXP000), suppressions, the
    identifiers its import-time code binds or uses (`_module_level_names`) and the load
    vocabulary it uses (`_load_summary`), from one run of the parser and the symbol table,
    which build no syntax tree."""
    facts = FileFacts(module, is_package, complete=False)
    facts.syntax_error, table = _checked(source)
    if table is not None:
        facts.top_names = _module_level_names(table)
        facts.load_words, facts.suspects = _load_summary(table, source)
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


def _sets_experimental_flag(node: ast.ClassDef) -> bool:
    """Does the class body bind ``is_experimental = True`` (`markers.EXPERIMENTAL_FLAG`)?"""
    for statement in node.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else (
            [statement.target] if isinstance(statement, ast.AnnAssign) else [])
        value = getattr(statement, "value", None)
        if (isinstance(value, ast.Constant) and value.value is True
                and any(isinstance(t, ast.Name) and t.id == markers.EXPERIMENTAL_FLAG for t in targets)):
            return True
    return False


def to_data(facts: FileFacts) -> list:
    """`facts` as JSON-ready data (tuples encode as arrays)."""
    return [
        facts.module, facts.is_package, facts.complete, facts.syntax_error, facts.imports,
        list(facts.definitions.values()), facts.bindings, facts.backend_calls, facts.suppressions,
        facts.shadowed, facts.calls, facts.param_imports, facts.top_names, facts.loads, facts.body_calls,
        facts.load_words, facts.suspects, facts.checked, facts.import_words, facts.class_words, facts.published,
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
    (module, is_package, complete, error, imports, definitions, bindings, calls, suppressions, shadowed,
     module_calls, param_imports, top_names, loads, body_calls, load_words, suspects, checked, import_words,
     class_words, published) = data
    facts = FileFacts(module, is_package, complete=complete, checked=bool(checked))
    if published is not None:
        listed, all_form, lazy, bound, served = published
        facts.published = Published(tuple(Listed(name, line) for name, line in listed), str(all_form),
                                    tuple(LazyExport(*entry) for entry in lazy), str(bound), str(served))
    if import_words is not None:
        facts.import_words, facts.class_words = str(import_words), str(class_words or "")
    if error is not None:
        facts.syntax_error = SyntaxProblem(*error)
    if imports:
        facts.imports = [
            Import(m, tuple(map(tuple, names)), line, column, scope, tuple(functions), dynamic)
            for m, names, line, column, scope, functions, dynamic in imports
        ]
    if definitions:
        facts.definitions = {
            qualname: Definition(qualname, kind, line, column, tuple(decorators), end_line, first_line, flagged)
            for qualname, kind, line, column, decorators, end_line, first_line, flagged in definitions
        }
    if shadowed:
        facts.shadowed = [
            Definition(qualname, kind, line, column, tuple(decorators), end_line, first_line, flagged)
            for qualname, kind, line, column, decorators, end_line, first_line, flagged in shadowed
        ]
    if bindings:
        facts.bindings = {name: _binding(b) for name, b in bindings.items()}
    if calls:
        facts.backend_calls = [
            BackendCall(None if checks is None else _ref(checks), line, column) for checks, line, column in calls
        ]
    if top_names is not None:
        facts.top_names = str(top_names)
    if load_words is not None:
        facts.load_words, facts.suspects = str(load_words), str(suspects or "")
    if module_calls:
        facts.calls = [ModuleCall(func, tuple(args), line, column, scope) for func, args, line, column, scope in module_calls]
    if param_imports:
        facts.param_imports = [ParamImport(qualname, index, name) for qualname, index, name in param_imports]
    if loads:
        facts.loads = [Load(what, line, column, scope, tuple(functions), path)
                       for what, line, column, scope, functions, path in loads]
    if body_calls:
        facts.body_calls = [BodyCall(qualname, func) for qualname, func in body_calls]
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
