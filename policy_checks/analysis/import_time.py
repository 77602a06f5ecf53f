"""What runs when a module is imported, and what that loads: the one reading.

Importing a module runs its body. That means statements at module level, class bodies,
decorators, default values, and annotations that are evaluated. It also means the hooks a
class statement calls: its bases' ``__init_subclass__`` and its metaclass. The facts
record those as imports and calls whose scope runs at import (`runs_at_import`).

A call of a project function runs that function's own body, and so on. `ImportTime`
follows the calls across modules, transitively. It reaches every import and every load
the bodies make (`facts.BodyCall`, `facts.Import`, `facts.Load`).

Two kinds of thing are found at the end of a chain. One is an import of experimental code
(EXP001, EXP002; `graduate` refuses the same). The other is a load that no import
statement shows and the facts could not resolve to a module (`facts.Load`). Such a load
is a loader given a computed name, or text run as code. It is also a shared library, a
thread or process started, a hook registered, or a change to the import system's state.
Deny by default: EXP010 reports every one that runs at import.

Some calls do not resolve to a project function: a method of an object, or a name reached
through a string. Those are not followed. The behavioural audit runs the code and sees
what they do.

The prefilter parses only the files whose bytes spell a rule's trigger. Two follow-ups
keep this sound under it. `follow_loads` parses the modules whose import-time code uses
the load vocabulary (the syntax check's symbol table says which). `follow_calls` parses
every core module that may call, at import, a function reaching something. Their
docstrings state their limits. The runner replays what they did on an unchanged tree
(`runner._follow`).

Every rule, `graduate` and the audit's expectations ask this module. Nothing else derives
what runs at import.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Iterator, NamedTuple, Optional

from ..model.facts import FUNCTION, MODULE, TYPE_CHECKING, FileFacts, Import, Load, project_words, whole_words, word_offsets
from .needs import CORE_MODULE, IMPORT_CALLS, MAY_LOAD, as_python_reads_names
from ..model.project import DefTarget, Project

MAX_DEPTH = 12  # calls followed from one call run at import
MAX_EXCLUDED_HOPS = 8  # excluded modules importing excluded modules, followed
MAX_FOLLOW_ROUNDS = 6  # rounds of `follow_calls` (re-exports and callers of callers)


def support_modules(project: Project) -> dict:
    """`ImportTime.support_modules` of the project."""
    return of(project).support_modules()


def runs_at_import(settings, scope: str) -> bool:
    """Does code in `scope` run when the module is imported? This is "module level" in
    docs/policy_check.rst, "Rules". It is the module body, not function bodies.
    ``if TYPE_CHECKING:`` blocks count only if the settings say so."""
    return scope == MODULE or (scope == TYPE_CHECKING and settings.type_checking_imports)


def runs_on_call(imp: Import) -> bool:
    """Does the import run only when a function is called, not when its module is
    imported? That is a deferred import, EXP007's business. It sits inside a function's
    body. A default value or a decorator of a nested function still runs with the
    enclosing code."""
    return imp.scope == FUNCTION and bool(imp.functions)


class Reached(NamedTuple):
    """What a call run at import reaches. `chain` holds the functions called; the first
    is the one the call names. At its end is either an import of the experimental module
    `target` or the unresolved `load`. Exactly one of the two is set."""

    chain: tuple
    target: str
    load: Optional[Load]


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
        self._bodies: dict = {}  # (module, qualname) -> tuple of Reached (None while computing)
        self._tainted: Optional[dict] = None
        self._loading: Optional[dict] = None  # `loading_excluded`
        self._support: Optional[dict] = None  # `support_modules`
        self._excluded: dict = {}  # module -> `_excluded_facts`
        self.module_names: set = set()  # names of `reaching_names` that are modules, not functions
        self._reaching: Optional[dict] = None  # `reaching`
        # what `follow_calls` searched for, the modules it built the symbol table of because
        # their bytes named something, and those whose text it read (the runner's replay)
        self.searched: dict = {}
        self.called: set = set()
        self.read_texts: set = set()

    # imports ------------------------------------------------------------------------
    def runs_at_import(self, scope: str) -> bool:
        return runs_at_import(self.settings, scope)

    def experimental_targets(self, imp: Import) -> list:
        """The modules under the experimental package that `imp` imports."""
        return [t for t in self.project.import_targets(imp) if self.settings.is_experimental_module(t)]

    def is_checker_import(self, imp: Import) -> bool:
        """Is `imp` a ``from <experimental module> import a, b`` of checkers only? Every
        name must be an ``@experimental_backend`` checker function. This is EXP001's
        support-module exception; graduate reads it the same way."""
        from ..model import markers

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
        """What a call run at import reaches, as `Reached` records. The call is a
        `facts.ModuleCall` in `module`. It reaches the function it names (for a class:
        its ``__init__`` and ``__new__``). It also reaches every project function called
        from there, transitively."""
        target = self.resolve_call(module, call.func)
        if target is None:
            return []
        return list(self._reach(target, call.args, ()))

    def resolve_call(self, module: str, func: str) -> Optional[DefTarget]:
        """The project function (or class) a call of `func` in `module` runs, or None.
        The definition's name must be the call's last name. ``group.command()`` of a
        function ``group`` calls an attribute of what ``group`` returned: nothing known."""
        target = self.project.resolve(module, func)
        if not isinstance(target, DefTarget):
            return None
        if "." in func and target.definition.qualname.rpartition(".")[2] != func.rpartition(".")[2]:
            return None
        return target

    def call_reach_in(self, facts: FileFacts, call) -> list:
        """`call_reach` for facts that may not be the project's own. Examples are a
        planned file, or a module under the name it moves to. The call is first resolved
        to an absolute name through the file's bindings."""
        if self.project.module_facts(facts.module) is not None:
            return self.call_reach(facts.module, call)
        dotted = facts.resolve_local(call.func)
        target = self.project.resolve_absolute(dotted)
        if not isinstance(target, DefTarget):
            return []
        return list(self._reach(target, call.args, ()))

    def _reach(self, target: DefTarget, args: tuple, chain: tuple) -> Iterator[Reached]:
        definition = target.definition
        is_class = definition.kind == "class"
        qualname = definition.qualname
        bodies = (f"{qualname}.__init__", f"{qualname}.__new__") if is_class else (qualname,)
        name = f"{target.module}.{qualname}"
        chain = chain + (name,)
        facts = self._callee_facts(target.module)
        if facts is None:
            return
        for handed in facts.param_imports:  # what the call's own arguments make it import
            index = handed.index - (1 if is_class else 0)  # a class's call binds self first
            if handed.qualname not in bodies:
                continue
            literal = args[index] if 0 <= index < len(args) else None
            if literal is None:
                yield Reached(chain, "", Load(f"{name}() hands a computed name to an import function",
                                              0, 0, MODULE, (handed.qualname,)))
            elif self.settings.is_experimental_module(literal.partition(":")[0]):
                yield Reached(chain, literal.partition(":")[0], None)
        for body in bodies:
            for reached in self.body_reach(target.module, body, len(chain)):
                yield reached._replace(chain=chain[:-1] + reached.chain)

    def _callee_facts(self, module: str) -> Optional[FileFacts]:
        """The facts of a module a call leads into. They are parsed on demand, only where
        its bodies may reach something. That holds if the module is primary already. It
        holds if its symbol table shows functions using the load vocabulary
        (`facts.FileFacts.suspects`). It holds if the module binds a name of
        `reaching_names`. A module with none of these reaches nothing from its functions
        (the limits of `follow_calls` apply). Parsing each callee to learn that would
        parse much of the project."""
        project = self.project
        rel = project.rel_of(module)
        known = project.known_facts(rel) if rel is not None else None
        if known is not None and not known.checked:  # read as bytes only: check it now
            known = project.summary(rel)
        if known is not None and not known.complete and not known.suspects:
            names = _names_of(known)
            if names is not None and names[1].isdisjoint(self.reaching()):
                return None
        return project.module_facts(module)

    def reaching(self) -> dict:
        """`reaching_names`, computed once."""
        if self._reaching is None:
            self._reaching = self.reaching_names()
        return self._reaching

    def body_reach(self, module: str, qualname: str, depth: int = 0) -> tuple:
        """What running the body of `qualname` in `module` reaches; chains start with it.
        Memoized. A cycle of calls stops, and so does a chain deeper than `MAX_DEPTH`."""
        key = (module, qualname)
        if key in self._bodies:
            return self._bodies[key] or ()
        name = f"{module}.{qualname}"
        facts = self._callee_facts(module)
        if facts is None or depth > MAX_DEPTH:
            return ()
        self._bodies[key] = None  # in progress: a cycle reaches nothing more
        found = []
        for imp in facts.imports:
            if imp.functions and imp.functions[-1] == qualname:
                targets = self.experimental_targets(imp)
                if targets:
                    found.append(Reached((name,), targets[-1], None))
        for load in facts.loads:
            if load.functions and load.functions[-1] == qualname:
                found.append(Reached((name,), "", load))
        for call in facts.body_calls:
            if call.qualname != qualname:
                continue
            target = self.resolve_call(module, call.func)
            if target is not None and (target.module, target.definition.qualname) != (module, qualname):
                for reached in self._reach(target, (), ()):
                    found.append(reached._replace(chain=(name,) + reached.chain))
        result = self._bodies[key] = tuple(found)
        return result

    def calls_importing(self, facts: FileFacts) -> Iterator[tuple]:
        """``(call, chain, experimental module)`` for each such call of `facts`' module.
        The call runs at import and reaches an import of experimental code. That is a
        module-level import by another name (EXP001, EXP002)."""
        for call in facts.calls:
            if self.runs_at_import(call.scope):
                for reached in self.call_reach(facts.module, call):
                    if reached.target:
                        yield call, reached.chain, reached.target

    def loads_at_import(self, facts: FileFacts) -> Iterator[tuple]:
        """``(line, column, chain, load)`` for each unresolved load `facts`' module runs
        at import. The load is in its own import-time code (chain empty). Or it is in a
        function that a call run at import reaches. A shared library at a literal path
        outside the experimental package is resolved (`library_resolved`)."""
        for load in facts.loads:
            if self.runs_at_import(load.scope) and not self.library_resolved(load):
                yield load.line, load.column, (), load
        for call in facts.calls:
            if self.runs_at_import(call.scope):
                for reached in self.call_reach(facts.module, call):
                    if reached.load is not None and not self.library_resolved(reached.load):
                        yield call.line, call.column, reached.chain, reached.load

    def library_resolved(self, load: Load) -> bool:
        """A library at a literal path is resolved. The exception is a path in the
        experimental package's folder."""
        return bool(load.path) and f"{self.settings.experimental_dir}/" not in load.path.replace("\\", "/") + "/"

    def support_modules(self) -> dict:
        """Support modules: module -> first core importer, as "path:line". These are the
        modules core imports ``@experimental_backend`` checkers from at import. They
        include the modules defining those checkers, when imported through a re-export.
        They include the feature packages above them, since importing a module runs its
        packages' ``__init__``. Their bodies run whenever core is imported (EXP003,
        EXP010, the audit's allowed loads)."""
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
        module level. The import is direct or through other excluded modules. The result
        maps module -> the chain. A chain is a tuple of ``(module, line)`` hops ending at
        the experimental module (line 0). Only some files are parsed: those that spell
        the experimental package's name, or the last name of a module already found. At
        most `MAX_EXCLUDED_HOPS` rounds run."""
        if self._tainted is None:
            from .needs import names_experimental  # the prefilter's reading of the bytes

            project = self.project
            word = self.settings.experimental_package.rpartition(".")[2].encode()
            texts = project.excluded_texts()
            tainted: dict = {}
            wanted = {m for m, data in texts.items() if names_experimental(data, self.settings.package, word)}
            for _ in range(MAX_EXCLUDED_HOPS):
                grew = False
                for module in sorted(wanted - set(tainted)):
                    facts = self._excluded_facts(module)
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

    def _excluded_facts(self, module: str) -> FileFacts:
        """Complete facts of an excluded module, computed once for both readings."""
        if module not in self._excluded:
            self._excluded[module] = self.project.load_facts(self.project.excluded_modules()[module])
        return self._excluded[module]

    def loading_excluded(self) -> dict:
        """Excluded modules (`Project.excluded_modules`) that make a load at import that
        EXP010 reports. The result maps module -> those `facts.Load` records. Only files
        whose bytes spell a loader or a load are parsed. Those are the prefilter's own
        triggers."""
        if self._loading is None:
            from .needs import IMPORT_CALLS, MAY_LOAD, Scanner  # the prefilter's own readings of bytes

            project, found = self.project, {}
            modules = project.excluded_modules()
            scanner = Scanner((MAY_LOAD, *(t.bound(self.settings) for t in IMPORT_CALLS)))
            for module, data in project.excluded_texts().items():
                if not project.scan(modules[module].rel, data, scanner):  # remembered by content
                    continue
                facts = self._excluded_facts(module)
                loads = [load for load in facts.loads if facts.syntax_error is None
                         and self.runs_at_import(load.scope) and not self.library_resolved(load)]
                if loads:
                    found[module] = loads
            self._loading = found
        return self._loading

    def _excluded_chain(self, imp: Import, tainted: dict) -> Optional[tuple]:
        """The rest of a chain from an import in an excluded module. That is the
        experimental module it names, or a tainted excluded module's chain."""
        experimental = self.experimental_targets(imp)
        if experimental:
            return ((experimental[-1], 0),)
        for target in _imported_modules(imp):
            if target in tainted:
                return tainted[target]
        return None

    def excluded_imports(self, imp: Import) -> list:
        """The chains (`tainted_excluded`) of the excluded modules `imp` imports."""
        project = self.project
        if imp.module is None or project.is_module(imp.module) and not imp.names:
            return []
        tainted = self.tainted_excluded()
        return [tainted[name] for name in _imported_modules(imp) if name in tainted] if tainted else []

    def excluded_loads(self, imp: Import) -> list:
        """``(excluded module, load)`` for each load at import of the excluded modules
        `imp` imports (`loading_excluded`)."""
        if imp.module is None:
            return []
        loading = self.loading_excluded()
        return [(name, load) for name in _imported_modules(imp) for load in loading.get(name, ())] if loading else []

    # what the prefilter must follow --------------------------------------------------
    def reaching_names(self) -> dict:
        """Name -> the last names of the modules it is defined in. A name is listed if
        its function may reach something at import. It is a module-level function, or a
        method under its class's name. A class counts for its ``__init__``, ``__new__``
        or ``__init_subclass__``.

        In a core module with complete facts, a function counts if its own body imports
        experimental code. It also counts if it makes a `facts.Load`, or hands a
        parameter to an import function. A function calling such a function by name
        counts too. In any other core module, a function counts if its body uses the load
        vocabulary (`facts.FileFacts.suspects`, from the symbol table). Each tainted or
        loading excluded module is listed under its package's name.

        Names are matched by name, not resolved. A name too many only costs a parse. A
        module calling such a function at import spells its name and its module's name
        (`follow_calls`)."""
        project = self.project
        names: dict = {}
        complete = []
        for rel, source in project.files.items():
            facts = project.known_facts(rel)
            if facts is None or not self.settings.is_core(source.module) or not project.is_module_file(rel):
                continue
            if facts.complete:
                complete.append((source.module, facts))
                for qualname in self._own_reach(facts):
                    _add_name(names, qualname, source.module)
                continue
            if not facts.checked:  # read as bytes only: checked when they may use the vocabulary
                if not may_load(project, rel):
                    continue
                facts = project.summary(rel)
            if facts.suspects:
                for qualname in facts.suspects.split():
                    _add_name(names, qualname, source.module)
        self._spread(names, complete)
        for module in [*self.tainted_excluded(), *self.loading_excluded()]:
            package, _, last = module.rpartition(".")
            names.setdefault(last, set()).add(package.rpartition(".")[2])
            self.module_names.add(last)  # importing it is enough: it runs when imported
        top = self.settings.package.partition(".")[0]
        for homes in names.values():
            homes.add(top)  # `import flashinfer.entry` binds `flashinfer` only
        return names

    def _own_reach(self, facts: FileFacts) -> set:
        """Qualnames of the functions whose own bodies reach something, by the facts alone."""
        found = {p.qualname for p in facts.param_imports}
        found |= {load.functions[-1] for load in facts.loads if load.functions and not self.library_resolved(load)}
        found |= {i.functions[-1] for i in facts.imports if i.functions and self.experimental_targets(i)}
        return found

    def _spread(self, names: dict, modules: list) -> None:
        """Add the functions of `modules` (``(module, facts)``) whose bodies call one of
        `names` from one of its homes. A home is the module or class the call's first
        name is bound to. The caller's own bindings say which; nothing is resolved. This
        repeats until nothing changes."""
        grew = True
        while grew:
            grew = False
            for module, facts in modules:
                for call in facts.body_calls:
                    head, _, rest = call.func.partition(".")
                    last = call.func.rpartition(".")[2]
                    homes = names.get(last)
                    if homes and not homes.isdisjoint(_call_homes(module, facts, head, rest)) \
                            and _add_name(names, call.qualname, module):
                        grew = True


