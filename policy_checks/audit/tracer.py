"""What runs inside an audit worker: a standalone script, standard library only.

The parent (`policy_checks.audit.sandbox`) starts ``python -I tracer.py CONFIG`` and
sends one JSON request a line on standard input; the answers go back, one JSON line
each, on the file descriptor that was standard output (the process's own standard
output and input are pointed at ``/dev/null`` first, so the code under test can
neither forge an answer by printing nor read the requests).

Inside, an audit hook (`sys.addaudithook`, which nothing can remove) does two things:

- refuses the network (``socket.connect``, ``socket.bind``, name lookups, ...) by
  raising `PermissionError`, and records each refusal; records each new process;
- while a request runs, records every module or file of the experimental package
  that is loaded or executed: the ``import`` event (by name), ``open`` of a code
  file by the import system, ``exec`` of a code object and ``compile`` with a
  file name, the last three by the file's real path (links followed), so a module
  reached through a link or a sourceless ``.pyc`` counts too. Each record carries
  the chain read from the Python stack at the event: the innermost frame of a
  core module (path and line), the loader between it and the event, and the
  experimental frames in between.

Third-party packages that are not installed are replaced by stand-ins (`StandIn`),
permissive objects, so that a core module importing them can still be run; the
package under test is never stood in for.

This file is not imported by the checker: it runs only in the child (``-I``, so
neither the checker nor the current directory is on its path).
"""

import builtins
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import json
import os
import sys
import time
import types

_CODE_SUFFIXES = tuple(importlib.machinery.all_suffixes()) + (".pyc",)
# audit events refused: the network
_REFUSED = (
    "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
    "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo",
)
# audit events of new processes: allowed (``ptxas --version`` at import is common) and
# recorded; they run without this hook, so the parent puts the worker in a network
# namespace of its own where it can (`policy_checks.audit.sandbox`)
_PROCESSES = ("subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.exec", "os.startfile", "pty.spawn")
_ON_A_SOCKET = ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg")
_MAX_FRAMES = 300
_WRAPPERS = ("traced_import", "traced_import_module")  # this file's frames inside an import
_MAX_REFUSALS = 20  # a module looping on refused calls reports its first ones
_HERE = os.path.realpath(__file__)


class _State:
    """The worker's configuration and what the current request has recorded."""

    def __init__(self, config: dict):
        self.root = config["root"]
        self.real_root = os.path.realpath(self.root)
        self.package = config["package"]
        self.experimental = config["experimental_package"]
        self.package_dir = os.path.realpath(os.path.join(self.root, *self.package.split(".")))
        self.experimental_dir = os.path.realpath(os.path.join(self.root, *self.experimental.split(".")))
        self.protected = {self.package.split(".")[0]}
        self.tracing = False
        self.busy = False  # the hook is running: what it calls itself is not traced
        self.records = {}  # (unit, core place) -> record (the first event of each wins)
        self.refusals = []
        self.processes = []
        self.stand_ins = set()
        self.failed = {}  # module -> its error, for what failed in this worker
        self.aot_environment = dict(config.get("aot_environment", {}))
        self._real_dirs = {}

    # paths ----------------------------------------------------------------------
    def real(self, path: str) -> str:
        """`path` with links followed (its directory's resolution remembered; the
        file itself costs one ``lstat``, and a full resolution only when it is a link)."""
        directory, name = os.path.split(path)
        real_dir = self._real_dirs.get(directory)
        if real_dir is None:
            real_dir = self._real_dirs[directory] = os.path.realpath(directory)
        if not name:
            return real_dir
        joined = os.path.join(real_dir, name)
        return os.path.realpath(joined) if os.path.islink(joined) else joined

    def experimental_file(self, path) -> str:
        """The path relative to the experimental directory of a file under it
        (links followed), else ""."""
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or not path or path.startswith("<"):
            return ""
        real = self.real(path)
        top = self.experimental_dir
        if real == top or real.startswith(top + os.sep):
            return os.path.relpath(real, top)
        return ""

    def unit_of_file(self, rel: str) -> str:
        """The experimental module a file under the experimental directory is."""
        parts = rel.split(os.sep)
        name = parts[-1]
        for suffix in sorted(_CODE_SUFFIXES, key=len, reverse=True):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
                break
        if parts[:-1] and parts[-1:] and parts[-2:-1] == ["__pycache__"]:
            parts = parts[:-1]  # a cached file: the module beside its folder
            name = name.split(".")[0]
        parts = [p for p in parts[:-1] if p != "."] + ([] if name in ("__init__", ".") else [name])
        return ".".join([self.experimental] + parts)

    def is_experimental(self, name: str) -> bool:
        return name == self.experimental or name.startswith(self.experimental + ".")

    def kind(self, filename: str) -> str:
        """core, experimental, import (the import machinery), tracer, or other."""
        if filename.startswith("<frozen importlib"):
            return "import"
        if filename.startswith("<"):
            return "other"
        real = self.real(filename)
        if real == _HERE:
            return "tracer"
        top = self.experimental_dir
        if real.startswith(top + os.sep):
            return "experimental"
        if real.startswith(self.package_dir + os.sep):
            return "core"
        return "other"

    def shown(self, filename: str) -> str:
        """A frame's file as the report names it: relative to the root, links kept."""
        for top in (self.root, self.real_root):
            if filename.startswith(top + os.sep):
                return filename[len(top) + 1:].replace(os.sep, "/")
        return filename


