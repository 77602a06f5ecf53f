"""FlashInfer's experimental surface: what one version calls experimental, as a versioned index.

The index holds:

- the FlashInfer version it was taken from;
- every experimental API, as the dotted paths a caller can reach it by. Those are
  the defining module's and each re-export's: ``flashinfer.norm.gated_rmsnorm``
  and ``flashinfer.gated_rmsnorm``;
- every experimental backend of a stable API as ``api:backend``, again under each
  path of the API;
- the gate's variable.

It is computed from a FlashInfer tree without importing it. It goes through the
checker's project model (`policy_checks.model.project.Project`). That model reads:

- the markers on definitions (``@flashinfer_experimental_api``);
- the ``@experimental_backend`` checkers of each ``backend_requirement`` mapping;
- hand-routed backends announced with a literal
  ``warn_experimental_backend_once("api", "backend")``;
- the re-exports of package ``__init__`` files, plain and PEP 562 lazy tables.

`write`/`read` keep it as a small JSON file (``policy-check consumer surface -o``).
So a release can ship it, and a framework pinned to that release is judged by it.
Reading is strict and bounded. A file that is not this shape is an error, never an
empty surface.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, Optional, Set, Tuple

from ..model import entry_points, exports, markers
from ..engine.store import read_bounded
from ..model.config import ConfigError, load
from ..model.facts import FileFacts, extract
from ..model.project import DefTarget, External, Project

KEY = "flashinfer-experimental-surface"  # the top-level key, holding the format's version
VERSION = 1
MAX_BYTES = 8 * 1024 * 1024  # a surface file larger than this is refused unread
MAX_SOURCE_BYTES = 16 * 1024 * 1024  # FlashInfer modules larger than this are not read
UNKNOWN_VERSION = "unknown"
_VERSION_LITERAL = re.compile(rb"""^__version__\s*(?::\s*str\s*)?=\s*["']([^"'\n]{1,64})["']""", re.M)
_METADATA_VERSION = re.compile(rb"^Version:\s*(\S{1,64})\s*$", re.M)


class SurfaceError(ValueError):
    """A surface file or tree that cannot be used. The message says which and why."""


@dataclass
class Surface:
    """The experimental surface of one FlashInfer version."""

    version: str
    apis: FrozenSet[str] = frozenset()  # dotted paths, every re-export path included
    backends: Dict[str, FrozenSet[str]] = field(default_factory=dict)  # API path -> backend names
    gate: str = markers.AUTO_BACKENDS_ENV
    source: str = ""  # where it came from (a file, a tree), for the report

    def backends_of(self, api: str) -> FrozenSet[str]:
        """The experimental backends of the API at dotted path `api`, empty if none."""
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
    """The surface as JSON, one API or backend a line, so diffs between releases review well."""
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
    """The surface in the file `path`. Raises `SurfaceError` naming it for anything else."""
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
    """The surface of the FlashInfer tree at `root`, a checkout or an unpacked wheel.

    It is read statically: nothing of it is imported or run.
    """
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
    defined, backends = _declared(project, _texts(project))
    owners = {api for api in defined if _is_class(project, api)}
    paths = _reexport_paths(project, set(defined) | set(backends))
    apis = set()
    for api in defined:
        owner, _, method = api.rpartition(".")
        if owner in owners:  # a method: reached through every path of its class
            apis.update(f"{path}.{method}" for path in paths.get(owner, {owner}))
        else:  # a function, or a class (constructing it is a use)
            apis.update(paths.get(api, {api}))
    table: Dict[str, Set[str]] = {}
    for api, names in backends.items():
        for path in paths.get(api, {api}):
            table.setdefault(path, set()).update(names)
    return Surface(_version(root, package_dir), frozenset(apis), {k: frozenset(v) for k, v in table.items()},
                   markers.AUTO_BACKENDS_ENV, str(root))


def _is_class(project: Project, api: str) -> bool:
    """Is the dotted path `api` a class of the project?"""
    target = project.resolve_absolute(api)
    return isinstance(target, DefTarget) and target.definition.kind == "class"


# what a core module must spell to declare part of the surface (a byte search spares the parse)
_WORDS = (markers.EXPERIMENTAL_API, markers.BACKEND_REQUIREMENT, markers.BACKEND_WARNING, markers.EXPERIMENTAL_FLAG)


def _texts(project: Project) -> Dict[str, bytes]:
    """The bytes of each module of the package that may declare part of the surface.

    That is a core module spelling a marker. It is also one with a public API's
    marker beside an import of the experimental package, a backend branch. An
    experimental module counts when it announces a backend
    (``warn_experimental_backend_once``).
    """
    settings = project.settings
    words = tuple(w.encode() for w in _WORDS)
    warning, public, imports = markers.BACKEND_WARNING.encode(), markers.STABLE_API.encode(), _imports(
        settings.experimental_package)
    found = {}
    package_dir = settings.package.replace(".", "/") + "/"
    for rel in project.files:
        if not rel.startswith(package_dir):
            continue  # the package's tests define toy APIs
        try:
            data = read_bounded(project.root / rel, MAX_SOURCE_BYTES)
        except (OSError, ValueError):
            continue
        if not _is_core(project, rel):
            wanted = warning in data
        else:
            wanted = any(w in data for w in words) or (public in data and imports.search(data) is not None)
        if wanted:
            found[rel] = data
    return found


def _imports(package: str) -> "re.Pattern[bytes]":
    """An import of `package` as spelt.

    Its last name follows ``from``/``import`` and dots. Or it is followed by a dot and
    a name, as ``flashinfer.experimental.x`` in an import call.
    """
    last = re.escape(package.rpartition(".")[2].encode())
    return re.compile(rb"(?:\bfrom|\bimport)\s+[\w.]*\b" + last + rb"\b|\b" + last + rb"\.[A-Za-z_]")


def _is_core(project: Project, rel: str) -> bool:
    """Where the APIs live: core, and the experimental package's ``__init__`` files."""
    return not project.settings.is_experimental_path(rel) or rel.endswith("__init__.py")