def _imported_modules(imp: Import) -> list:
    """The modules `imp` may import. That is the module it names, and each name it
    imports as a possible submodule."""
    return [imp.module] + [f"{imp.module}.{n}" for n, _ in imp.names if n != "*"]


def _call_homes(module: str, facts: FileFacts, head: str, rest: str) -> set:
    """The last names a call ``head.rest...`` in `module` may come from. That is the
    module or class its first name is bound to. The binding is an import, or a definition
    of the module's own."""
    binding = facts.bindings.get(head)
    found = {module.rpartition(".")[2]} if binding is None or getattr(binding, "tag", "") == "def" else set()
    source = getattr(binding, "module", None)
    if source:
        found.add(source.rpartition(".")[2])
        name = getattr(binding, "name", "")
        if name:
            found.add(name)  # `from . import entry` (a module) or `from .x import Tool` (a class)
    if rest:
        found.add(head)  # `Tool.build()`: the class; `entry.fast()`: the module
        found.add(rest.partition(".")[0])
    return found


def _add_name(names: dict, qualname: str, module: str) -> bool:
    """Record `qualname` of `module` under the name a caller spells. It comes with the
    homes a caller uses at import. A function is recorded under its own name, from its
    module. A class's ``__init__``, ``__new__`` or ``__init_subclass__`` goes under the
    class's name (``Foo()``, ``class Bar(Foo)``). Another method goes under its name,
    from its class: ``Foo.build()`` uses ``Foo`` and spells ``build``. True if new."""
    if "<" in qualname:
        return False  # a lambda's body
    owner, _, last = qualname.rpartition(".")
    home = module.rpartition(".")[2]
    if owner and last in _CLASS_HOOKS:
        bound = owner.rpartition(".")[2]
    elif last.startswith("__"):
        return False
    elif owner:  # `Tool.build()`: spelt with its class (`_spelled_with_home`); on an instance, not resolved
        bound, home = last, owner.partition(".")[0] + "."
    else:
        bound = last
    homes = names.setdefault(bound, set())
    if home in homes:
        return False
    homes.add(home)
    return True


