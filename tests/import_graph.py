"""The import graph of a package, for the tests that keep each package free of import cycles.

The graph is built with the standard library's `ast` over ``<package>/**/*.py``:
an edge for every ``import``/``from ... import`` anywhere in a module (module
level, functions, ``if TYPE_CHECKING:``) and for ``importlib.import_module`` /
``__import__`` with a literal name; relative imports are resolved, ``from pkg
import name`` points at the submodule ``pkg.name`` when there is one, and
importing a module also imports its packages (those not above the importer,
which are imported already). A cycle is a strongly connected component of more
than one module.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

Graph = Dict[str, Dict[str, int]]  # module -> {imported module: line of the first import}


def modules_of(package_dir: Path) -> Dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under ``package_dir``."""
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterator[Tuple[str, int]]:
    """(absolute name, line) of everything ``tree`` imports, wherever it does."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
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


def import_graph(package_dir: Path) -> Graph:
    """The import graph of the package at ``package_dir`` (edges inside the package only)."""
    modules = modules_of(package_dir)
    graph: Graph = {name: {} for name in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        own_packages = {module.rsplit(".", n)[0] for n in range(1, module.count(".") + 1)}
        for name, line in _imported_names(tree, module, path.name == "__init__.py"):
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):  # the module and the packages above it
                target = ".".join(parts[:depth])
                if target in modules and target != module and target not in own_packages:
                    graph[module].setdefault(target, line)
    return graph


def cycles(graph: Graph) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def describe(graph: Graph, component: List[str]) -> str:
    members = set(component)
    return "; ".join(
        f"{module} -> {target} (line {line})"
        for module in component
        for target, line in sorted(graph[module].items())
        if target in members
    )


def reachable(graph: Graph, start: str) -> Set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen
