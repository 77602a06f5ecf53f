"""What runs inside an audit worker: a standalone script, standard library only.

The parent (`policy_checks.audit.sandbox`) starts ``python -I tracer.py``. It
sends three things on standard input:

- its configuration, as the first JSON line. The worker then imports the
  preloads, with the tree not yet on its path;
- ``{"tree": true}``, once the private copy of the tree is whole;
- then one JSON request a line.

The answers go back, one JSON line each, on the file descriptor that was standard
output. The process's own standard output and input are pointed at ``/dev/null``
first. So the code under test can neither forge an answer by printing nor read the
requests.

It installs the isolation every child of the audit shares (`child_setup.py`). That
puts the tree first, provides stand-ins, and ends with the parent. Then an audit
hook (`sys.addaudithook`, which nothing can remove) does two things:

- It refuses the network (`child_setup.refuses`). While a request runs, it also
  refuses writes outside the audit's scratch folder (`child_setup.refused_write`).
  It refuses by raising `PermissionError`, and records each refusal. It also
  records each new process.
- While a request runs, it records every module or file of the experimental
  package that is loaded, read or executed, in any thread. It watches the
  ``import`` event, by name. It watches any ``open`` of a file under the package,
  in any mode, by anyone; a pool thread reading its text counts too. It watches a
  library loaded from it (``ctypes.dlopen``), ``exec`` of a code object, and
  ``compile`` with a file name. All these go by the file's real path, links
  followed. So a module reached through a link, or a sourceless ``.pyc``, counts
  too. It also watches ``compile`` or ``marshal.loads`` of the bytes of one of the
  package's files, whatever name it is given (`_State.by_content`).

Each record carries the chain read from the Python stack at the event. That is the
innermost frame of a core module (path and line), the loader between it and the
event, and the experimental frames in between.

After the request's own code, tracing goes on through what it left running
(`_afterwards`). That covers the threads it started that are not daemons, and the
atexit handlers it registered, run then, once. It also covers its daemon threads,
for a short grace.

Third-party packages that are not installed are replaced by stand-ins
(`child_setup.StandIn`). They are permissive objects. So a core module importing
them can still be run while a request is traced. This happens only when the tree's
own code asks. An installed package's optional import keeps its "not installed"
branch. It never happens for the package under test.

This file is not imported by the checker. It runs only in the child, under ``-I``.
So neither the checker nor the current directory is on its path.
"""

import builtins
import importlib
import importlib.machinery
import importlib.util
import atexit
import inspect
import json
import os
import sys
import threading
import time
import types

_CODE_SUFFIXES = tuple(importlib.machinery.all_suffixes()) + (".pyc",)
# audit events of new processes: allowed (``ptxas --version`` at import is common) and
# recorded; they run without this hook, so the parent puts the worker in a network
# namespace of its own where it can (`policy_checks.audit.sandbox`)
_TRACED = ("import", "open", "exec", "compile", "ctypes.dlopen", "marshal.loads")
_PROCESSES = ("subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.exec", "os.startfile", "pty.spawn")
_MAX_FRAMES = 300
_WRAPPERS = ("traced_import", "traced_import_module")  # this file's frames inside an import
_MAX_REFUSALS = 20  # a module looping on refused calls reports its first ones
_MAX_CONTENT = 4 << 20  # bytes of an experimental file remembered by content (larger ones: by name only)
_MIN_CONTENT = 16  # bytes (less blank ones) below which a file's text is too common to tell anything
DAEMON_GRACE = 0.5  # seconds a request's daemon threads may still run, traced, after it
_HERE = os.path.realpath(__file__)


# the isolation shared with the collection's child, loaded by its path (`child_setup.py`)
ISOLATION = importlib.util.module_from_spec(importlib.util.spec_from_file_location(
    "_policy_check_child_setup", os.path.join(os.path.dirname(_HERE), "child_setup.py")))
ISOLATION.__spec__.loader.exec_module(ISOLATION)
_MACHINERY = (_HERE, os.path.realpath(ISOLATION.__file__))  # the audit's own frames