STATE = None


# the chain --------------------------------------------------------------------------

def _loader(frame, state) -> str:
    """What the frame just inside the core frame says about how the core line loaded code."""
    if frame is None:
        return ""
    code = frame.f_code
    name, filename = code.co_name, code.co_filename
    if filename.startswith("<frozen importlib._bootstrap_external>") and name in ("exec_module", "load_module"):
        return "a spec loader's exec_module"
    if filename.startswith("<frozen importlib"):
        return "import statement"
    module = frame.f_globals.get("__name__", "")
    if module == "importlib" and name == "import_module":
        return "importlib.import_module"
    if module == "importlib.util" or module == "importlib._bootstrap_external":
        return f"importlib.util.{name}"
    if module == "pkgutil":
        return f"pkgutil.{name}"
    if module == "runpy":
        return f"runpy.{name}"
    if filename.startswith("<"):
        return f"code run by exec/eval ({filename})"
    return f"{module or filename}.{name}"


def chain_at(state, first, event: str) -> dict:
    """The chain from the stack at an event: the innermost core frame, the loader,
    the experimental frames between them, and the core frames that called the
    innermost one (up to two, each in another file: a thin entry point's caller)."""
    frame, inner, inside, steps = first, None, [], 0
    found = None
    callers = []
    while frame is not None and steps < _MAX_FRAMES:
        kind = state.kind(frame.f_code.co_filename)
        if found is not None:
            if kind == "core":
                shown = state.shown(frame.f_code.co_filename)
                if shown != found["core"][0] and all(shown != c.rpartition(":")[0] for c in callers):
                    callers.append(f"{shown}:{frame.f_lineno}")
                    if len(callers) == 2:
                        break
            elif kind == "tracer" and frame.f_code.co_name not in _WRAPPERS:
                break  # the request itself: nothing above it is the tree's
        elif kind == "core":
            loader = _loader(inner, state) if inner is not None else (
                "exec" if event == "exec" else "compile" if event == "compile" else "import statement")
            found = {"core": [state.shown(frame.f_code.co_filename), frame.f_lineno],
                     "loader": loader, "through": inside[::-1]}
        else:
            filename = frame.f_code.co_filename
            if kind == "experimental" or (filename.startswith("<") and not filename.startswith("<frozen")):
                # experimental code, and code with no file of its own (exec'd text, a .pyc
                # compiled under a made-up name): both are links of the chain
                inside.append(f"{state.shown(filename)}:{frame.f_lineno}")
            if kind != "tracer":
                inner = frame
        frame = frame.f_back
        steps += 1
    if found is None:
        return {"core": None, "loader": _loader(inner, state) if inner is not None else "",
                "through": inside[::-1], "callers": []}
    found["callers"] = callers
    return found


def _loopback_bind(event: str, args) -> bool:
    """A bind to a loopback address (urllib3 probes IPv6 so at import): no traffic leaves."""
    if event != "socket.bind" or len(args) < 2 or not isinstance(args[1], tuple) or not args[1]:
        return False
    host = args[1][0]
    return isinstance(host, str) and (host in ("::1", "localhost") or host.startswith("127."))


