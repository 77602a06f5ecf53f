"""The import graph of a package, for the layering rules that hold only at import time.

The layering itself is contracts in pyproject.toml (``[tool.importlinter]``), checked by
tests/test_layers.py with import-linter, whose graph counts every import wherever it is.
A rule such as "loading the rule table does not load the runner" allows an import in a
function body, so it is checked here instead, on the graph of what runs at import time.

The graph is built with the standard library's `ast` over ``<package>/**/*.py``: an
edge for every ``import``/``from ... import`` in a module and for
``importlib.import_module`` / ``__import__`` with a literal name; relative imports are
resolved, ``from pkg import name`` points at the submodule ``pkg.name`` when there is
one, and importing a module also imports its packages (those not above the importer,
which are imported already). With ``at_import_time`` the bodies of functions and
lambdas (their decorators and defaults do run) and ``if TYPE_CHECKING:`` blocks are
left out.
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path
from typing import Dict, Iterator, Set, Tuple

Graph = Dict[str, Dict[str, int]]  # module -> {imported module: line of an import}


def modules_of(package_dir: Path) -> Dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under ``package_dir``."""
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST, at_import_time: bool) -> Iterator[ast.AST]:
    """Every node of `tree` (breadth first, as `ast.walk`), or only those that run at import time."""
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        yield node
        if at_import_time and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(getattr(node, "decorator_list", ()))
            todo.append(node.args)
        elif at_import_time and isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
        else:
            todo.extend(ast.iter_child_nodes(node))


def _imported_names(tree: ast.AST, module: str, is_package: bool, at_import_time: bool) -> Iterator[Tuple[str, int]]:
    """(absolute name, line) of everything ``tree`` imports, wherever it does (or at import time)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in _nodes(tree, at_import_time):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            yield base, node.lineno
            for alias in node.names:
                if alias.name != "*":
                    yield f"{base}.{alias.name}", node.lineno  # kept only if it is a module
        elif isinstance(node, ast.Call) and node.args:
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            first = node.args[0]
            if name in ("import_module", "__import__") and isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield first.value, node.lineno


def import_graph(package_dir: Path, at_import_time: bool = False) -> Graph:
    """The import graph of the package at ``package_dir`` (edges inside the package only);
    with ``at_import_time``, only the imports that run when a module is imported."""
    modules = modules_of(package_dir)
    graph: Graph = {name: {} for name in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        own_packages = {module.rsplit(".", n)[0] for n in range(1, module.count(".") + 1)}
        for name, line in _imported_names(tree, module, path.name == "__init__.py", at_import_time):
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):  # the module and the packages above it
                target = ".".join(parts[:depth])
                if target in modules and target != module and target not in own_packages:
                    graph[module].setdefault(target, line)
    return graph


def reachable(graph: Graph, start: str) -> Set[str]:
    """The modules that importing `start` imports, directly or not."""
    seen, todo = set(), [start]
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen
