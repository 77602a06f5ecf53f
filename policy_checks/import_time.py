"""What runs when a module is imported, and what that loads: the one reading.

Importing a module runs its body: statements at module level, class bodies,
decorators, default values, annotations that are evaluated, and the hooks a class
statement calls (its bases' ``__init_subclass__``, its metaclass). The facts record
those as imports and calls whose scope runs at import (`runs_at_import`). A call of a
project function runs that function's own body, and so on: `ImportTime` follows the
calls, across modules, transitively, to every import and every load the bodies make
(`facts.BodyCall`, `facts.Import`, `facts.Load`).

Two kinds of thing are found at the end of a chain:

- an import of experimental code (EXP001, EXP002; `graduate` refuses the same);
- a load no import statement shows and the facts could not resolve to a module
  (`facts.Load`: a loader given a computed name, text run as code, a shared library,
  a thread or process started, a hook registered, the import system's state changed).
  Deny by default: EXP010 reports every one that runs at import.

A call the facts cannot resolve to a project function (a method of an object, a name
reached through a string) is not followed: the behavioural audit runs the code and
sees what it does. `follow_calls` is what keeps this sound under the prefilter: it
makes primary every core module that may call, at import, a function reaching
something (its limits are in its docstring).

Every rule, `graduate` and the audit's expectations ask this module; nothing else
derives what runs at import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, NamedTuple, Optional

from .facts import MODULE, TYPE_CHECKING, FileFacts, Import, Load
from .needs import CORE_MODULE
from .project import DefTarget, Project

MAX_DEPTH = 12  # calls followed from one call run at import
MAX_EXCLUDED_HOPS = 8  # excluded modules importing excluded modules, followed
MAX_FOLLOW_ROUNDS = 6  # rounds of `follow_calls` (re-exports and callers of callers)


def support_modules(project: Project) -> dict:
    """`ImportTime.support_modules` of the project."""
    return of(project).support_modules()


def runs_at_import(settings, scope: str) -> bool:
    """Does code in `scope` run when the module is imported ("module level" in
    docs/policy_check.rst, "Rules")? The module body, not function bodies, and not
    ``if TYPE_CHECKING:`` blocks unless the settings say those count."""
    return scope == MODULE or (scope == TYPE_CHECKING and settings.type_checking_imports)


class Reached(NamedTuple):
    """What a call run at import reaches: through `chain` (the functions called, the
    first the one the call names), an import of the experimental module `target`, or
    the unresolved `load` (one of the two is set). `module` holds the last function."""

    chain: tuple
    target: str
    load: Optional[Load]
    module: str


def of(project: Project) -> "ImportTime":
    """The project's import-time analysis, built once per run."""
    found = project.__dict__.get("_import_time")
    if found is None:
        found = project.__dict__["_import_time"] = ImportTime(project)
    return found