class _State:
    """The worker's configuration and what the current request has recorded."""

    def __init__(self, config: dict):
        self.root = config["root"]
        self.real_root = os.path.realpath(self.root)
        self.package = config["package"]
        self.experimental = config["experimental_package"]
        self.package_dir = os.path.realpath(os.path.join(self.root, *self.package.split(".")))
        self.experimental_dir = os.path.realpath(os.path.join(self.root, *self.experimental.split(".")))
        self.experimental_dir_shown = self.experimental.replace(".", "/")
        self.protected = {self.package.split(".")[0]}
        self.tracing = False
        self._local = threading.local()  # per thread: the hook is running there (`busy`)
        self.exit_handlers = []  # atexit handlers registered by the current request, run at its end
        self.contents = {}  # length -> [(bytes, rel)] of the experimental package's files (`by_content`)
        self.records = {}  # (unit, core place) -> record (the first event of each wins)
        self.refusals = []
        self.processes = []
        self.stand_ins = set()
        self.failed = {}  # module -> its error, for what failed in this worker
        self.aot_environment = dict(config.get("aot_environment", {}))
        self.aot_listing = config.get("aot_listing") or ""  # the settings' name of the AOT listing function
        self.scratch = config.get("scratch") or ""  # the one folder the code under test may write to
        self._real_dirs = {}

    @property
    def busy(self) -> bool:
        """Is the hook, or a wrapper, running in this thread?

        What it calls itself is not traced. Another thread's events still are.
        """
        return getattr(self._local, "busy", False)

    @busy.setter
    def busy(self, value: bool) -> None:
        self._local.busy = value

    # content --------------------------------------------------------------------
    def read_contents(self) -> None:
        """Remember every file of the experimental package by its bytes, before any request.

        So code compiled from such text is known under any name.
        """
        for directory, folders, files in os.walk(self.experimental_dir):
            folders[:] = [f for f in folders if f != "__pycache__"]
            for name in files:
                path = os.path.join(directory, name)
                try:
                    if os.path.islink(path) or os.path.getsize(path) > _MAX_CONTENT:
                        continue
                    with open(path, "rb") as handle:
                        data = handle.read(_MAX_CONTENT + 1)
                except OSError:
                    continue
                if len(data.strip()) >= _MIN_CONTENT:  # an empty __init__, "X = 1": everybody's text
                    rel = os.path.relpath(path, self.experimental_dir)
                    self.contents.setdefault(len(data), []).append((data, rel))

    def by_content(self, source) -> str:
        """The experimental file whose bytes `source` is, relative to its package, else "".

        The name it is compiled or kept under does not matter.
        """
        if isinstance(source, str):
            try:
                source = source.encode("utf-8")
            except UnicodeError:
                return ""
        if not isinstance(source, (bytes, bytearray)) or len(source) not in self.contents:
            return ""
        return next((rel for data, rel in self.contents[len(source)] if data == source), "")

    # paths ----------------------------------------------------------------------
    def real(self, path: str) -> str:
        """`path` with links followed.

        Its directory's resolution is remembered. The file itself costs one
        ``lstat``, and a full resolution only when it is a link.
        """
        directory, name = os.path.split(path)
        real_dir = self._real_dirs.get(directory)
        if real_dir is None:
            real_dir = self._real_dirs[directory] = os.path.realpath(directory)
        if not name:
            return real_dir
        joined = os.path.join(real_dir, name)
        return os.path.realpath(joined) if os.path.islink(joined) else joined

    def experimental_file(self, path) -> str:
        """The path of a file under the experimental directory, relative to it, else "".

        Links are followed.
        """
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
        """The experimental module a file under the experimental directory is.

        A file that is no module, such as a kernel source or a library, gives its
        package, then its name.
        """
        parts = rel.split(os.sep)
        name = parts[-1]
        for suffix in sorted(_CODE_SUFFIXES, key=len, reverse=True):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
                break
        else:
            if name not in (".", ""):
                folder = [p for p in parts[:-1] if p not in (".", "__pycache__")]
                return ".".join([self.experimental] + folder) + "/" + name
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
        if real in _MACHINERY:
            return "tracer"
        top = self.experimental_dir
        if real.startswith(top + os.sep):
            return "experimental"
        if real.startswith(self.package_dir + os.sep):
            return "core"
        return "other"

    def relative(self, text: str) -> str:
        """`text` with the tree's location dropped from the paths it names.

        The tree is a private copy at a new temporary path each run. A verdict must
        not show that path.
        """
        for top in (self.root, self.real_root):
            text = text.replace(top + os.sep, "")
        return text

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
    """The chain from the stack at an event.

    It holds the innermost core frame, the loader, and the experimental frames
    between them. It also holds up to two core frames that called the innermost one,
    each in another file, such as a thin entry point's caller. It stops at the first
    core module's top level. Above that lies only whoever imported that module first
    in this worker. That depends on the order the requests came in. So it is never
    part of the chain, and the same line reads the same on every run.

    ``at_import`` means the load happened while a core module's top level ran. That
    is an import, whichever request reached it. It did not happen in a function the
    request called.
    """
    frame, inner, inside, steps = first, None, [], 0
    found = None
    callers = []
    while frame is not None and steps < _MAX_FRAMES:
        kind = state.kind(frame.f_code.co_filename)
        if found is not None:
            if kind == "core":
                shown = state.shown(frame.f_code.co_filename)
                if (len(callers) < 2 and shown != found["core"][0]
                        and all(shown != c.rpartition(":")[0] for c in callers)):
                    callers.append(f"{shown}:{frame.f_lineno}")
                if frame.f_code.co_name == "<module>":
                    found["at_import"] = True
                    break
            elif kind == "tracer" and frame.f_code.co_name not in _WRAPPERS:
                break  # the request itself: nothing above it is the tree's
        elif kind == "core":
            loader = _loader(inner, state) if inner is not None else (
                "exec" if event == "exec" else "compile" if event == "compile" else "import statement")
            found = {"core": [state.shown(frame.f_code.co_filename), frame.f_lineno],
                     "loader": loader, "through": inside[::-1], "at_import": frame.f_code.co_name == "<module>"}
            if found["at_import"]:
                break
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
                "through": inside[::-1], "callers": [], "at_import": False}
    found["callers"] = callers
    return found