def _record(state, unit: str, event: str, detail: str, frame=None, loader: str = "") -> None:
    """Record `unit` with the chain at `frame` (default: the frame that raised the
    event); the first record of a unit from one core line wins."""
    record = chain_at(state, frame or sys._getframe(2), event)
    key = (unit, tuple(record["core"]) if record["core"] else None)
    if key in state.records:
        return
    if loader and record["core"] and not record["through"]:
        record["loader"] = loader
    record.update(unit=unit, event=event, detail=detail)
    state.records[key] = record


def _experimental_name(state, module) -> str:
    """The experimental module `module` is (by name, or by its file through a link), else ""."""
    name = getattr(module, "__name__", None)
    if isinstance(name, str) and state.is_experimental(name):
        return name
    filename = getattr(module, "__file__", None)
    rel = state.experimental_file(filename) if isinstance(filename, str) else ""
    return state.unit_of_file(rel) if rel else ""


def _wrap_imports(state) -> None:
    """Wrap ``__import__`` and ``importlib.import_module`` so that a core line importing
    an experimental module already loaded (by an earlier line of the same request, so
    no import event fires) is recorded too."""
    original_import = builtins.__import__
    original_import_module = importlib.import_module

    def traced_import(name, globals=None, locals=None, fromlist=(), level=0):
        module = original_import(name, globals, locals, fromlist, level)
        if state.tracing and not state.busy:
            state.busy = True
            try:
                _note_imported(state, module, name, fromlist, sys._getframe(1), "import statement")
            finally:
                state.busy = False
        return module

    def traced_import_module(name, package=None):
        module = original_import_module(name, package)
        if state.tracing and not state.busy:
            state.busy = True
            try:
                _note_imported(state, module, None, (), sys._getframe(1), "importlib.import_module")
            finally:
                state.busy = False
        return module

    builtins.__import__ = traced_import
    importlib.import_module = traced_import_module


def _note_imported(state, module, name, fromlist, frame, loader: str) -> None:
    """Record the experimental modules an import handed to its caller: the module
    itself (``import a.b.c`` binds ``a`` but imports ``a.b.c``) and the submodules of
    its from-list."""
    found = []
    if name is not None and not fromlist:
        top = getattr(module, "__name__", "")
        leaf = sys.modules.get(top + name[name.index("."):]) if "." in name and top else None
        found.append(leaf if leaf is not None else module)
    else:
        found.append(module)
    for item in fromlist or ():
        value = getattr(module, item, None) if isinstance(item, str) else None
        if isinstance(value, types.ModuleType):
            found.append(value)
    for each in found:
        unit = _experimental_name(state, each)
        if unit:
            _record(state, unit, "import", "", frame, loader)


def _hook(event: str, args) -> None:
    state = STATE
    if state is None or state.busy:
        return
    if event.startswith(_REFUSED) and not _loopback_bind(event, args):
        state.busy = True
        try:
            if len(state.refusals) < _MAX_REFUSALS:
                where = chain_at(state, sys._getframe(1), event)
                shown = args[1:] if event in _ON_A_SOCKET else args  # the address, not the socket object
                state.refusals.append({"event": event, "args": repr(shown)[:200], "core": where["core"]})
        finally:
            state.busy = False
        raise PermissionError(f"the policy-check audit refuses {event} (no network)")
    if event.startswith(_PROCESSES):
        if len(state.processes) < _MAX_REFUSALS:
            state.busy = True
            try:
                where = chain_at(state, sys._getframe(1), event)
                state.processes.append({"event": event, "args": repr(args)[:200], "core": where["core"]})
            finally:
                state.busy = False
        return
    if not state.tracing or event not in ("import", "open", "exec", "compile"):
        return
    state.busy = True
    try:
        if event == "import":
            name = args[0]
            if isinstance(name, str) and state.is_experimental(name):
                _record(state, name, event, "")
            return
        if event == "open":
            path, mode = args[0], args[1]
            if mode not in ("r", "rb") or not isinstance(path, (str, bytes)):
                return
            text = os.fsdecode(path)
            if not text.endswith(_CODE_SUFFIXES):
                return
            rel = state.experimental_file(text)
            if rel and _by_import_system(sys._getframe(1)):
                _record(state, state.unit_of_file(rel), event, state.shown(text))
            return
        if event == "exec":
            code = args[0]
            filename = getattr(code, "co_filename", None)
            rel = state.experimental_file(filename) if filename else ""
            if rel:
                _record(state, state.unit_of_file(rel), event, state.shown(filename))
            return
        if event == "compile":
            filename = args[1] if len(args) > 1 else None
            rel = state.experimental_file(filename) if filename else ""
            if rel:
                _record(state, state.unit_of_file(rel), event, state.shown(os.fsdecode(filename)))
    finally:
        state.busy = False


