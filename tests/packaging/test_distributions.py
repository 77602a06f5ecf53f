"""The repository's two distributions, built as wheels here, offline: the checker
(``flashinfer-policy-check``, the root ``pyproject.toml``) holds ``policy_checks`` and no
``flashinfer`` file, so it installs beside FlashInfer without touching it; the runtime
(``fi-experimental-track-runtime``, ``runtime/pyproject.toml``) holds ``flashinfer`` and
nothing of the checker.

Each build calls the build backend its ``pyproject.toml`` names (setuptools, the dev extra's)
on a copy of the sources in a temporary folder (nothing is written in the checkout), as
``pip wheel --no-deps --no-build-isolation --no-index`` does, less pip's start-up and its
separate metadata pass (2 s a wheel): the wheel holds the same files, byte for byte.
"""

from __future__ import annotations

import email
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
TOOL, RUNTIME = "flashinfer-policy-check", "fi-experimental-track-runtime"
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")


def _setuptools_builds_wheels() -> bool:
    try:
        version = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        return False
    return tuple(int(part) for part in re.findall(r"\d+", version)[:1]) >= (77,)


pytestmark = pytest.mark.skipif(not _setuptools_builds_wheels(),
                                reason="needs setuptools>=77 (the dev extra) to build wheels offline")


def build_wheel(source: Path, out: Path) -> Path:
    """The wheel of the project at `source`, from its build backend's ``build_wheel`` hook, called
    in a fresh interpreter in `source` (PEP 517, as a front end without build isolation calls it)."""
    out.mkdir(parents=True, exist_ok=True)
    backend = tomllib.loads((source / "pyproject.toml").read_text())["build-system"]["build-backend"]
    done = subprocess.run(
        [sys.executable, "-c", "import importlib, sys; importlib.import_module(sys.argv[1]).build_wheel(sys.argv[2])",
         backend, str(out)],
        cwd=source, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    [wheel] = out.glob("*.whl")
    return wheel


def python_files(package: str) -> set:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts}


# One fixture a wheel, each built from a copy of this checkout's sources: a test builds only
# the wheel it reads (pytest-xdist may run this module's tests in several processes).
@pytest.fixture(scope="module")
def checker_wheel(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("checker")
    tool = base / "tool"
    tool.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, tool / name)
    shutil.copytree(ROOT / "policy_checks", tool / "policy_checks", ignore=IGNORE)
    return build_wheel(tool, base / "wheel")


