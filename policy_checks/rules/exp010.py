"""EXP010 unresolved-import-time-load."""

from __future__ import annotations

from ..analysis import import_time
from ..model import markers
from ..analysis.needs import CORE_MODULE, IMPORT_CALLS
from .base import Example, Rule, core_primary, describe_calls, memo, runs_at_import
from ..analysis.import_time import support_modules

_FIX = ("make the load explicit (an import of a literal module name, or a deferred import inside an "
        "entry point), or explain it with `# policy: ignore[EXP010] reason`, which a maintainer approves")
_PACKAGE = {"flashinfer/__init__.py": "", "flashinfer/experimental/__init__.py": "",
            "flashinfer/experimental/feat/__init__.py": ""}


class UnresolvedImportTimeLoad(Rule):
    """Core code loads or runs something at import that the checker cannot resolve.

    Deny by default. Some code runs when a module is imported: its body, class bodies,
    decorators, default values. So does every project function those call, however many
    calls down (`policy_checks.analysis.import_time`). That code may load code only in
    ways the checker resolves to a module. Then EXP001 and EXP002 can judge it. Otherwise
    a hostile change could hide an experimental import behind a name built at run time.

    These are reported in a core module or a support module. A core module includes the
    package ``__init__`` and AOT modules.

    One is a loader given a name or path that is not a literal:
    ``importlib.import_module``, ``__import__``, ``find_spec``,
    ``spec_from_file_location``, ``runpy``, ``pkgutil.resolve_name``. Another is a loader
    that loads whatever spec it is given: ``module_from_spec``, ``exec_module``,
    ``LazyLoader``, ``pkgutil.walk_packages``. Another is ``exec``/``eval``/``compile``
    of text that is not a literal. Another is a ``ctypes`` library at a computed path, or
    under the experimental package. Another is a change of ``sys.meta_path``,
    ``sys.path_hooks``, ``sys.path``, ``sys.modules`` or a package's ``__path__``.
    Another is a thread or a process started. The last is an ``atexit``,
    ``weakref.finalize`` or signal handler registered. Such code runs after the import,
    where nothing checks it.

    A support module's body may define checkers and constants and import light modules.
    It may also call project functions in the decorators of an ``@experimental_backend``
    checker. Any other call it runs at import of a function of the project is a finding
    too.

    Some modules lie in a folder the settings exclude. If a core module imports one at
    import, it is read like core. Its loads are reported at the importing line.

    Some loads are resolved, and so not reported. One is a loader given a literal, or a
    name folded from literal pieces. A loop over a tuple of literals counts. Another is
    ``ctypes.CDLL(None)``, or a library at a literal path outside the experimental
    package. Another is ``sys.modules[__name__] = import_module("a.literal")``. Anything
    under ``if __name__ == "__main__":`` is resolved. So are loads inside functions
    nothing calls at import.

    The fix is an explicit load. That is an import of a literal name, or the load moved
    into a function that runs on call. Where the load is needed at import, a suppression
    with its reason makes it visible to reviewers.

    Some calls do not resolve to a project function: methods of objects, names in
    strings. The checker does not follow them. The behavioural audit
    (``policy-check audit``) runs the code and sees them.
    """

    id = "EXP010"
    name = "unresolved-import-time-load"
    summary = "code run at import loads something the checker cannot resolve"
    # the messages: a support module's call at import, a load at import reached through calls or not
    SUPPORT_CALL = ("support module calls {func} at import: core imports this module for its checkers, so whatever "
                    "its body runs, stable code runs; keep the body to checkers, constants and light imports")
    LOAD_VIA = ("{who} calls {calls} at import, and there ({where}) {what}, which the checker cannot resolve: "
                + _FIX)
    LOAD = "{who} runs, at import, {what}, which the checker cannot resolve: " + _FIX
    EXCLUDED = ("core module imports {name}, which the settings exclude from the checks but which runs {what} at "
                "import (line {line}): " + _FIX)
    # A file that makes such a load at import calls a loader (`needs.IMPORT_CALLS`, which
    # its bytes spell), or its import-time code uses a name of the load vocabulary, which
    # the symbol table of the syntax check says (`import_time.follow_loads`); one that only
    # calls a function that does is found by `import_time.follow_calls`.
    reads = (CORE_MODULE,)
    triggers = IMPORT_CALLS
    follow_ups = (import_time.follow_loads, import_time.follow_calls)

    VALID = [
        Example(
            {
                **_PACKAGE,
                "flashinfer/gemm.py": (
                    "import importlib, threading, ctypes, sys\n"
                    "NORM = importlib.import_module('flashinfer.norm')\n"
                    "LOCK = threading.Lock()\n"
                    "CUDA = ctypes.CDLL('libcuda.so.1')\n"
                    "VERSION = sys.version_info\n"
                    "def later(name):\n"
                    "    threading.Thread(target=print).start()\n"
                    "    return importlib.import_module(name)\n"
                ),
                "flashinfer/norm.py": "",
            },
            note="literal names; a lock; a library at a literal path; loads inside a function not called at import",
        ),
    ]
    INVALID = [
        Example(
            {
                **_PACKAGE,
                "flashinfer/gemm.py": (
                    "import importlib, os, sys, threading, atexit, ctypes\n"
                    "importlib.import_module(f'{__package__}.exp' + os.environ['X'])\n"  # 2
                    "exec(open('x.py').read())\n"  # 3
                    "sys.path.insert(0, os.path.dirname(__file__))\n"  # 4
                    "sys.meta_path.append(object())\n"  # 5
                    "threading.Thread(target=print).start()\n"  # 6
                    "atexit.register(print)\n"  # 7
                    "ctypes.CDLL(os.environ['LIB'])\n"  # 8
                    "ctypes.CDLL('flashinfer/experimental/feat/k.so')\n"  # 9
                    "sys.modules['flashinfer.fast'] = sys\n"  # 10
                ),
            },
            expect=tuple(("flashinfer/gemm.py", n) for n in range(2, 11)),
        ),
        Example(
            {
                **_PACKAGE,
                "flashinfer/helpers.py": (
                    "import threading\n"
                    "def start():\n    threading.Thread(target=print).start()\n"
                    "def outer():\n    start()\n"
                ),
                "flashinfer/gemm.py": "from .helpers import outer\nouter()\n",  # 2
                "flashinfer/norm.py": "from .helpers import outer\n@outer\ndef f():\n    pass\n",  # 2
            },
            expect=(("flashinfer/gemm.py", 2), ("flashinfer/norm.py", 2)),
            note="a load two calls down, through a call and through a decorator",
        ),
    ]

    def check(self, project):
        analysis = import_time.of(project)
        for rel, facts in core_primary(project):
            yield from self._loads(analysis, rel, facts, "core module")
            yield from self._excluded(project, analysis, rel, facts)
        for module in sorted(memo(project, "support_modules", support_modules)):
            rel = project.rel_of(module)
            facts = project.module_facts(module) if rel is not None else None
            if facts is None:
                continue
            yield from self._loads(analysis, rel, facts, "support module")
            checkers = _checker_lines(facts)
            for call in facts.calls:
                if runs_at_import(project, call.scope) and call.line not in checkers:
                    yield self.finding(
                        rel, call.line, call.column,
                        self.SUPPORT_CALL.format(func=call.func),
                        subject=f"call of {call.func}",
                    )

    def _loads(self, analysis, rel, facts, who):
        for line, column, chain, load in analysis.loads_at_import(facts):
            if chain:
                where = f"line {load.line} of {chain[-1]}" if load.line else chain[-1]
                message = self.LOAD_VIA.format(who=who, calls=describe_calls(chain), where=where, what=load.what)
            else:
                message = self.LOAD.format(who=who, what=load.what)
            yield self.finding(rel, line, column, message,
                               subject=load.what + (f" via {chain[0]}" if chain else ""))

    def _excluded(self, project, analysis, rel, facts):
        for imp in facts.imports:
            if not runs_at_import(project, imp.scope):
                continue
            for name, load in analysis.excluded_loads(imp):
                yield self.finding(
                    rel, imp.line, imp.column,
                    self.EXCLUDED.format(name=name, what=load.what, line=load.line),
                    subject=f"{load.what} via {name}",
                )


def _checker_lines(facts) -> set:
    """The first lines of the ``@experimental_backend`` checkers a support module
    defines. The calls there decorate a checker
    (``@supported_compute_capability([...])``). That is what the module is for. What they
    reach is still judged."""
    return {d.first_line or d.line for d in facts.definitions.values()
            if d.kind == "function" and any(markers.is_marker(n, markers.EXPERIMENTAL_BACKEND) for n in d.decorators)}
