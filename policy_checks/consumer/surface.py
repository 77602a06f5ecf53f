"""FlashInfer's experimental surface: what one version calls experimental, as a versioned index.

The index holds the FlashInfer version it was taken from, every experimental API as the
dotted paths a caller can reach it by (the defining module's and each re-export's:
``flashinfer.norm.gated_rmsnorm`` and ``flashinfer.gated_rmsnorm``), every experimental
backend of a stable API as ``api:backend`` (again under each path of the API), and the
gate's variable. It is computed from a FlashInfer tree without importing it, through the
checker's project model (`policy_checks.project.Project`): the markers on definitions
(``@flashinfer_experimental_api``), the ``@experimental_backend`` checkers of each
``backend_requirement`` mapping, hand-routed backends announced with a literal
``warn_experimental_backend_once("api", "backend")``, and the re-exports of package
``__init__`` files (plain and PEP 562 lazy tables).

`write`/`read` keep it as a small JSON file (``policy-check consumer surface -o``), so
a release can ship it and a framework pinned to that release is judged by it. Reading is
strict and bounded: a file that is not this shape is an error, never an empty surface.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, Optional, Set

from .. import markers
from ..cache import read_bounded
from ..config import ConfigError, load
from ..facts import CallRef, DictRef, FileFacts, NameRef, extract
from ..project import DefTarget, DictTarget, External, Project

KEY = "flashinfer-experimental-surface"  # the top-level key, holding the format's version
VERSION = 1
MAX_BYTES = 8 * 1024 * 1024  # a surface file larger than this is refused unread
MAX_SOURCE_BYTES = 16 * 1024 * 1024  # FlashInfer modules larger than this are not read
UNKNOWN_VERSION = "unknown"
_VERSION_LITERAL = re.compile(rb"""^__version__\s*(?::\s*str\s*)?=\s*["']([^"'\n]{1,64})["']""", re.M)
_METADATA_VERSION = re.compile(rb"^Version:\s*(\S{1,64})\s*$", re.M)


class SurfaceError(ValueError):
    """A surface file or tree that cannot be used; the message says which and why."""


@dataclass
class Surface:
    """The experimental surface of one FlashInfer version."""

    version: str
    apis: FrozenSet[str] = frozenset()  # dotted paths, every re-export path included
    backends: Dict[str, FrozenSet[str]] = field(default_factory=dict)  # API path -> backend names
    gate: str = markers.AUTO_BACKENDS_ENV
    source: str = ""  # where it came from (a file, a tree), for the report

    def backends_of(self, api: str) -> FrozenSet[str]:
        """The experimental backends of the API at dotted path `api` (empty if none)."""
        found = self.backends.get(api)
        if found is None:  # an API named without its module (a hand-routed backend's name)
            found = self.backends.get(api.rpartition(".")[2], frozenset())
        return found

    def as_json(self) -> dict:
        return {
            KEY: VERSION,
            "flashinfer_version": self.version,
            "gate": self.gate,
            "apis": sorted(self.apis),
            "backends": sorted(f"{api}:{name}" for api, names in self.backends.items() for name in names),
        }


def dumps(surface: Surface) -> str:
    """The surface as JSON, one API or backend a line (diffs between releases review well)."""
    data = surface.as_json()
    lines = ["{"]
    for key in (KEY, "flashinfer_version", "gate"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(data[key])},")
    for key, last in (("apis", False), ("backends", True)):
        items = data[key]
        body = ",\n".join(f"    {json.dumps(item)}" for item in items)
        lines.append(f"  {json.dumps(key)}: [" + (f"\n{body}\n  ]" if items else "]") + ("" if last else ","))
    lines.append("}")
    return "\n".join(lines) + "\n"


def write(surface: Surface, path: Path) -> None:
    Path(path).write_text(dumps(surface), encoding="utf-8")


def read(path: Path) -> Surface:
    """The surface in the file `path`; `SurfaceError` naming it for anything else."""
    try:
        data = read_bounded(Path(path), MAX_BYTES)
    except (OSError, ValueError) as error:
        raise SurfaceError(f"{path}: cannot read the surface file: {error}") from None
    return loads(data, str(path))


def loads(data: bytes, name: str) -> Surface:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise SurfaceError(f"{name}: not JSON: {error}") from None
    if not isinstance(value, dict) or value.get(KEY) != VERSION:
        raise SurfaceError(f"{name}: not a FlashInfer experimental surface (expected {{{KEY!r}: {VERSION}, ...}})")
    version, gate = value.get("flashinfer_version"), value.get("gate")
    apis, backends = value.get("apis"), value.get("backends")
    if not isinstance(version, str) or not isinstance(gate, str) or not gate:
        raise SurfaceError(f"{name}: 'flashinfer_version' and 'gate' must be strings")
    if not _strings(apis) or not _strings(backends):
        raise SurfaceError(f"{name}: 'apis' and 'backends' must be lists of strings")
    table: Dict[str, Set[str]] = {}
    for item in backends:
        api, colon, backend = item.rpartition(":")
        if not colon or not api or not backend:
            raise SurfaceError(f"{name}: backend {item!r} is not 'api:backend'")
        table.setdefault(api, set()).add(backend)
    return Surface(version, frozenset(apis), {k: frozenset(v) for k, v in table.items()}, gate, name)


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


# -- from a FlashInfer tree ---------------------------------------------------------------


def from_tree(root: Path) -> Surface:
    """The surface of the FlashInfer tree at `root` (a checkout or an unpacked wheel), read
    statically: nothing of it is imported or run."""
    root = Path(root).resolve()
    try:
        settings = load(root)
    except ConfigError as error:
        raise SurfaceError(f"{root}: {error}") from None
    package_dir = root / settings.package.replace(".", "/")
    if not package_dir.is_dir():
        raise SurfaceError(f"{root}: no {settings.package!r} package there")

    def load_facts(source) -> FileFacts:
        try:
            data = read_bounded(root / source.rel, MAX_SOURCE_BYTES)
        except (OSError, ValueError):
            data = b""
        return extract(data, source.module, source.is_package)

    project = Project(root, settings, load_facts, files="work-tree")
    texts = _texts(project)
    defined = _experimental_definitions(project, texts)
    backends = _experimental_backends(project, texts)
    owners = {api.rpartition(".")[0] for api in defined if _is_method(project, api)}
    paths = _reexport_paths(project, set(defined) | set(backends) | owners)
    apis = set()
    for api in defined:
        owner, _, method = api.rpartition(".")
        if owner in owners:  # a method: reached through every path of its class
            apis.update(f"{path}.{method}" for path in paths.get(owner, {owner}))
            if method in _CONSTRUCTORS:  # constructing the class calls it
                apis.update(paths.get(owner, {owner}))
        else:
            apis.update(paths.get(api, {api}))
    table: Dict[str, Set[str]] = {}
    for api, names in backends.items():
        for path in paths.get(api, {api}):
            table.setdefault(path, set()).update(names)
    return Surface(_version(root, package_dir), frozenset(apis), {k: frozenset(v) for k, v in table.items()},
                   markers.AUTO_BACKENDS_ENV, str(root))


_CONSTRUCTORS = ("__init__", "__new__")


def _is_method(project: Project, api: str) -> bool:
    """Is the dotted path `api` a method (its owner a class of the project)?"""
    owner = api.rpartition(".")[0]
    target = project.resolve_absolute(owner)
    return isinstance(target, DefTarget) and target.definition.kind == "class"


def _texts(project: Project) -> Dict[str, bytes]:
    """The bytes of every module that spells a marker the surface is made of (the rest is
    never parsed: a byte search is far cheaper than a parse)."""
    words = (markers.EXPERIMENTAL_API.encode(), markers.BACKEND_REQUIREMENT.encode(), markers.BACKEND_WARNING.encode())
    found = {}
    package_dir = project.settings.package.replace(".", "/") + "/"
    for rel in project.files:
        if not rel.startswith(package_dir):
            continue  # the package's tests define toy APIs
        if project.settings.is_experimental_path(rel) and not rel.endswith("__init__.py"):
            continue  # the APIs live in core; checkers are reached through the mappings
        try:
            data = read_bounded(project.root / rel, MAX_SOURCE_BYTES)
        except (OSError, ValueError):
            continue
        if any(word in data for word in words):
            found[rel] = data
    return found


def _experimental_definitions(project: Project, texts: Dict[str, bytes]) -> Set[str]:
    found = set()
    word = markers.EXPERIMENTAL_API.encode()
    for rel, data in texts.items():
        if word not in data:
            continue
        facts = project.facts(rel)
        for definition in facts.definitions.values():
            if project.decorated_with(facts.module, definition, markers.EXPERIMENTAL_API):
                found.add(f"{facts.module}.{definition.qualname}")
    return found


def _experimental_backends(project: Project, texts: Dict[str, bytes]) -> Dict[str, Set[str]]:
    """API path (or bare name, for a hand-routed backend) -> its experimental backends."""
    found: Dict[str, Set[str]] = {}
    for rel, data in texts.items():
        if markers.BACKEND_REQUIREMENT.encode() in data:
            facts = project.facts(rel)
            for call in facts.backend_calls:
                api = _decorated_by(facts, call.line)
                if api is None:
                    continue
                for key, where, ref in _mapping(project, facts.module, call.checks, set()):
                    if key is not None and _is_experimental_checker(project, where, ref):
                        found.setdefault(f"{facts.module}.{api}", set()).add(key)
        if markers.BACKEND_WARNING.encode() in data:
            module = project.facts(rel).module
            names = {d.qualname.rpartition(".")[2]: d.qualname for d in project.facts(rel).definitions.values()}
            for api, backend in _literal_warnings(data):
                path = f"{module}.{names[api]}" if api in names else api
                found.setdefault(path, set()).add(backend)
    return found


def _decorated_by(facts: FileFacts, line: int) -> Optional[str]:
    """The qualname of the definition a decorator on `line` applies to: the first
    ``def`` at or below it that carries a ``backend_requirement`` decorator."""
    best = None
    for definition in facts.definitions.values():
        if definition.line >= line and any(markers.is_marker(d, markers.BACKEND_REQUIREMENT)
                                            for d in definition.decorators):
            if best is None or definition.line < best.line:
                best = definition
    return None if best is None else best.qualname


def _mapping(project: Project, module: str, ref, seen: set) -> Iterable[tuple]:
    """``(backend name, module the value is written in, value ref)`` of a checks mapping."""
    if isinstance(ref, DictRef):
        for entry in ref.entries:
            if entry.key is None:
                yield from _mapping(project, module, entry.value, seen)
            else:
                yield entry.key, module, entry.value
    elif isinstance(ref, NameRef) and (module, ref.dotted) not in seen:
        seen.add((module, ref.dotted))
        target = project.resolve(module, ref.dotted)
        if isinstance(target, DictTarget):
            yield from _mapping(project, target.module, DictRef("dict", target.value.entries), seen)


def _is_experimental_checker(project: Project, module: str, ref) -> bool:
    if isinstance(ref, CallRef):  # experimental_backend(check), inline
        return markers.is_marker(ref.func, markers.EXPERIMENTAL_BACKEND) or any(
            _is_experimental_checker(project, module, arg) for arg in ref.args)
    if isinstance(ref, NameRef):
        target = project.resolve(module, ref.dotted)
        if isinstance(target, DefTarget):
            return project.decorated_with(target.module, target.definition, markers.EXPERIMENTAL_BACKEND)
    return False


def _literal_warnings(data: bytes) -> Iterable[tuple]:
    """``(api, backend)`` of each ``warn_experimental_backend_once("api", "backend")``."""
    tree = markers.parse(data)
    if tree is None:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and len(node.args) >= 2:
            name = markers.dotted_name(node.func) or ""
            if name.rpartition(".")[2] != markers.BACKEND_WARNING:
                continue
            api, backend = node.args[0], node.args[1]
            if all(isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value for a in (api, backend)):
                yield api.value, backend.value


def _reexport_paths(project: Project, defined: Set[str]) -> Dict[str, Set[str]]:
    """Each of `defined` (dotted paths) -> every path it can be imported by: its own and
    the names package ``__init__`` files bind to it (imports, aliases, lazy tables)."""
    paths: Dict[str, Set[str]] = {api: {api} for api in defined}
    package_dir = project.settings.package.replace(".", "/") + "/"
    for rel, source in project.files.items():
        if not source.is_package or not rel.startswith(package_dir) or project.settings.is_experimental_path(rel):
            continue
        facts = project.facts(rel)
        names = set(facts.bindings)
        if facts.is_package and "__getattr__" in facts.definitions:
            for binding in facts.bindings.values():  # lazy tables: their keys are names too
                names.update(key for key, _ in getattr(getattr(binding, "value", None), "entries", ()) or () if key)
        for name in names:
            target = project.resolve(facts.module, name)
            if isinstance(target, DefTarget):
                path = f"{target.module}.{target.definition.qualname}"
            elif isinstance(target, External):
                path = target.name
            else:
                continue
            if path in paths:
                paths[path].add(f"{facts.module}.{name}")
    return paths


def _version(root: Path, package_dir: Path) -> str:
    """The tree's FlashInfer version, read as text: ``_build_meta.py``, a wheel's
    ``*.dist-info/METADATA``, else a literal ``__version__`` in the package."""
    candidates = [package_dir / "_build_meta.py"]
    candidates += sorted(root.glob(f"{package_dir.name}*.dist-info/METADATA"))
    candidates += sorted(package_dir.parent.glob(f"{package_dir.name}*.dist-info/METADATA"))
    candidates += [package_dir / "version.py", package_dir / "__init__.py"]
    for path in candidates:
        try:
            data = read_bounded(path, 1024 * 1024)
        except (OSError, ValueError):
            continue
        match = (_METADATA_VERSION if path.name == "METADATA" else _VERSION_LITERAL).search(data)
        if match:
            return match.group(1).decode("utf-8", "replace")
    return UNKNOWN_VERSION


def installed_root(package: str = "flashinfer") -> Optional[Path]:
    """The directory holding the installed `package` (to read it as a tree), found with
    `importlib.util.find_spec`, which locates a top-level package without running it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).parent
