"""A scratch project for the fix and lifecycle tests (their conftests import `tree`): a tiny package ``fxpkg`` laid out like FlashInfer
(markers in ``api_logging``/``utils``, an experimental package with a feature), so that
fixed modules can be imported and the moved code called."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path
from typing import Dict, Union

import pytest

from policy_checks.fix.apply import FileFix, plan

from .conftest import write_tree as write_plain
from policy_checks.fix.findings import Finding, FixTarget, load_project

PYPROJECT = """\
[tool.policy-check]
package = "fxpkg"
experimental-package = "fxpkg.experimental"
docs = ["docs/api/*.rst"]
"""

BASE_FILES = {
    "pyproject.toml": PYPROJECT,
    "fxpkg/__init__.py": '"""The fixture package."""\n',
    "fxpkg/api_logging.py": """\
        def flashinfer_api(func=None, *, trace=None):
            return func if func is not None else (lambda f: f)


        def flashinfer_experimental_api(func=None, *, trace=None, feature=None):
            if func is None:
                return lambda f: flashinfer_experimental_api(f)
            func.is_experimental = True
            return func
        """,
    "fxpkg/utils.py": """\
        def experimental_backend(checker):
            checker.is_experimental = True
            return checker


        def supported_compute_capability(ccs):
            def mark(checker):
                checker.ccs = list(ccs)
                return checker

            return mark


        def backend_requirement(backend_checks, common_check=None, heuristic_func=None):
            def wrap(func):
                func.backend_checks = backend_checks
                return func

            return wrap
        """,
    "fxpkg/experimental/__init__.py": "from ..utils import experimental_backend\n",
    "fxpkg/experimental/feat/__init__.py": "",
    "fxpkg/experimental/feat/kernels.py": """\
        def run(x):
            return x + 1


        def scale(x):
            return x * 10


        LIMIT = 7
        """,
}


def write_tree(root: Path, files: Dict[str, Union[str, bytes]]) -> None:
    """`conftest.write_tree`, with str contents dedented (bytes are written as they are)."""
    write_plain(root, {rel: textwrap.dedent(c) if isinstance(c, str) else c for rel, c in files.items()})


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A fresh fixture project; ``tree.write({...})`` adds files, ``tree.imported(mod)``
    imports a module of it (and forgets it all afterwards)."""

    class Tree:
        root = tmp_path

        @property
        def project(self) -> FixTarget:
            return load_project(tmp_path)

        def write(self, files):
            write_tree(tmp_path, files)

        def read(self, rel: str) -> bytes:
            return (tmp_path / rel).read_bytes()

        def fix(self, rule: str, rel: str, *lines) -> FileFix:
            """Plan the fix of findings of `rule` at `lines` of `rel`: a line number (the
            column is where its text starts) or a (line, column) pair."""
            text = self.read(rel).decode("utf-8").splitlines()
            findings = []
            for line in lines:
                line, column = line if isinstance(line, tuple) else (line, None)
                if column is None:
                    column = len(text[line - 1]) - len(text[line - 1].lstrip()) + 1
                findings.append(Finding(rule=rule, path=rel, line=line, column=column, message="test finding"))
            (result,) = plan(self.project, findings)
            return result

        def imported(self, module: str):
            importlib.invalidate_caches()  # the finders' directory listings predate the fix's writes
            __import__(module)
            return sys.modules[module]

    write_tree(tmp_path, BASE_FILES)
    sys.path.insert(0, str(tmp_path))
    # Files are rewritten within the second they were written: no bytecode whose mtime could match.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    yield Tree()
    sys.path.remove(str(tmp_path))
    for name in [m for m in sys.modules if m == "fxpkg" or m.startswith("fxpkg.")]:
        del sys.modules[name]
