"""AUD003: the stable test lane collected as CI collects it.

EXP008 reads the pytest configuration and the stable tests' imports. What pytest
actually collects also depends on conftest hooks, links, nested configuration files
and plugins. So this module runs the stable lane for real, the way CI runs it:
``pytest <lane> -q -p no:cacheprovider``. There is no ``--collect-only``; a conftest
could tell it apart and collect less under it. The tree under test comes first on
the path.

The lane runs in a child started as the import audit's workers are
(`policy_checks.audit.sandbox`):

- ``python -I``, with the audit's scratch home, temporary directory and caches;
- an environment holding only what Python needs. So neither the gate's variable
  nor ``PYTEST_ADDOPTS`` leaks in;
- PID and network namespaces of its own, where ``unshare`` can make them;
- a time limit.

Inside, it is isolated as they are (`child_setup.py`). An audit hook refuses
sockets and writes outside the scratch. Stand-ins replace third-party packages that
are not installed. So a conftest importing one is still collected on a CPU-only
machine. The report names them.

`collector.py`, the child, gives ``pytest.main`` a recorder plugin. Its test loop
runs none of the tests. It writes what was collected to a pipe the audit reads:

- each test's file, node id, and the file and line its function is defined at;
- each failed collection;
- the configuration file used;
- the stand-ins used, and an end mark.

These are AUD003 findings:

- every collected test whose file resolves under the experimental test directory,
  links followed. It is located at the file as collected, a link's path when it
  came through one. Its message names the link and the configuration;
- a test collected from a stable file whose function is defined there. A stable
  module importing an experimental test runs it;
- a collection error in such a file, since the lane reached it.

These are AUD000, with the error:

- a lane that cannot be collected, because pytest fails or runs out of time;
- a stable file that fails to collect;
- a record that cannot be trusted whole. It may be longer than the limit, hold a
  line the collector does not write, or lack an end mark. What a record lacks could
  be the finding.

A tree without the lane's directory has nothing to collect.

The lane's directory is read from ``tests/lanes.py`` where the tree has one, as this
repository does. Its ``LANES["stable"]`` is read with ``ast``, never run. Otherwise
it is the ``stable-tests`` setting. A FlashInfer checkout gives ``pytest tests/``.

    python3 -m policy_checks.audit.collection --root DIR    # prints the findings
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import List, NamedTuple, Optional

from ..model.config import Settings, load
from ..rules.base import Finding
from .rules import NOT_AUDITED, STABLE_LANE_COLLECTS_EXPERIMENTAL
from .sandbox import Scratch, isolated_command, run_once

COLLECTOR = Path(__file__).with_name("collector.py")
COLLECTION_SECONDS = 300.0  # the lane's whole collection may take this long
LANES_FILE = "tests/lanes.py"
_RECORD_LIMIT = 64 * 1024 * 1024  # bytes of the recorder's file read back
_TAIL = 2000  # characters of the subprocess's output quoted in an AUD000 message

def stable_lane(root: Path, settings: Settings) -> str:
    """The directory the stable lane collects.

    It is ``LANES["stable"]`` of ``tests/lanes.py`` when that file defines it as a
    literal. Otherwise it is the ``stable-tests`` setting.
    """
    path = root / LANES_FILE
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return settings.stable_tests.rstrip("/") + "/"
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "LANES" for t in targets) and node.value is not None:
                try:
                    lanes = ast.literal_eval(node.value)
                except ValueError:
                    break
                lane = lanes.get("stable") if isinstance(lanes, dict) else None
                if isinstance(lane, str) and lane.strip():
                    return lane
    return settings.stable_tests.rstrip("/") + "/"


def collect_command(lane: str) -> List[str]:
    """pytest's arguments for the stable lane, as CI passes them after ``python -I -m pytest``.

    There is no ``--collect-only``, which a conftest can tell apart. The recorder's
    test loop runs nothing (`collector.py`).
    """
    return [lane, "-q", "-p", "no:cacheprovider"]


class Collection(NamedTuple):
    findings: List[Finding]
    stand_ins: List[str]  # third-party modules the collection replaced by stand-ins


def audit_collection(root: Path, settings: Settings, *, timeout: float = COLLECTION_SECONDS, preload=(),
                     stand_ins: bool = True, scratch: Optional[Scratch] = None,
                     python: Optional[str] = None, lane: Optional[str] = None) -> Collection:
    """AUD003 for every test of the experimental test directory that the stable lane collects.

    The module docstring says which tests count. AUD000 is reported when the lane,
    or a stable file of it, could not be collected.

    - `preload`: the heavy third-party packages to import first.
    - `scratch`: the audit's scratch directories; by default, its own.
    - `python`: the interpreter that collects, whose pytest runs. By default, it is
      the checker's own.
    - `lane`: the lane's directory, as read from the tree before anything ran. By
      default it is read now.
    """
    root = Path(root).resolve()
    lane = lane or stable_lane(root, settings)
    if not (root / lane).is_dir():
        return Collection([], [])  # no stable lane (an unpacked wheel ships no tests): nothing to collect
    with (nullcontext(scratch) if scratch is not None else Scratch()) as place:
        log = place.path / "collection-output.txt"
        reading, writing = os.pipe()
        reader = _Reader(reading, _RECORD_LIMIT)
        config = json.dumps({
            "root": str(root), "package": settings.package, "record_fd": writing, "args": collect_command(lane),
            "preload": list(preload), "stand_ins": stand_ins, "scratch": str(place.path),
        })
        try:
            status = run_once(isolated_command(COLLECTOR, python=python, binds=place.binds), place, root, timeout, log,
                              give=(writing,), first_line=config)
        finally:
            data, cut = reader.result()
        tail = _tail(log)
    entries, broken = _entries(data, cut)
    used = sorted({name for e in entries if e.get("kind") == "stand_ins" for name in e.get("names") or ()})
    if status is None:
        return Collection([_not_collected(lane, f"collecting the stable lane took longer than {timeout:g} s")], used)
    if cut:
        return Collection([_not_collected(lane, broken)], used)
    if not any(e.get("kind") in ("config", "item", "error") for e in entries):
        return Collection([_not_collected(lane, f"pytest exited with status {status} before collecting: {tail}")],
                          used)
    if broken:  # fail closed: what the record lacks could be the finding
        return Collection([_not_collected(lane, broken)], used)
    return Collection(_findings(root, settings, lane, entries, status, tail), used)


class _Reader:
    """Reads the collector's record from its pipe on a thread of its own.

    The child must never block on a full pipe. It keeps at most `limit` bytes.
    Beyond that, it notes the cut and drains the rest.
    """

    def __init__(self, fd: int, limit: int):
        import threading

        self.fd, self.limit, self.chunks, self.size, self.cut = fd, limit, [], 0, False
        self.thread = threading.Thread(target=self._read, name="policy-check-collection-record", daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while True:
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    return
                if self.size + len(chunk) > self.limit:
                    self.cut = True
                else:
                    self.chunks.append(chunk)
                    self.size += len(chunk)
        except OSError:
            self.cut = True
        finally:
            os.close(self.fd)

    def result(self) -> tuple:
        """``(bytes kept, whether any were cut)``, once the child and all it started are gone."""
        self.thread.join(30)
        return b"".join(self.chunks), self.cut or self.thread.is_alive()


_KINDS = {"config", "item", "error", "stand_ins", "end"}


def _entries(data: bytes, cut: bool) -> tuple:
    """``(entries, why the record cannot be trusted whole, or "")``.

    Some records fail closed. One may be cut by the limit, or hold a line that is
    not one JSON object of a known kind. One may lack an end mark. Then the child
    died, or something ended it, before it finished.
    """
    if cut:
        return [], f"the collection's record was longer than {_RECORD_LIMIT} bytes: what it holds is not audited"
    entries = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if not isinstance(entry, dict) or entry.get("kind") not in _KINDS or not all(
                isinstance(entry.get(key, ""), str) for key in ("path", "nodeid", "defined")):
            return entries, f"line {number} of the collection's record is not one it writes: the record is not trusted"
        entries.append(entry)
    if not entries or entries[-1].get("kind") != "end":
        return entries, "the collection's record has no end (the collection stopped before it finished)"
    return entries, ""


def _tail(log: Path) -> str:
    try:
        with open(log, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - _TAIL))
            return handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _not_collected(lane: str, why: str) -> Finding:
    return Finding(lane.rstrip("/") or ".", 1, 1, NOT_AUDITED.id, f"stable lane `pytest {lane}` not audited: {why}",
                   subject=f"collection of {lane}")


def _findings(root: Path, settings: Settings, lane: str, entries: list, status: int, tail: str) -> List[Finding]:
    experimental = os.path.realpath(root / settings.experimental_tests)
    config = next((e for e in entries if e.get("kind") == "config"), {})
    ini = _relative(root, config.get("inipath") or "")
    why_config = f"configuration {ini or '(none)'}"
    if config.get("norecursedirs") is not None:
        why_config += f", norecursedirs = {' '.join(config['norecursedirs'])}"
    found = []
    for entry in entries:
        kind, path = entry.get("kind"), entry.get("path") or ""
        if kind not in ("item", "error") or not path:
            continue
        rel = _relative(root, path) or path
        defined = entry.get("defined") or ""
        elsewhere = kind == "item" and defined and not _resolves_under(path, experimental) \
            and _resolves_under(defined, experimental)
        if elsewhere:  # a stable module that imports an experimental test runs it: counted where it is defined
            what = entry.get("nodeid") or rel
            line = entry.get("line", 1)
            where = f"{_relative(root, defined) or defined}:{entry.get('defined_line') or 1}"
            found.append(Finding(
                rel, line if isinstance(line, int) and line > 0 else 1, 1, STABLE_LANE_COLLECTS_EXPERIMENTAL.id,
                f"the stable lane `pytest {lane}` collected {what}, whose test function is defined in {where}, "
                f"under {settings.experimental_tests}/ ({why_config})",
                subject=what,
            ))
            continue
        if not _resolves_under(path, experimental):
            if kind == "error":
                found.append(Finding(
                    rel, 1, 1, NOT_AUDITED.id,
                    f"the stable lane could not collect {rel}, so what it would collect there is unknown: "
                    + _last_line(entry.get("error", "")),
                    subject=f"collection of {rel}",
                ))
            continue
        link = _link_on_the_way(root, path)
        how = f" through the link {link[0]} -> {link[1]}" if link else ""
        what = entry.get("nodeid") or rel
        verb = "collected" if kind == "item" else "tried to collect (and failed)"
        line = entry.get("line", 1) if kind == "item" else 1
        found.append(Finding(
            rel, line if isinstance(line, int) and line > 0 else 1, 1, STABLE_LANE_COLLECTS_EXPERIMENTAL.id,
            f"the stable lane `pytest {lane}` {verb} {what}{how}, which resolves under "
            f"{settings.experimental_tests}/ ({why_config})",
            subject=what,
        ))
    if status not in (0, 5) and not found and not any(e.get("kind") == "item" for e in entries):
        found.append(_not_collected(lane, f"pytest exited with status {status}: {tail}"))
    return sorted(set(found))


def _resolves_under(path: str, directory: str) -> bool:
    real = os.path.realpath(path)
    return real == directory or real.startswith(directory.rstrip(os.sep) + os.sep)


def _relative(root: Path, path: str) -> Optional[str]:
    """`path` relative to `root` as collected, links not resolved, else None."""
    if not path:
        return None
    try:
        return Path(os.path.abspath(path)).relative_to(root).as_posix()
    except ValueError:
        return None


def _link_on_the_way(root: Path, path: str):
    """``(link, target)`` of the first symbolic link among `path`'s parts below `root`."""
    rel = _relative(root, path)
    if rel is None:
        return None
    current = root
    for part in rel.split("/"):
        current = current / part
        if current.is_symlink():
            target = os.path.realpath(current)
            shown = _relative(root, target) or target
            return current.relative_to(root).as_posix(), shown
    return None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no message)"


def main(argv: Optional[List[str]] = None) -> int:
    """The findings of `audit_collection` on ``--root``, for trying it by hand."""
    parser = argparse.ArgumentParser(description="Collect the stable lane as CI does; report experimental tests.")
    parser.add_argument("--root", type=Path, default=Path.cwd())
    parser.add_argument("--timeout", type=float, default=COLLECTION_SECONDS)
    options = parser.parse_args(argv)
    root = options.root.resolve()
    findings, stand_ins = audit_collection(root, load(root), timeout=options.timeout)
    for f in findings:
        print(f"{f.path}:{f.line}:{f.column}: {f.rule} {f.message}")
    print(f"{len(findings)} finding(s)" + (f"; stand-ins: {', '.join(stand_ins)}" if stand_ins else ""))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
