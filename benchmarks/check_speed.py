"""How fast is `policy-check run` on a real FlashInfer tree, against ruff on the same files? Prints figures; asserts nothing.

    python benchmarks/check_speed.py --root /tmp/fi --jobs 2 [--rounds 5]

The tree should be a git work tree (a clone of a FlashInfer release, or an unpacked
wheel committed to a fresh repository) outside this repository (never install it
here); it must be writable, and is left as it was. Each run is a fresh process, timed
from the outside; a round does every run once, in this order, with a fresh cache
directory (a temporary one, removed afterwards), and the figures are the medians over
the rounds (interleaved, so that a neighbour's load falls on every kind of run alike):

- cold: no cache directory;
- warm: the cache from the cold run, nothing changed (the cold run's stored result,
  replayed: ``policy_checks.engine.replay``);
- warm, facts only: the same with the stored results removed first, so that the run
  computes its result from the facts cache (what a run pays when any input changed);
- one file changed: a comment appended to one core module (restored afterwards);
- ``--staged``, one file staged: the same edit to a module of median size (a commit's
  usual file; ``--staged-file`` names another), staged (both undone afterwards);
- second checkout, cache restored: a clone of the tree (made once, its git index
  refreshed as CI's workflow refreshes it) checked with a copy of the warm cache
  carried as a tar archive, as CI's cache actions carry it;
- no cache: ``--no-cache`` (the cache neither read nor written);
- ruff: ``ruff check --isolated --select I,F401 --no-cache`` on the Python files the
  checker checks (``--isolated``: the tree's own ruff settings are not read).

Each round also times, in this process, CPython's own work on what the cold run read
(`parse_floor`): ``ast.parse`` of every checked file it stored complete facts of, and
the symbol table of every one it stored a syntax-only summary of. No checker that reads
those files can pay less, before any Python of its own runs: the ratio of that floor to
ruff's run says how far a cold run can get without reading fewer files. What the cold
run pays beyond that floor (``beyond_floor/ruff``) is the checker's own Python: the
scans of every file's bytes, the visits of the trees, the follow-ups, the rules and the
reports, the process pool, and the start-up.

Each run is reported as wall-clock seconds and CPU seconds (user + system, of the run's
process and every process it waited for: workers, git, ruff's threads, from
``getrusage(RUSAGE_CHILDREN)``): on a shared machine the wall clock follows the
neighbours' load, the CPU time much less. The ratios compare CPU seconds within each
round (two runs that met the same load), and give the median over rounds. Peak memory
is the largest resident set of one process (a checker's or ruff's).

The checker runs with its bytecode, as an installed wheel has it (pip compiles at
install): its package is copied to a temporary directory and compiled there, so that
``PYTHONDONTWRITEBYTECODE=1`` does not make every run compile it again and the checkout
is left alone. ``--no-bytecode`` runs it from this checkout as it is.
"""

from __future__ import annotations

import _symtable
import argparse
import ast
import compileall
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
RUFF = ("check", "--isolated", "--select", "I,F401", "--no-cache", "--exit-zero", "--output-format", "json")
FLOOR = "parse floor (CPython, this process)"
LABELS = {  # label -> the record's key
    "cold (no cache dir)": "cold",
    "warm (nothing changed)": "warm",
    "warm, facts only (no stored result)": "warm_facts",
    "one file changed": "one_changed",
    "--staged, one file staged": "staged",
    "second checkout, cache restored": "second_checkout",
    "--no-cache": "no_cache",
    "ruff (same files, no cache)": "ruff",
    FLOOR: "parse_floor",
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list, cwd: Path, env: dict) -> tuple:
    """``(wall seconds, CPU seconds, standard output)`` of one process."""
    cpu, start = _cpu(), time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, check=True)
    return time.perf_counter() - start, _cpu() - cpu, done.stdout