def _by_import_system(frame) -> bool:
    """Did the import machinery (or a loader) open the file, rather than, say, linecache?"""
    steps = 0
    while frame is not None and steps < 12:
        code = frame.f_code
        if code.co_filename.startswith("<frozen importlib") or code.co_name in ("get_data", "get_code", "exec_module"):
            return True
        frame = frame.f_back
        steps += 1
    return False


# stand-ins --------------------------------------------------------------------------

# Python's own special names, and those libraries probe with getattr (typing, inspect,
# numpy, torch, pickle): a stand-in has none of them, so a probe takes its "no" branch.
# Any other name, a library's own dunder (``__extract_mlir_values__``) included, is
# another stand-in.
_PROBED = frozenset(name for kind in (type, types.FunctionType, types.ModuleType, int, list)
                    for name in dir(kind) if name.startswith("__")) | {
    "__wrapped__", "__origin__", "__args__", "__parameters__", "__orig_bases__", "__orig_class__", "__all__",
    "__path__", "__file__", "__spec__", "__loader__", "__package__", "__builtins__", "__signature__",
    "__text_signature__", "__self__", "__func__", "__get__", "__set__", "__delete__", "__set_name__",
    "__class_getitem__", "__mro_entries__", "__getstate__", "__setstate__", "__reduce__", "__reduce_ex__",
    "__copy__", "__deepcopy__", "__getnewargs__", "__getnewargs_ex__", "__iter__", "__next__", "__aiter__",
    "__anext__", "__await__", "__enter__", "__exit__", "__aenter__", "__aexit__", "__fspath__", "__array__",
    "__array_interface__", "__array_struct__", "__array_priority__", "__array_ufunc__", "__array_function__",
    "__cuda_array_interface__", "__dlpack__", "__dlpack_device__", "__torch_function__", "__torch_dispatch__",
    "__len__", "__length_hint__", "__contains__", "__bool__", "__index__", "__int__", "__float__", "__complex__",
    "__bytes__", "__slots__", "__weakref__", "__dataclass_fields__", "__dataclass_params__", "__attrs_attrs__",
    "__pydantic_core_schema__", "__get_pydantic_core_schema__", "__set__", "__instancecheck__",
    "__subclasscheck__", "__prepare__", "__abstractmethods__", "__isabstractmethod__", "__match_args__",
    "__code__", "__defaults__", "__kwdefaults__", "__closure__", "__globals__", "__annotations__",
    "__type_params__", "__final__", "__protocol_attrs__", "_is_protocol", "__qualname__", "__name__",
    "__module__", "__doc__", "__dict__", "__class__",
}


