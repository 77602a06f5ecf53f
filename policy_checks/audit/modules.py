"""What the audit imports, and what it allows.

It imports the core modules of the tree, as the checker's project model lists them.
It says what it leaves out and why. It allows the support modules the static rules
let core import: EXP001's exception, EXP003's list.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from ..model import walk
from ..model.config import Settings, under
from ..model.facts import extract
from ..model.project import Project, SourceFile, excluder
from ..analysis.import_time import support_modules
from ..analysis.needs import names_experimental

_IDENTIFIER_PARTS = str.isidentifier


class Listing(NamedTuple):
    modules: list  # core module names, in import order (packages before their modules)
    skipped: list  # (what, why) of what is left out, for the report
    project: Project  # the checker's model of the tree (baseline fingerprints, support modules)
    texts: dict  # rel -> the bytes of each project file, read before any child started


def project_model(root: Path, settings: Settings) -> tuple:
    """The checker's project model and the bytes of its files, all read now.

    Each file's facts are extracted from those bytes when first asked for. So
    nothing the verdict uses is read from the tree after the code under test has
    run. That code could have rewritten it. The verdict uses a finding's scope and
    suppressions, for example.
    """
    texts = {}

    def load(source: SourceFile):
        data = texts.get(source.rel)
        if data is None:
            raise OSError(f"{source.rel} could not be read before the audit ran")
        return extract(data, source.module, source.is_package)

    project = Project(root, settings, load)
    for rel in project.files:
        try:
            texts[rel] = (root / rel).read_bytes()
        except OSError:
            continue
    return project, texts


def core_modules(root: Path, settings: Settings) -> Listing:
    """The core modules to import, and what is left out.

    Left out are the experimental package and the folders the settings exclude.
    Those are imported only when core imports them, and then traced like any other
    code. ``__main__`` modules are left out too, since running one runs a program.
    """
    project, texts = project_model(root, settings)
    modules, skipped = [], []
    for rel, source in sorted(project.files.items()):
        module = source.module
        if not settings.is_core(module):
            continue
        if not all(_IDENTIFIER_PARTS(part) for part in module.split(".")):
            skipped.append((rel, "not an importable module name"))
        elif module.rpartition(".")[2] == "__main__":
            skipped.append((rel, "a __main__ module runs a program when imported"))
        else:
            modules.append(module)
    skipped += _excluded_folders(root, settings)
    modules.sort()  # a package before its modules: its imports are traced at the package
    return Listing(modules, skipped, project, texts)


def _excluded_folders(root: Path, settings: Settings) -> list:
    """``(folder, why)`` for each excluded folder inside the package holding Python files."""
    excluded = excluder(settings.exclude)
    top = settings.package.replace(".", "/")
    found = []

    def enter(entry: walk.Entry) -> bool:
        return not excluded(entry.rel) and not under(entry.rel, settings.experimental_dir)

    for entry in walk.walk(root, top, enter=enter):
        if entry.kind != walk.DIRECTORY or not excluded(entry.rel) or under(entry.rel, settings.experimental_dir):
            continue
        count = sum(1 for file in walk.files(root, entry.rel) if file.name.endswith(".py"))
        if count:
            found.append((entry.rel, f"excluded by the settings ({count} Python files); audited only where core "
                                     "imports them"))
    return sorted(found)


def preloads(project: Project, texts: dict, candidates) -> list:
    """Which of `candidates`, heavy third-party packages, the core modules import somewhere.

    The workers import those once, before any request. So a tree that never names
    torch does not pay for it in every worker.
    """
    wanted = {name: re.compile(rb"^[ \t]*(?:import|from)[ \t]+" + re.escape(name.encode()) + rb"\b", re.M)
              for name in candidates}
    found = []
    for rel, data in _core_texts(project, texts):
        if not wanted:
            break
        for name, pattern in list(wanted.items()):
            if pattern.search(data):
                found.append(name)
                del wanted[name]
    return [name for name in candidates if name in found]


def allowed_support(project: Project, texts: dict) -> dict:
    """The support modules the static rules allow core to import.

    Each maps to the first core line importing it. They are computed as EXP003 does.
    That reads every core module that may name the experimental package. The
    prefilter reads the bytes as a static run does. A bare substring would parse
    every file that says ``flashinfer_experimental_api``. That is two thirds of the
    files FlashInfer's core parses.
    """
    settings = project.settings
    word = settings.experimental_package.rpartition(".")[2].encode()
    for rel, data in _core_texts(project, texts):
        if names_experimental(data, settings.package, word):
            project.mark_primary(rel)
    return support_modules(project)


def _core_texts(project: Project, texts: dict):
    """``(rel, bytes)`` of each readable core module, from the bytes read first."""
    for rel, source in project.files.items():
        if project.settings.is_core(source.module) and rel in texts:
            yield rel, texts[rel]