_CLASS_HOOKS = ("__init__", "__new__", "__init_subclass__")


# the prefilter's follow-up ------------------------------------------------------------


def _names_of(facts: FileFacts) -> Optional[tuple]:
    """``(names the import-time code uses, names it binds)``. Syntax-only facts keep them
    (`facts._module_level_names`, ``+name`` for a use). Complete facts come from a file
    some earlier run parsed whole. For those, they are read off its calls and bindings.
    None means unknown."""
    if not facts.complete:
        if facts.top_names is None:
            return None
        words = facts.top_names.split()
        used = frozenset(w[1:] for w in words if w.startswith("+"))
        return used, used | frozenset(w for w in words if not w.startswith("+"))
    used = set()
    for call in facts.calls:
        used.update(call.func.split("."))
    bound = set(facts.bindings)
    for binding in facts.bindings.values():
        bound.update(str(getattr(binding, "module", "") or "").split("."))
        bound.update(str(getattr(binding, "name", "") or getattr(binding, "dotted", "") or "").split("."))
    return frozenset(used), frozenset(used | bound)


_WIDE_WORD = re.compile(rb"[\w\x80-\xff]+")  # a name with non-ASCII letters, whole
_FEW = 8  # names a file is searched for one by one (`_Text.spelled`)


class _Text:
    """A file's bytes as Python reads its names, with the words of its imports of the
    project and its class names. Each is read when first needed, and once: `follow_calls`
    asks both of a file in two places. The worker that read the file kept the words with
    its facts (`facts.project_words`)."""

    def __init__(self, path: Path, top: str, known: Optional[FileFacts] = None):
        self.path, self.top = path, top
        self.words = (known.import_words, known.class_words) if known is not None \
            and known.import_words is not None else None

    @cached_property
    def data(self) -> bytes:
        """The bytes; a file that is not ASCII decoded and NFKC-normalised, as Python reads
        identifiers (`needs.as_python_reads_names`): each name it reads is spelled so, and
        a name with non-ASCII letters stands whole between ASCII bytes that are no name's."""
        try:
            data = self.path.read_bytes()
        except OSError:
            return b""
        return data if data.isascii() else as_python_reads_names(data)

    @cached_property
    def imports(self) -> frozenset:
        """Every name spelled in the file's imports of the project. Those are relative
        imports, or imports of the top package. The names are the modules of their paths
        and the names they import."""
        if self.words is None:
            self.words = project_words(self.data, self.top)
        return frozenset(self.words[0].split())

    @cached_property
    def identifiers(self) -> frozenset:
        """Every identifier the file spells, as bytes. One pass serves however many names
        are asked about. A name at a time would cost names x bytes. In a file that is not
        ASCII, both each run of ASCII name bytes and each run that takes in the non-ASCII
        bytes count: a name Python reads there is one or the other."""
        found = whole_words(self.data)
        return found if self.data.isascii() else found | frozenset(_WIDE_WORD.findall(self.data))

    def spelled(self, names) -> set:
        """Those of `names` the file spells whole; ``.build`` in ``Tool.build`` counts
        too. A few names are searched for one by one. More are looked up among its
        `identifiers`. So the work never grows as names x bytes."""
        names = set(names)
        if len(names) <= _FEW and "identifiers" not in self.__dict__:
            return {name for name in names if next(word_offsets(self.data, name.encode()), None) is not None}
        return {name for name in names if name.encode() in self.identifiers}

    @cached_property
    def homes(self) -> frozenset:
        """Where a function of the project can come from here. That is a module or name
        its imports of the project name, or a class it defines (its methods' home)."""
        return self.imports | frozenset(self.words[1].split())