def _record(state, unit: str, event: str, detail: str, frame=None, loader: str = "") -> dict:
    """Record `unit` with the chain at `frame`.

    `frame` defaults to the frame that raised the event. The first record of a unit
    from one core line wins, and is returned.
    """
    record = chain_at(state, frame or sys._getframe(2), event)
    if record["core"] is None and threading.current_thread() is not threading.main_thread():
        # a pool or background thread whose own stack holds no core code: the core line
        # the request's thread is at meanwhile (waiting on the pool, say) is the one to charge
        waiting = sys._current_frames().get(threading.main_thread().ident)
        behind = chain_at(state, waiting, event) if waiting is not None else None
        if behind is not None and behind["core"] is not None:
            behind.update(loader=f"on the thread {threading.current_thread().name}",
                          through=record["through"], callers=behind["callers"])
            record = behind
    key = (unit, tuple(record["core"]) if record["core"] else None)
    if key in state.records:
        return state.records[key]
    if loader and record["core"] and not record["through"]:
        record["loader"] = loader
    record.update(unit=unit, event=event, detail=detail)
    state.records[key] = record
    return record


def _experimental_name(state, module) -> str:
    """The experimental module `module` is, by name or by its file through a link, else ""."""
    name = getattr(module, "__name__", None)
    if isinstance(name, str) and state.is_experimental(name):
        return name
    filename = getattr(module, "__file__", None)
    rel = state.experimental_file(filename) if isinstance(filename, str) else ""
    return state.unit_of_file(rel) if rel else ""


def _wrap_imports(state) -> None:
    """Wrap ``__import__`` and ``importlib.import_module``.

    Then a core line importing an experimental module already loaded is recorded
    too. An earlier line of the same request loaded it, so no import event fires.
    """
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
    """Record the experimental modules an import handed to its caller.

    That is the module itself, and the submodules of its from-list.
    ``import a.b.c`` binds ``a`` but imports ``a.b.c``.
    """
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
    asking = state.kind(frame.f_code.co_filename) != "experimental"  # the core line (or text it exec'd) itself
    for each in found:
        unit = _experimental_name(state, each)
        if unit:
            record = _record(state, unit, "import", "", frame, loader)
            if asking:  # what the line asked for: the finding's subject, whatever else was loaded first
                record["asked"] = True


def _caching_bytecode(frame) -> bool:
    """Is `frame` the import system writing a module's bytecode cache?"""
    code = frame.f_code if frame is not None else None
    return (code is not None and code.co_filename == "<frozen importlib._bootstrap_external>"
            and code.co_name in ("set_data", "_write_atomic"))