class ImportTime:
    """The import-time questions about one project, each answered once."""

    def __init__(self, project: Project):
        self.project = project
        self.settings = project.settings
        self._bodies: dict = {}  # (module, qualname, known only) -> tuple of Reached (None while computing)
        self._tainted: Optional[dict] = None
        self._loading: Optional[dict] = None  # `loading_excluded`
        self._support: Optional[dict] = None  # `support_modules`

    # imports ------------------------------------------------------------------------
    def runs_at_import(self, scope: str) -> bool:
        return runs_at_import(self.settings, scope)

    def experimental_targets(self, imp: Import) -> list:
        """The modules under the experimental package that `imp` imports."""
        return [t for t in self.project.import_targets(imp) if self.settings.is_experimental_module(t)]

    def is_checker_import(self, imp: Import) -> bool:
        """Is `imp` a ``from <experimental module> import a, b`` whose every name is an
        ``@experimental_backend`` checker function (EXP001's support-module exception,
        which graduate reads the same way)?"""
        from . import markers

        s, project = self.settings, self.project
        if imp.dynamic or not imp.names or imp.module == s.experimental_package:
            return False
        for name, _ in imp.names:
            if name == "*" or project.is_module(f"{imp.module}.{name}"):
                return False
            target = project.resolve(imp.module, name)
            if not isinstance(target, DefTarget):
                return False
            module, definition = target.module, target.definition
            if definition.kind != "function" or not s.is_experimental_module(module):
                return False
            if not project.decorated_with(module, definition, markers.EXPERIMENTAL_BACKEND):
                return False
        return True

    # calls --------------------------------------------------------------------------
    def call_reach(self, module: str, call) -> list:
        """What a call run at import (`facts.ModuleCall` in `module`) reaches, as
        `Reached` records: the function it names (a class: its ``__init__`` and
        ``__new__``) and every project function called from there, transitively."""
        target = self.resolve_call(module, call.func)
        if target is None:
            return []
        return list(self._reach(target, call.args, ()))

    def _facts(self, module: str, known: bool) -> Optional[FileFacts]:
        return self.project.known_module_facts(module) if known else self.project.module_facts(module)

    def resolve_call(self, module: str, func: str) -> Optional[DefTarget]:
        """The project function (or class) a call of `func` in `module` runs, or None. The
        definition's name must be the call's last name: ``group.command()`` of a function
        ``group`` calls an attribute of what ``group`` returned, nothing known."""
        target = self.project.resolve(module, func)
        if not isinstance(target, DefTarget):
            return None
        if "." in func and target.definition.qualname.rpartition(".")[2] != func.rpartition(".")[2]:
            return None
        return target

    def call_reach_in(self, facts: FileFacts, call) -> list:
        """`call_reach` for facts that may not be the project's own (a planned file, a
        module under the name it moves to): the call is resolved through the file's
        bindings to an absolute name first."""
        if self.project.module_facts(facts.module) is not None:
            return self.call_reach(facts.module, call)
        dotted = facts.resolve_local(call.func)
        target = self.project.resolve_absolute(dotted)
        if not isinstance(target, DefTarget):
            return []
        return list(self._reach(target, call.args, ()))

    def _reach(self, target: DefTarget, args: tuple, chain: tuple, known: bool = False) -> Iterator[Reached]:
        definition = target.definition
        is_class = definition.kind == "class"
        qualname = definition.qualname
        bodies = (f"{qualname}.__init__", f"{qualname}.__new__") if is_class else (qualname,)
        name = f"{target.module}.{qualname}"
        chain = chain + (name,)
        facts = self._facts(target.module, known)
        if facts is None:
            return
        for handed in facts.param_imports:  # what the call's own arguments make it import
            index = handed.index - (1 if is_class else 0)  # a class's call binds self first
            if handed.qualname not in bodies:
                continue
            literal = args[index] if 0 <= index < len(args) else None
            if literal is None:
                yield Reached(chain, "", Load(f"{name}() hands a computed name to an import function",
                                              0, 0, MODULE, (handed.qualname,)), target.module)
            elif self.settings.is_experimental_module(literal.partition(":")[0]):
                yield Reached(chain, literal.partition(":")[0], None, target.module)
        for body in bodies:
            for reached in self.body_reach(target.module, body, len(chain), known):
                yield reached._replace(chain=chain[:-1] + reached.chain)

    def body_reach(self, module: str, qualname: str, depth: int = 0, known: bool = False) -> tuple:
        """What running the body of `qualname` in `module` reaches (chains start with
        it). Memoized; a cycle of calls, or a chain deeper than `MAX_DEPTH`, stops.
        `known`: read only facts computed already (the prefilter's follow-up, which must
        not parse the project one callee at a time)."""
        key = (module, qualname, known)
        if key in self._bodies:
            return self._bodies[key] or ()
        name = f"{module}.{qualname}"
        facts = self._facts(module, known)
        if facts is None or depth > MAX_DEPTH:
            return ()
        self._bodies[key] = None  # in progress: a cycle reaches nothing more
        found = []
        for imp in facts.imports:
            if imp.functions and imp.functions[-1] == qualname:
                targets = self.experimental_targets(imp)
                if targets:
                    found.append(Reached((name,), targets[-1], None, module))
        for load in facts.loads:
            if load.functions and load.functions[-1] == qualname:
                found.append(Reached((name,), "", load, module))
        for call in facts.body_calls:
            if call.qualname != qualname:
                continue
            if known and not self._known_home(facts, call.func):
                continue
            target = self.resolve_call(module, call.func)
            if target is not None and (target.module, target.definition.qualname) != (module, qualname):
                for reached in self._reach(target, (), (), known):
                    found.append(reached._replace(chain=(name,) + reached.chain))
        result = self._bodies[key] = tuple(found)
        return result

    def _known_home(self, facts: FileFacts, func: str) -> bool:
        """Does the module `func`'s first name comes from have facts already?"""
        binding = facts.bindings.get(func.partition(".")[0])
        home = getattr(binding, "module", None)
        if home is None:
            return True  # defined here
        project = self.project
        name = getattr(binding, "name", "")
        for candidate in (f"{home}.{name}" if name else "", home):
            if candidate and project.is_module(candidate):
                return project.known_module_facts(candidate) is not None
        return False

    def forget_known(self) -> None:
        """Drop what was read from known facts only: more facts are known now."""
        self._bodies = {key: value for key, value in self._bodies.items() if not key[2]}

    def calls_importing(self, facts: FileFacts) -> Iterator[tuple]:
        """``(call, chain, experimental module)`` for each call `facts`' module runs at
        import that reaches an import of experimental code: a module-level import by
        another name (EXP001, EXP002)."""
        for call in facts.calls:
            if self.runs_at_import(call.scope):
                for reached in self.call_reach(facts.module, call):
                    if reached.target:
                        yield call, reached.chain, reached.target

    def loads_at_import(self, facts: FileFacts) -> Iterator[tuple]:
        """``(line, column, chain, load)`` for each unresolved load `facts`' module runs
        at import: in its own import-time code (chain empty), or in a function a call
        run at import reaches. A shared library at a literal path outside the
        experimental package is resolved (`library_resolved`)."""
        for load in facts.loads:
            if self.runs_at_import(load.scope) and not self.library_resolved(load):
                yield load.line, load.column, (), load
        for call in facts.calls:
            if self.runs_at_import(call.scope):
                for reached in self.call_reach(facts.module, call):
                    if reached.load is not None and not self.library_resolved(reached.load):
                        yield call.line, call.column, reached.chain, reached.load

    def library_resolved(self, load: Load) -> bool:
        """A library at a literal path is resolved unless the path lies in the
        experimental package's folder."""
        return bool(load.path) and f"{self.settings.experimental_dir}/" not in load.path.replace("\\", "/") + "/"

    def support_modules(self) -> dict:
        """Support modules (module -> first core importer "path:line"): the modules core
        imports ``@experimental_backend`` checkers from at import, the modules defining
        those checkers (when imported through a re-export), and the feature packages
        above them (importing a module runs its packages' ``__init__``). Their bodies run
        whenever core is imported (EXP003, EXP010, the audit's allowed loads)."""
        if self._support is None:
            project, s = self.project, self.settings
            top = len(s.experimental_package.split("."))
            found: dict = {}
            for rel, facts in project.primary_facts(CORE_MODULE):
                for imp in facts.imports:
                    if not (self.runs_at_import(imp.scope) and s.is_experimental_module(imp.module)
                            and self.is_checker_import(imp)):
                        continue
                    defining = [project.resolve(imp.module, name).module for name, _ in imp.names]
                    for module in [imp.module] + defining:
                        parts = module.split(".")
                        for depth in range(top + 1, len(parts) + 1):
                            found.setdefault(".".join(parts[:depth]), f"{rel}:{imp.line}")
            self._support = found
        return self._support

    # excluded folders ---------------------------------------------------------------
    def tainted_excluded(self) -> dict:
        """Excluded modules (`Project.excluded_modules`) that import experimental code at
        module level, directly or through other excluded modules: module -> the chain, a
        tuple of ``(module, line)`` hops ending at the experimental module (line 0). Only
        files that spell the experimental package's name, or the last name of a module
        already found, are parsed; at most `MAX_EXCLUDED_HOPS` rounds."""
        if self._tainted is None:
            from .needs import names_experimental  # the prefilter's reading of the bytes

            project = self.project
            modules = project.excluded_modules()
            word = self.settings.experimental_package.rpartition(".")[2].encode()
            texts = {}
            for module, source in modules.items():
                try:
                    texts[module] = (project.root / source.rel).read_bytes()
                except OSError:
                    continue
            tainted: dict = {}
            facts_of: dict = {}
            wanted = {m for m, data in texts.items() if names_experimental(data, self.settings.package, word)}
            for _ in range(MAX_EXCLUDED_HOPS):
                grew = False
                for module in sorted(wanted - set(tainted)):
                    if module not in facts_of:
                        facts_of[module] = project.load_facts(modules[module])
                    facts = facts_of[module]
                    for imp in facts.imports if facts.syntax_error is None else ():
                        if not self.runs_at_import(imp.scope) or imp.module is None:
                            continue
                        chain = self._excluded_chain(imp, tainted)
                        if chain is not None:
                            tainted[module] = ((module, imp.line),) + chain
                            grew = True
                            break
                if not grew:
                    break
                names = {m.rpartition(".")[2].encode() for m in tainted}
                wanted = {m for m, data in texts.items() if m not in tainted and any(n in data for n in names)}
            self._tainted = tainted
        return self._tainted

    def loading_excluded(self) -> dict:
        """Excluded modules (`Project.excluded_modules`) that make, at import, a load EXP010
        reports: module -> those `facts.Load` records. Only files whose bytes spell a
        loader or a load (the prefilter's own triggers) are parsed."""
        if self._loading is None:
            from .needs import IMPORT_CALLS, LOADS  # the prefilter's own triggers

            project, found = self.project, {}
            for module, source in project.excluded_modules().items():
                try:
                    data = (project.root / source.rel).read_bytes()
                except OSError:
                    continue
                if not LOADS(data) and not any(t.bound(self.settings)(data) for t in IMPORT_CALLS):
                    continue
                facts = project.load_facts(source)
                loads = [load for load in facts.loads if facts.syntax_error is None
                         and self.runs_at_import(load.scope) and not self.library_resolved(load)]
                if loads:
                    found[module] = loads
            self._loading = found
        return self._loading

    def _excluded_chain(self, imp: Import, tainted: dict) -> Optional[tuple]:
        """The rest of a chain from an import in an excluded module: the experimental
        module it names, or a tainted excluded module's chain."""
        experimental = self.experimental_targets(imp)
        if experimental:
            return ((experimental[-1], 0),)
        for target in [imp.module] + [f"{imp.module}.{n}" for n, _ in imp.names if n != "*"]:
            if target in tainted:
                return tainted[target]
        return None

    def excluded_imports(self, imp: Import) -> list:
        """The chains (`tainted_excluded`) of the excluded modules `imp` imports."""
        project = self.project
        if imp.module is None or project.is_module(imp.module) and not imp.names:
            return []
        tainted = self.tainted_excluded()
        if not tainted:
            return []
        names = [imp.module] + [f"{imp.module}.{n}" for n, _ in imp.names if n != "*"]
        return [tainted[name] for name in names if name in tainted]

    # what the prefilter must follow --------------------------------------------------
    def reaching_names(self) -> dict:
        """Name -> the last names of the modules it is defined in, for each module-level
        function (and class, for an ``__init__``/``__new__``) of a primary core module
        whose body reaches something (`body_reach`: an experimental import, an
        unresolved load, a parameter handed to an import function), and for each
        tainted excluded module (under its package's name). A module calling such a
        function at import spells its name and the name of the module it comes from
        (`follow_calls`). Dunder names are never called by name."""
        project = self.project
        names: dict = {}
        for rel in project.primary_rels():
            source = project.files.get(rel)
            facts = project.known_facts(rel)
            if source is None or facts is None or not facts.complete or not self.settings.is_core(source.module):
                continue
            self._add_reaching(names, source.module, facts)
        for module in [*self.tainted_excluded(), *self.loading_excluded()]:
            package, _, last = module.rpartition(".")
            names.setdefault(last, set()).add(package.rpartition(".")[2])
        top = self.settings.package.partition(".")[0]
        for homes in names.values():
            homes.add(top)  # `import flashinfer.entry` binds `flashinfer` only
        return names

    def _add_reaching(self, names: dict, module: str, facts: FileFacts) -> None:
        functions = {p.qualname for p in facts.param_imports}
        functions |= {c.qualname for c in facts.body_calls} | {l.functions[-1] for l in facts.loads if l.functions}
        functions |= {i.functions[-1] for i in facts.imports if i.functions}
        home = module.rpartition(".")[2]
        for qualname in sorted(functions):
            owner, _, last = qualname.rpartition(".")
            if last in ("__init__", "__new__", "__init_subclass__") and owner and "." not in owner:
                bound = owner
            elif not owner and not last.startswith("__") and last != "<lambda>":
                bound = last
            else:
                continue
            if any(p.qualname == qualname for p in facts.param_imports) or self.body_reach(module, qualname, known=True):
                names.setdefault(bound, set()).add(home)


