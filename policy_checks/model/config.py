"""Settings from ``[tool.policy-check]`` in ``pyproject.toml``, validated.

Every setting has a default that fits FlashInfer's own layout, so an unconfigured
FlashInfer checkout (or an unpacked wheel) is checked correctly. An invalid value
raises `ConfigError` naming the key; the CLI turns it into exit status 2. Whether a
well-formed rule id names a rule is the rule table's business
(`policy_checks.rules.registry.check_settings`): settings know no rule.

"Is this module or path experimental?" is answered here, once, for the checker,
``policy-check fix`` and the bot: `Settings.is_experimental_module` and
`Settings.is_experimental_path` (module-level `is_experimental_module` and
`is_experimental_path` answer for FlashInfer's default layout). This module
imports nothing of the checker and nothing heavy (the standard library; tomli on
Python 3.10), so that the bot can import it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Optional

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

SECTION = "tool.policy-check"
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_RULE = re.compile(r"^[A-Z]{1,3}\d{0,3}$")


class ConfigError(Exception):
    """An invalid setting; the message names the key."""


@dataclass(frozen=True)
class Settings:
    package: str = "flashinfer"
    experimental_package: str = "flashinfer.experimental"
    aot_modules: tuple = ("flashinfer.aot",)
    # the function of each AOT module that lists its JIT specs, where it has none of the shapes
    # the audit knows (registered_specs, _register_builtin, gen_all_modules): "aot_specs", say
    aot_listing: str = ""
    docs: tuple = ("docs/api/**/*.rst",)  # the stable API pages, subfolders included (Sphinx builds them all)
    stable_tests: str = "tests"
    experimental_tests: str = "tests/experimental"
    examples: str = "examples"
    # paths (globs, relative to the root) never checked; a directory excludes its contents
    exclude: tuple = ("flashinfer/data", "build", "dist", ".git", ".venv", ".policy-check-cache")
    select: tuple = ()  # empty: every rule
    ignore: tuple = ()
    per_file_ignores: tuple = ()  # (glob, (rule ids...)) pairs
    type_checking_imports: bool = False  # do `if TYPE_CHECKING:` imports count as module level?

    @property
    def experimental_dir(self) -> str:
        return self.experimental_package.replace(".", "/")

    def is_experimental_module(self, module: Optional[str]) -> bool:
        """Is `module` (an absolute dotted name) the experimental package or below it?
        ``flashinfer.gdn_kernels.experimental`` and ``cutlass.experimental`` are not."""
        return module_under(module, self.experimental_package)

    def is_experimental_path(self, rel_path: str) -> bool:
        """Is `rel_path` (relative to the project root, ``/`` separators) experimental
        code or an experimental test: the experimental package's directory, the
        experimental tests directory, or anything below either?"""
        return under(rel_path, self.experimental_dir) or under(rel_path, self.experimental_tests)

    def is_core(self, module: Optional[str]) -> bool:
        return module_under(module, self.package) and not self.is_experimental_module(module)


DEFAULT = Settings()  # FlashInfer's own layout


def is_experimental_module(module: Optional[str], settings: Settings = DEFAULT) -> bool:
    """`Settings.is_experimental_module` under `settings` (default: FlashInfer's layout)."""
    return settings.is_experimental_module(module)


def is_experimental_path(rel_path: str, settings: Settings = DEFAULT) -> bool:
    """`Settings.is_experimental_path` under `settings` (default: FlashInfer's layout)."""
    return settings.is_experimental_path(rel_path)


def under(rel: str, top: str) -> bool:
    """Is the relative path `rel` `top` itself or below it?"""
    return rel == top or rel.startswith(top.rstrip("/") + "/")


def module_under(module: Optional[str], package: str) -> bool:
    """Is the dotted name `module` `package` itself or below it?"""
    return bool(module) and (module == package or module.startswith(package + "."))


# key in pyproject -> (attribute, kind)
_KEYS = {
    "package": ("package", "module"),
    "experimental-package": ("experimental_package", "module"),
    "aot-modules": ("aot_modules", "modules"),
    "aot-listing": ("aot_listing", "identifier"),
    "docs": ("docs", "strings"),
    "stable-tests": ("stable_tests", "path"),
    "experimental-tests": ("experimental_tests", "path"),
    "examples": ("examples", "path"),
    "exclude": ("exclude", "strings"),
    "extend-exclude": (None, "strings"),
    "select": ("select", "rules"),
    "ignore": ("ignore", "rules"),
    "per-file-ignores": ("per_file_ignores", "per-file"),
    "type-checking-imports": ("type_checking_imports", "bool"),
}


def _check(key: str, kind: str, value):
    where = f"[{SECTION}] {key}"
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, not {value!r}")
        return value
    if kind == "identifier":
        if not isinstance(value, str) or not value.isidentifier():
            raise ConfigError(f"{where} must be the name of a function, not {value!r}")
        return value
    if kind in ("module", "path"):
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where} must be a non-empty string, not {value!r}")
        if kind == "module" and not _MODULE.match(value):
            raise ConfigError(f"{where} must be a dotted module name, not {value!r}")
        return _inside_path(where, value.strip().rstrip("/")) if kind == "path" else value
    if kind in ("strings", "modules", "rules"):
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{where} must be a list of strings, not {value!r}")
        for v in value:
            if kind == "modules" and not _MODULE.match(v):
                raise ConfigError(f"{where}: {v!r} is not a dotted module name")
            if kind == "rules" and not _RULE.match(v):
                raise ConfigError(f"{where}: {v!r} is not a rule id or prefix such as EXP001")
            if key == "docs":
                _inside_path(where, v)
        return tuple(value)
    if kind == "per-file":
        if not isinstance(value, dict):
            raise ConfigError(f"{where} must be a table of glob = [rule ids]")
        return tuple(
            (glob, _check(f"{key}.{glob}", "rules", ids)) for glob, ids in value.items()
        )
    raise AssertionError(kind)


def _inside_path(where: str, value: str) -> str:
    """A path setting names a place inside the repository: relative, no ``..``. The
    lifecycle commands delete and write where these point, so anything else is a
    configuration error, not a path to follow."""
    parts = value.replace("\\", "/").split("/")
    if value.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", value) or ".." in parts or "\0" in value:
        raise ConfigError(f"{where} must be a path inside the repository, relative to it without '..', not {value!r}")
    return value


def _check_paths_resolve_inside(root: Path, settings: Settings) -> None:
    """The path settings, symlinks followed, stay inside `root` (a link planted at
    ``tests`` pointing elsewhere makes ``tests/experimental`` a path outside)."""
    top = root.resolve()
    named = [("stable-tests", settings.stable_tests), ("experimental-tests", settings.experimental_tests),
             ("examples", settings.examples)]
    named += [("docs", glob.split("*")[0].rpartition("/")[0] or ".") for glob in settings.docs]
    for key, value in named:
        resolved = (root / value).resolve()
        if resolved != top and top not in resolved.parents:
            raise ConfigError(f"[{SECTION}] {key} = {value!r} leads outside the repository (to {resolved}); "
                              "a path setting must stay inside it")


def from_table(table: dict) -> Settings:
    """Settings from the ``[tool.policy-check]`` table; raises ConfigError."""
    if not isinstance(table, dict):
        raise ConfigError(f"[{SECTION}] must be a table")
    values = {}
    extend = ()
    for key, value in table.items():
        if key not in _KEYS:
            known = ", ".join(sorted(_KEYS))
            raise ConfigError(f"[{SECTION}] unknown key {key!r} (known keys: {known})")
        attribute, kind = _KEYS[key]
        checked = _check(key, kind, value)
        if attribute is None:
            extend = checked
        else:
            values[attribute] = checked
    settings = Settings(**values)
    if not settings.is_experimental_module(settings.experimental_package) or not (
        settings.experimental_package.startswith(settings.package + ".")
    ):
        raise ConfigError(
            f"[{SECTION}] experimental-package {settings.experimental_package!r} "
            f"must be a subpackage of package {settings.package!r}"
        )
    if extend:
        settings = Settings(**{**_as_dict(settings), "exclude": settings.exclude + extend})
    return settings


def _as_dict(settings: Settings) -> dict:
    return {f.name: getattr(settings, f.name) for f in fields(settings)}


def load(root: Path) -> Settings:
    """Settings of the project at `root` (defaults when it has no such section)."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        settings = Settings()
        _check_paths_resolve_inside(root, settings)
        return settings
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{pyproject}: cannot read settings: {error}") from None
    table = data.get("tool", {}).get("policy-check")
    settings = Settings() if table is None else from_table(table)
    _check_paths_resolve_inside(root, settings)
    return settings


def find_root(start: Path) -> Path:
    """The project root: the nearest directory at or above `start` with a
    ``pyproject.toml`` holding ``[tool.policy-check]``, else one holding a
    ``flashinfer`` package, else `start` itself."""
    start = start.resolve()
    candidates = [start, *start.parents]
    for directory in candidates:
        pyproject = directory / "pyproject.toml"
        try:
            if pyproject.is_file() and "[tool.policy-check]" in pyproject.read_text(encoding="utf-8", errors="replace"):
                return directory
        except OSError:
            continue
    for directory in candidates:
        if (directory / Settings.package / "__init__.py").is_file():
            return directory
    return start