def _hook(event: str, args) -> None:
    state = STATE
    if state is None:  # the preloads: only the network is refused
        if ISOLATION.refuses(event, args):
            raise ISOLATION.refusal(event)
        return
    if state.busy:
        return
    refused = ISOLATION.refused_write(event, args, state.scratch) if state.tracing and state.scratch else ""
    if refused:
        if _caching_bytecode(sys._getframe(1)):
            # an installed package's missing bytecode: the import system gives up on the
            # error quietly, and so does the report (the code under test asked nothing)
            raise ISOLATION.write_refusal(refused)
        state.busy = True
        try:
            if len(state.refusals) < _MAX_REFUSALS:
                where = chain_at(state, sys._getframe(1), event)
                state.refusals.append({"event": "write", "args": refused[:200], "core": where["core"]})
        finally:
            state.busy = False
        raise ISOLATION.write_refusal(refused)
    if ISOLATION.refuses(event, args):
        state.busy = True
        try:
            if len(state.refusals) < _MAX_REFUSALS:
                where = chain_at(state, sys._getframe(1), event)
                shown = args[1:] if event in ISOLATION.ON_A_SOCKET else args  # the address, not the socket object
                state.refusals.append({"event": event, "args": state.relative(repr(shown))[:200],
                                       "core": where["core"]})
        finally:
            state.busy = False
        raise ISOLATION.refusal(event)
    if event.startswith(_PROCESSES):
        if len(state.processes) < _MAX_REFUSALS:
            state.busy = True
            try:
                where = chain_at(state, sys._getframe(1), event)
                state.processes.append({"event": event, "args": state.relative(repr(args))[:200],
                                        "core": where["core"]})
            finally:
                state.busy = False
        return
    if not state.tracing or event not in _TRACED:
        return
    state.busy = True
    try:
        if event == "import":
            name = args[0]
            if isinstance(name, str) and state.is_experimental(name):
                _record(state, name, event, "")
            return
        if event in ("open", "ctypes.dlopen"):
            # any file of the experimental package opened, in any mode, by anyone (the
            # import system, a pool thread reading its text), and any library loaded from
            # it; but the import system caching a module's bytecode loads nothing
            path = args[0] if args else None
            if not isinstance(path, (str, bytes)) or _caching_bytecode(sys._getframe(1)):
                return
            text = os.fsdecode(path)
            rel = state.experimental_file(text)
            if rel:
                _record(state, state.unit_of_file(rel), event, state.shown(text))
            return
        if event == "marshal.loads":
            rel = state.by_content(args[0] if args else None)
            if rel:
                _record(state, state.unit_of_file(rel), event, "")
            return
        if event == "exec":
            code = args[0]
            filename = getattr(code, "co_filename", None)
            rel = state.experimental_file(filename) if filename else ""
            if rel:
                _record(state, state.unit_of_file(rel), event, state.shown(filename))
            return
        if event == "compile":
            # by the name it is compiled under, or by its text, whatever name it was given
            source, filename = args[0] if args else None, args[1] if len(args) > 1 else None
            rel = state.experimental_file(filename) if filename else ""
            shown = state.shown(os.fsdecode(filename)) if rel else ""
            if not rel:
                rel = state.by_content(source)
                if rel and _holds(filename, source):
                    rel = ""  # a stable module's own file, compiled under its name: judged by name, as statically
                named = state.shown(os.fsdecode(filename)) if isinstance(filename, (str, bytes)) else "code"
                shown = f"{named} holding the text of {state.experimental_dir_shown}/{rel}" if rel else ""
            if rel:
                _record(state, state.unit_of_file(rel), event, shown)
    finally:
        state.busy = False


# requests ---------------------------------------------------------------------------

def _forget_experimental(state, before: set) -> None:
    """Drop every experimental module loaded since `before`, by name or by file.

    It goes from sys.modules and from its parent's attributes. So the next importer
    loads it again, with its own chain. Those loaded earlier were dropped after their
    own request.
    """
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
    """Modules new in sys.modules whose file is experimental but that no event showed.

    An example is an extension module through a link. They are recorded without a
    chain.
    """
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
    text = STATE.relative(str(exc).replace("\n", " "))
    tb, where = exc.__traceback__, None
    while tb is not None:
        if STATE.kind(tb.tb_frame.f_code.co_filename) in ("core", "experimental"):
            where = [STATE.shown(tb.tb_frame.f_code.co_filename), tb.tb_lineno]
        tb = tb.tb_next
    return {"type": type(exc).__name__, "message": text[:400], "at": where}


