"""Run the test lanes and report each, whatever the others say.

    python3 tests/lanes.py                    # stable and experimental lanes, side by side
    python3 tests/lanes.py --round-trips      # and the round trips on a copy of the repository
    python3 tests/lanes.py -- -k gemm -x      # arguments after -- go to every pytest

A lane is one pytest process over one directory (``pytest.ini`` keeps the others out
of ``tests/``). The lanes run at the same time, each with its output in a file of its
own, so a failure in one never hides another and the machine's cores are all used;
each lane's output is printed when it ends, then one line per lane. The exit status
is 0 only if every lane passed; a lane that collects no test (pytest's exit 5) passes.

The lanes write Python's bytecode caches (``__pycache__``, ignored by git) even where
``PYTHONDONTWRITEBYTECODE`` is set: without them every pytest process (each xdist worker
too) rewrites the asserts of every test module and compiles every module it imports
again, run after run, about 8 s of CPU a process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
LANES = {"stable": "tests/", "experimental": "tests/experimental/", "round-trips": "tests/round_trips/"}
# The stable lane is most of the work: its tests are spread over one worker a core
# (pytest-xdist), so it takes what the other lanes leave of the machine.
# worksteal: a worker left idle at the end takes tests queued on the other.
SPREAD = {"stable": ("-n", "auto", "--dist", "worksteal")}
DEFAULT = ("stable", "experimental")
NO_TESTS = 5  # pytest's exit status when a lane collects nothing


@dataclass
class Lane:
    name: str
    process: subprocess.Popen
    log: IO[bytes]
    started: float
    seconds: Optional[float] = None

    @property
    def passed(self) -> bool:
        return self.process.returncode in (0, NO_TESTS)

    def last_line(self) -> str:
        self.log.seek(0)
        lines = [line for line in self.log.read().decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1].strip("= ") if lines else "(no output)"


def start(name: str, directory: str, root: Path, pytest_args: List[str]) -> Lane:
    log = tempfile.TemporaryFile()
    command = [sys.executable, "-m", "pytest", directory, "-q", *SPREAD.get(name, ()), *pytest_args]
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # module docstring
    process = subprocess.Popen(command, cwd=root, env=environment, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)
    return Lane(name, process, log, time.monotonic())


def main(argv: Optional[List[str]] = None, root: Path = ROOT, lanes: Dict[str, str] = LANES) -> int:
    """Run the lanes `argv` selects (module docstring); the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round-trips", action="store_true", help="also run the round-trip lane (minutes)")
    parser.add_argument("--only", choices=sorted(lanes), action="append", help="run only this lane (repeatable)")
    options = parser.parse_args(own)
    names = options.only or [*DEFAULT, *(["round-trips"] if options.round_trips else [])]

    running = [start(name, lanes[name], root, pytest_args) for name in names]
    print(f"running {', '.join(names)} ...", flush=True)
    waiting = list(running)
    try:
        while waiting:
            for lane in [lane for lane in waiting if lane.process.poll() is not None]:
                lane.seconds = time.monotonic() - lane.started
                waiting.remove(lane)
                lane.log.seek(0)
                print(f"\n---- lane {lane.name}: pytest {lanes[lane.name]} ----", flush=True)
                sys.stdout.buffer.write(lane.log.read())
                sys.stdout.flush()
            time.sleep(0.2)
    finally:  # an interrupt stops every lane, not only this process
        for lane in waiting:
            lane.process.terminate()

    print("\n---- lanes ----")
    for lane in running:
        verdict = "ok" if lane.passed else f"FAILED (exit {lane.process.returncode})"
        print(f"{lane.name:<13} {verdict:<16} {lane.seconds:6.1f} s  {lane.last_line()}")
    return 0 if all(lane.passed for lane in running) else 1


if __name__ == "__main__":
    sys.exit(main())