def _may_call(text: _Text, home: str, pending: dict, by_home: dict, top: str) -> bool:
    """Could the file name one of `pending` the way `follow_calls` looks for, by its
    bytes alone? `pending` maps name -> the last names of its homes. Each way needs the
    file to spell a name with a home it knows. That home is the file's own module, or one
    its imports of the project name, or a class it defines. Importing one of the names
    from the project also counts. The symbol table then says whether its import-time code
    uses it. A file that is not ASCII is read as Python reads its identifiers, NFKC
    normalised (`_Text.data`)."""
    names = set(by_home.get(home, ()))
    for word in text.homes - {top}:
        names |= by_home.get(word, set())
    names |= text.imports & pending.keys()
    return bool(text.spelled(names))


def _spelled_with_home(text: _Text, named: set, pending: dict, used: frozenset, top: str) -> set:
    """The names of `named` that the file spells, each with one of its homes. `pending`
    maps name -> the last names of those homes; `top` does not count. The home must be
    named in an import of the project: ``from .entry import fast``,
    ``from . import entry``, ``import flashinfer.entry``. A class the file defines counts
    too. A class or function of another package with the same name is not this project's
    (``cutlass.pipeline.PipelineAsync.create``). A name among the identifiers the file's
    import-time code uses (`used`) is spelt there. The text is read only when needed."""
    found = set()
    spelled = text.spelled(named - used)
    for name in named:
        if name not in used and name not in spelled:
            continue
        homes = pending[name] - {top}
        if not text.homes.isdisjoint(homes):
            found.add(name)
        elif any(home.endswith(".") and home[:-1] in text.homes and re.search(
                rb"(?<!\w)" + home[:-1].encode() + rb"\s*\.\s*" + name.encode() + rb"(?!\w)", text.data) for home in homes):
            found.add(name)  # `Tool.build`: a method, by its class
    return found