class StandIn:
    """Stands in for anything of a third-party package that is not installed: every
    attribute and item is another stand-in, a call returns one (or, called with one
    callable as a decorator, that callable unchanged), it can be a base class, a
    context manager, iterated (empty), compared and converted without error."""

    def __init__(self, name: str):
        object.__setattr__(self, "_stand_in_name", name)

    def __getattr__(self, name: str):
        if name in _PROBED:
            raise AttributeError(name)
        return StandIn(f"{self._stand_in_name}.{name}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and inspect.isclass(args[0]):
            return args[0]
        if len(args) == 1 and not kwargs and inspect.isroutine(args[0]):
            return _decorated(args[0], f"{self._stand_in_name}()")
        return StandIn(f"{self._stand_in_name}()")

    def __getitem__(self, key):
        return StandIn(f"{self._stand_in_name}[]")

    def __mro_entries__(self, bases):
        return (_stand_in_class(self._stand_in_name),)

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return False

    def __int__(self):
        return 0

    __index__ = __int__

    def __float__(self):
        return 0.0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return f"<stand-in {self._stand_in_name}>"

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __lt__(self, other):
        return False

    __gt__ = __le__ = __ge__ = __lt__

    def __or__(self, other):
        return self

    __ror__ = __and__ = __rand__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __or__
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __or__
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = __xor__ = __rxor__ = __matmul__ = __rmatmul__ = __or__

    def __neg__(self):
        return self

    __pos__ = __invert__ = __abs__ = __neg__


def _decorated(function, name: str):
    """What a stand-in decorator makes of a function: the function, callable as
    before, whose missing attributes (``kernel.set_name_prefix(...)``) are stand-ins."""

    class StandInFunction:
        def __init__(self):
            functools.update_wrapper(self, function)

        def __call__(self, *args, **kwargs):
            return function(*args, **kwargs)

        def __get__(self, instance, owner=None):
            return self if instance is None else functools.partial(self, instance)

        def __getattr__(self, attribute):
            if attribute in _PROBED:
                raise AttributeError(attribute)
            return StandIn(f"{name}.{attribute}")

    return StandInFunction()


def _stand_in_class(name: str) -> type:
    """A real class to derive from, for ``class X(missing.Base):``."""

    class StandInBase:
        def __init__(self, *args, **kwargs):
            pass

        def __init_subclass__(cls, **kwargs):
            pass

        def __getattr__(self, attribute):
            if attribute in _PROBED:
                raise AttributeError(attribute)
            return StandIn(f"{name}().{attribute}")

        def __class_getitem__(cls, item):
            return cls

    StandInBase.__qualname__ = StandInBase.__name__ = name.rpartition(".")[2] or "StandIn"
    return StandInBase


class StandInModule(types.ModuleType):
    """A module standing in for a package that is not installed."""

    __version__ = "0.0.0"

    def __getattr__(self, name: str):
        if name in _PROBED:
            raise AttributeError(name)
        return StandIn(f"{self.__name__}.{name}")


class _StandInLoader(importlib.abc.Loader):
    def create_module(self, spec):
        module = StandInModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


class StandInFinder(importlib.abc.MetaPathFinder):
    """Last on the meta path: a third-party module nobody else found (a package not
    installed, a submodule of one, or a module an installed package lacks) becomes a
    stand-in. Never the package under test nor its companion distributions
    (``flashinfer_cubin``: code treats them as optional, and absent is a real
    configuration), never the standard library."""

    def __init__(self, state):
        self.state = state

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in sys.stdlib_module_names or not self.state.tracing:
            return None
        if any(top == own or top.startswith(own + "_") for own in self.state.protected):
            return None  # the tree's own package, and its companions (flashinfer_cubin): absent is a real case
        if "." in fullname and not isinstance(sys.modules.get(fullname.rpartition(".")[0]), StandInModule):
            self.state.stand_ins.add(fullname)  # a module an installed package lacks (cuda.tile beside cuda)
        else:
            self.state.stand_ins.add(top)
        return importlib.machinery.ModuleSpec(fullname, _StandInLoader(), is_package=True)


class _TreeFinder(importlib.abc.MetaPathFinder):
    """First on the meta path: the package under test comes from the tree, whatever
    editable install or path hook would find another copy first."""

    def __init__(self, state):
        self.state = state

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.state.package.split(".")[0]:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [self.state.root])


# requests ---------------------------------------------------------------------------

def _forget_experimental(state, before: set) -> None:
    """Drop every experimental module (by name or by file) loaded since `before` from
    sys.modules and from its parent's attributes, so the next importer loads it again,
    with its own chain (those loaded earlier were dropped after their own request)."""
    for name in set(sys.modules) - before:
        module = sys.modules.get(name)
        filename = getattr(module, "__file__", None)
        if state.is_experimental(name) or (isinstance(filename, str) and state.experimental_file(filename)):
            sys.modules.pop(name, None)
            parent, _, child = name.rpartition(".")
            holder = sys.modules.get(parent)
            if holder is not None and getattr(holder, child, None) is module:
                try:
                    delattr(holder, child)
                except (AttributeError, TypeError):
                    pass


def _loaded_unseen(state, before: set) -> None:
    """Modules new in sys.modules whose file is experimental but that no event showed
    (an extension module through a link, say): recorded without a chain."""
    for name in set(sys.modules) - before:
        module = sys.modules.get(name)
        spec = getattr(module, "__spec__", None)
        for filename in (getattr(module, "__file__", None), getattr(spec, "origin", None)):
            rel = state.experimental_file(filename) if isinstance(filename, str) else ""
            if rel:
                unit = state.unit_of_file(rel)
                if not any(key[0] in (unit, name) for key in state.records):
                    state.records[(unit, None)] = {"core": None, "loader": f"found in sys.modules as {name}",
                                           "through": [], "unit": unit, "event": "modules", "detail": filename}
                break