@pytest.fixture(scope="module")
def runtime_wheel(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("runtime")
    shutil.copytree(ROOT / "runtime", base / "runtime", ignore=IGNORE)
    shutil.copytree(ROOT / "flashinfer", base / "flashinfer", ignore=IGNORE)
    return build_wheel(base / "runtime", base / "wheel")


def names(wheel: Path) -> set:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def metadata(wheel: Path, member: str = "METADATA"):
    with zipfile.ZipFile(wheel) as archive:
        [path] = [n for n in archive.namelist() if n.endswith(f".dist-info/{member}")]
        return archive.read(path).decode("utf-8")


def test_the_checker_wheel_holds_the_checker_and_no_flashinfer(checker_wheel):
    wheel = checker_wheel
    held = names(wheel)
    assert not [n for n in held if n.split("/")[0] == "flashinfer"], "the checker must not ship a flashinfer package"
    assert {n.split("/")[0] for n in held if not n.split("/")[0].endswith(".dist-info")} == {"policy_checks"}
    assert python_files("policy_checks") <= held  # every module: checker, fix, lifecycle commands, bot
    assert {"policy_checks/cli/__init__.py", "policy_checks/model/gitfiles.py", "policy_checks/fix/cli.py", "policy_checks/bot/cli.py"} <= held
    info = email.message_from_string(metadata(wheel))
    assert info["Name"] == TOOL
    assert "bot" in info.get_all("Provides-Extra")
    assert 'PyGithub>=2.3; extra == "bot"' in info.get_all("Requires-Dist")
    assert not [r for r in info.get_all("Requires-Dist") if "extra" not in r and r.split(";")[0].startswith("torch")]
    assert "policy-check = policy_checks.cli:main" in metadata(wheel, "entry_points.txt")


def test_the_runtime_wheel_holds_flashinfer_and_no_checker(runtime_wheel):
    wheel = runtime_wheel
    held = names(wheel)
    packages = {n.split("/")[0] for n in held if not n.split("/")[0].endswith(".dist-info")}
    assert packages == {"flashinfer"}
    assert python_files("flashinfer") <= held
    data = {p.relative_to(ROOT).as_posix() for p in (ROOT / "flashinfer").rglob("*")
            if p.suffix in (".cu", ".cuh", ".toml", ".md") and "__pycache__" not in p.parts}
    assert data and data <= held  # kernel sources and feature records travel with the code
    assert "flashinfer/py.typed" in held  # PEP 561: type checkers read the installed package
    info = email.message_from_string(metadata(wheel))
    assert info["Name"] == RUNTIME
    assert {re.split(r"[<>=;\s]", r)[0] for r in info.get_all("Requires-Dist")} >= {"torch", "numpy", "cuda-bindings"}


def test_the_checker_installs_beside_flashinfer_without_touching_it(checker_wheel, tmp_path):
    """A FlashInfer (a minimal ``flashinfer-python`` wheel built here) installed first;
    then the checker into the same environment: FlashInfer's files are byte for byte
    what they were, and ``import flashinfer`` is still FlashInfer's."""
    fake = tmp_path / "fake-flashinfer"
    (fake / "flashinfer").mkdir(parents=True)
    (fake / "flashinfer" / "__init__.py").write_text('"""Not this repository\'s runtime."""\nSENTINEL = "flashinfer-python"\n')
    (fake / "flashinfer" / "gemm.py").write_text("def mm(a, b):\n    return a @ b\n")
    (fake / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "flashinfer-python"\nversion = "0.7.4"\n'
        '[tool.setuptools]\npackages = ["flashinfer"]\n'
    )
    flashinfer_wheel = build_wheel(fake, tmp_path / "fake-wheel")

    environment = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(environment)], check=True, capture_output=True,
                   timeout=300)
    python = environment / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

    def pip_install(wheel: Path) -> None:  # this environment's pip, installing into the new one
        done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                               "--no-index", "--disable-pip-version-check", str(wheel)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr

    def site_packages() -> Path:
        done = subprocess.run([str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              capture_output=True, text=True, check=True)
        return Path(done.stdout.strip())

    pip_install(flashinfer_wheel)
    installed = site_packages() / "flashinfer"
    before = {p.relative_to(installed).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
              for p in installed.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert set(before) == {"__init__.py", "gemm.py"}

    pip_install(checker_wheel)
    after = {p.relative_to(installed).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in installed.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert after == before
    [record] = (site_packages()).glob("flashinfer_policy_check-*.dist-info/RECORD")
    assert not [line for line in record.read_text().splitlines() if line.startswith("flashinfer/")]
    done = subprocess.run(
        [str(python), "-I", "-c", "import flashinfer, policy_checks; print(flashinfer.SENTINEL, policy_checks.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    sentinel, checker = done.stdout.split()
    assert sentinel == "flashinfer-python" and Path(checker).is_relative_to(site_packages())


def test_the_readme_command_is_what_ci_runs():
    """One command installs both distributions for development (README), and .ci/run runs it."""
    command = 'python3 -m pip install -e ./runtime -e ".[dev]"'
    assert f"{command} && policy-check run" in (ROOT / "README.md").read_text()
    assert re.search(r'python3 -m pip install .*-e \./runtime -e "\.\[dev\]"', (ROOT / ".ci" / "run").read_text())


def test_the_root_builds_only_the_checker_and_the_runtime_only_flashinfer():
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    runtime = tomllib.loads((ROOT / "runtime" / "pyproject.toml").read_text())
    assert root["project"]["name"] == TOOL and runtime["project"]["name"] == RUNTIME
    assert root["tool"]["setuptools"]["packages"]["find"]["include"] == ["policy_checks", "policy_checks.*"]
    assert runtime["tool"]["setuptools"]["packages"]["find"]["include"] == ["flashinfer", "flashinfer.*"]
    assert runtime["tool"]["setuptools"]["package-dir"] == {"flashinfer": "../flashinfer"}
    # The dev extra never names the runtime: no index is asked for it (the README installs it from runtime/).
    assert not [r for r in root["project"]["optional-dependencies"]["dev"] if r.lower().startswith(RUNTIME)]
