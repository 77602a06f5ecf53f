"""The isolation every child process of the audit installs in itself, first thing.

It uses the standard library only. The import audit's workers (`tracer.py`) and the
stable lane's collection (`collector.py`) share it.

- The tree under test comes first on the path. Its package is found there, whatever
  copy an editable install would find (`TreeFinder`). No bytecode is written into
  it.
- The network is refused. `refuses` says which audit events the child's audit hook
  answers with `refusal`, a `PermissionError`. They include ``socket.connect``,
  ``bind`` except to a loopback address, ``sendto``, and name lookups.
- Stand-ins replace third-party modules nobody can find (`StandInFinder`, last on
  the meta path). The names of those used are kept for the report.
- Writes outside the audit's scratch folder are refused. That folder holds the
  private copy of the tree. `refused_write` says which path a write event would
  change.
- The child ends when the audit that started it is gone (`exit_with_parent`).

The children load this file by its path (`load_beside` in each of them), never by
an import statement. Under ``python -I`` the script's folder is not on the path.
Putting it there would let the audit's own modules shadow the tree's.
"""

import functools
import importlib
import importlib.abc
import importlib.machinery
import inspect
import os
import sys
import time
import types

# network --------------------------------------------------------------------------

# audit events refused: the network
REFUSED = (
    "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
    "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo",
)
ON_A_SOCKET = ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg")


def _loopback_bind(event: str, args) -> bool:
    """Is it a bind to a loopback address? No traffic leaves. urllib3 probes IPv6 so at import."""
    if event != "socket.bind" or len(args) < 2 or not isinstance(args[1], tuple) or not args[1]:
        return False
    host = args[1][0]
    return isinstance(host, str) and (host in ("::1", "localhost") or host.startswith("127."))


def refuses(event: str, args) -> bool:
    """Is the audit event `event` one of the network's, and not a loopback bind?"""
    return event.startswith(REFUSED) and not _loopback_bind(event, args)


def refusal(event: str) -> PermissionError:
    return PermissionError(f"the policy-check audit refuses {event} (no network)")


# the tree ---------------------------------------------------------------------------

class TreeFinder(importlib.abc.MetaPathFinder):
    """First on the meta path, so the package under test comes from the tree.

    That holds whatever copy an editable install or path hook would find first.
    """

    def __init__(self, package: str, root: str):
        self.top, self.root = package.split(".")[0], root

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.top:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [self.root])


def put_tree_first(root: str, package: str) -> None:
    """Put the tree first on the path, and find its package there.

    No bytecode is written, into the tree or anywhere. A bytecode prefix would also
    hide every installed package's own bytecode. It would recompile torch in each
    child. The import audit's workers turn writing back on, since their tree is the
    private copy (`tracer.main`).
    """
    sys.dont_write_bytecode = True
    sys.path[:0] = [root]
    sys.meta_path.insert(0, TreeFinder(package, root))


def exit_with_parent(pipe: int) -> None:
    """A thread that ends the child when the audit that started it is gone.

    The audit may be killed mid-request. Then nobody closes the child's input, and a
    hung import would run on. The audit is gone when the parent changed. It is also
    gone when `pipe` hung up. `pipe` is the read end of a pipe the audit holds open.
    In a PID namespace the parent is outside it, and reads as 0 throughout.
    """
    import select
    import threading

    parent, sleep = os.getppid(), time.sleep  # the AOT listing cuts time.sleep short meanwhile
    poller = select.poll()
    poller.register(pipe, select.POLLHUP | select.POLLERR)

    def watch():
        while os.getppid() == parent:
            if any(mask & (select.POLLHUP | select.POLLERR) for _, mask in poller.poll(0)):
                break
            sleep(1.0)
        os._exit(3)

    threading.Thread(target=watch, name="policy-check-audit-watchdog", daemon=True).start()


# writes ------------------------------------------------------------------------------