def _error(exc: BaseException) -> dict:
    text = str(exc).replace("\n", " ")
    tb, where = exc.__traceback__, None
    while tb is not None:
        if STATE.kind(tb.tb_frame.f_code.co_filename) in ("core", "experimental"):
            where = [STATE.shown(tb.tb_frame.f_code.co_filename), tb.tb_lineno]
        tb = tb.tb_next
    return {"type": type(exc).__name__, "message": text[:400], "at": where}


def _traced(state, action) -> dict:
    """Run `action` with the tracing on; what it recorded, refused and stood in for."""
    state.records, state.refusals, state.processes = {}, [], []
    known_stand_ins = set(state.stand_ins)
    before = set(sys.modules)
    started = time.monotonic()
    answer = {}
    state.tracing = True
    try:
        answer["value"] = action()
        answer["ok"] = True
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from imported code too
        answer["ok"] = False
        answer["error"] = _error(exc)
    finally:
        state.tracing = False
    _loaded_unseen(state, before)
    answer["records"] = list(state.records.values())
    answer["refusals"] = state.refusals
    answer["processes"] = state.processes
    answer["stand_ins"] = sorted(state.stand_ins - known_stand_ins)
    answer["seconds"] = round(time.monotonic() - started, 3)
    _forget_experimental(state, before)
    return answer


class AncestorFailed(ImportError):
    """A package above the requested module failed to import in this worker."""


def _bare_package(state, name: str) -> bool:
    """Put a bare module for the package `name` (its ``__path__``, not its
    ``__init__``) in sys.modules, so that its modules can be imported although its
    ``__init__`` fails; False when it cannot be found."""
    parent, _, _ = name.rpartition(".")
    path = getattr(sys.modules.get(parent), "__path__", None) if parent else [state.root]
    spec = importlib.machinery.PathFinder.find_spec(name, path) if path is not None else None
    if spec is None or spec.submodule_search_locations is None:
        return False
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if parent:
        setattr(sys.modules[parent], name.rpartition(".")[2], module)
    return True


def _import(state, name: str):
    parts = name.split(".")
    for depth in range(1, len(parts)):
        ancestor = ".".join(parts[:depth])
        failed = state.failed.get(ancestor)
        if failed is not None and ancestor not in sys.modules and not _bare_package(state, ancestor):
            raise AncestorFailed(f"its package {ancestor} failed to import: {failed}")
    try:
        module = importlib.import_module(name)
    except BaseException as exc:
        if isinstance(exc, AncestorFailed):
            raise
        error = f"{type(exc).__name__}: {str(exc)[:300]}"
        state.failed[name] = error
        # a package above `name` that failed on the way (another worker may not have
        # tried it yet): remember it, and try once more under a bare package
        broken = next((".".join(parts[:d]) for d in range(1, len(parts)) if ".".join(parts[:d]) not in sys.modules),
                      None)
        if broken is None:
            raise
        state.failed[broken] = error
        if not _bare_package(state, broken):
            raise
        module = importlib.import_module(name)
    filename = getattr(module, "__file__", None) or ""
    if name == state.package and not os.path.realpath(filename).startswith(state.package_dir + os.sep):
        raise ImportError(f"{name} came from {filename}, not from the tree under test")
    return None


class _Everything(dict):
    """A capabilities mapping that has every capability (``.get(key, default)`` is True)."""

    def get(self, key, default=None):
        return True

    def __getitem__(self, key):
        return True

    def __contains__(self, key):
        return True


def _spec_facts(state, spec) -> dict:
    """What the audit reads of a returned JIT spec: name, sources, origin."""
    sources = []
    for source in list(getattr(spec, "sources", None) or [])[:2000]:
        try:
            sources.append(os.fspath(source))
        except TypeError:
            continue
    created = getattr(spec, "created_in", None)
    flagged = [s for s in sources if state.experimental_file(s)]
    return {
        "name": str(getattr(spec, "name", ""))[:200],
        "experimental_sources": [state.shown(s) for s in flagged][:5],
        "created_in": created if isinstance(created, str) else None,
        "experimental": getattr(spec, "experimental", False) is True,
    }