def _traced(state, action) -> dict:
    """Run `action` with the tracing on. Returns what it recorded, refused and stood in for."""
    state.records, state.refusals, state.processes = {}, [], []
    known_stand_ins = set(state.stand_ins)
    before = set(sys.modules)
    started = time.monotonic()
    answer = {}
    threads_before = set(threading.enumerate())
    state.exit_handlers = []
    state.tracing = True
    try:
        answer["value"] = action()
        answer["ok"] = True
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from imported code too
        answer["ok"] = False
        answer["error"] = _error(exc)
    finally:
        try:
            _afterwards(state, threads_before)
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


def _afterwards(state, threads_before: set) -> None:
    """Run what the request left running, still traced, in the order an interpreter's exit runs it.

    First the threads it started that are not daemons are joined. One that never
    ends meets the request's time limit. Then the atexit handlers it registered run,
    now, once. Then its daemon threads get a short grace (`DAEMON_GRACE`). A load by
    one later than that is not seen.
    """
    started = [t for t in threading.enumerate() if t not in threads_before and t is not threading.current_thread()]
    for thread in started:
        if not thread.daemon:
            thread.join()
    handlers, state.exit_handlers = state.exit_handlers, []
    for function, args, kwargs in reversed(handlers):  # last registered runs first, as at exit
        try:
            function(*args, **kwargs)
        except BaseException:
            pass
    deadline = time.monotonic() + DAEMON_GRACE
    for thread in started:
        if thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))


def _wrap_atexit(state) -> None:
    """Keep the atexit handlers a request registers, to run them at its end, traced.

    Otherwise they would run at the worker's exit, after tracing and the request
    are over.
    """
    original = atexit.register

    def traced_register(function, *args, **kwargs):
        if state.tracing:
            state.exit_handlers.append((function, args, kwargs))
            return function
        return original(function, *args, **kwargs)

    atexit.register = traced_register


class AncestorFailed(ImportError):
    """A package above the requested module failed to import in this worker."""


def _bare_package(state, name: str) -> bool:
    """Put a bare module for the package `name` in sys.modules.

    It has the package's ``__path__``, not its ``__init__``. So its modules can be
    imported although its ``__init__`` fails. Returns False when it cannot be found.
    """
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
    """A capabilities mapping that has every capability. ``.get(key, default)`` is True."""

    def get(self, key, default=None):
        return True

    def __getitem__(self, key):
        return True

    def __contains__(self, key):
        return True


def _holds(filename, source) -> bool:
    """Is `filename` a file whose bytes are `source`, the text compiled under its own name?"""
    if not isinstance(filename, (str, bytes)) or not isinstance(source, (str, bytes, bytearray)):
        return False
    data = source.encode("utf-8", "replace") if isinstance(source, str) else bytes(source)
    return _bounded_read(os.fsdecode(filename)) == data


def _bounded_read(path: str, sizes=None):
    """The bytes of the regular file at `path`, else None.

    The file must be small enough to be one of the experimental package's remembered
    files. Given `sizes`, it must also have one of those sizes. A listing names
    thousands of sources, most of them unlike any.
    """
    try:
        if not os.path.isfile(path):
            return None
        size = os.path.getsize(path)
        if size > _MAX_CONTENT or (sizes is not None and size not in sizes):
            return None
        with open(path, "rb") as handle:
            return handle.read(_MAX_CONTENT + 1)
    except (OSError, ValueError):
        return None


def _spec_facts(state, spec) -> dict:
    """What the audit reads of a returned JIT spec: name, sources, origin."""
    sources = []
    for source in list(getattr(spec, "sources", None) or [])[:2000]:
        try:
            sources.append(os.fspath(source))
        except TypeError:
            continue
    created = getattr(spec, "created_in", None)
    flagged = [state.shown(s) for s in sources if state.experimental_file(s)]
    for source in sources:  # what a build would compile: a copy of an experimental file counts too
        if not state.experimental_file(source):
            rel = state.by_content(_bounded_read(source, state.contents))
            if rel:
                flagged.append(f"{state.shown(source)} (the text of {state.experimental_dir_shown}/{rel})")
    return {
        "name": str(getattr(spec, "name", ""))[:200],
        "experimental_sources": flagged[:5],
        "created_in": created if isinstance(created, str) else None,
        "experimental": getattr(spec, "experimental", False) is True,
    }


