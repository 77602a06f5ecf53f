"""The audit's isolated children.

They are ``python -I`` subprocesses (`isolated_command`). They run in the scratch
home, cache and temporary directory of one audit (`Scratch`). They get a minimal
environment, a time limit, and no network. Their audit hook refuses the network.
Where ``unshare`` can, they also run in a network namespace of their own.

Inside, each installs `child_setup.py`: the tree first, the network refused,
stand-ins. The import audit's workers run `tracer.py`. The stable lane's collection
runs `collector.py` once (`run_once`).

A worker imports the heavy third-party packages the tree uses once (`PRELOAD`, as
`preloads` finds them). Then it answers one request at a time. `Pool` hands
requests to whichever worker is free. It replaces a worker that overran its time
limit or died, reporting the request it was on.
"""

from __future__ import annotations

import functools
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Callable, NamedTuple, Optional

TRACER = Path(__file__).with_name("tracer.py")
# imported once per worker before any request, untraced (whatever is installed of them)
PRELOAD = ("torch", "numpy")
STARTUP_SECONDS = 300  # a worker's start, preloads included, may take this long
# environment variables a worker inherits; everything else (tokens, proxies, the
# package's own switches) stays out
_KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


class Request(NamedTuple):
    id: int
    op: str  # "import" or "aot"
    module: str


class Outcome(NamedTuple):
    request: Request
    answer: Optional[dict]  # the tracer's answer, or None when the worker failed
    problem: str  # why there is no answer ("" when there is one)


class Scratch:
    """The scratch directories every child of one audit shares, removed afterwards."""

    def __init__(self):
        self.path = Path(tempfile.mkdtemp(prefix="policy-check-audit-"))
        for name in ("home", "cache", "config", "data", "tmp"):
            (self.path / name).mkdir()
        # (folder of the tree, where it belongs in the private copy): bound read-only there
        # in every child's mount namespace rather than copied (`bind_read_only`)
        self.binds: list = []

    def environment(self) -> dict:
        env = {key: os.environ[key] for key in _KEPT if key in os.environ}
        env.update(
            HOME=str(self.path / "home"), XDG_CACHE_HOME=str(self.path / "cache"),
            XDG_CONFIG_HOME=str(self.path / "config"), XDG_DATA_HOME=str(self.path / "data"),
            TMPDIR=str(self.path / "tmp"), PYTHONNOUSERSITE="1", CUDA_VISIBLE_DEVICES="",
        )
        return env

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> "Scratch":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


