"""What every lifecycle command promises on any tree, as one check tests call.

`run_checked(root, argv)` runs a command with ``--diff`` and then for real, and
asserts the invariants of docs/lifecycle.rst:

- refused (exit 1) => the tree is byte-identical, and ``--diff`` refused too;
- done (exit 0) => the ``--diff`` patch, applied with ``git apply`` to a copy of the
  tree as it was, gives exactly the tree the run leaves;
- every module of the tree that imported before still imports (fresh interpreter);
- the checker reports no finding that was not there before;
- nothing outside the tree changed (its parent folder is watched);
- every ``__all__`` name of every module still exists: ``from module import *``
  works after the run wherever it worked before;
- no import that the edit made unused is left: module-level (its name was used
  before, in code or a string, and is used nowhere after; package ``__init__``
  files aside, whose imports are what they publish) or in a function body (its
  name was used in that function before and is not after, unless the import is
  alone in an ``if``/``for``/``with``/``try`` block it would leave empty);
- the baseline holds no entry of what went (a removed feature's directory).
"""

from __future__ import annotations

import ast
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

from ...benchmark_modules import load_benchmark

unused_imports = load_benchmark("unused_imports")
from policy_checks.model.config import load
from policy_checks.engine.runner import run

from ..conftest import write_tree

_IMPORT_ALL = """
import importlib, json, pkgutil, sys
ok, star_fails = [], []
def star(name):
    try:
        exec(f"from {name} import *", {})
    except Exception:
        star_fails.append(name)
for top in sys.argv[1:]:
    try:
        package = importlib.import_module(top)
    except Exception:
        continue
    ok.append(top)
    star(top)
    for info in pkgutil.walk_packages(getattr(package, "__path__", []), top + "."):
        try:
            importlib.import_module(info.name)
        except Exception:
            continue
        ok.append(info.name)
        star(info.name)
print(json.dumps([sorted(ok), sorted(star_fails)]))
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
    return import_survey(root)[0]


def import_survey(root: Path) -> Tuple[Set[str], Set[str]]:
    """The modules that import, and those of them whose ``from module import *``
    raises (an ``__all__`` name that does not exist), in a fresh interpreter."""
    tops = sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file())
    done = subprocess.run([sys.executable, "-c", _IMPORT_ALL, *tops], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr
    ok, star_fails = json.loads(done.stdout)
    return set(ok), set(star_fails)


def baseline_entries_of_gone(root: Path, before: Dict[str, bytes], after: Dict[str, bytes]) -> List[str]:
    """The baseline's entries (module or path) naming a file the run deleted."""
    path = root / "policy-check-baseline.json"
    if not path.is_file():
        return []
    gone = {rel for rel in before if rel not in after}
    gone |= {rel[:-3].replace("/", ".").removesuffix(".__init__") for rel in gone if rel.endswith(".py")}
    entries = json.loads(path.read_text())["entries"]
    return sorted({e["module"] for e in entries if e["module"] in gone})


def imports_made_unused(before: Dict[str, bytes], after: Dict[str, bytes]) -> List[str]:
    """Each import of a kept, edited module that the run made unused
    (``benchmarks/unused_imports.py``)."""
    left = []
    taken = None
    for rel, data in sorted(after.items()):
        if not rel.endswith(".py") or before.get(rel) in (None, data):
            continue
        taken = _imported_from(after) if taken is None else taken
        imported = taken.get(unused_imports.module_of(rel), set())
        left += unused_imports.made_unused(rel, before[rel], data, imported.__contains__)
    return left


def _imported_from(files: Dict[str, bytes]) -> Dict[str, Set[str]]:
    """module -> the names the tree's files import from it (``from module import name``)."""
    taken: Dict[str, Set[str]] = {}
    for rel, data in files.items():
        if not rel.endswith(".py"):
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        package = unused_imports.module_of(rel) if rel.endswith("__init__.py") else unused_imports.module_of(rel).rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                taken.setdefault(module, set()).update(a.name for a in node.names)
    return taken


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
    imported_before, star_before = import_survey(root)
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
    after = snapshot(root)
    assert imports_made_unused(before, after) == [], "imports the run made unused are left"
    if argv[0] == "remove":
        assert baseline_entries_of_gone(root, before, after) == [], "the baseline keeps entries of what went"
    imported_after, star_after = import_survey(root)
    broken_star = sorted((star_after - star_before) & imported_after)
    assert broken_star == [], f"`from module import *` raises after the run: {broken_star}"
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
