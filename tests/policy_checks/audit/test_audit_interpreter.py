"""Where the audit runs the tree's code: ``--python PATH`` (another environment's
interpreter, as FlashInfer's job has one), named in the report with the stand-ins; and
stand-ins only for what the tree itself asks for and nobody has, never in front of an
installed package's optional import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_checks.cli import main

from ..conftest import write_tree

TREE = {
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/experimental/feat/__init__.py": "",
    "flashinfer/experimental/feat/kernel.py": "X = 1\n",
    # a package only the other environment has; a core line reaching experimental code through it
    "flashinfer/uses_env.py": "import only_in_that_env\nonly_in_that_env.load()\n",
}
ONLY_THERE = (
    "import importlib\n"
    "def load():\n"
    "    return importlib.import_module('flashinfer.experimental.feat.kernel')\n"
)


def _invoke(*args):
    return CliRunner().invoke(main, list(args))


def _environment(where: Path) -> Path:
    """A fresh virtual environment (no pip) holding the package `only_in_that_env`; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True)
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "only_in_that_env.py").write_text(ONLY_THERE, encoding="utf-8")
    return python


@pytest.fixture(scope="module")
def environment(tmp_path_factory):
    return _environment(tmp_path_factory.mktemp("env") / "venv")


def test_python_runs_the_tree_in_another_environment_and_the_report_names_it(tmp_path, environment):
    root = write_tree(tmp_path / "tree", TREE)
    there = _invoke("audit", "--root", str(root), "--format", "json", "-j", "1", "--python", str(environment))
    document = json.loads(there.stdout)
    assert there.exit_code == 1, there.output
    assert [(f["rule"], f["path"], f["line"]) for f in document["findings"]] == [("AUD001", "flashinfer/uses_env.py", 2)]
    assert document["audit"]["stand_ins"] == []
    assert document["audit"]["python"]["path"] == str(environment)
    assert document["audit"]["python"]["prefix"] == str(environment.parent.parent)
    text = _invoke("audit", "--root", str(root), "-j", "1", "--python", str(environment)).output
    assert f"note: interpreter: {environment} (Python " in text


def test_without_python_the_checkers_interpreter_runs_it_and_stands_in_for_the_package(tmp_path):
    """The twin: the checker's own environment lacks the package, so a stand-in answers and
    nothing experimental is reached through it; the report says both."""
    root = write_tree(tmp_path / "tree", TREE)
    here = _invoke("audit", "--root", str(root), "--format", "json", "-j", "1")
    document = json.loads(here.stdout)
    assert here.exit_code == 0, here.output
    assert document["audit"]["stand_ins"] == ["only_in_that_env"]
    assert document["audit"]["python"]["path"] == sys.executable


def test_a_python_that_is_no_interpreter_is_a_usage_error(tmp_path):
    root = write_tree(tmp_path / "tree", TREE)
    fake = tmp_path / "python"
    fake.write_text("not a program\n", encoding="utf-8")
    result = _invoke("audit", "--root", str(root), "-j", "1", "--python", str(fake))
    assert result.exit_code == 2 and "cannot be run as a Python interpreter" in result.output


def test_an_installed_packages_optional_import_is_not_stood_in(tmp_path):
    """A package outside the tree that tries an optional import keeps its "not installed"
    branch; the tree's own import of the same missing name is stood in (the twin)."""
    site = write_tree(tmp_path / "site", {"optional_user.py": (
        "try:\n    import some_optional_extra\nexcept ImportError:\n    some_optional_extra = None\n")})
    root = write_tree(tmp_path / "tree", {
        **TREE,
        "flashinfer/optional.py": (f"import sys\nsys.path.append({str(site)!r})\n"
                                   "import optional_user\nassert optional_user.some_optional_extra is None\n"),
        "flashinfer/own_missing.py": "import some_optional_extra\nassert some_optional_extra is not None\n",
    })
    result = _invoke("audit", "--root", str(root), "--format", "json", "-j", "1", "--select", "AUD000")
    document = json.loads(result.stdout)
    assert document["findings"] == [], document["findings"]
    assert document["audit"]["stand_ins"] == ["only_in_that_env", "some_optional_extra"]


def test_a_submodule_of_a_stood_in_package_is_stood_in_whoever_asks(tmp_path):
    """Once the tree's import made a package a stand-in, an installed package asking for its
    submodule (torch probing ``triton.backends``) gets one too, as it would get the real
    submodule; only a package nobody stood in for keeps its "not installed" answer."""
    site = write_tree(tmp_path / "site", {"prober.py": "import some_absent_pkg.backends\n"})
    root = write_tree(tmp_path / "tree", {
        **TREE,
        "flashinfer/probed.py": (f"import some_absent_pkg\nimport sys\nsys.path.append({str(site)!r})\n"
                                 "import prober\n"),
    })
    result = _invoke("audit", "--root", str(root), "--format", "json", "-j", "1", "--select", "AUD000")
    document = json.loads(result.stdout)
    assert document["findings"] == [], document["findings"]
    assert "some_absent_pkg" in document["audit"]["stand_ins"]
