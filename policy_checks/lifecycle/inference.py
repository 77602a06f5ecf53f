"""What the code says about each experimental feature, for ``policy-check features init``.

The checker's facts and project model answer without running anything
(`policy_checks.model.facts`, `policy_checks.model.project`):

- ``apis``: every ``@flashinfer_experimental_api`` function or class of the
  package that belongs to a feature. It is defined under
  ``flashinfer/experimental/<feature>/``. Or it is defined in core and imports that
  feature's code in its body. That is FlashInfer's way: the API is a core entry
  point, the feature its implementation. Each is written as the dotted path a user
  calls. That is ``flashinfer.<name>`` when the package exports it under that
  name, else the defining module's path.
- ``backends``: every ``backend_requirement`` mapping entry whose checker is an
  ``@experimental_backend`` function under a feature. Each is written
  ``"<api>:<backend>"``; the API is the function the call decorates.
- ``auto_routing``: for a backend, whether ``backend="auto"`` may choose it. It
  may when the call has no ``heuristic_func``; auto then tries every suitable
  backend. It may when the heuristic's body names the backend as a string. It is
  False when the heuristic never names it. It is unknown (None) when the heuristic
  cannot be read. An API alone is called by name: False.
- ``kind``: ``"api"``, ``"backend"`` or ``"both"``, from the two lists.

Only the files that mention a marker are parsed up front, after a byte search. The
project model parses what resolving a name reaches. Nothing is imported or run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..model import markers
from ..model.facts import Definition, extract
from ..model.project import DefTarget, Project

_MARKER_BYTES = tuple(m.encode() for m in (markers.EXPERIMENTAL_API, markers.EXPERIMENTAL_BACKEND,
                                           markers.BACKEND_REQUIREMENT))
MAX_SOURCE_BYTES = 8 * 1024 * 1024  # a larger module is not read for its heuristic


@dataclass
class Inferred:
    """What the code says about one feature. `why` says where each field came from."""

    apis: set = field(default_factory=set)
    backends: set = field(default_factory=set)
    auto: list = field(default_factory=list)  # True / False / None, one per backend found
    why: dict = field(default_factory=dict)  # field -> where it came from, in words

    @property
    def kind(self) -> Optional[str]:
        if self.apis and self.backends:
            return "both"
        return "api" if self.apis else ("backend" if self.backends else None)

    @property
    def auto_routing(self) -> Optional[bool]:
        if self.backends:
            if True in self.auto:
                return True
            return None if None in self.auto else False
        return False if self.apis else None


def _read(root: Path, rel: str) -> bytes:
    try:
        with open(root / rel, "rb") as handle:
            return handle.read(MAX_SOURCE_BYTES + 1)
    except OSError:
        return b""


def infer(root: Path, settings) -> dict:
    """feature name -> `Inferred`, for every feature the code mentions."""
    package = settings.experimental_package

    def load(source):
        return extract(_read(root, source.rel), source.module, source.is_package)

    project = Project(root, settings, load)
    found: dict = {}

    def feature_of(module: str) -> Optional[str]:
        if not settings.is_experimental_module(module) or module == package:
            return None
        return module[len(package) + 1:].split(".", 1)[0]

    modules = [(rel, source.module) for rel, source in project.files.items()
               if project.is_module(source.module) and any(m in _read(root, rel) for m in _MARKER_BYTES)]
    for rel, module in modules:
        facts = project.facts(rel)
        if facts.syntax_error:
            continue
        for definition in facts.definitions.values():
            if project.decorated_with(module, definition, markers.EXPERIMENTAL_API):
                api = _api_of(facts, definition)  # a marked method: its class, whose body imports the feature
                owners = {feature_of(module)} - {None} or _features_imported(facts, api, feature_of)
                for feature in owners:
                    item = found.setdefault(feature, Inferred())
                    item.apis.add(_public_name(project, settings.package, module, api))
                    item.why["apis"] = "@flashinfer_experimental_api in the code"
        for call in facts.backend_calls:
            _backends(project, root, rel, module, facts, call, feature_of, found)
    return found


def _features_imported(facts, definition: Definition, feature_of) -> set:
    """The features whose code a core API's body imports (its deferred imports)."""
    inside = definition.qualname
    owners = set()
    for imp in facts.imports:
        if imp.module and any(f == inside or f.startswith(inside + ".") for f in imp.functions):
            owner = feature_of(imp.module)
            if owner is not None:
                owners.add(owner)
    return owners


def _api_of(facts, definition: Definition) -> Definition:
    """A marked method stands for its class, since the class is what a user calls."""
    outer = facts.definitions.get(definition.qualname.split(".", 1)[0])
    return outer if outer is not None and outer.kind == "class" else definition


def _public_name(project: Project, top: str, module: str, definition: Definition) -> str:
    """The path a user calls the definition by.

    It is ``flashinfer.<name>`` when the package exports it under its name, by a
    re-export or a lazy export. Otherwise it is ``<module>.<qualname>``.
    """
    head = definition.qualname.split(".", 1)[0]
    exported = project.resolve(top, head)
    if isinstance(exported, DefTarget) and (exported.module, exported.definition.line) == (module, definition.line):
        return f"{top}.{definition.qualname}"
    return f"{module}.{definition.qualname}"


def _decorated_api(facts, line: int) -> Optional[Definition]:
    """The function a ``backend_requirement(...)`` decorator at `line` decorates."""
    below = [d for d in facts.definitions.values() if d.kind == "function" and d.line > line]
    return min(below, key=lambda d: d.line) if below else None


def _backends(project, root, rel, module, facts, call, feature_of, found) -> None:
    """The experimental backends of one ``backend_requirement`` call.

    The mapping is read as EXP004 reads it (`Project.backend_entries`). That covers
    dict literals, module-level dicts, and ``**``.
    """
    api = _decorated_api(facts, call.line)
    if api is None or not project.decorated_with(module, api, markers.BACKEND_REQUIREMENT):
        return
    heuristic = None
    for key, where, ref in project.backend_entries(module, call.checks):
        target = project.checker_of(where, ref) if key else None
        if target is None:
            continue
        def_module, checker = target
        feature = feature_of(def_module)
        if feature is None or not project.decorated_with(def_module, checker, markers.EXPERIMENTAL_BACKEND):
            continue
        if heuristic is None:
            heuristic = _heuristic_names(_read(root, rel), api)
        item = found.setdefault(feature, Inferred())
        item.backends.add(f"{api.qualname}:{key}")
        item.why["backends"] = "@experimental_backend checkers in backend_requirement mappings"
        item.auto.append(True if heuristic is True else (None if heuristic is None else key in heuristic))


def _heuristic_names(source: bytes, api: Definition):
    """The backend names the heuristic may choose.

    True when the decorator passes no ``heuristic_func``; auto tries every backend.
    Otherwise, the set of string constants in the heuristic function's body. None
    when it cannot be read: defined elsewhere, a lambda over names, or a file that
    does not parse.
    """
    if len(source) > MAX_SOURCE_BYTES:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    node = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.lineno == api.line), None)
    if node is None:
        return None
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and markers.BACKEND_REQUIREMENT in ast.unparse(decorator.func):
            given = [k.value for k in decorator.keywords if k.arg == "heuristic_func"]
            if not given or (isinstance(given[0], ast.Constant) and given[0].value is None):
                return True
            body = functions.get(given[0].id) if isinstance(given[0], ast.Name) else given[0]
            if body is None:
                return None
            return {n.value for n in ast.walk(body) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return None
