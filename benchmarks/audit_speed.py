"""How fast is `policy-check audit` on a real FlashInfer tree, and what does it find?
Prints figures; asserts nothing.

    python benchmarks/audit_speed.py --root /tmp/fi/src --jobs 2 [--timeout 60] [--static] [--exclude GLOB]

Get the tree with ``pip download --no-deps flashinfer-python==0.7.4`` and unzip the
wheel into a folder outside this repository (never install it here); the audit
imports it, with torch and whatever else is installed (the rest is stood in for).
One fresh ``python -m policy_checks audit`` process, timed from the outside (wall
clock, and CPU seconds of the process and its workers from
``getrusage(RUSAGE_CHILDREN)``: on a shared machine the wall clock follows the
neighbours' load, the CPU time much less). Prints the modules audited and not
audited (by error type), the stand-ins, and the findings by rule. ``--static``
also runs ``policy-check run --select EXP001,EXP002`` and says which static
finding the audit confirms (an AUD001 at the same file naming the same module).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _policy_check(*args: str) -> dict:
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    done = subprocess.run([sys.executable, "-m", "policy_checks", *args, "--format", "json"], capture_output=True,
                          text=True, env=environment, cwd=REPOSITORY)
    if done.returncode not in (0, 1):
        raise SystemExit(f"policy-check {args[0]} failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout)


def _error_type(message: str) -> str:
    found = re.search(r"raised (\w+)", message)
    return found.group(1) if found else message.split(": ", 1)[-1][:40]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--static", action="store_true", help="compare with the static EXP001/EXP002 findings")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as a benchmark record")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="also leave these paths out of the imports (policy-check audit --exclude)")
    options = parser.parse_args()
    cpu, start = _cpu(), time.perf_counter()
    report = _policy_check("audit", "--root", str(options.root), "--no-baseline", "--jobs", str(options.jobs),
                           "--timeout", str(options.timeout), "--quiet",
                           *[a for glob in options.exclude for a in ("--exclude", glob)])
    wall, cpu = time.perf_counter() - start, _cpu() - cpu
    summary = report["audit"]
    findings = report["findings"]
    print(f"tree: {options.root}")
    print(f"wall {wall:.1f} s, CPU {cpu:.1f} s, jobs {options.jobs}")
    print(f"core modules {summary['modules']}: audited {summary['audited']}, not audited {summary['not_audited']}")
    errors = Counter(_error_type(f["message"]) for f in findings if f["rule"] == "AUD000")
    print("not audited by cause: " + ", ".join(f"{k} {n}" for k, n in errors.most_common()))
    print(f"stand-ins ({len(summary['stand_ins'])}): {', '.join(summary['stand_ins'])}")
    lane = summary.get("collection_stand_ins", [])
    print(f"stand-ins in the stable lane's collection ({len(lane)}): {', '.join(lane)}")
    print(f"skipped: {', '.join(s['path'] for s in summary['skipped'])}")
    print("findings by rule: " + ", ".join(f"{k} {n}" for k, n in sorted(Counter(f['rule'] for f in findings).items())))
    for f in findings:
        if f["rule"] != "AUD000":
            print(f"  {f['path']}:{f['line']}: {f['rule']} {f['message']}")
    figures = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "jobs": options.jobs,
               "modules": summary["modules"], "audited": summary["audited"], "not_audited": summary["not_audited"],
               "stand_ins": len(summary["stand_ins"]),
               "findings": {k: n for k, n in sorted(Counter(f["rule"] for f in findings).items())}}
    if options.static:
        static = _policy_check("run", "--root", str(options.root), "--select", "EXP001,EXP002", "--no-baseline")
        audit = [f for f in findings if f["rule"] == "AUD001"]
        for f in static["findings"]:
            module = re.search(r"imports (\S+)", f["message"])
            name = module.group(1) if module else ""
            confirmed = [a for a in audit if a["path"] == f["path"] and name and name in a["message"]]
            verdict = "confirmed" if confirmed else "NOT confirmed"
            print(f"static {f['rule']} {f['path']}:{f['line']} {name}: {verdict}")
            figures.setdefault("static_confirmed", 0)
            figures["static_confirmed"] += bool(confirmed)
        figures["static_findings"] = len(static["findings"])
    if options.json is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import bench_record

        bench_record.write(options.json, "audit_speed", figures, bench_record.command("audit_speed.py", tree=options.root),
                           tree={"flashinfer_version": bench_record.tree_version(options.root)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
