"""How fast is `policy-check audit` on a real FlashInfer tree, and what does it find?
Prints figures; asserts nothing.

    python benchmarks/audit_speed.py --root /tmp/fi/src --jobs 2 [--timeout 60] [--static] [--exclude GLOB]
        [--python PATH] [--report FILE]

Get the tree with ``pip download --no-deps flashinfer-python==0.7.4`` and unzip the
wheel into a folder outside this repository (never install it here); the audit
imports it, with torch and whatever else is installed (the rest is stood in for).
One fresh ``python -m policy_checks audit`` process, timed from the outside (wall
clock, and CPU seconds of the process and its workers from
``getrusage(RUSAGE_CHILDREN)``: on a shared machine the wall clock follows the
neighbours' load, the CPU time much less). Prints the modules audited and not
audited (by error type), the stand-ins, and the findings by rule. ``--static``
also runs ``policy-check run --select EXP001,EXP002`` and compares the AUD001 and
EXP001 findings as two sets of core lines: equal or not, and for each line found by
one only, why (its module not audited, and the error; the audit charging another line
of the file; the line loading nothing here; a route the static rule does not follow).
``--python PATH`` runs the tree's code in another interpreter (FlashInfer's
environment); ``--report FILE`` keeps the audit's JSON report, to compare two runs.
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
    found = re.search(r"raised (\w+)", message) or re.search(r"the audit (refused [\w.]+)", message)
    return found.group(1) if found else message.split(": ", 1)[-1][:40]


_MODULE = re.compile(r"[\w.]+")


def _experimental(message: str, word: str) -> str:
    """The experimental module a finding's message names last (EXP001 names the chain's
    end last but one when it names an excluded module between), else ""."""
    names = [m for m in _MODULE.findall(message) if "." in m and f".{word}." in f".{m}." and not m.endswith(".py")]
    return names[0] if names else ""


def _compare(audit: list, static: list, word: str = "experimental") -> dict:
    """Print the AUD001 and the static EXP001 findings as two sets of core lines
    (path:line), whether they are equal, and why each line in only one of them is there;
    return the counts."""
    aud = {(f["path"], f["line"]): f for f in audit if f["rule"] == "AUD001"}
    exp = {(f["path"], f["line"]): f for f in static if f["rule"] == "EXP001"}
    not_audited = {f["path"]: f["message"] for f in audit if f["rule"] == "AUD000"}
    exp002 = [f for f in static if f["rule"] == "EXP002"]
    print(f"AUD001 lines {len(aud)}, static EXP001 lines {len(exp)}: "
          + ("the sets are equal" if aud.keys() == exp.keys() else
             f"the sets differ ({len(aud.keys() & exp.keys())} in both, {len(exp.keys() - aud.keys())} static only, "
             f"{len(aud.keys() - exp.keys())} audit only)"))
    for key in sorted(exp.keys() & aud.keys()):
        print(f"  both {key[0]}:{key[1]}: {_experimental(aud[key]['message'], word)}")
    for key in sorted(exp.keys() - aud.keys()):
        path, line = key
        module = _experimental(exp[key]["message"], word)
        elsewhere = sorted(k[1] for k in aud if k[0] == path)
        if path in not_audited:
            why = "its module was not audited (" + not_audited[path].split(" not audited: ", 1)[-1][:160] + ")"
        elif elsewhere:
            why = f"the audit charges the same file at line(s) {', '.join(map(str, elsewhere))}"
        else:
            why = "its module imported without loading experimental code here (a branch not taken, a stand-in)"
        print(f"  static only {path}:{line}: {module}: {why}")
    for key in sorted(aud.keys() - exp.keys()):
        path, line = key
        message = aud[key]["message"]
        same = [f"EXP002 {f['path']}:{f['line']}" for f in exp002 if (f["path"], f["line"]) == key]
        why = f"static {same[0]}" if same else "a route the static rule does not follow: " + message[:200]
        print(f"  audit only {path}:{line}: {_experimental(message, word)}: {why}")
    return {"aud001_lines": len(aud), "exp001_lines": len(exp), "lines_in_both": len(aud.keys() & exp.keys()),
            "aud001_equals_exp001": aud.keys() == exp.keys(), "static_findings": len(static)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--static", action="store_true", help="compare with the static EXP001/EXP002 findings")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as a benchmark record")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="also leave these paths out of the imports (policy-check audit --exclude)")
    parser.add_argument("--python", default=None, metavar="PATH",
                        help="run the tree's code in this interpreter (policy-check audit --python)")
    parser.add_argument("--report", type=Path, default=None, metavar="FILE",
                        help="also keep the audit's JSON report here (to compare the findings of two runs)")
    options = parser.parse_args()
    cpu, start = _cpu(), time.perf_counter()
    report = _policy_check("audit", "--root", str(options.root), "--no-baseline", "--jobs", str(options.jobs),
                           "--timeout", str(options.timeout), "--quiet",
                           *[a for glob in options.exclude for a in ("--exclude", glob)],
                           *(("--python", options.python) if options.python else ()))
    wall, cpu = time.perf_counter() - start, _cpu() - cpu
    if options.report is not None:
        options.report.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    summary = report["audit"]
    findings = report["findings"]
    print(f"tree: {options.root}")
    python = summary.get("python") or {}
    print(f"interpreter: {python.get('path')} (Python {python.get('version')}, environment {python.get('prefix')})")
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
        figures.update(_compare(findings, static["findings"]))
    if options.json is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import bench_record

        bench_record.write(options.json, "audit_speed", figures, bench_record.command("audit_speed.py", tree=options.root),
                           tree={"flashinfer_version": bench_record.tree_version(options.root)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