class Checker:
    """How to start the checker: from a compiled copy of its package (`bytecode`), or
    from this checkout."""

    def __init__(self, scratch: Path, bytecode: bool):
        if bytecode:
            self.home = scratch / "checker"
            shutil.copytree(REPOSITORY / "policy_checks", self.home / "policy_checks",
                            ignore=shutil.ignore_patterns("__pycache__"))
            compileall.compile_dir(self.home / "policy_checks", quiet=1)
        else:
            self.home = REPOSITORY
        # run in `home`: ``-m`` puts the working directory first on sys.path
        self.env = {**os.environ, "PYTHONPATH": str(self.home)}

    def run(self, root: Path, jobs: int, cache, *extra: str) -> tuple:
        """``(wall seconds, CPU seconds, files checked, findings)`` of one run."""
        command = [sys.executable, "-m", "policy_checks", "run", "--root", str(root), "--format", "json",
                   "--jobs", str(jobs), "--exit-zero", *(["--cache-dir", str(cache)] if cache else []), *extra]
        wall, cpu, out = _timed(command, self.home, self.env)
        document = json.loads(out)
        return wall, cpu, document["files_checked"], len(document["findings"])


def checked_files(root: Path) -> list:
    """The Python files the checker checks in `root` (its project model's), relative to it."""
    sys.path.insert(0, str(REPOSITORY))
    from policy_checks.engine.context import Context

    context = Context.build(root, read=False, use_cache=False)
    return sorted(context.project(lambda source: None).files)


def parse_floor(root: Path, files: list, cache: Path) -> tuple:
    """``(0, CPU seconds, files parsed, files summarised)``: ``ast.parse`` of each of `files`
    whose complete facts the cache directory `cache` holds (what the cold run parsed) and
    ``symtable`` of each it holds a syntax-only summary of, timed in this process. Found
    under either key a run may store them under (git's object id of the bytes, or their
    hash). A file summarised and then parsed counts once, as parsed, and the excluded
    modules a run reads are left out: the floor is at most what the run itself paid."""
    sys.path.insert(0, str(REPOSITORY))
    from policy_checks.engine import cache as cache_module

    store = cache_module.FactsCache(root, directory=cache)
    parsed, summarised = [], []
    for rel in files:
        data = (root / rel).read_bytes()
        keys = (cache_module.blob_key(rel, cache_module.git_blob_id(data)), cache_module.key(rel, data))
        facts = next((f for f in map(store.get, keys) if f is not None), None)
        if facts is not None and facts.complete:
            parsed.append(data)
        elif facts is not None and facts.checked:
            summarised.append(data)
    collecting = gc.isenabled()
    gc.disable()  # as the checker's workers parse: a tree dies whole, by reference counting
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tree's invalid escapes are not ours to print
        for data in parsed:
            try:
                ast.parse(data)
            except (SyntaxError, ValueError):
                pass
        for data in summarised:
            try:
                _symtable.symtable(data, "<floor>", "exec")
            except (SyntaxError, ValueError):
                pass
    spent = time.process_time() - start
    if collecting:
        gc.enable()
    return 0.0, spent, len(parsed), len(summarised)


def ruff_run(root: Path, files: list) -> tuple:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    wall, cpu, out = _timed([ruff, *RUFF, *files], root, dict(os.environ))
    return wall, cpu, len(files), len(json.loads(out))


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


class Edited:
    """A comment appended to `rel` (and staged, with `stage`), undone on exit: the bytes,
    their modification time, and the index entry."""

    def __init__(self, root: Path, rel: str, stage: bool = False):
        self.root, self.rel, self.stage = root, rel, stage

    def __enter__(self):
        path = self.root / self.rel
        self.original, self.stat = path.read_bytes(), path.stat()
        path.write_bytes(self.original + b"\n# benchmark edit\n")
        if self.stage:
            _git(self.root, "add", "--", self.rel)
        return self

    def __exit__(self, *exc):
        path = self.root / self.rel
        if self.stage:
            _git(self.root, "reset", "-q", "--", self.rel)
        path.write_bytes(self.original)
        os.utime(path, ns=(self.stat.st_atime_ns, self.stat.st_mtime_ns))
        subprocess.run(["git", "-C", str(self.root), "update-index", "-q", "--refresh"], capture_output=True)