# the prefilter's follow-up ------------------------------------------------------------


def _names_used(facts: FileFacts) -> Optional[frozenset]:
    """The names import-time code uses: kept with syntax-only facts; for complete facts
    (a file some earlier run parsed whole), read off its calls and bindings."""
    if not facts.complete:
        return None if facts.top_names is None else frozenset(facts.top_names.split())
    names = set()
    for call in facts.calls:
        names.update(call.func.split("."))
    for name, binding in facts.bindings.items():
        names.add(name)
        names.update(str(getattr(binding, "module", "") or "").split("."))
        names.update(str(getattr(binding, "name", "") or getattr(binding, "dotted", "") or "").split("."))
    return frozenset(names)


def _spelled_with_home(path: Path, named: set, pending: dict, used: frozenset, top: str) -> set:
    """The names of `named` that the file at `path` spells, each with one of the
    modules it comes from (`pending`: name -> module last names) other than `top`.
    A word among the identifiers the file's import-time code uses (`used`) is spelt
    there; any other is looked for in the text, read only then, once per word."""
    spelled = dict.fromkeys(used, True)  # word -> does the file spell it
    data = None

    def spells(word: str) -> bool:
        nonlocal data
        found = spelled.get(word)
        if found is None:
            if data is None:
                try:
                    data = path.read_bytes()
                except OSError:
                    data = b""
            found = spelled[word] = word.encode() in data
        return found

    return {name for name in named if any(spells(home) for home in pending[name] - {top}) and spells(name)}


