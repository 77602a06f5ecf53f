"""What runs inside the stable lane's collection child.

It is a standalone script, using the standard library and pytest only.

The parent (`policy_checks.audit.collection`) starts ``python -I collector.py``
through `policy_checks.audit.sandbox`. Its configuration is the first JSON line of
its standard input. The import audit's workers are started the same way.

The child installs the isolation the workers install (`child_setup.py`). That puts
the tree first, writes no bytecode, refuses the network by an audit hook, and ends
with the parent. It imports the heavy third-party packages the tree uses
(``preload``), untouched. Then it runs pytest's own ``main`` on the lane's
arguments, as CI runs them. A recorder plugin's test loop runs nothing. It writes
one JSON line for each of these to the pipe ``record_fd`` that the audit reads:

- each collected test's file, node id, and the file and line where its function
  is defined;
- each failed collection;
- the configuration file used;
- at the end, the stand-ins used and an end mark.

Stand-ins (`child_setup.StandInFinder`) take the place of missing third-party
modules. They serve when code of the tree, such as a conftest or a test module,
asks for a module nobody can find. They start from the moment pytest loads the
first conftest. So plugins and installed packages keep their own behaviour when
one of their optional imports is missing.

This file is not imported by the checker. It runs only in the child.
"""

import importlib
import importlib.util
import json
import os
import sys

try:
    from pytest import hookimpl as pytest_hookimpl
except ImportError:  # no pytest in this interpreter: main() says so when it imports it
    def pytest_hookimpl(**_):
        return lambda function: function

# the isolation shared with the import audit's workers, loaded by its path (`child_setup.py`)
ISOLATION = importlib.util.module_from_spec(importlib.util.spec_from_file_location(
    "_policy_check_child_setup", os.path.join(os.path.dirname(os.path.realpath(__file__)), "child_setup.py")))
ISOLATION.__spec__.loader.exec_module(ISOLATION)


def _refusing(recorder_of, writable: str):
    """The audit hook. It refuses the network.

    Once the tree's code can run, from the first conftest on, it also refuses any
    write outside the scratch folder.
    """

    def hook(event: str, args) -> None:
        if ISOLATION.refuses(event, args):
            raise ISOLATION.refusal(event)
        recorder = recorder_of()
        if recorder is not None and recorder.standing_in and writable:
            refused = ISOLATION.refused_write(event, args, writable)
            if refused:
                raise ISOLATION.write_refusal(refused)

    return hook


class Recorder:
    """The pytest plugin that writes what was collected, and runs none of it.

    pytest runs as CI runs it, with no ``--collect-only``. A conftest could tell
    that flag apart and collect less under it. The test loop is this plugin's,
    which returns at once. It changes nothing else, except that stand-ins start
    with the first conftest (`standing_in`).
    """

    def __init__(self, record_fd: int):
        self.out = os.fdopen(record_fd, "w", encoding="utf-8")  # a pipe to the audit, nothing else
        self.standing_in = False

    def write(self, **entry) -> None:
        self.out.write(json.dumps(entry) + "\n")
        self.out.flush()

    def pytest_load_initial_conftests(self):
        self.standing_in = True  # plugins are loaded by now: from here on, the tree's code runs

    def pytest_collectreport(self, report):
        if report.failed:
            text = str(report.longrepr)[-1500:]
            self.write(kind="error", path=str(getattr(report, "fspath", "") or ""), nodeid=report.nodeid, error=text)

    def pytest_collection_finish(self, session):
        config = session.config
        try:
            norecurse = list(config.getini("norecursedirs"))
        except Exception:
            norecurse = None
        self.write(kind="config", inipath=str(config.inipath or ""), rootpath=str(config.rootpath),
                   norecursedirs=norecurse)
        for item in session.items:
            location = getattr(item, "location", None) or ("", None, "")
            defined, defined_line = _definition(item)
            self.write(kind="item", path=str(item.path), nodeid=item.nodeid,
                       line=(location[1] + 1) if isinstance(location[1], int) else 1,
                       defined=defined, defined_line=defined_line)

    @pytest_hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        return True  # collected, recorded, and not run


def _definition(item) -> tuple:
    """``(file, line)`` where the test's function is defined, or ``("", 0)`` when it has none.

    It follows its decorators' ``__wrapped__``. This can be another file than the
    one collected. A test module that imports an experimental test runs it too.
    """
    import inspect

    function = getattr(item, "function", None) or getattr(item, "obj", None)
    try:
        code = getattr(inspect.unwrap(function), "__code__", None) if function is not None else None
    except ValueError:
        code = None
    if code is None:
        return "", 0
    return os.path.realpath(code.co_filename), code.co_firstlineno


def main() -> int:
    config = json.loads(sys.stdin.buffer.readline())  # sent through the pipe: no file another child could rewrite
    root = config["root"]
    ISOLATION.put_tree_first(root, config["package"])
    ISOLATION.exit_with_parent(os.dup(0))  # pytest's capture points 0 elsewhere later
    holder = []
    sys.addaudithook(_refusing(lambda: holder[0] if holder else None, config.get("scratch") or ""))
    for name in config.get("preload", ()):  # untouched by stand-ins, as in the workers
        try:
            importlib.import_module(name)
        except BaseException:
            pass
    recorder = Recorder(config["record_fd"])
    holder.append(recorder)
    used = set()
    if config.get("stand_ins", True):
        def wanted(name: str) -> bool:
            return recorder.standing_in and (ISOLATION.below_a_stand_in(name) or (
                not ISOLATION.of_the_tree(name, root) and ISOLATION.requested_from(root)))

        sys.meta_path.append(ISOLATION.StandInFinder([config["package"]], used, wanted))
    import pytest

    sys.argv = [sys.argv[0], *config["args"]]
    status = pytest.main(config["args"], plugins=[recorder])
    recorder.write(kind="stand_ins", names=sorted(used))
    recorder.write(kind="end", status=int(status))  # the record is whole: the audit fails closed without it
    recorder.out.close()
    return status


if __name__ == "__main__":
    raise SystemExit(main())
