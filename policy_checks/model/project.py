"""The project model: which files exist, their module names, their facts, and
name resolution across modules (imports, re-exports, lazy exports).

Facts of a file are loaded on first use (`Project.facts`), from the cache or by
parsing, so a rule may follow a re-export into any module. The runner computes,
in parallel and up front, the facts of the files some rule must inspect (the
*primary* files, chosen by the prefilter of `needs.py`) and marks them
(`mark_primary`); rules iterate over them with `primary_facts`. Every other file is
only read as bytes (its trigger scan and suppressions) unless a rule or a follow-up
asks: `summary` runs the syntax check and symbol table, `facts` parses it whole.

`resolve` answers with a `Target`: a named tuple whose first field, ``tag``, says
which of the four it is (and keeps it equal to the tagged tuple it stands for).
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Iterator, Mapping, NamedTuple, Optional, Union

from . import exports, gitfiles, markers, sphinx_pages, walk
from .config import Settings, under
from .facts import AliasBinding, DefBinding, Definition, DictBinding, DictValue, FileFacts, FromBinding, Import
from .facts import syntax_only, unreadable
from .facts import CallRef, DictRef, ModuleBinding, NameRef

_GLOB_CHARS = set("*?[")
NOT_UTF8 = "name is not valid UTF-8"
# Python decodes bytes of a name that are not UTF-8 to lone surrogates (PEP 383)
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class SourceFile:
    rel: str  # path relative to the root, "/" separators
    module: str  # absolute module name ("tests.x.test_y" for tests)
    is_package: bool
    size: int


def excluder(patterns) -> Callable[[str], bool]:
    """Is a path (relative, "/" separators) excluded by `patterns`? A pattern without
    glob characters excludes that path and everything below it; a glob is matched
    against the path and each of its parent directories. The patterns are sorted out
    once (the walk asks for every entry)."""
    stripped = [pattern.strip("/") for pattern in patterns]
    plain = frozenset(p for p in stripped if not _GLOB_CHARS & set(p))
    below = tuple(p + "/" for p in plain)
    globs = tuple(p for p in stripped if _GLOB_CHARS & set(p))

    def excluded(rel: str) -> bool:
        if rel in plain or rel.startswith(below):
            return True
        if not globs:
            return False
        parts = rel.split("/")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        return any(fnmatch.fnmatchcase(prefix, glob) for glob in globs for prefix in prefixes)

    return excluded


def module_name(rel: str) -> tuple:
    """``("a.b", is_package)`` for ``a/b.py`` or ``a/b/__init__.py``."""
    parts = rel[:-3].split("/")
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def walk_python_files(
    root: Path, top: str, exclude, problems: list, selection: Optional[gitfiles.Listing] = None
) -> Iterator[SourceFile]:
    """Python files below `root/top`. Symbolic links (files and directories) are not
    followed: each is recorded in `problems` with its target (EXP000), as is each
    ``.pyc`` outside ``__pycache__`` and each one git selects inside a ``__pycache__``
    without its source; other entries that are not regular files are recorded too. With a
    `selection` (`gitfiles.listing`), only what git selects: a directory holding no
    selected file is not entered, a file git does not select is not read."""
    excluded = excluder(exclude or ())

    def enter(entry: walk.Entry) -> bool:
        return entry.name != "__pycache__" and not excluded(entry.rel) and (
            selection is None or selection.has_directory(entry.rel))

    for entry in walk.walk(root, top, enter=enter, problems=problems):
        rel = entry.rel
        if excluded(rel):
            continue
        if entry.name == "__pycache__":
            if selection is not None and selection.has_directory(rel):
                problems.extend(_sourceless_cached(entry.path, rel, selection))
            continue
        if entry.kind == walk.LINK:
            if selection is None or selection.has_file(rel) or selection.has_directory(rel):
                problems.append((rel, _link_problem(entry.path)))
            continue  # never followed: it may lead out of the repository
        if entry.kind == walk.DIRECTORY:
            continue
        if entry.name.endswith(".pyc") and (selection is None or selection.has_file(rel)):
            problems.append((rel, SOURCELESS))
            continue
        if not entry.name.endswith(".py"):
            continue
        if selection is not None and not selection.has_file(rel):
            continue  # ignored by git, or (staged) not in the index
        if not is_utf8(rel):  # no module has such a name, and no report could carry it
            problems.append((rel, NOT_UTF8))
            continue
        try:
            info = os.stat(entry.path)
        except OSError as error:
            problems.append((rel, f"cannot read: {error.strerror or error}"))
            continue
        if not stat.S_ISREG(info.st_mode):
            problems.append((rel, "cannot read: not a regular file"))
            continue
        module, is_package = module_name(rel)
        yield SourceFile(rel, module, is_package, info.st_size)


SOURCELESS = ("a compiled file without its source: Python imports a .pyc beside the sources as a module, "
              "and the checker cannot read it; commit the source instead")


LINK_PROBLEM = "a symbolic link"  # how EXP000's message for a link starts


def _link_problem(path: str) -> str:
    """EXP000's message for a symbolic link: it is never followed (it may lead out of the
    repository, or make code the checker never reads importable), so it is untrusted."""
    try:
        target = printable(os.readlink(path))
    except OSError as error:
        target = f"unreadable: {error.strerror or error}"
    return (f"{LINK_PROBLEM} (to {target[:200]!r}): the checker does not follow links in the package or the "
            "test lanes, so what it leads to is unchecked; replace it with the file or directory itself")


def _sourceless_cached(directory: str, rel: str, selection) -> list:
    """``(rel, message)`` of each ``.pyc`` git selects in a ``__pycache__`` whose source
    (``name.py`` beside the ``__pycache__``) is not there: compiled code committed
    without its source."""
    found = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return found
    parent = os.path.dirname(directory)
    for name in names:
        path_rel = f"{rel}/{name}"
        if not name.endswith(".pyc") or not selection.has_file(path_rel):
            continue
        source = name.partition(".")[0] + ".py"
        if not os.path.isfile(os.path.join(parent, source)):
            found.append((path_rel, f"a compiled file whose source {source} is missing: the checker cannot "
                                    "read it; remove it, or commit the source"))
    return found


MAX_EXCLUDED_FILES = 20_000  # excluded Python files looked at


def _python_below(root: Path, top: str, limit: int) -> list:
    """Relative paths of the ``.py`` files below `root/top` (links not followed), at most `limit`."""
    found = []
    for entry in walk.files(root, top, enter=lambda entry: entry.name != "__pycache__"):
        if len(found) >= limit:
            break
        if entry.name.endswith(".py"):
            found.append(entry.rel)
    return found


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


# what `Project.resolve` finds ---------------------------------------------------------


class ModuleTarget(NamedTuple):
    """A module of this project."""

    tag: str  # "module"
    name: str


class DefTarget(NamedTuple):
    """A ``def`` or ``class`` in a module of this project."""

    tag: str  # "def"
    module: str
    definition: Definition


class DictTarget(NamedTuple):
    """A module-level dict in a module of this project."""

    tag: str  # "dict"
    module: str
    value: DictValue


class External(NamedTuple):
    """Something outside the project, or not statically known: its dotted name."""

    tag: str  # "external"
    name: str


Target = Union[ModuleTarget, DefTarget, DictTarget, External]


class Project:
    """Files of one project and lazy access to their facts.

    In a git work tree the files are those git selects (`gitfiles`): by default tracked
    files and untracked ones git does not ignore; with `files` ``"staged"``, only those in
    the index. `files` None takes `gitfiles.mode()`. Outside a work tree (or without git)
    every file below the checked directories counts, less the ``exclude`` setting."""

    def __init__(self, root: Path, settings: Settings, load_facts: Callable[[SourceFile], FileFacts],
                 files: Optional[str] = None):
        self.root = root
        self.settings = settings
        # what git selects, or None (no git, no repository): then the walk alone decides
        self.listing = gitfiles.listing(root, files, settings.package.replace(".", "/"))
        self._load_facts = load_facts
        self.read_problems: list = []  # (rel, message) for EXP000
        self._files: dict = {}  # rel -> SourceFile
        self._by_module: dict = {}  # module -> rel (package files only)
        self._facts: dict = {}
        self._primary: set = set()  # rels whose complete facts were computed up front
        self._docs = None
        self._examples = None
        self._excluded = None
        self._excluded_modules: Optional[dict] = None  # module -> SourceFile (`excluded_modules`)
        self._excluded_texts: Optional[dict] = None  # module -> bytes (`excluded_texts`)
        self._rest: Optional[list] = None  # `rest_of_repository`
        # (rel, bytes, scanner) -> the scanner's mask, remembered by content where the runner keeps a cache
        self.scan: Callable = lambda rel, data, scanner: scanner.scan(data)
        # the runner's trigger scan of each file read (`needs.Scanner`; rel -> mask), for `spells`
        self.scanner = None
        self._found: dict = {}
        # SourceFile -> its syntax-only facts (`facts.syntax_only`), cached where the runner keeps a cache
        self.summarize: Callable = self._summarize
        # while the runner watches (its follow-ups): "facts" and "summary" -> the rels asked
        self.watch: Optional[dict] = None
        for top in (settings.package.replace(".", "/"), settings.stable_tests):
            for source in walk_python_files(root, top, settings.exclude, self.read_problems, self.listing):
                if source.rel in self._files:
                    continue
                self._files[source.rel] = source
                if source.module.startswith(settings.package + ".") or source.module == settings.package:
                    self._by_module[source.module] = source.rel

    # the files ---------------------------------------------------------------------
    @property
    def files(self) -> Mapping[str, SourceFile]:
        """rel -> `SourceFile` of every Python file checked (read-only)."""
        return MappingProxyType(self._files)

    def links(self) -> list:
        """Relative paths of the symbolic links met in the package and the test lanes
        (EXP000 findings; never read as modules). Commands that edit the tree list the
        ``.py`` ones for a person instead of writing through them."""
        return [rel for rel, message in self.read_problems if message.startswith(LINK_PROBLEM)]

    def drop_unreadable(self, rel: str, message: str) -> None:
        """`rel` could not be read: it is an EXP000 finding, and no longer a module."""
        source = self._files.pop(rel)
        if self._by_module.get(source.module) == rel:
            del self._by_module[source.module]
        self.read_problems.append((rel, message))

    def set_found(self, rel: str, found: Optional[int]) -> None:
        """`rel`'s trigger scan by `scanner` (None: not scanned)."""
        if found is not None:
            self._found[rel] = found

    def scan_of(self, rel: str) -> Optional[int]:
        """`rel`'s trigger scan, if this run has made or read one."""
        return self._found.get(rel)

    def spells(self, rel: str, matcher) -> bool:
        """Does `rel`'s trigger scan find `matcher` (a `needs` trigger, unbound)? True
        when the scan does not say: the answer only spares work, so doubt costs a parse."""
        found = self._found.get(rel)
        if found is None or self.scanner is None:
            return True
        bound = matcher.bound(self.settings)
        if bound not in self.scanner.matchers:
            return True
        return bool(found >> self.scanner.matchers.index(bound) & 1)

    def mark_primary(self, rel: str) -> None:
        """`rel`'s complete facts were computed up front (the runner's prefilter)."""
        self._primary.add(rel)

    def is_primary(self, rel: str) -> bool:
        return rel in self._primary

    def primary_facts(self, *kinds) -> Iterator:
        """``(rel, facts)`` of every primary file of one of `kinds` (`needs.Kind`) that
        parses, in path order."""
        for rel in sorted(self._primary):
            source = self._files.get(rel)
            if source is not None and any(kind.member(self, source) for kind in kinds):
                facts = self.facts(rel)
                if facts.syntax_error is None:
                    yield rel, facts

    # non-Python files ------------------------------------------------------------
    def excluded(self, rel: str) -> bool:
        """Is the file or directory `rel` left out of this run: excluded by the settings,
        or, in a git work tree, not selected by git (ignored; or, staged, not in the
        index; a directory when no file below it is selected)?"""
        if self._excluded is None:
            self._excluded = excluder(self.settings.exclude)
        return self._excluded(rel) or (self.listing is not None and not self.listing.selects(rel))

    def docs_pages(self) -> list:
        """``(rel, text)`` of the stable API pages as Sphinx builds them: the settings'
        globs and the pages below their directories a toctree reaches
        (`sphinx_pages.api_pages`). EXP006 and graduate read them."""
        if self._docs is None:
            pages = {}
            for rel in sphinx_pages.api_pages(self.root, self.settings.docs):
                path = self.root / rel
                if rel in pages or self.excluded(rel) or not path.is_file():
                    continue
                if not is_utf8(rel):
                    self.read_problems.append((rel, NOT_UTF8))
                    continue
                text = _read_text(path)
                if text is None:
                    self.read_problems.append((rel, "cannot read"))
                else:
                    pages[rel] = text
            self._docs = sorted(pages.items())
        return self._docs

    def feature_records(self) -> list:
        """Relative paths of the ``FEATURE.toml`` of each experimental feature directory."""
        base = self.root / self.settings.experimental_dir
        if not base.is_dir():
            return []
        found = []
        with os.scandir(base) as entries:
            for entry in entries:  # a directory git selects nothing in is not looked into
                if ((self.listing is None or self.listing.has_directory(_rel(self.root, Path(entry.path))))
                        and entry.is_dir() and os.path.exists(os.path.join(entry.path, markers.RECORD))):
                    found.append(Path(entry.path, markers.RECORD))
        return [rel for rel in (_rel(self.root, p) for p in sorted(found)) if not self.excluded(rel)]

    def read_text(self, rel: str) -> Optional[str]:
        """The text of a non-Python file (a docs page as already read), or None."""
        if self._docs is not None:
            for page, text in self._docs:
                if page == rel:
                    return text
        return _read_text(self.root / rel)

    def example_texts(self) -> dict:
        """rel -> text of the example scripts that parse (EXP009)."""
        if self._examples is None:
            found = {}
            base = self.root / self.settings.examples
            for path in sorted(base.rglob("*.py")) if base.is_dir() else ():
                if self.listing is not None and not self.listing.has_file(_rel(self.root, path)):
                    continue
                text = _read_text(path)
                if text is None:
                    continue
                try:
                    compile(text, str(path), "exec", dont_inherit=True)
                except (SyntaxError, ValueError):
                    continue
                found[_rel(self.root, path)] = text
            self._examples = found
        return self._examples

    def rest_of_repository(self) -> list:
        """`SourceFile` of each Python file outside the package, the test lanes and the
        examples: scripts, benchmarks, other top-level packages, the root's own files. The
        checker does not index them, but a lifecycle command can break them, so remove and
        graduate read this one listing. As git selects, less the ``exclude`` setting;
        links are not followed."""
        if self._rest is None:
            s = self.settings
            indexed = (s.package.replace(".", "/"), s.stable_tests, s.examples)
            self._rest = list(walk_python_files(self.root, "", (*s.exclude, *indexed), [], self.listing))
        return self._rest

    def excluded_texts(self) -> dict:
        """module -> the bytes of each excluded module (`excluded_modules`) that can be
        read, read once a run (the import-time analysis and the runner's digest of it)."""
        if self._excluded_texts is None:
            self._excluded_texts = {}
            for module, source in self.excluded_modules().items():
                try:
                    self._excluded_texts[module] = (self.root / source.rel).read_bytes()
                except OSError:
                    continue
        return self._excluded_texts

    # facts -------------------------------------------------------------------
    def set_facts(self, rel: str, facts: FileFacts) -> None:
        self._facts[rel] = facts

    def facts(self, rel: str) -> FileFacts:
        """Complete facts of `rel` (parsed on demand)."""
        facts = self._facts.get(rel)
        if self.watch is not None:
            self.watch["facts"].add(rel)
        if facts is None or not facts.complete:
            facts = self._load_facts(self._files[rel])
            self._facts[rel] = facts
        return facts

    def summary(self, rel: str) -> FileFacts:
        """Facts of `rel` at least syntax-checked (`facts.syntax_only`'s summary, or
        complete): a file read as bytes only is checked now."""
        facts = self._facts.get(rel)
        if self.watch is not None:
            self.watch["summary"].add(rel)
        if facts is None or not facts.checked:
            read, facts = facts, self.summarize(self._files[rel])
            if read is not None and facts.import_words is None:  # what the bytes said stays true
                facts.import_words, facts.class_words = read.import_words, read.class_words
            self._facts[rel] = facts
        return facts

    def _summarize(self, source: SourceFile) -> FileFacts:
        try:
            data = (self.root / source.rel).read_bytes()
        except OSError as error:
            return unreadable(source.module, source.is_package, error)
        return syntax_only(data, source.module, source.is_package)

    def load_facts(self, source: SourceFile) -> FileFacts:
        """Complete facts of a file that need not be one of the checked files."""
        return self._load_facts(source)

    def primary_rels(self) -> list:
        """The primary files, in path order."""
        return sorted(self._primary)

    def known_facts(self, rel: str) -> Optional[FileFacts]:
        """Whatever facts were computed for `rel` (maybe syntax-only), without parsing."""
        return self._facts.get(rel)

    def module_facts(self, module: str) -> Optional[FileFacts]:
        rel = self._by_module.get(module)
        if rel is None:
            return None
        facts = self.facts(rel)
        return None if facts.syntax_error else facts

    # classification ------------------------------------------------------------
    def is_module(self, module: Optional[str]) -> bool:
        return module in self._by_module

    def rel_of(self, module: str) -> Optional[str]:
        """The file a module of the package is read from, or None."""
        return self._by_module.get(module)

    def is_module_file(self, rel: str) -> bool:
        """Is `rel` the file its module is read from (a package module, and not
        shadowed: ``a.py`` beside ``a/__init__.py``)?"""
        source = self._files.get(rel)
        return source is not None and self._by_module.get(source.module) == rel

    def is_stable_test(self, rel: str) -> bool:
        s = self.settings
        return under(rel, s.stable_tests) and not under(rel, s.experimental_tests)

    def is_experimental_test(self, rel: str) -> bool:
        return under(rel, self.settings.experimental_tests)

    def import_targets(self, imp: Import) -> list:
        """Absolute modules an import runs: the named module, plus each imported name
        that is a submodule in this project (``from pkg import subpackage``)."""
        if imp.module is None:
            return []
        targets = [imp.module]
        for name, _ in imp.names:
            candidate = f"{imp.module}.{name}"
            if name != "*" and self.is_module(candidate):
                targets.append(candidate)
        return targets

    # resolution ----------------------------------------------------------------
    def resolve(self, module: str, name: str, _seen: Optional[set] = None) -> Optional[Target]:
        """What `name` (possibly dotted) means in `module`, following re-exports: a
        `ModuleTarget`, `DefTarget`, `DictTarget`, or `External` for things outside
        the project or not statically known; None for a name bound to something
        else (a list of strings).
        """
        seen = _seen if _seen is not None else set()
        if (module, name) in seen or len(seen) > 50:
            return External("external", f"{module}.{name}")
        seen.add((module, name))
        first, _, rest = name.partition(".")
        facts = self.module_facts(module)
        if facts is None:
            return External("external", f"{module}.{name}")
        definition = facts.definitions.get(name)
        if definition is not None:
            return DefTarget("def", module, definition)
        binding = facts.bindings.get(first)
        target = None
        if binding is None:
            if self.is_module(f"{module}.{first}"):
                target = ModuleTarget("module", f"{module}.{first}")
            else:
                lazy = exports.lazy_module(facts, first, self.is_module)
                if lazy is not None:
                    return self._descend(self.resolve(lazy, first, seen), rest, seen)
                return External("external", f"{module}.{name}")
        elif isinstance(binding, DefBinding):  # ``Cls.method``: the rest names a method, or nothing known
            target = DefTarget("def", module, facts.definitions[binding.qualname])
        elif isinstance(binding, ModuleBinding):
            found = self.is_module(binding.module)
            target = ModuleTarget("module", binding.module) if found else External("external", binding.module)
        elif isinstance(binding, FromBinding):
            source, attribute = binding.module, binding.name
            if self.is_module(f"{source}.{attribute}"):
                target = ModuleTarget("module", f"{source}.{attribute}")
            elif self.is_module(source):
                target = self.resolve(source, attribute, seen)
            else:
                target = External("external", f"{source}.{attribute}")
        elif isinstance(binding, AliasBinding):
            target = self.resolve(module, binding.dotted, seen)
        elif isinstance(binding, DictBinding):
            target = DictTarget("dict", module, binding.value)
        return self._descend(target, rest, seen)

    def _descend(self, target: Optional[Target], rest: str, seen: set) -> Optional[Target]:
        if not rest or target is None:
            return target
        if isinstance(target, ModuleTarget):
            return self.resolve(target.name, rest, seen)
        if isinstance(target, DefTarget):
            # a method: Class.method
            facts = self.module_facts(target.module)
            qualname = f"{target.definition.qualname}.{rest}"
            if facts is not None and qualname in facts.definitions:
                return DefTarget("def", target.module, facts.definitions[qualname])
            return External("external", f"{target.module}.{qualname}")
        if isinstance(target, External):
            return External("external", f"{target.name}.{rest}")
        return External("external", rest)

    def resolve_absolute(self, dotted: str) -> Optional[Target]:
        """`resolve` for an absolute dotted name (``flashinfer.norm.fast``): the
        longest prefix that is a project module, then the rest inside it. None
        when no prefix is a project module."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            if self.is_module(module):
                if cut == len(parts):
                    return ModuleTarget("module", module)
                return self.resolve(module, ".".join(parts[cut:]))
        return None

    # folders the settings exclude, read where core imports them ------------------------
    def excluded_modules(self) -> dict:
        """module -> `SourceFile` of the package's Python files that the ``exclude``
        setting leaves out (``flashinfer/data/``) but git selects: not checked for
        themselves, read where a core module imports them (`import_time`). Links
        and names that are not UTF-8 are left out; outside git, only the plain
        (glob-free) excluded folders are walked, bounded."""
        if self._excluded_modules is None:
            top = self.settings.package.replace(".", "/")
            by_settings = excluder(self.settings.exclude)
            if self.listing is not None:
                rels = [r for r in self.listing.files if r.startswith(top + "/") and r.endswith(".py")]
            else:
                rels = []
                for pattern in self.settings.exclude:
                    plain = pattern.strip("/")
                    if under(plain, top) and not _GLOB_CHARS & set(plain):
                        rels.extend(_python_below(self.root, plain, MAX_EXCLUDED_FILES - len(rels)))
            found = {}
            for rel in sorted(rels)[:MAX_EXCLUDED_FILES]:
                if rel in self._files or not by_settings(rel) or not is_utf8(rel):
                    continue
                path = self.root / rel
                if path.is_symlink() or not path.is_file():
                    continue
                module, is_package = module_name(rel)
                found[module] = SourceFile(rel, module, is_package, 0)
            self._excluded_modules = found
        return self._excluded_modules

    def backend_entries(self, module: str, ref, key=None, seen: Optional[set] = None) -> Iterator[tuple]:
        """``(backend key, module the value is written in, value ref)`` of each entry of a
        ``backend_requirement`` mapping `ref` written in `module`: a dict literal, a
        module-level dict (also one imported from another module), ``**`` merges. What
        EXP004 checks and ``features init`` reads the backends from."""
        seen = set() if seen is None else seen
        if isinstance(ref, DictRef):
            for entry in ref.entries:
                if entry.key is None:  # **spread
                    yield from self.backend_entries(module, entry.value, None, seen)
                else:
                    yield entry.key, module, entry.value
        elif isinstance(ref, NameRef):
            target = self.resolve(module, ref.dotted)
            if isinstance(target, DictTarget) and (target.module, ref.dotted) not in seen:
                seen.add((target.module, ref.dotted))
                yield from self.backend_entries(target.module, DictRef("dict", target.value.entries), key, seen)

    def checker_of(self, module: str, ref) -> Optional[tuple]:
        """The ``(module, Definition)`` a mapping value names (through a wrapping call), or
        None (also for a value wrapped inline in ``experimental_backend(...)``)."""
        if isinstance(ref, NameRef):
            target = self.resolve(module, ref.dotted)
            if isinstance(target, DefTarget):
                return target.module, target.definition
        elif isinstance(ref, CallRef):
            func = self.resolve(module, ref.func) if ref.func else None
            if isinstance(func, DefTarget):
                name = func.definition.qualname
            elif isinstance(func, DictTarget):
                name = func.module
            else:
                name = func.name if func is not None else ""
            if markers.is_marker(name, markers.EXPERIMENTAL_BACKEND) or markers.is_marker(
                    ref.func, markers.EXPERIMENTAL_BACKEND):
                return None
            for arg in ref.args:
                found = self.checker_of(module, arg)
                if found is not None:
                    return found
        return None

    def decorated_with(self, module: str, definition: Definition, marker: str) -> bool:
        """Does `definition` (in `module`) carry a decorator whose name, followed
        through aliases and re-exports, ends in `marker`?"""
        for decorator in definition.decorators:
            if markers.is_marker(decorator, marker):
                return True
            target = self.resolve_absolute(decorator) if decorator else None
            if isinstance(target, DefTarget) and markers.is_marker(target.definition.qualname, marker):
                return True
            if isinstance(target, External) and markers.is_marker(target.name, marker):
                return True
        return False


def _read_text(path: Path) -> Optional[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def is_utf8(name: str) -> bool:
    """Was `name` (as Python decoded it from the file system) valid UTF-8 on disk?"""
    return _SURROGATE.search(name) is None


def printable(text: str) -> str:
    """`text` with each lone surrogate written out, so that every report is valid
    text: ``\\xNN`` for a byte of a name that is not UTF-8, ``\\uNNNN`` for any other."""
    return _SURROGATE.sub(_escape_surrogate, text)


def _escape_surrogate(match) -> str:
    point = ord(match.group())
    return f"\\x{point - 0xDC00:02x}" if 0xDC80 <= point <= 0xDCFF else f"\\u{point:04x}"
