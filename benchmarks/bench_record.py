"""One JSON record of a benchmark run: its headline figures, the command, the date, the machine.

Each benchmark that README.md's "Measured" table quotes takes ``--json PATH`` and writes
its record with `write`; ``benchmarks/measured.py`` runs them, keeps the records under
``benchmarks/results/`` and builds the table from them. A record::

    {"benchmark": "check_speed",
     "command": "python benchmarks/check_speed.py --root DIR --jobs 2",
     "date": "2026-12-02T10:00:00+00:00",          # UTC, when the run ended
     "source": "run",                              # or "commit <sha>": figures from a commit
     "machine": {"platform": ..., "cpus": 2, "gpu": null, ...},
     "figures": {...}}                             # the benchmark's own headline figures

The command is the one to type again: ``--json PATH`` is left out and the FlashInfer
tree the run read is spelled ``DIR``.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

#: Keys every record has (a value may be null where it is not known).
REQUIRED = ("benchmark", "command", "date", "source", "machine", "figures")
#: Keys every record's "machine" has.
MACHINE_REQUIRED = ("platform", "cpus", "gpu")


def gpu_name() -> str | None:
    """The first GPU's name: from torch if this process already loaded it, else from
    ``nvidia-smi``; None when there is none (torch is not imported for this)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                return torch.cuda.get_device_name(0)
        except Exception:  # noqa: BLE001 - a broken CUDA set-up is no GPU here
            pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            done = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"],
                                  capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        names = [line.strip() for line in done.stdout.splitlines() if line.strip()]
        if done.returncode == 0 and names:
            return names[0]
    return None


def machine() -> dict:
    """What the run ran on. The load average is read when the record is written, so it
    counts the benchmark itself too; well above 1 per CPU means other work shared it."""
    try:
        load = [round(value, 2) for value in os.getloadavg()]
    except OSError:
        load = None
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "gpu": gpu_name(),
        "python": platform.python_version(),
        "load_average": load,
    }


def command(script: str, argv: list | None = None, tree: str | Path | None = None) -> str:
    """``python benchmarks/<script> ARGS``: `argv` (default: this process's arguments)
    without ``--json PATH``, the FlashInfer `tree`'s path (and paths below it) as ``DIR``."""
    args = list(sys.argv[1:] if argv is None else argv)
    kept, skip = [], False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == "--json":
            skip = True
            continue
        if arg.startswith("--json="):
            continue
        kept.append(arg)
    if tree is not None:
        top = Path(tree).resolve()
        for i, arg in enumerate(kept):
            head, sep, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
            if not value or not os.path.exists(value):
                continue
            path = Path(value).resolve()
            if path == top or top in path.parents:
                kept[i] = head + sep + "/".join(["DIR", *path.relative_to(top).parts])
    return " ".join(["python", f"benchmarks/{script}", *kept])


def tree_version(tree: str | Path) -> str | None:
    """The FlashInfer version of an unpacked wheel (from its ``*.dist-info`` folder's name)."""
    for info in sorted(Path(tree).glob("flashinfer_python-*.dist-info")):
        return info.name[len("flashinfer_python-"):-len(".dist-info")]
    return None


def write(path: str | Path, benchmark: str, figures: dict, command_line: str, **extra) -> dict:
    """Write the record of this run to `path` (JSON) and return it; `extra` keys are
    added beside the required ones (e.g. ``tree``)."""
    record = {
        "benchmark": benchmark,
        "command": command_line,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "source": "run",
        "machine": machine(),
        **extra,
        "figures": figures,
    }
    Path(path).write_text(json.dumps(record, indent=1) + "\n")
    return record
