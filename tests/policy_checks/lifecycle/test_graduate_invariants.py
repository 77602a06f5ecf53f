"""What every graduation keeps, checked by one helper, `graduate_checked`, that the other
``test_graduate_*`` files use:

- refused (exit 1): the tree is byte-identical (links, FIFOs and modes included);
- done (exit 0): the ``--diff`` output, applied with ``git apply`` to a copy of the tree
  taken before, gives exactly the tree the real run leaves; ``--diff`` alone writes nothing;
- every module of the fixture package that imported before still imports;
- the checker reports no finding that was not there before, unless the graduation
  listed, for a person, the place that removes it (``path:line``).
"""

from __future__ import annotations

import collections
import importlib
import json
import os
import shutil
import stat
import subprocess
import sys
import warnings

from click.testing import CliRunner

from policy_checks.cli import main

from .test_graduate import API_FEATURE


def snapshot(root) -> dict:
    """Every entry under `root` as it is on disk, links not followed, ``__pycache__`` left out."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in [*dirs, *files]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir",)
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as stream:
                    found[rel] = ("file", stream.read(), stat.S_IMODE(info.st_mode))
            else:
                found[rel] = ("special", stat.S_IFMT(info.st_mode))
    return found


def importable(tree) -> set:
    """The modules of the fixture package that import (each in a fresh interpreter state)."""
    modules = set()
    for path in (tree.root / "fxpkg").rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        module, is_package = tree.project.module_of(path.relative_to(tree.root).as_posix())
        _forget()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree.imported(module)
        except Exception:  # noqa: BLE001 - what does not import is simply not in the set
            continue
        modules.add(module)
    _forget()
    return modules


def _forget() -> None:
    importlib.invalidate_caches()
    for name in [m for m in sys.modules if m == "fxpkg" or m.startswith("fxpkg.")]:
        del sys.modules[name]


def findings(root) -> list:
    result = CliRunner().invoke(main, ["run", "--root", str(root), "--no-cache", "--format", "json", "--exit-zero"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["findings"]


def invoke(tree, *args):
    return CliRunner().invoke(main, ["graduate", *args, "--root", str(tree.root)])


def graduate_checked(tree, *args):
    """``policy-check graduate *args`` on the fixture tree, with every invariant checked;
    returns the real run's result."""
    root = tree.root
    before, found_before, modules_before = snapshot(root), findings(root), importable(tree)
    shown = invoke(tree, *args, "--diff")
    assert shown.exception is None or isinstance(shown.exception, SystemExit), shown.output
    assert snapshot(root) == before, "--diff wrote to the tree"
    copy = root.parent / f"{root.name}-applied"
    if shown.exit_code == 0:
        shutil.copytree(root, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    result = invoke(tree, *args)
    assert result.exit_code == shown.exit_code, (shown.output, result.output)
    if result.exit_code != 0:
        assert result.exit_code == 1 and "refused, nothing written" in result.output, result.output
        assert snapshot(root) == before, "a refused graduation changed the tree"
        return result
    _apply(copy, shown.stdout)
    assert _files(snapshot(copy)) == _files(snapshot(root)), "the --diff is not what the run did"
    assert modules_before <= importable(tree), "a module that imported before no longer does"
    _new_findings_are_listed(found_before, findings(root), result.output)
    return result


def _files(entries: dict) -> dict:
    """A snapshot as git sees it: no directories (git neither makes nor keeps an empty one)."""
    return {rel: entry for rel, entry in entries.items() if entry[0] != "dir"}


def _apply(copy, patch: str) -> None:
    environment = {**os.environ, "GIT_CEILING_DIRECTORIES": str(copy.parent)}  # no repository above the copy
    subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], cwd=copy, input=patch.encode(), check=True,
                   env=environment, capture_output=True)


def _new_findings_are_listed(before: list, after: list, output: str) -> None:
    key = lambda f: (f["rule"], f["path"], f["message"])  # noqa: E731
    new = collections.Counter(map(key, after)) - collections.Counter(map(key, before))
    listed = [line for line in output.splitlines() if "for a person:" in line]
    for finding in after:
        if new[key(finding)]:
            place = f"{finding['path']}:{finding['line']}"
            assert any(place in line for line in listed), f"new finding not listed: {finding}\n{output}"


def test_the_documented_graduation_keeps_every_invariant(tree):
    tree.write(API_FEATURE)
    result = graduate_checked(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output


def test_a_refusal_keeps_every_invariant(tree):
    tree.write(API_FEATURE)
    result = graduate_checked(tree, "feat", "--to", "fxpkg.ops")
    assert result.exit_code == 1 and "fxpkg/ops.py already exists" in result.output