def carried(cache: Path, scratch: Path) -> Path:
    """A copy of the cache directory `cache` made as CI's cache actions make one: a tar
    archive saved by one job and extracted by another."""
    archive = scratch / "cache.tar"
    subprocess.run(["tar", "-cf", str(archive), "-C", str(cache.parent), cache.name], check=True)
    restored = scratch / "restored"
    shutil.rmtree(restored, ignore_errors=True)
    restored.mkdir(mode=0o700)
    subprocess.run(["tar", "-xf", str(archive), "-C", str(restored)], check=True)
    archive.unlink()
    return restored / cache.name


def median_module(root: Path, files: list) -> str:
    """A core module of median size among the checked files: what a commit usually stages."""
    core = sorted((os.path.getsize(root / rel), rel) for rel in files
                  if rel.startswith("flashinfer/") and not rel.startswith("flashinfer/experimental/"))
    return core[len(core) // 2][1]


def one_round(checker: Checker, root: Path, clone, jobs: int, changed: str, staged: str, files: list,
              scratch: Path) -> dict:
    """label -> ``(wall, CPU, files checked, findings)`` of each run, with a fresh cache."""
    runs = {}
    with tempfile.TemporaryDirectory(prefix="policy-check-bench-", dir=scratch) as cache:
        cache = Path(cache) / "cache"
        runs["cold (no cache dir)"] = checker.run(root, jobs, cache)
        floor = parse_floor(root, files, cache)
        runs["warm (nothing changed)"] = checker.run(root, jobs, cache)
        shutil.rmtree(cache / "facts" / "replay", ignore_errors=True)
        runs["warm, facts only (no stored result)"] = checker.run(root, jobs, cache)
        with Edited(root, changed):
            runs["one file changed"] = checker.run(root, jobs, cache)
        if clone is not None:
            with Edited(root, staged, stage=True):
                runs["--staged, one file staged"] = checker.run(root, jobs, cache, "--staged")
            runs["second checkout, cache restored"] = checker.run(clone, jobs, carried(cache, scratch))
        runs["--no-cache"] = checker.run(root, jobs, None, "--no-cache")
    runs["ruff (same files, no cache)"] = ruff_run(root, files)
    runs[FLOOR] = floor
    return runs


def _median(rounds: list, label: str, at: int) -> float:
    return statistics.median(r[label][at] for r in rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/fi"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--changed", default="flashinfer/gemm/gemm_base.py", help="file edited for the one-file run")
    parser.add_argument("--staged-file", default=None, help="file staged for the --staged run (default: a core module "
                        "of median size)")
    parser.add_argument("--rounds", "--repeat", type=int, default=3, help="rounds of every run; figures are medians")
    parser.add_argument("--no-bytecode", action="store_true", help="run the checker from this checkout as it is")
    parser.add_argument("--json", type=Path, help="also write the headline figures to this JSON record")
    args = parser.parse_args()
    root = args.root.resolve()
    if not (root / "flashinfer" / "__init__.py").is_file():
        sys.exit(f"{root} holds no flashinfer package; see this script's docstring")
    in_git = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"], capture_output=True,
                            text=True).stdout.strip() == "true"
    if in_git and _git(root, "status", "--porcelain", "--untracked-files=no"):
        sys.exit(f"{root} has uncommitted changes: the --staged and second-checkout runs need a clean tree")
    files = checked_files(root)
    staged = args.staged_file or median_module(root, files)
    with tempfile.TemporaryDirectory(prefix="policy-check-bench-") as scratch:
        scratch = Path(scratch)
        checker = Checker(scratch, bytecode=not args.no_bytecode)
        clone = None
        if in_git:  # the second checkout: made once, never edited
            clone = scratch / "second-checkout"
            subprocess.run(["git", "clone", "-q", "--local", str(root), str(clone)], check=True)
            time.sleep(1)  # then the refresh CI's workflow does: no file is "racily clean" any more
            subprocess.run(["git", "-C", str(clone), "update-index", "-q", "--refresh"], check=True)
        rounds = [one_round(checker, root, clone, args.jobs, args.changed, staged, files, scratch)
                  for _ in range(max(args.rounds, 1))]
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

    first = rounds[0]["cold (no cache dir)"]
    first_floor = rounds[0][FLOOR]
    print(f"tree: {root}  jobs: {args.jobs}  CPUs: {os.cpu_count()}  medians of {len(rounds)} interleaved rounds  "
          f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"checker bytecode: {'from this checkout as it is' if args.no_bytecode else 'compiled (as installed)'}"
          f"  PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')}")
    print(f"files checked: {first[2]}  findings: {first[3]}  ruff findings: {rounds[0]['ruff (same files, no cache)'][3]}")
    print(f"changed: {args.changed} ({os.path.getsize(root / args.changed)} bytes)  "
          f"staged: {staged} ({os.path.getsize(root / staged)} bytes)")
    for label in rounds[0]:
        if label == FLOOR:
            continue
        print(f"{label:<34} {_median(rounds, label, 0):6.2f} s wall  {_median(rounds, label, 1):6.2f} s CPU")
    floor = rounds[0][FLOOR]
    print(f"{FLOOR:<34} {_median(rounds, FLOOR, 1):6.2f} s CPU  (ast.parse of the {floor[2]} files the cold run "
          f"parsed, symtable of the {floor[3]} it summarised)")
    print(f"peak RSS of one process: {peak_mib:.0f} MiB")
    pairs = {"cold_to_ruff": ("cold (no cache dir)", "ruff (same files, no cache)"),
             "warm_to_ruff": ("warm (nothing changed)", "ruff (same files, no cache)"),
             "warm_facts_to_ruff": ("warm, facts only (no stored result)", "ruff (same files, no cache)"),
             "parse_floor_to_ruff": (FLOOR, "ruff (same files, no cache)"),
             "cold_to_parse_floor": ("cold (no cache dir)", FLOOR)}
    if clone is not None:
        pairs["second_checkout_to_warm"] = ("second checkout, cache restored", "warm (nothing changed)")
        pairs["staged_to_warm"] = ("--staged, one file staged", "warm (nothing changed)")
        pairs["staged_to_warm_facts"] = ("--staged, one file staged", "warm, facts only (no stored result)")
    # each ratio within a round (the two runs met the same load), then the median over rounds
    ratios = {name: statistics.median(r[a][1] / r[b][1] for r in rounds) for name, (a, b) in pairs.items()}
    ratios["beyond_floor_to_ruff"] = statistics.median(
        (r["cold (no cache dir)"][1] - r[FLOOR][1]) / r["ruff (same files, no cache)"][1] for r in rounds)
    print("ratios (CPU, median of each round's): "
          + "  ".join(f"{name.replace('_to_', '/')} {value:.2f}x" for name, value in ratios.items()))
    checker_findings = {r[label][3] for r in rounds for label in r if not label.startswith("ruff") and label != FLOOR}
    if len(checker_findings) != 1:
        print("WARNING: runs disagree on the number of findings")
    if args.json:
        import bench_record

        figures = {"files_checked": first[2], "findings": first[3], "jobs": args.jobs, "repeat": len(rounds),
                   "statistic": "median", "bytecode": not args.no_bytecode,
                   # every Python file under flashinfer/, also those the checker's settings exclude
                   "package_python_files": sum(1 for _ in (root / "flashinfer").rglob("*.py")),
                   "peak_rss_mib": round(peak_mib)}
        for label, key in LABELS.items():
            if label == FLOOR:
                figures.update(parse_floor_cpu_s=round(_median(rounds, label, 1), 3), parse_floor_parsed=first_floor[2],
                               parse_floor_summarised=first_floor[3])
            elif label in rounds[0]:
                figures[f"{key}_wall_s"] = round(_median(rounds, label, 0), 3)
                figures[f"{key}_cpu_s"] = round(_median(rounds, label, 1), 3)
        figures.update({name: round(value, 3) for name, value in ratios.items()})
        bench_record.write(args.json, "check_speed", figures, bench_record.command("check_speed.py", tree=root),
                           tree={"flashinfer_version": bench_record.tree_version(root)})


if __name__ == "__main__":
    main()
