"""What a child of the audit cannot do to the audit: leave a process running after it
(even one that started a session of its own), or stop the audit's own process with a
signal; and where ``unshare`` cannot make the namespaces that ensure it, the report says
which protections are off."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid

import pytest
from click.testing import CliRunner

from policy_checks.audit import sandbox
from policy_checks.cli import main

from ..conftest import write_tree

TREE = {
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/plain.py": "X = 1\n",
}
needs_pid_namespace = pytest.mark.skipif(not sandbox.protections()["processes"],
                                         reason="unshare cannot make a PID namespace here")


def _with_marker(marker: str) -> list:
    """The pids of the processes whose command line holds `marker`."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if marker.encode() in handle.read():
                        found.append(int(name))
            except OSError:
                continue
    return found


@needs_pid_namespace
def test_no_process_a_module_starts_outlives_the_audit(tmp_path):
    """Started in a session of its own (out of the worker's process group), by a module
    whose own import returns at once; the twin, a process that ends by itself, still runs."""
    seconds = f"{1000 + uuid.uuid4().int % 1000}.{os.getpid()}"  # this run's own marker
    root = write_tree(tmp_path / "tree", {
        **TREE,
        "flashinfer/escapes.py": f"import subprocess\nsubprocess.Popen(['sleep', '{seconds}'], start_new_session=True)\n",
        "flashinfer/ends.py": "import subprocess\nsubprocess.run(['true'], check=True)\n",
    })
    try:
        result = CliRunner().invoke(main, ["audit", "--root", str(root), "--format", "json", "-j", "1"])
        document = json.loads(result.stdout)
        assert result.exit_code == 0, document["findings"]
        assert any(seconds in p for p in document["audit"]["processes"])
        assert any("'true'" in p for p in document["audit"]["processes"])
        assert _with_marker(seconds) == []
    finally:
        for pid in _with_marker(seconds):  # what the old audit left running
            os.kill(pid, signal.SIGKILL)


@needs_pid_namespace
def test_a_module_cannot_stop_the_audit(tmp_path):
    """SIGSTOP to its parent: the audit's process is outside the namespace, not even
    visible there, so at most the module's own worker gets it (which, the namespace's
    first process, ignores it, or else meets the time limit); the audit ends. Run as a
    process of its own, woken and ended if it stops."""
    root = write_tree(tmp_path / "tree", {
        **TREE, "flashinfer/stopper.py": "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n",
    })
    command = [sys.executable, "-m", "policy_checks", "audit", "--root", str(root), "--format", "json", "-j", "1",
               "--timeout", "3"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, _ = process.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGCONT)
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("the audit was stopped by the module it imported")
    findings = json.loads(out)["findings"]
    assert process.returncode in (0, 1)
    assert all(f["path"] == "flashinfer/stopper.py" for f in findings), findings


def test_the_report_says_which_protections_are_off(tmp_path, monkeypatch):
    """Where unshare cannot make the namespaces (no user namespaces), the audit still runs
    and says what that leaves open; where it can (the twin), it says nothing of them."""
    root = write_tree(tmp_path / "tree", TREE)
    monkeypatch.setattr(sandbox, "_isolation", lambda: ((), ()))
    bare = CliRunner().invoke(main, ["audit", "--root", str(root), "-j", "1"])
    assert bare.exit_code == 0, bare.output
    assert "protection off (unshare could not make it here): a PID namespace" in bare.output
    assert "protection off (unshare could not make it here): a network namespace" in bare.output
    document = json.loads(CliRunner().invoke(main, ["audit", "--root", str(root), "-j", "1", "--format", "json"]).stdout)
    assert document["audit"]["protections"] == {"network": False, "processes": False}
    monkeypatch.undo()
    if sandbox.protections() == {"network": True, "processes": True}:
        full = CliRunner().invoke(main, ["audit", "--root", str(root), "-j", "1"])
        assert "protection off" not in full.output


def test_each_worker_takes_a_run_of_neighbours_then_the_far_end_of_the_longest():
    """Neighbouring modules (one package's) go to one worker, which imports their common
    dependencies once; a worker done with its run helps the longest other run from its far
    end; one worker takes everything in order."""
    shares = sandbox.Shares(list(range(7)), 2)
    assert [shares.take(1) for _ in range(4)] == [4, 5, 6, 3]  # its own run, then the other's far end
    assert [shares.take(0) for _ in range(3)] == [0, 1, 2]
    assert not shares
    alone = sandbox.Shares(list(range(3)), 1)
    assert [alone.take(0) for _ in range(3)] == [0, 1, 2]


def test_workers_started_early_end_when_the_audit_goes_no_further(tmp_path):
    """Workers start before the copy is whole (they import the preloads meanwhile); when
    the audit stops before handing them any request, closing the pool ends them."""
    config = {"root": str(tmp_path), "package": "flashinfer", "experimental_package": "flashinfer.experimental",
              "stand_ins": True, "preload": [], "scratch": str(tmp_path)}
    pool = sandbox.Pool(config, 2, 10.0)
    with sandbox.Scratch() as scratch:
        pool.start(scratch, 5)
        started = [worker.process for worker in pool.started]
        assert len(started) == 2
        pool.close()
    assert all(process.poll() is not None for process in started)
    assert not pool.started
