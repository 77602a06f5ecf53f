"""What every lifecycle command promises on any tree, as one check tests call.

`run_checked(root, argv)` runs a command with ``--diff`` and then for real, and
asserts the invariants of docs/lifecycle.rst:

- refused (exit 1) => the tree is byte-identical, and ``--diff`` refused too;
- done (exit 0) => the ``--diff`` patch, applied with ``git apply`` to a copy of the
  tree as it was, gives exactly the tree the run leaves;
- every module of the tree that imported before still imports (fresh interpreter);
- the checker reports no finding that was not there before;
- nothing outside the tree changed (its parent folder is watched).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Set, Tuple

from click.testing import CliRunner

from policy_checks.cli import main
from policy_checks.config import load
from policy_checks.runner import run

from ..conftest import write_tree

_IMPORT_ALL = """
import importlib, json, pkgutil, sys
ok = []
for top in sys.argv[1:]:
    try:
        package = importlib.import_module(top)
    except Exception:
        continue
    ok.append(top)
    for info in pkgutil.walk_packages(getattr(package, "__path__", []), top + "."):
        try:
            importlib.import_module(info.name)
        except Exception:
            continue
        ok.append(info.name)
print(json.dumps(sorted(ok)))
"""


def snapshot(root: Path) -> Dict[str, bytes]:
    """Every file under `root` but ``.git`` and ``__pycache__``: its bytes; a link its
    target, a special file its kind (never opened: a FIFO would block)."""
    found = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__")]
        for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            path = Path(folder, name)
            info = os.lstat(path)
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(info.st_mode):
                found[rel] = b"link:" + os.readlink(path).encode()
            elif stat.S_ISREG(info.st_mode):
                found[rel] = path.read_bytes()
            else:
                found[rel] = b"special:%o" % stat.S_IFMT(info.st_mode)
    return found


def importable(root: Path) -> Set[str]:
    """The modules of the tree's top-level packages that import, in a fresh interpreter."""
    tops = sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file())
    done = subprocess.run([sys.executable, "-c", _IMPORT_ALL, *tops], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


def findings(root: Path) -> Set[Tuple[str, str, str]]:
    result = run(root, load(root), use_cache=False, progress=False)
    return {(f.rule, f.path, f.message) for f in result.findings}


@dataclass
class Outcome:
    exit_code: int
    output: str
    diff: str
    new_findings: Set[Tuple[str, str, str]]
    lost_imports: List[str]  # imported before, not after (at the old name, or the new one)


def run_checked(root: Path, argv: List[str], moved: Dict[str, str] = None) -> Outcome:
    """Run ``policy-check <argv> --root root`` with ``--diff``, then for real, asserting
    the invariants. `moved` maps old module prefixes to new ones (a graduation), so an
    import that moved is judged at its new name."""
    root = Path(root)
    watch = root.parent
    outside_before = {p.name for p in watch.iterdir()}
    before = snapshot(root)
    imported_before = importable(root)
    findings_before = findings(root)
    runner = CliRunner()
    shown = runner.invoke(main, [*argv, "--diff", "--root", str(root)])
    assert snapshot(root) == before, "--diff wrote in the tree"
    done = runner.invoke(main, [*argv, "--root", str(root)])
    assert done.exception is None or isinstance(done.exception, SystemExit), done.output
    assert done.exit_code == shown.exit_code, (shown.output, done.output)
    assert {p.name for p in watch.iterdir()} == outside_before, "something changed outside the tree"
    diff = shown.stdout
    if done.exit_code != 0:
        assert done.exit_code == 1, done.output
        assert snapshot(root) == before, "a refusal changed the tree"
        return Outcome(1, done.output, diff, set(), [])
    copy = watch / (root.name + ".patched")
    try:
        write_tree(copy, before)
        subprocess.run(["git", "init", "-q", str(copy)], check=True)
        applied = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], cwd=copy, input=diff.encode(),
                                 capture_output=True)
        assert applied.returncode == 0, applied.stderr.decode()
        assert snapshot(copy) == snapshot(root), "the --diff is not the patch the run applied"
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    imported_after = importable(root)
    lost = [module for module in imported_before if module not in imported_after and _still_exists(root, module)]
    lost += [new for m in imported_before if (new := _renamed(m, moved or {})) != m and new not in imported_after]
    new = findings(root) - {(r, _renamed_path(p, moved or {}), m) for r, p, m in findings_before} - findings_before
    return Outcome(0, done.output, diff, new, sorted(set(lost)))


def _renamed(module: str, moved: Dict[str, str]) -> str:
    for old, new in moved.items():
        if module == old or module.startswith(old + "."):
            return new + module[len(old):]
    return module


def _renamed_path(rel: str, moved: Dict[str, str]) -> str:
    for old, new in moved.items():
        old_dir, new_dir = old.replace(".", "/"), new.replace(".", "/")
        if rel.startswith(old_dir + "/"):
            return new_dir + rel[len(old_dir):]
    return rel


def _still_exists(root: Path, module: str) -> bool:
    """A module that was deleted on purpose is not lost; one whose file is there is."""
    base = root.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()
