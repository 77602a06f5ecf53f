"""How long the lifecycle commands take on a real tree: ``features``, ``remove --diff``
and ``graduate --diff``.

    python benchmarks/lifecycle_speed.py [TREE] [--repeat N] [--feature NAME ...]

TREE defaults to the unpacked FlashInfer 0.7.4 wheel (/tmp/fi/fi074); the features
default to three of its shapes (an API with its own core module, a backend behind a
stable API, an API served through a lazy export). The file count printed is the
Python files the commands read: the checker's, its settings' ``exclude`` applied
(``flashinfer/data`` by default), beside all of ``flashinfer/``'s. Each command runs as a whole
process with ``--diff`` (nothing is written), best of N; ``features`` has no cache to
warm, the others read every Python file of the package once (no facts cache: the
lifecycle commands build their project model fresh). Target: ``features`` under 1 s.
The script prints the exit status beside each figure: 1 is a refusal, which is a
finding about the tree, not a failure of the benchmark.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_TREE = Path("/tmp/fi/fi074")
DEFAULT_FEATURES = ("sm110_xqa", "balanced_gqa_decode", "mega_moe_v3")


def timed(args, repeat: int) -> tuple:
    """Best wall-clock seconds of `repeat` runs, and the last exit status."""
    best, status = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "policy_checks", *args], capture_output=True, text=True)
        best = min(best, time.perf_counter() - start)
        status = done.returncode
        if status not in (0, 1):
            raise SystemExit(f"policy-check {' '.join(args)} failed ({status}):\n{done.stderr[-2000:]}")
    return best, status


def files_read(tree: Path) -> int:
    """The Python files `remove` and `graduate` read (and `policy-check run` checks): the
    checker's project model of the tree, with the tree's settings."""
    from policy_checks.model import config, project

    return len(project.Project(tree, config.load(tree), lambda source: None).files)


def feature_count(tree: Path) -> int:
    done = subprocess.run([sys.executable, "-m", "policy_checks", "features", "--root", str(tree), "--format", "json"],
                          capture_output=True, text=True, check=True)
    return len(json.loads(done.stdout)["features"])  # the versioned board: {"version", "features"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", type=Path, default=DEFAULT_TREE)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--feature", action="append", default=None)
    parser.add_argument("--json", type=Path, help="also write the headline figures to this JSON record")
    options = parser.parse_args()
    if not (options.tree / "flashinfer").is_dir():
        raise SystemExit(f"{options.tree} holds no flashinfer/ (pip download --no-deps flashinfer-python==0.7.4, unzip)")
    root = str(options.tree)
    files = sum(1 for _ in (options.tree / "flashinfer").rglob("*.py"))
    read = files_read(options.tree.resolve())
    print(f"tree {root}: {read} Python files read ({files} under flashinfer/, the excluded ones too); "
          f"best of {options.repeat}, whole process, wall-clock")
    seconds, status = timed(["features", "--root", root], options.repeat)
    print(f"  features                              {seconds * 1000:8.0f} ms  exit {status}")
    figures = {"python_files_read": read, "package_python_files": files, "repeat": options.repeat,
               "features_s": round(seconds, 3), "features_exit": status, "commands": {}}
    for feature in options.feature or DEFAULT_FEATURES:
        seconds, status = timed(["remove", feature, "--diff", "--root", root], options.repeat)
        print(f"  remove {feature:<24} --diff   {seconds * 1000:8.0f} ms  exit {status}")
        row = figures["commands"][feature] = {"remove_s": round(seconds, 3), "remove_exit": status}
        seconds, status = timed(["graduate", feature, "--to", f"flashinfer.{feature}_stable", "--diff", "--root", root],
                                options.repeat)
        print(f"  graduate {feature:<22} --diff   {seconds * 1000:8.0f} ms  exit {status}")
        row.update(graduate_s=round(seconds, 3), graduate_exit=status)
    if options.json:
        import bench_record

        figures["features"] = feature_count(options.tree)
        bench_record.write(options.json, "lifecycle_speed", figures,
                           bench_record.command("lifecycle_speed.py", tree=options.tree),
                           tree={"flashinfer_version": bench_record.tree_version(options.tree)})


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
