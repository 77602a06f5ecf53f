"""The code under test cannot sway the verdict: everything the verdict reads (the files'
text, the suppression comments, what the base revision holds) is read before the first
worker starts, the base with git's replace refs ignored, and the workers run a private
copy of the tree. Each forgery below is real (it does change the checkout or the
repository); beside it, an honest suppression the base already had still counts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_checks.model import config
from policy_checks.audit import sandbox, tree
from policy_checks.cli import main

from ..conftest import write_tree

KERNEL = "flashinfer.experimental.feat.kernel"
BASE = {
    "pyproject.toml": "[tool.policy-check]\n",
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/experimental/feat/__init__.py": "",
    "flashinfer/experimental/feat/kernel.py": "X = 1\n",
    "flashinfer/bad.py": "import importlib\nX = 1\n",
    # the twin: a suppression the base revision already had, honoured
    "flashinfer/honest.py": f"import importlib\nimportlib.import_module({KERNEL!r})  # policy: ignore[AUD001] known\n",
}

# the pull request's bad.py: it loads experimental code, then, while the audit runs it, appends
# a suppression to that line in the checkout it was started from and adds a replace ref so that
# the base revision's bad.py seems to hold the same line. The audit hook refuses such a write
# from Python, so it is done by a new process, which runs without the hook.
FORGER = """\
import importlib
importlib.import_module({kernel!r})
import subprocess, sys
subprocess.run([sys.executable, "-c", {forge!r}, {root!r}], check=True)
"""
FORGE = """\
import pathlib, subprocess, sys
root = sys.argv[1]
path = pathlib.Path(root, "flashinfer", "bad.py")
lines = path.read_text().splitlines(keepends=True)
if "policy: ignore" not in lines[1]:
    lines[1] = lines[1].rstrip("\\n") + "  # policy: ignore[AUD001, AUD002] forged\\n"
    path.write_text("".join(lines))
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True).stdout.strip()
    git("replace", "-f", git("rev-parse", "HEAD:flashinfer/bad.py"), git("hash-object", "-w", str(path)))
"""

# a module that rewrites its own file, wherever it was imported from
SELF_EDIT = """\
import importlib, pathlib
importlib.import_module({kernel!r})
me = pathlib.Path(__file__)
me.write_text(me.read_text().replace("{kernel}')\\n", "{kernel}')  # policy: ignore[AUD001] forged\\n", 1))
"""


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                          capture_output=True, text=True).stdout.strip()


def _repository(root: Path) -> Path:
    write_tree(root, BASE)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    return root


def _audit(root: Path, *args: str):
    result = CliRunner().invoke(main, ["audit", "--root", str(root), "--format", "json", "-j", "1", *args])
    return result.exit_code, [(f["rule"], f["path"], f["line"]) for f in json.loads(result.stdout)["findings"]]


def test_a_suppression_and_replace_ref_forged_while_the_audit_runs_change_nothing(tmp_path):
    root = _repository(tmp_path / "repo").resolve()
    (root / "flashinfer" / "bad.py").write_text(FORGER.format(kernel=KERNEL, forge=FORGE, root=str(root)), encoding="utf-8")
    assert _audit(root, "--policy-from", "HEAD") == (1, [("AUD001", "flashinfer/bad.py", 2)])
    # the forgery did happen: the checkout holds the comment, and git (replace refs on) shows it at the base
    assert "forged" in (root / "flashinfer" / "bad.py").read_text().splitlines()[1]
    assert "forged" in _git(root, "show", "HEAD:flashinfer/bad.py")
    # read honestly afterwards, the comment is the tree's own and the base never had it
    assert _audit(root, "--policy-from", "HEAD") == (1, [("AUD001", "flashinfer/bad.py", 2)])


def test_the_workers_run_a_private_copy_of_the_tree(tmp_path):
    """A module rewriting its own file rewrites the copy: the tree keeps its text, and the
    finding stands; the honest suppression (the twin) still silences its line."""
    root = write_tree(tmp_path / "tree", {**BASE, "flashinfer/bad.py": SELF_EDIT.format(kernel=KERNEL)}).resolve()
    before = (root / "flashinfer" / "bad.py").read_text()
    assert _audit(root) == (1, [("AUD001", "flashinfer/bad.py", 2)])
    assert (root / "flashinfer" / "bad.py").read_text() == before


def test_a_write_outside_the_scratch_folders_is_refused_and_reported(tmp_path):
    """From Python, the code under test writes only into the audit's scratch folders (its
    copy of the tree, its home, its temporary folder): the twin writes a temporary file."""
    outside = tmp_path / "outside.txt"
    root = write_tree(tmp_path / "tree", {
        **BASE,
        "flashinfer/bad.py": f"import pathlib\npathlib.Path({str(outside)!r}).write_text('x')\n",
        "flashinfer/fine.py": "import tempfile\nwith tempfile.NamedTemporaryFile('w') as f:\n    f.write('x')\n",
    }).resolve()
    result = CliRunner().invoke(main, ["audit", "--root", str(root), "--format", "json", "-j", "1"])
    findings = json.loads(result.stdout)["findings"]
    assert [(f["rule"], f["path"], f["line"]) for f in findings] == [
        ("AUD000", "flashinfer/bad.py", 1), ("AUD000", "flashinfer/bad.py", 2)]
    assert f"refused a write to {outside}" in findings[1]["message"]
    assert not outside.exists()


# writes a line that is no answer into every pipe it holds (one of them carries the answers)
GARBLER = """\
import os
for fd in range(3, 256):
    try:
        if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
            os.write(fd, b"this is not an answer\\n")
    except OSError:
        pass
