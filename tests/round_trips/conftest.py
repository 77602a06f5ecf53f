"""The round-trip lane: the lifecycle commands run on a copy of this whole repository.

Each round trip copies the work tree (as git lists it), runs ``policy-check remove`` or
``graduate`` there, and then checks in the copy what the command can break: the
checker, an import of every module, the test files that import a module the
command rewrote or moved, and then the whole stable and experimental lanes, as CI runs
them: the repository's own tests follow its features. It is a lane of its own
(``pytest tests/round_trips/``), kept out of ``pytest tests/`` by ``pytest.ini``,
because each trip takes minutes. Two other whole-repository runs live here for the same
reason: the docs walk-through, followed in a copy, and the audit of this repository.

A round trip needs this repository's own feature still to be experimental; after a
maintainer removed or graduated it with the same commands, the trip skips and says so.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, List, Tuple

import pytest

from policy_checks.model.records import graduated_to

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "flashinfer"
# The lanes whose test files a round trip may select (tests/round_trips/ is never one).
LANES = ("tests/flashinfer", "tests/policy_checks", "tests/docs", "tests/experimental")
# Imports every module of the package at ROOT (argv[1]) and prints how many; an import
# that fails prints its traceback and exits 1.
IMPORT_EVERY_MODULE = """\
import importlib, pkgutil, sys, warnings
sys.path.insert(0, sys.argv[1])
package = importlib.import_module(sys.argv[2])
assert package.__file__.startswith(sys.argv[1]), package.__file__
names = [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # a graduated feature's shim warns
    for name in names:
        importlib.import_module(name)
print(len(names), "modules imported")
"""


def require_experimental(feature: str) -> None:
    """Skip unless ``feature`` is still an experimental feature of this repository."""
    directory = REPO / PACKAGE / "experimental" / feature
    if not directory.is_dir():
        pytest.skip(f"{feature} is no longer in this repository (removed): nothing to round-trip")
    target = graduated_to(directory)
    if target:
        pytest.skip(f"{feature} graduated to {target}: nothing to round-trip")


def _dotted(path: str) -> str:
    parts = list(Path(path).with_suffix("").parts if path.endswith(".py") else Path(path).parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def changed_modules(output: str) -> Tuple[List[str], List[str]]:
    """What a lifecycle command's report says it touched: the modules it rewrote or
    removed (``rewrote: flashinfer/norm.py``, or graduate's ``flashinfer/norm.py: imports
    point at ...``) and the packages it moved or removed whole (``moved a/ to b/``,
    ``removed: flashinfer/experimental/feat``)."""
    files = re.findall(r"^\s*(?:(?:rewrote|removed): )?([\w./-]+\.py)(?::|$)", output, flags=re.M)
    packages = re.findall(r"^removed: (\S+/experimental/\S+)$", output, flags=re.M)
    packages += [p for pair in re.findall(r"^\s*moved (\S+)/ to (\S+)/", output, flags=re.M) for p in pair]
    return sorted({_dotted(f) for f in files}), sorted({_dotted(p) for p in packages})


def _imports(tree: ast.AST) -> Iterable[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


@dataclass
class RepoCopy:
    root: Path
    env: dict
    dropped: List[str] = field(default_factory=list)  # benchmark scripts a maintainer deleted

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run a command in the copy, with the copy first on ``PYTHONPATH``."""
        done = subprocess.run(args, cwd=self.root, env=self.env, capture_output=True, text=True, timeout=1200)
        assert not check or done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
        return done

    def policy_check(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.run(sys.executable, "-m", "policy_checks", *args, "--root", str(self.root), check=check)

    def import_every_module(self) -> int:
        """Import every module of the copy's package in a fresh interpreter; their count."""
        done = self.run(sys.executable, "-c", IMPORT_EVERY_MODULE, str(self.root), PACKAGE)
        return int(done.stdout.split()[0])

    def tests_importing(self, modules: Iterable[str], packages: Iterable[str] = ()) -> List[str]:
        """The copy's test files that import one of ``modules``, or anything in one of
        ``packages``."""
        exact, below = set(modules) | set(packages), tuple(p + "." for p in packages)
        found = []
        for lane in LANES:
            for path in sorted((self.root / lane).rglob("test_*.py")):
                names = set(_imports(ast.parse(path.read_bytes())))
                if names & exact or any(n.startswith(below) for n in names):
                    found.append(str(path.relative_to(self.root)))
        return found

    def pytest(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.run(sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *args, check=check)

    def lanes(self) -> str:
        """Run the copy's stable and experimental lanes (``tests/lanes.py``) in a git
        repository that lists the copy's files, as a checkout does; their summary."""
        git = ("git", "-c", "init.defaultBranch=main")
        if not (self.root / ".git").exists():
            self.run(*git, "init", "-q")
        self.run(*git, "add", "-A")
        done = self.run(sys.executable, "tests/lanes.py", check=False)
        assert done.returncode == 0, done.stdout[-12000:] + done.stderr[-3000:]
        return done.stdout

    def drop_benchmark(self, rel: str) -> None:
        """What a maintainer does to drop a benchmark: delete the script and the tests
        that load it. Its row of the measured table goes later (`drop_measured_rows`):
        the feature's README quotes the same records until the feature goes."""
        script = self.root / rel
        script.unlink()
        self.dropped.append(script.name)
        loads = re.compile(rf"load_benchmark\(\s*[\"']{re.escape(script.stem)}[\"']\s*\)")
        for test in sorted((self.root / "tests").rglob("test_*.py")):
            if loads.search(test.read_text(encoding="utf-8")):
                test.unlink()

    def drop_measured_rows(self) -> None:
        """The dropped benchmarks' rows of the measured table: their entries in
        ``benchmarks/measured.py`` and their stored records go, and the README's table
        is written again."""
        measured = self.root / "benchmarks" / "measured.py"
        for script in self.dropped:
            text = measured.read_text(encoding="utf-8")
            entry = _benchmark_entry(ast.parse(text), script)
            if entry is not None:
                name, first, last = entry
                lines = text.splitlines(keepends=True)
                measured.write_text("".join(lines[:first - 1] + lines[last:]), encoding="utf-8")
                (self.root / "benchmarks" / "results" / f"{name}.json").unlink(missing_ok=True)
        self.run(sys.executable, "benchmarks/measured.py", "--table-only")


def _benchmark_entry(tree: ast.Module, script: str):
    """``(name, first line, last line)`` of the ``Benchmark(name, script, ...)`` entry of
    the measured table that runs `script`, or None."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Benchmark"
                and len(node.args) >= 2 and all(isinstance(a, ast.Constant) for a in node.args[:2])
                and node.args[1].value == script):
            return node.args[0].value, node.lineno, node.end_lineno
    return None


@pytest.fixture
def repo_copy(tmp_path) -> RepoCopy:
    """A copy of this work tree as git sees it (tracked and untracked, not ignored files)."""
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs a git checkout")
    copy = tmp_path / "copy"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.split(b"\0")
    for rel in filter(None, (name.decode() for name in listed)):
        source = REPO / rel
        if source.is_file():  # a tracked file deleted in the work tree is not copied
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / rel)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    return RepoCopy(copy, env)