def _aot(state, module_name: str):
    """Call the AOT listing of `module_name` in whichever shape it has. Returns the specs.

    The environment an AOT build job sets is set first: every target architecture.
    Sleeping is cut short. A listing that downloads retries with back-off, and the
    network is refused anyway.
    """
    for key, value in state.aot_environment.items():
        os.environ.setdefault(key, value)
    sleep = time.sleep
    time.sleep = lambda seconds: sleep(min(seconds, 0.01))
    try:
        return _aot_listing(state, module_name)
    finally:
        time.sleep = sleep


def _arguments(module, function) -> list:
    """The values a listing function is called with.

    They are its module's ``get_default_config()`` values by parameter name, with a
    trailing ``_`` dropped. A mapping claims every capability. Other parameters get
    their default, and a flag gets True. Raises TypeError when a parameter has none.
    """
    config = module.get_default_config() if hasattr(module, "get_default_config") else {}
    arguments = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
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
            raise TypeError(f"no value for {function.__name__}'s parameter {parameter.name!r}")
    return arguments


def _aot_listing(state, module_name: str):
    module = importlib.import_module(module_name)
    named = state.aot_listing
    if named and callable(getattr(module, named, None)):  # the settings name the listing (aot-listing)
        where = getattr(module, named)
        shape = f"{named}(...)"
        specs = where(*_arguments(module, where))
    elif hasattr(module, "registered_specs"):
        shape, where = "registered_specs()", module.registered_specs
        specs = module.registered_specs()
    elif hasattr(module, "_register_builtin"):
        shape, where = "_register_builtin()", module._register_builtin
        module._register_builtin()
        specs = list(getattr(module, "_registry", {}).values())
    elif hasattr(module, "gen_all_modules"):
        shape, where = "gen_all_modules(...)", module.gen_all_modules
        specs = module.gen_all_modules(*_arguments(module, module.gen_all_modules))
    else:
        if named:
            raise LookupError(f"{module_name} has no function {named} (the aot-listing setting)")
        raise LookupError(f"{module_name} has neither registered_specs, _register_builtin nor gen_all_modules "
                          "(name its listing function with the aot-listing setting)")
    code = getattr(where, "__code__", None)
    line = code.co_firstlineno if code is not None else 1
    return {"shape": shape, "at": [state.shown(getattr(module, "__file__", "") or ""), line],
            "specs": [_spec_facts(state, spec) for spec in list(specs or [])[:20000]]}


def _preload(names) -> list:
    """Import the heavy third-party packages once, before any request. Returns what imported.

    This runs untraced, with no stand-ins.
    """
    done = []
    for name in names:
        try:
            importlib.import_module(name)
            done.append(name)
        except BaseException:
            pass
    return done


def main() -> None:
    global STATE
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    config = json.loads(requests.readline())  # the first line: never a file another child could rewrite
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")
    sys.stdout = open(os.devnull, "w", encoding="utf-8")
    sys.dont_write_bytecode = True
    ISOLATION.exit_with_parent(requests.fileno())
    sys.addaudithook(_hook)  # the network refused from the start (no state yet: nothing else)
    # the heavy packages first, from the environment alone (the tree is not on the path
    # yet): the parent starts the workers while it still copies the tree, and says when
    # the copy is whole with the second line
    preloaded = _preload(config.get("preload", ()))
    if json.loads(requests.readline() or "{}").get("tree") is not True:
        return
    state = _State(config)
    ISOLATION.put_tree_first(state.root, state.package)
    if config.get("stand_ins", True):
        def wanted(name: str) -> bool:
            # only while a request runs, and only for the tree's own code: an installed
            # package's optional import keeps its "not installed" branch
            return state.tracing and (ISOLATION.below_a_stand_in(name) or (
                not ISOLATION.of_the_tree(name, state.root) and ISOLATION.requested_from(state.root)))

        sys.meta_path.append(ISOLATION.StandInFinder(state.protected, state.stand_ins, wanted))
    state.read_contents()
    _wrap_imports(state)
    _wrap_atexit(state)
    STATE = state
    # from now on the tree's bytecode is cached in the private copy (writes elsewhere
    # are refused while a request runs), so each module is compiled once an audit,
    # not once a worker: compiling was half of a worker's time on FlashInfer 0.7.4.
    # The real tree's own caches are never copied, so what runs is the source's.
    sys.dont_write_bytecode = False
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