def follow_calls(project: Project) -> None:
    """Make primary every core module that may call, at import, a function reaching
    something (`ImportTime.reaching_names`), though it spells none of the rules'
    triggers. Calling a function of another module at import (or binding it, for a
    function of one's own that calls it) means the module's import-time identifiers
    name the function (``from .entry import fast``) or the module it comes from
    (``from . import entry; entry.fast()``), or a module re-exporting it: the
    identifiers kept with the syntax-only facts (`facts._module_level_names`) say so
    without reading the file again. A module found so is parsed; its functions that
    now reach something, and the names it re-exports, are searched for in the next
    round (bounded), so callers of callers are found too. Not followed (a limit of the
    prefilter; the rules read them in a module parsed for another reason, and the
    behavioural audit sees them): a module naming neither at import because it
    imports them under another name (``from .entry import fast as f``), or only inside
    a function, and a name reached only through a string (``getattr(entry, "fast")()``)."""
    analysis = of(project)
    pending = analysis.reaching_names()
    top = project.settings.package.partition(".")[0]
    uses: dict = {}  # rel -> `_names_used` (the same in every round)
    searched: set = set()
    for _ in range(MAX_FOLLOW_ROUNDS):
        pending = {name: homes for name, homes in pending.items() if (name, frozenset(homes)) not in searched}
        if not pending:
            return
        searched.update((name, frozenset(homes)) for name, homes in pending.items())
        analysis.forget_known()
        found: dict = {}
        words = set(pending).union(*pending.values())
        for rel, source in project.files.items():
            if project.is_primary(rel) or not project.is_module_file(rel) or not project.settings.is_core(source.module):
                continue
            if rel in uses:
                used = uses[rel]
            else:
                known = project.known_facts(rel)
                used = uses[rel] = _names_used(known) if known is not None else None
            if used is None:  # not compiled: read it whole
                named = set(pending)
            elif used.isdisjoint(words):
                continue
            else:
                named = {name for name in pending if name in used or not pending[name].isdisjoint(used)}
                if named:  # the identifiers point at it: does its text name the function and its module?
                    named = _spelled_with_home(project.root / rel, named, pending, used, top)
                if not named:
                    continue
            facts = project.facts(rel)
            project.mark_primary(rel)
            home = source.module.rpartition(".")[2]
            for bound, binding in facts.bindings.items():
                if getattr(binding, "name", None) in named or getattr(binding, "dotted", "").rpartition(".")[2] in named:
                    found.setdefault(bound, set()).add(home)  # a re-export: callers may name this module
            if facts.complete:
                analysis._add_reaching(found, source.module, facts)  # its own functions calling one
        for homes in found.values():
            homes.add(top)
        pending = found
