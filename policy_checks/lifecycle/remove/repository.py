"""Every Python file of the repository a removal keeps: the checker's own files (core,
tests, other features), the examples, and the rest of the repository
(`Project.rest_of_repository`: other top-level packages, scripts, benchmarks)."""

from __future__ import annotations

import fnmatch
from typing import List, NamedTuple

from ...model.config import under
from ...model.project import module_name
from .model import Removal

_TEST_NAMES = ("test_*.py", "*_test.py", "conftest.py")  # what pytest collects, wherever it lies


class KeptFile(NamedTuple):
    rel: str
    module: str  # its dotted name, as if the root were on sys.path
    is_package: bool
    is_test: bool  # a test's strings are data unless they load something


def kept_python_files(project, removal: Removal) -> List[KeptFile]:
    """The Python files the removal keeps, as git selects them (outside a work tree:
    all of them), less the ``exclude`` setting's paths."""
    settings = project.settings
    found = [KeptFile(rel, s.module, s.is_package, _is_test(settings, rel)) for rel, s in sorted(project.files.items())]
    found += [KeptFile(rel, module_name(rel)[0], False, _is_test(settings, rel)) for rel in sorted(project.example_texts())]
    for source in project.rest_of_repository():
        found.append(KeptFile(source.rel, source.module, source.is_package, _is_test(settings, source.rel)))
    return [kept for kept in found if not removal.gone(kept.rel)]


def _is_test(settings, rel: str) -> bool:
    name = rel.rpartition("/")[2]
    return under(rel, settings.stable_tests) or any(fnmatch.fnmatchcase(name, p) for p in _TEST_NAMES)
