"""What runs inside the stable lane's collection child: a standalone script, the
standard library and pytest only.

The parent (`policy_checks.audit.collection`) starts ``python -I collector.py CONFIG``
through `policy_checks.audit.sandbox`, as the import audit's workers are started. It
installs the isolation the workers install (`child_setup.py`: the tree first, no
bytecode, the network refused by an audit hook, an end with the parent), imports the
heavy third-party packages the tree uses (``preload``) untouched, then runs pytest's
own ``main`` on the lane's arguments with a recorder plugin that only observes: each
collected test's file and node id, each failed collection, the configuration file
used, and at the end the stand-ins used, one JSON line each in the ``record`` file.

Stand-ins (`child_setup.StandInFinder`) take the place of third-party modules nobody
can find when code of the tree (a conftest, a test module) asks for them, from the
moment pytest loads the first conftest: plugins and installed packages keep their own
behaviour when one of their optional imports is missing.

This file is not imported by the checker: it runs only in the child.
"""

import importlib
import importlib.util
import json
import os
import sys

# the isolation shared with the import audit's workers, loaded by its path (`child_setup.py`)
ISOLATION = importlib.util.module_from_spec(importlib.util.spec_from_file_location(
    "_policy_check_child_setup", os.path.join(os.path.dirname(os.path.realpath(__file__)), "child_setup.py")))
ISOLATION.__spec__.loader.exec_module(ISOLATION)


def _refusing(recorder_of, writable: str):
    """The audit hook: no network; no write outside the scratch folder once the tree's
    code can run (from the first conftest on)."""

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
    """The pytest plugin that writes what was collected; it changes nothing, except that
    stand-ins start with the first conftest (`standing_in`)."""

    def __init__(self, record: str):
        self.out = open(record, "w", encoding="utf-8")
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
            self.write(kind="item", path=str(item.path), nodeid=item.nodeid,
                       line=(location[1] + 1) if isinstance(location[1], int) else 1)


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
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
    recorder = Recorder(config["record"])
    holder.append(recorder)
    used = set()
    if config.get("stand_ins", True):
        def wanted(name: str) -> bool:
            return recorder.standing_in and not ISOLATION.of_the_tree(name, root) and ISOLATION.requested_from(root)

        sys.meta_path.append(ISOLATION.StandInFinder([config["package"]], used, wanted))
    import pytest

    sys.argv = [sys.argv[0], *config["args"]]
    try:
        return pytest.main(config["args"], plugins=[recorder])
    finally:
        recorder.write(kind="stand_ins", names=sorted(used))


if __name__ == "__main__":
    raise SystemExit(main())