def follow_loads(project: Project) -> None:
    """Make primary every core module whose import-time code uses the load vocabulary.
    The symbol table the syntax check builds says which (`facts.FileFacts.load_words`).
    The vocabulary is ``threading``, ``ctypes``, ``atexit``, ``sys.path`` and the rest of
    `facts.LOAD_VOCABULARY`. A vocabulary module bound under another name counts too. Its
    loads at import are then EXP010's to judge. A file calling a loader by name
    (``import_module``) is primary already (`needs.IMPORT_CALLS`)."""
    for rel, source in project.files.items():
        if project.is_primary(rel) or not project.is_module_file(rel) or not project.settings.is_core(source.module):
            continue
        facts = project.known_facts(rel)
        if facts is not None and not facts.checked:  # read as bytes only
            if not may_load(project, rel):
                continue  # its bytes spell no load, so its symbol table shows none
            facts = project.summary(rel)
        if facts is None or not facts.complete and (facts.load_words is None or facts.load_words):
            project.facts(rel)  # unknown (not compiled), or it uses the vocabulary at import
            project.mark_primary(rel)
        elif facts.complete and facts.loads:
            project.mark_primary(rel)


_MAY_LOAD_SCANS = (MAY_LOAD, *IMPORT_CALLS)  # the byte questions behind `may_load`


