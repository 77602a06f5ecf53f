"""What a baseline reports across a real upgrade of an unpacked FlashInfer wheel.

    python benchmarks/baseline_upgrade.py OLD_TREE NEW_TREE OUT.txt

Copies OLD_TREE to a scratch directory, writes its baseline (``policy-check
baseline``), then upgrades the copy to NEW_TREE in two ways and runs ``policy-check
run --format json`` on each:

- overlay: ``cp -r NEW/. DIR/`` (files deleted in NEW stay in the copy);
- replace: everything but the baseline removed first, then NEW copied in (what
  ``rsync -a --delete`` gives: a real upgrade).

It compares what the baseline reports with a plain multiset difference of the
fingerprints of ``--no-baseline`` runs on both trees (NEW minus OLD: the findings
NEW introduced; OLD minus NEW: the ones it removed) and writes every list to
OUT.txt. Nothing is installed; the trees are only read.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FILE = "policy-check-baseline.json"


def policy_check(*args) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "policy_checks", *args], capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"policy-check {' '.join(args)} failed:\n{done.stderr}")
    return done


def fingerprints(tree: Path, scratch: Path) -> collections.Counter:
    """Fingerprints of every finding of `tree` (a baseline written elsewhere)."""
    out = scratch / f"{tree.name}-all.json"
    policy_check("baseline", "--root", str(tree), "--file", str(out))
    entries = json.loads(out.read_text())["entries"]
    return collections.Counter({(e["rule"], e["module"], e["scope"], e["subject"]): e["count"] for e in entries})


def upgrade(old: Path, new: Path, scratch: Path, replace: bool) -> dict:
    tree = scratch / ("replace" if replace else "overlay")
    shutil.copytree(old, tree, symlinks=True)
    policy_check("baseline", "--root", str(tree))
    if replace:
        for entry in tree.iterdir():
            if entry.name != FILE:
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    shutil.copytree(new, tree, symlinks=True, dirs_exist_ok=True)
    return json.loads(policy_check("run", "--root", str(tree), "--format", "json").stdout)


def key(finding: dict) -> tuple:
    return finding["rule"], finding["module"], finding["scope"], finding["subject"]


def main(old: str, new: str, out: str) -> None:
    old, new = Path(old).resolve(), Path(new).resolve()
    lines = [f"baseline upgrade experiment: {old.name} -> {new.name}", ""]
    with tempfile.TemporaryDirectory(prefix="baseline-upgrade-") as scratch:
        scratch = Path(scratch)
        before, after = fingerprints(old, scratch), fingerprints(new, scratch)
        introduced, removed = after - before, before - after
        lines += [
            f"--no-baseline findings: {sum(before.values())} in {old.name}, {sum(after.values())} in {new.name}",
            f"plain set difference of fingerprints: {sum(introduced.values())} introduced, "
            f"{sum(removed.values())} removed",
            "",
        ]
        for mode in ("replace", "overlay"):
            document = upgrade(old, new, scratch, mode == "replace")
            reported = collections.Counter(key(f) for f in document["findings"])
            fixed = collections.Counter({key(e): e["count"] for e in document["baseline_fixed_entries"]})
            per_rule = collections.Counter(f["rule"] for f in document["findings"])
            fixed_rule = collections.Counter({})
            for (rule, *_), n in fixed.items():
                fixed_rule[rule] += n
            title = {"replace": "replace (rsync --delete semantics: a real upgrade)",
                     "overlay": "overlay (cp -r NEW/. DIR/: files deleted upstream remain)"}[mode]
            lines += [
                f"== {title}",
                f"reported (new): {len(document['findings'])} {dict(sorted(per_rule.items()))}; "
                f"baselined: {document['baselined']}; fixed: {document['baseline_fixed']} "
                f"{dict(sorted(fixed_rule.items()))}",
                f"reported == introduced (set difference): {reported == introduced}",
                f"fixed == removed (set difference): {fixed == removed}",
            ]
            for name, extra in (("reported, not introduced", reported - introduced),
                                ("introduced, not reported", introduced - reported),
                                ("fixed, not removed", fixed - removed), ("removed, not fixed", removed - fixed)):
                if extra:
                    lines.append(f"  {name}: {sorted(extra.elements())}")
            lines.append("-- findings reported:")
            lines += [f"  {f['path']}:{f['line']}:{f['column']}: {f['rule']} [{f['module']} | {f['scope']} | "
                      f"{f['subject']}] {f['message']}" for f in document["findings"]]
            lines.append("-- baseline entries fixed:")
            lines += [f"  {e['rule']} {e['module']} | {e['scope']} | {e['subject']} (x{e['count']})"
                      for e in document["baseline_fixed_entries"]]
            lines.append("")
    Path(out).write_text("\n".join(lines) + "\n")
    print("\n".join(line for line in lines if not line.startswith("  ")))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    os.environ.setdefault("POLICY_CHECK_CACHE_DIR", tempfile.mkdtemp(prefix="policy-check-cache-"))
    main(*sys.argv[1:])
