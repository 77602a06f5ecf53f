"""The install forms that work (`policy_checks.report.install_forms`), written once: the README,
the docs and the bot's message quote them, nothing quotes the bare index form no index
serves, and each form runs, offline, into a fresh virtual environment: from a checkout,
from the git URL pinned to the release tag (a local clone stands in for GitHub), from a
wheel. The versions, the tags the docs quote and ``[project.urls]`` agree."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from policy_checks import __version__
from policy_checks.report import install_forms as forms

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")
QUOTING = ["README.md", "docs/policy_check.rst"]
BARE = re.compile(r'pip install "?flashinfer-policy-check(?:\[\w+\])?(?:"|\s|$)(?!\s*@)')
TAGS = re.compile(r"(?:@|rev: )(v\d+\.\d+\.\d+)")


def _texts():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.rst")), *sorted((ROOT / ".github").rglob("*.yml"))]
    pages += sorted((ROOT / "policy_checks").rglob("*.py"))
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in pages}


def test_the_readme_and_the_docs_quote_every_form():
    for page in QUOTING:
        text = (ROOT / page).read_text(encoding="utf-8")
        for form in (forms.from_checkout(), forms.pinned(), forms.BUILD_WHEEL, forms.from_wheel()):
            assert form in text, (page, form)
    from policy_checks.bot.cli import NEEDS_PYGITHUB

    assert forms.from_checkout() in NEEDS_PYGITHUB and forms.pinned() in NEEDS_PYGITHUB


def test_nothing_quotes_the_form_no_index_serves():
    for name, text in _texts().items():
        assert not BARE.search(text), (name, BARE.search(text).group())


def test_one_repository_one_version_and_the_tags_quoted_are_this_release():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    urls = project["urls"]
    assert urls["Repository"] == urls["Homepage"] == forms.REPOSITORY
    assert all(url.startswith(forms.REPOSITORY) for url in urls.values()) and {"Documentation", "Changelog"} <= set(urls)
    runtime = re.search(r'^__version__ = "([^"]+)"', (ROOT / "flashinfer/__init__.py").read_text(), re.M).group(1)
    assert runtime == __version__ and re.fullmatch(r"\d+\.\d+\.\d+", __version__)  # semver, one for both
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "\n## Unreleased\n" in changelog and f"\n## {__version__}" in changelog
    for name, text in _texts().items():
        for tag in TAGS.findall(text):
            assert tag == forms.release_tag(), (name, tag)
        for wheel in re.findall(r"flashinfer_policy_check-[\w.]+\.whl", text):
            assert wheel == forms.wheel_name(), (name, wheel)


# Running the forms ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The checker's sources as a git repository holding this version's release tag."""
    repo = tmp_path_factory.mktemp("forms") / "checkout"
    repo.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, repo / name)
    shutil.copytree(ROOT / "policy_checks", repo / "policy_checks", ignore=IGNORE)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "release"], ["tag", forms.release_tag()]):
        subprocess.run(git + args, cwd=repo, check=True, capture_output=True)
    return repo


def _run_form(form: str, venv: Path, cwd: Path) -> None:
    """`form` (``python3 -m pip install|wheel ...``) for the environment `venv`, offline:
    this interpreter's pip (and its setuptools, the build backend) installing under the
    environment's prefix; no index, no dependencies, no build isolation."""
    words = shlex.split(form)
    assert words[:3] == ["python3", "-m", "pip"], form
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", words[3]]
    if words[3] == "install":
        # --ignore-installed: without it pip uninstalls this interpreter's own copy of the
        # distribution (the developer's editable install) before installing under --prefix
        command += ["--prefix", str(venv), "--ignore-installed", "--no-warn-script-location"]
    command += [*words[4:], "--no-index", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _works(venv: Path) -> None:
    """The installed checker (not this checkout's) answers ``--version``; its dependencies
    come from this interpreter's site-packages, put last on the path."""
    code = ("import sys; sys.path.append(sys.argv[1]); import policy_checks, importlib.metadata as m; "
            "assert policy_checks.__file__.startswith(sys.prefix), policy_checks.__file__; "
            "assert any(r.startswith('PyGithub') for r in m.requires('flashinfer-policy-check')); "
            "from policy_checks.cli import main; main(['--version'])")
    done = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", code, sysconfig.get_path("purelib")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == f"policy-check, version {__version__}\n", done.stdout + done.stderr


def _fresh_venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, capture_output=True,
                   timeout=300)
    return path


@pytest.mark.skipif(os.name == "nt", reason="POSIX paths of a virtual environment")
@pytest.mark.parametrize("how", ["checkout", "pinned", "wheel"])
def test_each_form_installs_a_working_checker(how, checkout, tmp_path):
    venv = _fresh_venv(tmp_path / "venv")
    if how == "checkout":
        _run_form(forms.from_checkout(), venv, checkout)
    elif how == "pinned":  # the repository's URL is a local clone's here: no network
        form = forms.pinned().replace(forms.REPOSITORY, "file://localhost" + checkout.as_posix())
        assert form != forms.pinned()
        _run_form(form, venv, tmp_path)
    else:
        work = tmp_path / "work"
        shutil.copytree(checkout, work)
        _run_form(forms.BUILD_WHEEL, venv, work)
        assert (work / "dist" / forms.wheel_name()).is_file()
        _run_form(forms.from_wheel(), venv, work)
    _works(venv)


def test_the_readme_starts_in_a_virtual_environment_with_torchs_cpu_build():
    """A fresh machine: a venv first (a system Python refuses pip, or mixes packages), torch's
    CPU build from PyTorch's index (the default Linux wheel is CUDA's), then the one command
    .ci/run also runs; the CPU build satisfies the dev extra's pin."""
    readme = (ROOT / "README.md").read_text()
    venv = readme.index("python3 -m venv .venv && . .venv/bin/activate")
    torch_pin = next(r for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                     ["optional-dependencies"]["dev"] if r.startswith("torch"))
    cpu = readme.index(f'python3 -m pip install "{torch_pin}" --index-url https://download.pytorch.org/whl/cpu')
    command = readme.index('python3 -m pip install -e ./runtime -e ".[dev]" && policy-check run')
    assert venv < cpu < command
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in readme
    from packaging.specifiers import SpecifierSet

    assert SpecifierSet(torch_pin.removeprefix("torch")).contains(torch_pin.split("==")[1] + "+cpu")