def may_load(project: Project, rel: str) -> bool:
    """Could `rel` make a load, by its trigger scan? It could if it spells the load
    vocabulary (`needs.MAY_LOAD`) or a loader (`needs.IMPORT_CALLS`). A file that spells
    neither uses no name of the vocabulary, at import or in a function's body. Its symbol
    table need not be built to say so."""
    return any(project.spells(rel, matcher) for matcher in _MAY_LOAD_SCANS)


def may_be_called(project: Project, rel: str, searched: dict) -> bool:
    """Could `follow_calls` use the core module `rel`, by its bytes? This asks about any
    round whose names are among `searched` (name -> the last names of its homes)."""
    top = project.settings.package.partition(".")[0]
    text = _Text(project.root / rel, top, project.known_facts(rel))
    return _may_call(text, project.files[rel].module.rpartition(".")[2], searched, _by_home(searched), top)


def _by_home(pending: dict) -> dict:
    """home -> the names of `pending` it is a home of. `pending` maps name -> the last
    names of its homes. A class's home (``Tool.``) is listed under the class's name."""
    found: dict = {}
    for name, homes in pending.items():
        for home in homes:
            found.setdefault(home.rstrip("."), set()).add(name)
    return found


def follow_calls(project: Project) -> None:
    """Make primary every core module that may call, at import, a function reaching
    something (`ImportTime.reaching_names`). Such a module may spell none of the rules'
    triggers.

    To call a function of another module at import, the import-time code uses the
    function's name (``from .entry import fast; fast()``). Or it uses the module it comes
    from (``from . import entry; entry.fast()``). The identifiers kept with the
    syntax-only facts say so without reading the file again
    (`facts._module_level_names`). Its text must spell both.

    A module found so is parsed. Its functions calling one of the names are searched for
    in the next round, and so are the names it re-exports. The rounds are bounded. A
    module that only binds the name is not parsed: an import for its functions, or a
    re-export. Callers may name it as the function's home, and that is all the next round
    needs.

    Some cases are not followed; this is a limit of the prefilter. The rules read them in
    a module parsed for another reason, and the behavioural audit sees them. One case is
    a module that imports the names under another name
    (``from .entry import fast as f``). One is a module naming them only inside a
    function. One is a function calling one inside a module that no call at import names.
    One is a name reached only through a string (``getattr(entry, "fast")()``)."""
    analysis = of(project)
    pending = analysis.reaching()
    top = project.settings.package.partition(".")[0]
    names_of: dict = {}  # rel -> `_names_of` (the same in every round)
    texts: dict = {}  # rel -> `_Text`
    searched: dict = {}  # name -> homes searched for already
    # what the runner keeps to replay this after a change that cannot matter (`runner._replay_unchanged`)
    analysis.searched, analysis.called, analysis.read_texts = searched, set(), set()
    for _ in range(MAX_FOLLOW_ROUNDS):
        pending = {name: homes - searched.get(name, set()) for name, homes in pending.items()}
        pending = {name: homes | {top} for name, homes in pending.items() if homes - {top}}
        if not pending:
            return
        for name, homes in pending.items():
            searched.setdefault(name, set()).update(homes)
        every = {name: searched[name] for name in pending}  # a new home counts with the old ones
        by_home = _by_home(every)
        modules = analysis.module_names & every.keys()  # an import of one runs it: binding it is enough
        found: dict = {}
        parsed = []
        for rel, source in project.files.items():
            if project.is_primary(rel) or not project.is_module_file(rel) or not project.settings.is_core(source.module):
                continue
            home = source.module.rpartition(".")[2]
            if rel not in names_of:
                known = project.known_facts(rel)
                if known is not None and not known.checked:  # read as bytes only
                    text = texts.get(rel) or texts.setdefault(rel, _Text(project.root / rel, top, known))
                    if not _may_call(text, home, every, by_home, top):
                        continue  # no round before this one named it either
                    analysis.called.add(rel)
                    known = project.summary(rel)
                names_of[rel] = _names_of(known) if known is not None else None
            names = names_of[rel]
            if names is None:  # not compiled: read it whole
                named = set(every)
                analysis.read_texts.add(rel)
            else:
                used, bound = names
                text = texts.get(rel) or texts.setdefault(rel, _Text(project.root / rel, top, project.known_facts(rel)))
                rebound = every.keys() & bound
                if rebound:  # binds it by an import of the project: callers may name this module
                    for name in rebound & text.imports:
                        found.setdefault(name, set()).add(home)
                named = set(used & every.keys())
                for word in used & by_home.keys():
                    named |= by_home[word]
                if modules:
                    named |= modules & bound
                    for word in bound & by_home.keys():
                        named |= by_home[word] & modules
                own = {name for name in named if name in used and home in every[name]}  # its own function
                if named - own:  # the identifiers point at it: does its text name the function and its module?
                    analysis.read_texts.add(rel)
                    own |= _spelled_with_home(text, named - own, every, used | bound, top)
                named = own
                if not named:
                    continue
            facts = project.facts(rel)
            project.mark_primary(rel)
            if facts.complete:
                parsed.append((source.module, facts))
        if parsed:  # their functions calling what reaches something reach it too
            known = {name: set(homes) for name, homes in searched.items()}
            analysis._spread(known, parsed)
            for name, homes in known.items():
                if homes - searched.get(name, set()):
                    found.setdefault(name, set()).update(homes)
        pending = found


# What the follow-ups read of a file's bytes: the runner scans every file for it with the
# rules' triggers (`needs.Prefilter`), so a follow-up asks the scan (`Project.spells`).
follow_loads.scans = follow_calls.scans = _MAY_LOAD_SCANS