"""


def test_a_line_on_the_answer_pipe_that_is_no_answer_is_not_believed(tmp_path):
    """The parent validates what comes up the pipe: the worker that sent it is replaced and
    its request is not audited (AUD000); every other module (the twin) is still audited."""
    root = write_tree(tmp_path / "tree", {**BASE, "flashinfer/garbler.py": GARBLER}).resolve()
    result = CliRunner().invoke(main, ["audit", "--root", str(root), "--format", "json", "-j", "1"])
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    [finding] = document["findings"]
    assert (finding["rule"], finding["path"]) == ("AUD000", "flashinfer/garbler.py")
    assert "not one the audit's tracer writes" in finding["message"]
    assert document["audit"]["audited"] == document["audit"]["modules"] - 1


# at import, a new process (which the audit hook does not see) writes into the module's own
# folder; only if that worked does the module load experimental code
WRITES_BESIDE_ITSELF = f"""\
import os, subprocess
here = os.path.dirname(os.path.abspath(__file__))
if subprocess.run(["sh", "-c", 'echo x > "$0/planted"', here]).returncode == 0:
    import {KERNEL}
"""


@pytest.mark.skipif(not sandbox.bind_read_only(str(Path(__file__).parent)),
                    reason="no mount namespace here: an excluded folder is copied like the rest")
def test_an_excluded_folder_is_seen_read_only_where_it_lies_not_copied(tmp_path):
    """``flashinfer/data`` (excluded by the default settings) is bound read-only into each
    child rather than copied: a core module imports from it, and no write reaches it, not
    even a new process's. The twin, the same module in a copied folder, writes into the
    copy (so it loads the kernel: AUD001), never into the tree."""
    root = write_tree(tmp_path / "tree", {
        **BASE,
        "flashinfer/data/__init__.py": "",
        "flashinfer/data/helper.py": WRITES_BESIDE_ITSELF,
        "flashinfer/uses_data.py": "import flashinfer.data.helper\n",
        "flashinfer/copied/__init__.py": "",
        "flashinfer/copied/helper.py": WRITES_BESIDE_ITSELF,
    }).resolve()
    # uses_data.py imported the helper (no AUD000), which could not write beside itself
    assert _audit(root) == (1, [("AUD001", "flashinfer/copied/helper.py", 4)])
    assert not (root / "flashinfer" / "data" / "planted").exists()
    assert not (root / "flashinfer" / "copied" / "planted").exists()


def test_a_folder_the_copy_would_change_is_copied_not_shared(tmp_path):
    """A folder is shared only when the copy would hold the same: one holding a bytecode
    cache (which the copy leaves out) or an absolute link into the tree (which the copy
    points into itself) is copied; its clean twin is shared where mounts allow."""
    root = write_tree(tmp_path / "tree", {**BASE, "flashinfer/data/x.py": "", "build/x.py": "",
                                          "dist/__pycache__/x.cpython-311.pyc": ""}).resolve()
    (root / "build" / "link").symlink_to(root / "flashinfer" / "bad.py")
    (root / "flashinfer" / "data" / "link").symlink_to("../bad.py")  # relative: it reads the same in place
    settings = config.load(root)
    assert tree.shared_folders(root, settings) == (["flashinfer/data"] if sandbox.bind_read_only(str(root)) else [])


SUPPORT = {
    "flashinfer/api.py": "def experimental_backend(f):\n    return f\n",
    "flashinfer/experimental/feat/support.py": (
        "from flashinfer.api import experimental_backend\n\n@experimental_backend\ndef check(x):\n    return True\n"),
    "flashinfer/gemm.py": "from .experimental.feat.support import check\n",  # allowed: a support module
    "flashinfer/norm.py": "from .experimental.feat.support import check\n",
    "flashinfer/asks.py": f"import {KERNEL}\n",
}


def test_bytecode_cached_in_the_copy_is_no_load(tmp_path):
    """The workers cache the tree's bytecode in the private copy (each module compiled once
    an audit): writing the support module's cache (a file under the experimental package)
    is no load of anything, and the next request, which imports the support module from
    that cache, is allowed the same; the twin, a core line asking for the kernel, is AUD001."""
    root = write_tree(tmp_path / "tree", {**BASE, **SUPPORT}).resolve()
    result = CliRunner().invoke(main, ["audit", "--root", str(root), "--format", "json", "-j", "1"])
    findings = json.loads(result.stdout)["findings"]
    assert [(f["rule"], f["path"], f["line"]) for f in findings] == [("AUD001", "flashinfer/asks.py", 1)], findings
    assert not list(root.rglob("__pycache__"))


def test_the_preloads_come_from_the_environment_never_from_the_tree(tmp_path):
    """The workers import torch before the tree is on their path (they start while the
    tree is still being copied): a ``torch`` folder at the tree's root, which would run
    untraced there, never runs; the environment's torch does (the twin: the core module
    importing it is audited clean)."""
    marker = tmp_path / "ran-from-the-tree"
    root = write_tree(tmp_path / "tree", {
        **BASE,
        "torch/__init__.py": f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n",
        "flashinfer/uses_torch.py": "import torch\nassert hasattr(torch, 'Tensor')\n",
    }).resolve()
    assert _audit(root) == (0, [])
    assert not marker.exists()
