"""Imports of the old path outside the feature, its tests and the core that reaches it.

These are in other experimental features, tests, examples and the rest of the
repository. Each import is pointed at the new home. The shim would serve it for one
release, with a warning. When a rewrite cannot do it, the import is listed for a
person. A string that spells the old path is listed too.
"""

from __future__ import annotations

import ast
import re
from typing import Iterator, List

from ...model import parsed
from ...model.config import module_under, under
from ...editing.cst_tools import apply_edits
from ...editing.target import Refused
from ...model.facts import docstring_ids, extract
from ...model.project import Project, module_name
from ..plan import Plan
from .rewrite import parse_file, retarget
from .text_retarget import retargeted_text


def retarget_elsewhere(graduation: Plan, project: Project) -> None:
    """Point every other import of the old path at the new home, or list it (step 2)."""
    touched = {fix.path for fix in graduation.rewrites}
    spelt = names_the_feature(graduation.feature)
    for rel in _other_code(graduation, project):
        data = graduation.texts.read(rel)
        if rel in touched or not spelt(data):
            continue
        if _imports_old_path(graduation, rel, data):
            try:
                _retarget_file(graduation, rel, data)
            except Refused as why:  # a link, or what libcst cannot print back: not rewritten
                graduation.ask(2, f"{rel} imports {graduation.old} but is not rewritten ({why}); "
                                  f"point it at {graduation.home} by hand")


def names_the_feature(feature: str):
    """A byte test: does a file spell `feature` as a whole word?

    ``cake`` counts; ``cake_dsa`` alone does not. An import of the feature, absolute
    or relative, must spell it. Feature names are often the prefix of others'. So
    this spares the parse of most files.
    """
    word = re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(feature.encode("utf-8")) + rb"(?![A-Za-z0-9_])")
    return lambda data: feature.encode("utf-8") in data and word.search(data) is not None


def _retarget_file(graduation: Plan, rel: str, data: bytes) -> None:
    """Rewrite one file's imports of the old path, and list those a rewrite cannot move.

    Plain import statements are edited as text (`text_retarget`). libcst does the
    rest.
    """
    module, is_package = graduation.target.module_of(rel)
    text = retargeted_text(data, graduation.old, graduation.home, module, module, is_package, marks_move=False)
    if text is not None:
        graduation.rewrite(rel, text)
        graduation.did(2, f"{rel}: imports point at {graduation.home}")
        return
    file = parse_file(graduation.target, rel, data)
    edits: dict = {}
    changed, stuck = retarget(file, graduation.old, graduation.home, file.module_name, edits)
    for line, why in stuck:
        graduation.ask(2, f"{rel}:{line}: an import of {graduation.old} that a rewrite cannot move ({why}); "
                          f"point it at {graduation.home} by hand")
    if changed:
        graduation.rewrite(rel, apply_edits(file, edits))
        graduation.did(2, f"{rel}: imports point at {graduation.home}")


def _imports_old_path(graduation: Plan, rel: str, data: bytes) -> bool:
    """Does the file import the old path? It is read with ``ast`` before libcst is asked."""
    facts = extract(data, *graduation.target.module_of(rel))
    return any(module_under(module, graduation.old) for imp in facts.imports if imp.module and not imp.dynamic
               for module in (imp.module, *(f"{imp.module}.{name}" for name, _ in imp.names)))


def _other_code(graduation: Plan, project: Project) -> List[str]:
    """Python files that are neither the feature, its tests, nor core."""
    s = graduation.target.settings
    feature_dir = f"{s.experimental_dir}/{graduation.feature}"
    feature_tests = f"{s.experimental_tests}/{graduation.feature}"
    found = []
    for rel, source in project.files.items():
        if under(rel, feature_dir) or under(rel, feature_tests) or s.is_core(source.module):
            continue
        found.append(rel)
    # links are never modules of the project (EXP000): listed for a person, not written through
    found += [rel for rel in project.links() if rel.endswith(".py") and not s.is_core(module_name(rel)[0])
              and not under(rel, feature_dir) and not under(rel, feature_tests)]
    found += project.example_texts()
    found += [source.rel for source in project.rest_of_repository()]  # the listing remove reads too
    return sorted(set(found))


def strings_naming_the_old_path(graduation: Plan, project: Project) -> None:
    """List string constants that still spell the experimental path (step 2).

    Examples are ``importlib.import_module("flashinfer.experimental.x.y")`` and an
    f-string's parts. They keep working through the shims for one release. Each is
    listed for a person.
    """
    target, old = graduation.target, graduation.old
    relative = "." + old.partition(".")[2]  # ".experimental.<feature>", as a relative import_module spells it
    spelling = relative.encode("utf-8")  # in both spellings
    # ... followed by a dot, a quote or the end: not the spelling of a longer feature name
    whole = re.compile(re.escape(spelling) + rb"(?![A-Za-z0-9_])")
    new_bytes = {**{fix.path: fix.after for fix in graduation.rewrites}, **graduation.creations}
    feature_dir = f"{target.settings.experimental_dir}/{graduation.feature}"
    shims = {fix.path for fix in graduation.rewrites if under(fix.path, feature_dir)}
    paths = {*project.files, *project.example_texts(), *(source.rel for source in project.rest_of_repository()), *new_bytes} - shims
    for rel in sorted(paths):
        if not rel.endswith(".py"):
            continue
        data = new_bytes[rel] if rel in new_bytes else graduation.texts.read(rel)
        if spelling not in data or whole.search(data) is None:
            continue  # a string holding the old path holds these bytes (escapes and split literals aside)
        if any(under(rel, d) for d in graduation.deletions):
            continue
        for line, text in _strings_naming(data, (old, relative)):
            graduation.ask(2, f"a string still names the experimental path: {rel}:{line}: {text[:80]!r}")


def _strings_naming(data: bytes, spellings) -> Iterator[tuple]:
    """``(line, text)`` of each string constant holding one of `spellings` as a whole name.

    Docstrings are left aside. ``...experimental.cake`` names neither ``cake_dsa``
    nor its folder.
    """
    try:
        tree = parsed.tree(data)
    except (SyntaxError, ValueError):
        return
    nodes = list(ast.walk(tree))
    prose = docstring_ids(nodes)
    named = re.compile("(?:" + "|".join(re.escape(s) for s in spellings) + r")(?![A-Za-z0-9_])")
    for node in nodes:
        if id(node) not in prose and isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and named.search(node.value):
            yield node.lineno, node.value