def _aot(state, module_name: str):
    """Call the AOT listing of `module_name` in whichever shape it has; the specs. The
    environment an AOT build job sets (every target architecture) is set first, and
    sleeping is cut short: a listing that downloads retries with back-off, and the
    network is refused anyway."""
    for key, value in state.aot_environment.items():
        os.environ.setdefault(key, value)
    sleep = time.sleep
    time.sleep = lambda seconds: sleep(min(seconds, 0.01))
    try:
        return _aot_listing(state, module_name)
    finally:
        time.sleep = sleep


def _aot_listing(state, module_name: str):
    module = importlib.import_module(module_name)
    if hasattr(module, "registered_specs"):
        shape, where = "registered_specs()", module.registered_specs
        specs = module.registered_specs()
    elif hasattr(module, "_register_builtin"):
        shape, where = "_register_builtin()", module._register_builtin
        module._register_builtin()
        specs = list(getattr(module, "_registry", {}).values())
    elif hasattr(module, "gen_all_modules"):
        shape, where = "gen_all_modules(...)", module.gen_all_modules
        config = module.get_default_config() if hasattr(module, "get_default_config") else {}
        arguments = []
        for parameter in inspect.signature(module.gen_all_modules).parameters.values():
            key = parameter.name.rstrip("_")
            if key in config:
                arguments.append(config[key])
            elif "capabilit" in key:
                arguments.append(_Everything())
            elif parameter.default is not inspect.Parameter.empty:
                arguments.append(parameter.default)
            elif parameter.annotation in (bool, "bool"):
                arguments.append(True)
            else:
                raise TypeError(f"no value for gen_all_modules's parameter {parameter.name!r}")
        specs = module.gen_all_modules(*arguments)
    else:
        raise LookupError(f"{module_name} has neither registered_specs, _register_builtin nor gen_all_modules")
    code = getattr(where, "__code__", None)
    line = code.co_firstlineno if code is not None else 1
    return {"shape": shape, "at": [state.shown(getattr(module, "__file__", "") or ""), line],
            "specs": [_spec_facts(state, spec) for spec in list(specs or [])[:20000]]}


def _preload(names) -> list:
    """Import the heavy third-party packages once, before any request (untraced, no
    stand-ins): what imported."""
    done = []
    for name in names:
        try:
            importlib.import_module(name)
            done.append(name)
        except BaseException:
            pass
    return done


def _exit_with_parent() -> None:
    """A thread that ends the worker when the audit that started it is gone (killed
    mid-request, so nobody closes its input and a hung import would run on)."""
    import threading

    parent, sleep = os.getppid(), time.sleep  # the AOT listing cuts time.sleep short meanwhile

    def watch():
        while os.getppid() == parent:
            sleep(1.0)
        os._exit(3)

    threading.Thread(target=watch, name="policy-check-audit-watchdog", daemon=True).start()


def main() -> None:
    global STATE
    with open(sys.argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")
    sys.stdout = open(os.devnull, "w", encoding="utf-8")
    # never write into the tree under test (a bytecode prefix would also hide every
    # installed package's own bytecode, and recompile torch in each worker)
    sys.dont_write_bytecode = True
    state = _State(config)
    sys.path[:0] = [state.root]
    sys.meta_path.insert(0, _TreeFinder(state))
    if config.get("stand_ins", True):
        sys.meta_path.append(StandInFinder(state))
    STATE = state
    _exit_with_parent()
    sys.addaudithook(_hook)
    _wrap_imports(state)
    preloaded = _preload(config.get("preload", ()))
    answers.write(json.dumps({"ready": True, "preloaded": preloaded}) + "\n")
    for line in requests:
        request = json.loads(line)
        if request["op"] == "import":
            answer = _traced(state, lambda: _import(state, request["module"]))
        elif request["op"] == "aot":
            answer = _traced(state, lambda: _aot(state, request["module"]))
        else:
            answer = {"ok": False, "error": {"type": "ValueError", "message": "unknown request", "at": None}}
        answer["id"] = request.get("id")
        answers.write(json.dumps(answer, default=repr) + "\n")


if __name__ == "__main__":
    main()
