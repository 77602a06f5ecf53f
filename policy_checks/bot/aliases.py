"""Markers followed across the modules of a pull request.

An experimental decorator may be aliased in one module and imported under that alias in
another. It is still the experimental decorator. For example:

- ``helpers.py`` binds ``from flashinfer.api_logging import flashinfer_experimental_api as mark``;
- ``kernel.py`` does ``from .helpers import mark`` and decorates with ``@mark``.

Read alone, ``kernel.py`` spells no marker, since `policy_checks.model.markers` reads one
file. `AliasTable` reads every Python text of one side of the PR, its head or its base. It
works out, module by module, the names that stand for a marker (`markers.exported_marks`).
Then it works out what each module imports of them. It reads ``from X import name [as y]``,
``from X import *``, ``import X [as y]`` and ``from P import module``, absolute or relative.

Rounds repeat while something changes, at most `MAX_ROUNDS`. That covers an alias
re-exported through that many modules, and makes import cycles end. Each round re-reads only
the modules whose imports gained a marker.

A module the PR does not change is read when one of the PR's files decorates a definition
with a name imported from it (`decorator_sources`). That costs one more request, for at most
`MAX_SOURCES` modules. An alias that module imports in turn from a third unchanged module is
not followed. This is a known limit (docs/bot.rst).

Texts are untrusted. They are parsed by ``ast`` only, never run. A text that is not Python
exports nothing.
"""

from __future__ import annotations

import ast
from typing import Mapping

from ..model import markers

MAX_ROUNDS = 8  # modules an alias may pass through (a longer chain is not followed)
MAX_IMPORTS = 10_000  # import statements one module's table reads (beyond: not followed)


def module_of(path: str) -> str | None:
    """The module of a path, or None for a path that is no module.

    ``a/b/c.py`` -> ``a.b.c``; ``a/b/__init__.py`` -> ``a.b``."""
    if not path.endswith(".py"):
        return None
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def _absolute(path: str, level: int, module: str | None) -> str | None:
    """The module a ``from`` import names.

    Relative imports are resolved against ``path``'s package."""
    if level == 0:
        return module
    own = module_of(path)
    if own is None:
        return None
    package = own.split(".") if path.endswith("/__init__.py") else own.split(".")[:-1]
    if level - 1 >= len(package):  # beyond the top-level package: Python refuses it
        return None
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else [])) or None


def _imports(text: str) -> list[tuple[str | None, str | None, str | None]]:
    """``(module, name, local)`` of each import.

    ``from X import n as l`` -> (X, n, l). ``import X as l`` -> (X, None, l or None). Relative
    modules are left relative here (see `AliasTable`)."""
    tree = markers.parse(text)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                found.append(("." * node.level + (node.module or ""), alias.name, alias.asname or alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.append((alias.name, None, alias.asname))
        if len(found) >= MAX_IMPORTS:
            break
    return found


def _split_relative(module: str) -> tuple[int, str | None]:
    stripped = module.lstrip(".")
    return len(module) - len(stripped), stripped or None


class AliasTable:
    """The names each module of one side of a PR binds to a marker.

    It also knows what each module imports of them."""

    def __init__(self, texts: Mapping[str, str | None]):
        """``texts``: path -> text of the Python files of one side; None means absent there."""
        self.texts = {path: text for path, text in texts.items() if text is not None and module_of(path)}
        self.imports = {path: _imports(text) for path, text in self.texts.items()}
        self.exported: dict[str, dict[str, frozenset]] = {}  # module -> name -> marker names
        used: dict[str, dict] = {}
        for _ in range(MAX_ROUNDS):  # each round reads the last one's table: one more module of a chain
            following = dict(self.exported)
            for path, text in self.texts.items():
                imported = self.imported(path)
                if path in used and used[path] == imported:
                    continue
                used[path] = imported
                following[module_of(path)] = markers.exported_marks(text, imported) or {}
            if following == self.exported:
                break
            self.exported = following

    def imported(self, path: str) -> dict[str, frozenset]:
        """Local name -> marker names, for what ``path`` imports from the table's other modules."""
        out: dict[str, set] = {}
        expanded: set[str] = set()  # modules whose every name was added once already

        def every_name_of(module: str | None) -> None:
            if module and module not in expanded and module in self.exported:
                expanded.add(module)
                for name, found in self.exported[module].items():
                    out.setdefault(name, set()).update(found)

        for written, name, local in self.imports.get(path, ()):
            level, module = _split_relative(written or "")
            target = _absolute(path, level, module)
            if name is None:  # import X [as y]: X.name is read by its last component
                every_name_of(target)
                continue
            if name == "*":
                every_name_of(target)
                continue
            found = self.exported.get(target or "", {}).get(name)
            if found:
                out.setdefault(local or name, set()).update(found)
            every_name_of(f"{target}.{name}" if target else name)  # a module imported from its package
        return {name: frozenset(found) for name, found in out.items()}


MAX_SOURCES = 25  # unchanged modules read for the decorators the PR's files import from them (one request)
# Names whose meaning the track fixes: a decorator spelt with one of them needs no other module read.
VOCABULARY = frozenset({*markers.KINDS, markers.BACKEND_REQUIREMENT, *markers.GATE_FUNCTIONS})


def module_paths(module: str) -> list[str]:
    """Where a module's text may be: ``a/b.py`` or ``a/b/__init__.py``."""
    stem = module.replace(".", "/")
    return [f"{stem}.py", f"{stem}/__init__.py"]


def decorator_sources(path: str, text: str, package: str) -> list[str]:
    """The modules of ``package`` (dotted names) that a decorator of this file may come from.

    The caller reads them to follow an alias bound there. A module is the first name of a
    decorator's target (calls unwrapped, `markers.decorator_target`). It counts when:

    - this file imports it (``from X import name``, ``import X as name``, or any
      ``from X import *``);
    - and its last name is not one of the track's own (`VOCABULARY`)."""
    tree = markers.parse(text)
    if tree is None:
        return []
    imported: dict[str, tuple[str | None, str | None]] = {}  # local name -> (module, name imported or None)
    starred: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(path, node.level, node.module)
            for alias in node.names:
                if alias.name == "*":
                    starred.append(module or "")
                else:
                    imported[alias.asname or alias.name] = (module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.partition(".")[0]
                imported[local] = (alias.name if alias.asname else local, None)
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for decorator in node.decorator_list:
            target = markers.decorator_target(decorator)
            if not target or target.rpartition(".")[2] in VOCABULARY:
                continue
            first, _, rest = target.partition(".")
            module, name = imported.get(first, (None, None))
            if module is None:
                found += starred  # perhaps bound by a star import
            elif name is None:  # import X as first: first.rest
                found += [module] + ([f"{module}.{rest.rpartition('.')[0]}"] if "." in rest else [])
            else:
                found += [module, f"{module}.{name}"]
        if len(found) > 4 * MAX_SOURCES:
            break
    return [m for m in dict.fromkeys(found) if m and (m == package or m.startswith(package + "."))]