# what each kind of namespace protects, as the report words it when it is off
PROTECTIONS = {
    "network": "a network namespace (the processes the imports start have the network; the audit hook "
               "refuses it to Python code only)",
    "processes": "a PID namespace (a process the imports start that leaves its session can outlive the "
                 "audit, and the code under test can see and signal the audit's own process, stop it "
                 "with SIGSTOP say)",
}
# the strongest isolation first: a PID namespace with its own /proc (every process a child
# starts dies with it; the audit's process is neither visible nor reachable by a signal),
# then the network namespace alone
_ATTEMPTS = (
    (("-rn", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc"), ("network", "processes")),
    (("-rn",), ("network",)),
)


@functools.lru_cache(maxsize=1)
def _isolation() -> tuple:
    """``(command prefix, protections it gives)``, else ``((), ())``.

    It is the first of `_ATTEMPTS` that ``unshare`` can make here, with user
    namespaces.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        return (), ()
    for flags, kinds in _ATTEMPTS:
        try:
            done = subprocess.run([unshare, *flags, "true"], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return (unshare, *flags), kinds
    return (), ()


def network_namespace() -> tuple:
    """The command prefix that runs a child in a network namespace of its own.

    The namespace has no interface but a loopback that is down. So neither the child
    nor any process it starts has a network. Returns () where ``unshare`` cannot
    make one, for lack of user namespaces.
    """
    prefix, kinds = _isolation()
    return prefix if "network" in kinds else ()


def protections() -> dict:
    """Which protections the children run with: `PROTECTIONS`'s keys -> on?"""
    kinds = _isolation()[1]
    return {kind: kind in kinds for kind in PROTECTIONS}


class Interpreter(NamedTuple):
    """The Python the children run (``--python``). By default it is the checker's own."""
    path: str
    version: str  # "3.11.9"
    prefix: str  # its sys.prefix: the environment whose packages are audited


_ASK = "import json, platform, sys; print(json.dumps([platform.python_version(), sys.prefix]))"


def interpreter(python: Optional[str] = None) -> Interpreter:
    """The interpreter at `python`, by default this one.

    It is asked for its version under ``-I``, as the children run it. Raises
    ValueError when it cannot be run, or is older than 3.10. The children's scripts
    need 3.10.
    """
    path = os.path.abspath(python) if python else sys.executable
    try:
        done = subprocess.run([path, "-I", "-c", _ASK], capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
                              env={key: os.environ[key] for key in _KEPT if key in os.environ})
        version, prefix = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError, TypeError) as error:
        raise ValueError(f"--python {path}: cannot be run as a Python interpreter ({error})") from None
    if tuple(int(part) for part in version.split(".")[:2] if part.isdigit()) < (3, 10):
        raise ValueError(f"--python {path}: Python {version}; the audit's children need 3.10 or newer")
    return Interpreter(path, str(version), str(prefix))


# run inside a child's namespaces before its interpreter: each pair of arguments up to
# "--" is bound read-only (a folder of the tree, at its place in the private copy)
_BIND = 'while [ "$1" != -- ]; do mount --bind -o ro "$1" "$2" || exit 125; shift 2; done; shift; exec "$@"'


def _bound(binds) -> list:
    """The command prefix that binds `binds` read-only, then runs what follows it.

    `binds` holds ``(folder, place)`` pairs. There is no prefix when there is
    nothing to bind.
    """
    if not binds:
        return []
    return ["sh", "-c", _BIND, "sh", *[path for pair in binds for path in pair], "--"]


@functools.lru_cache(maxsize=8)
def bind_read_only(folder: str) -> bool:
    """Can every child see `folder` read-only at another place?

    Each child would use a mount namespace of its own (``unshare --mount``). This is
    tried once with a scratch mount point. The bind must be made, and the place must
    not be writable. A folder the children see so need not be copied. No write of
    theirs, by Python, a library or a process, can reach it.
    """
    prefix, _ = _isolation()
    if "--mount" not in prefix or shutil.which("mount") is None or shutil.which("sh") is None:
        return False
    with tempfile.TemporaryDirectory(prefix="policy-check-bind-") as place:
        try:
            done = subprocess.run([*prefix, *_bound([(folder, place)]), "sh", "-c", 'test ! -w "$1"', "sh", place],
                                  capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return done.returncode == 0


def isolated_command(script: Path, *args: str, python: Optional[str] = None, binds=()) -> list:
    """The command line of one child: `script` under ``python -I``.

    That means no user site and no ``PYTHON*`` variables. Neither the script's folder
    nor the current one is on the path. It runs in a network namespace of its own
    where one can be made. `binds` are bound read-only first. They are
    ``(folder, place)`` pairs, only where `bind_read_only` said so.
    """
    return [*_isolation()[0], *_bound(binds), python or sys.executable, "-I", str(script), *args]


def start(command: list, scratch: Scratch, cwd: Optional[Path] = None, **streams) -> subprocess.Popen:
    """`command` started in the scratch environment, in a process group of its own."""
    return subprocess.Popen(command, cwd=cwd or scratch.path / "tmp", env=scratch.environment(),
                            start_new_session=True, **streams)


def _processes() -> dict:
    """pid -> (parent pid, process group, session) of every process /proc shows."""
    found = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                text = handle.read(4096)
        except OSError:
            continue
        fields = text[text.rfind(b")") + 2:].split()  # after the command name, which may hold anything
        if len(fields) >= 4:
            found[int(name)] = (int(fields[1]), int(fields[2]), int(fields[3]))
    return found


def started_by(leader: int) -> set:
    """The processes `leader` started, as /proc shows them now.

    They are its descendants, and every process still in its process group or
    session. Its orphans keep those when their parent is gone.
    """
    table = _processes()
    found = {pid for pid, (_, group, session) in table.items() if leader in (group, session)}
    children = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    pending = [leader, *found]
    while pending:
        for child in children.get(pending.pop(), ()):
            if child not in found:
                found.add(child)
                pending.append(child)
    found.discard(leader)
    found.discard(os.getpid())
    return found


def kill_group(process: subprocess.Popen) -> None:
    """End `process` and whatever it started, then wait for it.

    What it started is its group, its session, and its descendants, found through
    /proc. In a PID namespace, the kernel ends them all with it.
    """
    others = started_by(process.pid)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in others:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    process.wait()


def ended_within(process: subprocess.Popen, timeout: float) -> bool:
    """Has `process` exited within `timeout` seconds?

    It is left unreaped. So its pid names nothing else while what it started is
    ended. The same holds for its group's and session's ids.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            if os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def run_once(command: list, scratch: Scratch, cwd: Path, timeout: float, output: Path,
             give: tuple = (), first_line: str = "") -> Optional[int]:
    """Run `command` to its end. Returns its exit status, or None past `timeout` seconds.

    Standard output and error go into `output`. Whatever it started is ended with
    it. Its standard input is a pipe held open until then. So the child ends itself
    when the audit is gone (`child_setup.exit_with_parent`).

    - `give`: descriptors the child inherits. The parent's copies are closed once it
      started. So a pipe's reader sees its end when the child's is gone.
    - `first_line`: written to its input first. It is the child's configuration,
      never a file another child could rewrite.
    """
    with open(output, "wb") as log:
        try:
            process = start(command, scratch, cwd, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                            pass_fds=give)
        finally:
            for fd in give:
                os.close(fd)
        try:
            if first_line:
                process.stdin.write(first_line.encode() + b"\n")
                process.stdin.flush()
            ended = ended_within(process, timeout)
        finally:
            kill_group(process)
            process.stdin.close()
        return process.returncode if ended else None


MAX_ANSWER = 64 << 20  # bytes of one answer line


def _parsed(line: bytes):
    try:
        return json.loads(line)
    except ValueError:
        return None


def _place(value) -> bool:
    return value is None or (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
                             and isinstance(value[1], int) and not isinstance(value[1], bool))


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _each(value, check) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) and check(v) for v in value)


def _record(r) -> bool:
    return (isinstance(r.get("unit"), str) and _place(r.get("core")) and _strings(r.get("through", []))
            and _strings(r.get("callers", [])) and all(isinstance(r.get(k, ""), str) for k in ("loader", "detail", "event"))
            and all(isinstance(r.get(k, False), bool) for k in ("at_import", "asked")))


def _spec(spec) -> bool:
    return (isinstance(spec.get("name"), str) and _strings(spec.get("experimental_sources", []))
            and isinstance(spec.get("created_in"), (str, type(None))) and isinstance(spec.get("experimental"), bool))


def answer_problem(answer, request: Request) -> str:
    """Why `answer` is not one the tracer writes for `request`, or "".

    It checks the id, and every field the judging reads, of the type it reads. The
    parent believes nothing else.
    """
    if not isinstance(answer, dict):
        return "not a JSON object"
    if answer.get("id") != request.id:
        return "another request's id"
    if not isinstance(answer.get("ok"), bool):
        return "no outcome"
    checks = {
        "records": _each(answer.get("records"), _record),
        "refusals": _each(answer.get("refusals"), lambda r: isinstance(r.get("event"), str)
                          and isinstance(r.get("args", ""), str) and _place(r.get("core"))),
        "processes": _each(answer.get("processes"), lambda r: isinstance(r.get("args", ""), str)
                           and _place(r.get("core"))),
        "stand_ins": _strings(answer.get("stand_ins")),
    }
    error = answer.get("error")
    if not answer["ok"]:
        checks["error"] = (isinstance(error, dict) and isinstance(error.get("type"), str)
                           and isinstance(error.get("message"), str) and _place(error.get("at")))
    if request.op == "aot" and answer["ok"]:
        value = answer.get("value")
        checks["value"] = (isinstance(value, dict) and isinstance(value.get("shape"), str) and _place(value.get("at"))
                           and _each(value.get("specs"), _spec))
    wrong = [name for name, fine in checks.items() if not fine]
    return f"malformed {', '.join(wrong)}" if wrong else ""


class Worker:
    """One tracer subprocess."""

    def __init__(self, config: str, scratch: Scratch, python: str):
        self.process = start(isolated_command(TRACER, python=python, binds=scratch.binds), scratch,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.process.stdin.write(config.encode() + b"\n")  # its configuration, the first line
        self.process.stdin.flush()
        os.set_blocking(self.process.stdout.fileno(), False)
        self.buffer = b""
        self.current: Optional[Request] = None
        self.deadline = time.monotonic() + STARTUP_SECONDS
        self.ready = False

    def tree_ready(self) -> None:
        """Tell the worker that the private copy of the tree is whole.

        It imported the preloads meanwhile. It puts the tree on its path and says
        when it is ready.
        """
        try:
            self.process.stdin.write(b'{"tree": true}\n')
            self.process.stdin.flush()
        except OSError:
            pass  # it is gone already: its end is read from its output
        self.deadline = time.monotonic() + STARTUP_SECONDS

    def send(self, request: Request, timeout: float) -> None:
        self.current = request
        self.deadline = time.monotonic() + timeout
        line = json.dumps({"id": request.id, "op": request.op, "module": request.module}) + "\n"
        self.process.stdin.write(line.encode())
        self.process.stdin.flush()

    def lines(self) -> list:
        """Complete answer lines read so far. b"" at the end means the worker is gone."""
        try:
            chunk = os.read(self.process.stdout.fileno(), 1 << 20)
        except BlockingIOError:
            return []
        if not chunk:
            return [b""]
        self.buffer += chunk
        *complete, self.buffer = self.buffer.split(b"\n")
        if len(self.buffer) > MAX_ANSWER:
            self.buffer = b""
            return [*complete, b"{}"]  # no answer is that long: not believed (`answer_problem`)
        return complete

    def kill(self) -> None:
        kill_group(self.process)
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        ended_within(self.process, 5)
        self.kill()

    def ended(self) -> str:
        """Why the worker is gone, in words."""
        try:  # read without reaping: `kill` still ends what it started under its pid
            info = os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None
        if info is None:
            return "the worker stopped answering"
        if info.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
            return f"the interpreter died (signal {info.si_status})"
        return f"the interpreter exited (status {info.si_status})"


class Shares:
    """The requests, in one run of neighbours per worker.

    A run keeps the modules of a package together, as sorted. So a package's common
    dependencies are imported by the worker whose run holds it. Otherwise every
    worker would import them, as when each takes the next request in turn. A worker
    whose run is done takes from the far end of the longest other run.
    """

    def __init__(self, requests: list, parts: int):
        size = -(-len(requests) // max(1, parts))
        self.runs = [deque(requests[i * size:(i + 1) * size]) for i in range(max(1, parts))]

    def __bool__(self) -> bool:
        return any(self.runs)

    def take(self, slot: int) -> Request:
        """The next request of share `slot`. Raises IndexError when none is left at all."""
        own = self.runs[slot]
        return own.popleft() if own else max(self.runs, key=len).pop()


class Pool:
    """`jobs` workers answering `requests`, each its `Shares` run.

    Every request gets one `Outcome`. `start` may start them early. They then import
    the preloads while the tree is still being copied. `run` says the tree is ready,
    then hands out the requests.
    """

    def __init__(self, config: dict, jobs: int, timeout: float, python: Optional[str] = None,
                 progress: Optional[Callable[[int, int], None]] = None):
        self.config, self.jobs, self.timeout = config, max(1, jobs), timeout
        self.python = python or sys.executable
        self.progress = progress
        self.started: list = []  # workers `start` started, not yet told the tree is ready

    def start(self, scratch: Scratch, count: int) -> None:
        """Start `count` workers, at most `jobs`, in `scratch` now."""
        config = json.dumps(self.config)
        for _ in range(min(self.jobs, count) - len(self.started)):
            self.started.append(Worker(config, scratch, self.python))

    def close(self) -> None:
        """End the workers `start` started that `run` never took, since it was not reached."""
        for worker in self.started:
            worker.kill()
        self.started = []

    def run(self, requests: list, scratch: Optional[Scratch] = None) -> list:
        """The outcomes of `requests`. The workers run in `scratch`, by default their own."""
        own = scratch is None
        scratch = scratch or Scratch()
        config = json.dumps(self.config)
        pending = Shares(requests, min(self.jobs, len(requests)))
        outcomes = []
        selector = selectors.DefaultSelector()
        workers = []
        slots = {}  # worker -> its share of `pending`

        def enlist(worker: Worker, slot: int) -> Worker:
            worker.tree_ready()
            selector.register(worker.process.stdout, selectors.EVENT_READ, worker)
            workers.append(worker)
            slots[worker] = slot
            return worker

        def start(slot: int) -> Worker:
            return enlist(Worker(config, scratch, self.python), slot)

        def retire(worker: Worker, problem: str) -> None:
            selector.unregister(worker.process.stdout)
            workers.remove(worker)
            worker.kill()
            if worker.current is not None:
                outcomes.append(Outcome(worker.current, None, problem))
                self._tick(len(outcomes), len(requests))
            elif not worker.ready:  # it never started: nothing can run
                while pending:
                    outcomes.append(Outcome(pending.take(0), None, f"the worker could not start: {problem}"))
            if pending:
                start(slots[worker])  # its replacement goes on with its share

        def dispatch(worker: Worker) -> None:
            worker.current = None
            if pending:
                worker.send(pending.take(slots[worker]), self.timeout)

        early, self.started = self.started, []
        try:
            for slot, worker in enumerate(early[:len(requests)]):
                enlist(worker, slot)
            for worker in early[len(requests):]:
                worker.kill()
            for slot in range(len(workers), min(self.jobs, len(requests))):
                start(slot)
            while workers:
                now = time.monotonic()
                wait = max(0.0, min(w.deadline for w in workers) - now)
                for key, _ in selector.select(timeout=wait):
                    worker = key.data
                    for line in worker.lines():
                        if line == b"":
                            retire(worker, worker.ended())
                            break
                        answer = _parsed(line)
                        if not worker.ready and isinstance(answer, dict) and answer.get("ready") is True:
                            worker.ready = True
                        elif worker.current is not None and not answer_problem(answer, worker.current):
                            outcomes.append(Outcome(worker.current, answer, ""))
                            self._tick(len(outcomes), len(requests))
                        else:  # not an answer the tracer writes: its worker is not believed
                            retire(worker, "its answer was not one the audit's tracer writes ("
                                           + (answer_problem(answer, worker.current) if worker.current is not None
                                              else "an answer with no request") + ")")
                            break
                        dispatch(worker)
                        if worker.current is None:  # nothing left for it
                            selector.unregister(worker.process.stdout)
                            workers.remove(worker)
                            worker.close()
                            break
                now = time.monotonic()
                for worker in [w for w in workers if w.deadline <= now]:
                    limit = f"{self.timeout:g} s" if worker.ready else f"{STARTUP_SECONDS} s to start"
                    retire(worker, f"time limit ({limit}) exceeded")
        finally:
            for worker in workers:
                worker.kill()
            selector.close()
            if own:
                scratch.remove()
        return outcomes

    def _tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)