def _declared(project: Project, texts: Dict[str, bytes]) -> Tuple[Set[str], Dict[str, Set[str]]]:
    """The experimental APIs and backends, read by the entry-point model (`policy_checks.model.entry_points`).

    APIs are dotted paths. Backends map an API path to names. A backend announced
    for an API elsewhere is keyed by the API's bare name. Experimental code counts
    only for the backends it announces.
    """
    apis: Set[str] = set()
    backends: Dict[str, Set[str]] = {}
    warning = markers.BACKEND_WARNING.encode()
    for rel, data in texts.items():
        read = functools.lru_cache(maxsize=1)(lambda data=data: markers.parse(data))
        announced = warning in data and read() is not None
        if not _is_core(project, rel):  # the API is core's: named bare, as the call spells it
            for api, backend in entry_points.announced_backends(read()) if announced else ():
                backends.setdefault(api, set()).add(backend)
            continue
        facts = project.facts(rel)
        if facts.syntax_error is not None:
            continue
        apis.update(f"{facts.module}.{q}" for q in entry_points.experimental_apis(project, facts))
        found = list(entry_points.experimental_backends(project, facts, read))
        found += entry_points.announced_in(facts, read()) if announced else []
        for api, backend in found:
            path = f"{facts.module}.{api}" if api in facts.definitions else api
            backends.setdefault(path, set()).add(backend)
    return apis, backends


def _reexport_paths(project: Project, defined: Set[str]) -> Dict[str, Set[str]]:
    """Each of `defined` (dotted paths) -> every path it can be imported by.

    That is its own path, and the names package ``__init__`` files bind to it. They
    bind them by imports, aliases and lazy tables.
    """
    paths: Dict[str, Set[str]] = {api: {api} for api in defined}
    package_dir = project.settings.package.replace(".", "/") + "/"
    for rel, source in project.files.items():
        if not source.is_package or not rel.startswith(package_dir) or project.settings.is_experimental_path(rel):
            continue
        facts = project.facts(rel)
        names = set(facts.bindings) | {entry.name for entry in exports.lazy_entries(facts)}
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
    """The tree's FlashInfer version, read as text.

    It comes from ``_build_meta.py``, or a wheel's ``*.dist-info/METADATA``. Else it
    is a literal ``__version__`` in the package.
    """
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
    """The directory holding the installed `package`, to read it as a tree.

    It is found with `importlib.util.find_spec`. That locates a top-level package
    without running it.
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).parent