# audit events that write to the file system -> the positions of their paths and of the
# directory descriptor each is relative to (None: none)
WRITES = {
    "os.rename": ((0, 2), (1, 3)), "os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),),
    "os.symlink": ((1, 2),), "os.link": ((1, 3),), "os.chmod": ((0, 2),), "os.chown": ((0, 3),),
    "os.utime": ((0, 3),), "os.truncate": ((0, None),), "os.setxattr": ((0, None),),
    "os.removexattr": ((0, None),), "shutil.rmtree": ((0, 1),), "os.mkfifo": ((0, None),),
    "os.mknod": ((0, None),),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_ALWAYS_WRITABLE = ("/dev/null",)


def _real_target(path, dir_fd) -> str:
    """`path` with links followed. It is relative to `dir_fd`, else to the working directory."""
    path = os.fsdecode(path)
    if not os.path.isabs(path):
        base = os.readlink(f"/proc/self/fd/{dir_fd}") if isinstance(dir_fd, int) else os.getcwd()
        path = os.path.join(base, path)
    return os.path.realpath(path)


def refused_write(event: str, args, writable: str) -> str:
    """The path a write event would change outside `writable` and ``/dev/null``, else "".

    `writable` is the audit's scratch folder, which holds the private copy of the
    tree.
    """
    if event == "open":
        if len(args) < 3 or not isinstance(args[2], int) or not args[2] & _WRITE_FLAGS:
            return ""
        places = ((args[0], None),)
    elif event in WRITES:
        places = tuple((args[at], args[fd] if fd is not None and fd < len(args) else None)
                       for at, fd in WRITES[event] if at < len(args))
    else:
        return ""
    top = os.path.realpath(writable) + os.sep
    for path, dir_fd in places:
        if not isinstance(path, (str, bytes, os.PathLike)):
            continue  # a descriptor: what it names was opened (and judged) already
        try:
            real = _real_target(os.fspath(path), dir_fd)
        except (OSError, ValueError):
            return os.fsdecode(os.fspath(path))
        if not (real + os.sep).startswith(top) and real not in _ALWAYS_WRITABLE:
            return real
    return ""


def write_refusal(path: str) -> PermissionError:
    return PermissionError(f"the policy-check audit refuses a write to {path} (outside its scratch folders)")


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
    """Stands in for anything of a third-party package that is not installed.

    Every attribute and item is another stand-in. A call returns one. Called as a
    decorator with one callable, it returns that callable unchanged. It can be a
    base class or a context manager. It can be iterated (empty), compared and
    converted without error.
    """

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
    """What a stand-in decorator makes of a function.

    It is the function, callable as before. Its missing attributes, such as
    ``kernel.set_name_prefix(...)``, are stand-ins.
    """

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
    """Last on the meta path: a stand-in for a third-party module nobody else found.

    The module may be a package not installed, or a submodule of one. It may be a
    module an installed package lacks. A stand-in is made when `wanted(name)` says
    so. The tracer wants one while a request is traced. The collection wants one
    when the tree's own code asks.

    It never stands in for a module of the `protected` top-level packages. Nor for
    their companion distributions, such as ``flashinfer_cubin``. Code treats them as
    optional, and absent is a real configuration. It never stands in for the
    standard library. `used` collects the names stood in for, for the report.
    """

    def __init__(self, protected, used: set, wanted):
        self.protected, self.used, self.wanted = tuple(protected), used, wanted

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in sys.stdlib_module_names or not self.wanted(fullname):
            return None
        if any(top == own or top.startswith(own + "_") for own in self.protected):
            return None  # the tree's own package, and its companions (flashinfer_cubin): absent is a real case
        if "." in fullname and not isinstance(sys.modules.get(fullname.rpartition(".")[0]), StandInModule):
            self.used.add(fullname)  # a module an installed package lacks (cuda.tile beside cuda)
        else:
            self.used.add(top)
        return importlib.machinery.ModuleSpec(fullname, _StandInLoader(), is_package=True)


def requested_from(directory: str, depth: int = 40) -> bool:
    """Did code under `directory` ask for the import being looked up?

    An installed package's code is excepted. The first frame outside the import
    machinery and the audit's own files says.
    """
    top = os.path.realpath(directory) + os.sep
    frame, steps = sys._getframe(1), 0
    while frame is not None and steps < depth:
        filename = frame.f_code.co_filename
        real = "" if filename.startswith("<") else os.path.realpath(filename)  # machinery, exec'd text
        if real and os.path.dirname(real) != _AUDIT_DIR:
            return real.startswith(top) and "-packages" + os.sep not in real[len(top):]
        frame, steps = frame.f_back, steps + 1
    return False


def below_a_stand_in(fullname: str) -> bool:
    """Is `fullname` a submodule of a module already stood in for?

    Then whoever asks gets a stand-in, as from the real package. An example is an
    installed package probing ``triton.backends``, after the tree's
    ``import triton`` made ``triton`` a stand-in.
    """
    parent = fullname.rpartition(".")[0]
    return bool(parent) and isinstance(sys.modules.get(parent), StandInModule)


def of_the_tree(fullname: str, directory: str) -> bool:
    """Is `fullname` a submodule of a module loaded from `directory`?

    Then it is the tree's own. Its absence is the tree's error, never a stand-in's
    case.
    """
    origin = getattr(sys.modules.get(fullname.rpartition(".")[0]), "__file__", None)
    return isinstance(origin, str) and os.path.realpath(origin).startswith(os.path.realpath(directory) + os.sep)


_AUDIT_DIR = os.path.dirname(os.path.realpath(__file__))
