"""What the kept files may no longer do.

A kept file may not import or use a removed module, function or class. It may not
name a removed backend where a backend is meant. It may not load what goes by its
name or path. Each such use refuses the removal with its file and line. Other
mentions of a retired backend, and a test's strings naming what goes, are left for
a person.

The kept files are every Python file of the repository the removal keeps. They are
the checker's own files (core, tests, other features) and the examples. They are
also the rest of the repository (`Project.rest_of_repository`): other top-level
packages, scripts, benchmarks.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, List, NamedTuple, Optional, Set, Tuple

from ...model import parsed
from ...model import markers
from ...model.config import module_under, under
from ...model.facts import docstring_ids, resolve_relative
from ...model.facts import package_of as facts_package_of
from ...model.markers import dotted_name as ast_dotted_name
from ...model.project import DefTarget, ModuleTarget, module_name
from ...editing.target import Refused
from ..plan import Plan
from ..texts import GoneFiles, Spelling, Texts, is_path_expression, loads, path_pieces, under_any

BACKEND_REQUIREMENT = markers.BACKEND_REQUIREMENT

_TEST_NAMES = ("test_*.py", "*_test.py", "conftest.py")  # what pytest collects, wherever it lies


class KeptFile(NamedTuple):
    rel: str
    module: str  # its dotted name, as if the root were on sys.path
    is_package: bool
    is_test: bool  # a test's strings are data unless they load something


def kept_python_files(project, removal: Plan) -> List[KeptFile]:
    """The Python files the removal keeps, less the ``exclude`` setting's paths.

    Git selects them. Outside a work tree, all of them are kept.
    """
    settings = project.settings
    found = [KeptFile(rel, s.module, s.is_package, _is_test(settings, rel)) for rel, s in sorted(project.files.items())]
    found += [KeptFile(rel, module_name(rel)[0], False, _is_test(settings, rel)) for rel in sorted(project.example_texts())]
    for source in project.rest_of_repository():
        found.append(KeptFile(source.rel, source.module, source.is_package, _is_test(settings, source.rel)))
    return [kept for kept in found if not removal.gone(kept.rel)]


def _is_test(settings, rel: str) -> bool:
    name = rel.rpartition("/")[2]
    return under(rel, settings.stable_tests) or any(fnmatch.fnmatchcase(name, p) for p in _TEST_NAMES)


@dataclass(frozen=True)
class Lost:
    """What the removal takes away, for the scan of the files it keeps."""

    defs: Set[tuple]  # (module, qualname) of the removed functions, classes and methods
    backends: Dict[str, Set[str]]  # removed backend -> the APIs ("module.qualname") that lose it
    retired: Set[str]  # removed backends that no kept core module declares any more
    words: Set[str]  # identifiers a file must spell to use any of it
    files: GoneFiles  # how code names the modules and the directory that go
    plain: Set[str]  # words a file that uses what goes spells (not the removed names, nor served backends)
    name_uses: Optional[Spelling] = None  # where a use of a removed function or class spells it

    @cached_property
    def dotted(self) -> Set[str]:
        return {f"{module}.{name}" for module, name in self.defs}

    @cached_property
    def _served(self) -> List[tuple]:
        """(backend, last names of the APIs that lose it), for each backend other kept APIs still serve."""
        return [(b.encode(), [api.rpartition(".")[2].encode() for api in apis])
                for b, apis in sorted(self.backends.items()) if b not in self.retired]

    def may_use(self, texts: Texts, rel: str) -> bool:
        """Could the file use what goes?

        It could if it spells a plain word, or a removed name where a use would. It
        could if it spells a served backend beside an API that loses it.
        """
        if texts.mentions(rel, self.plain) or texts.matches(rel, self.name_uses):
            return True
        data = texts.read(rel)
        return any(b in data and any(api in data for api in apis) for b, apis in self._served)


def scan_kept_files(project, texts: Texts, kept: List[KeptFile], lost: Lost, after_of=None,
                    skip=()) -> Tuple[List[str], List[str]]:
    """``(problems, notes)`` of the kept Python files, each as "file:line: text".

    `problems` are uses of what goes, which refuse the removal. A use is an import,
    a use, a load, or a removed backend named where a backend is meant. `notes` are
    for a person. They are other mentions of a retired backend, and a test's
    mentions of what goes. `after_of` holds the bytes of the files the plan
    rewrites. `skip` names files not read, since their imports of the feature are
    the plan's to remove.
    """
    after_of = after_of or {}
    problems: List[str] = []
    notes: List[str] = []
    for file in kept:
        rel = file.rel
        if rel in skip or not (rel in after_of or lost.may_use(texts, rel)):
            continue
        data = after_of.get(rel) or texts.read(rel)
        tree = _parse(data) if rel in after_of else texts.tree(rel)
        if tree is None:
            continue
        scan = KeptScan(project, file, tree, lost)
        problems += scan.problems
        lines = data.decode("utf-8", "replace").splitlines()
        notes += [f"{rel}:{n}: {lines[n - 1].strip()}" for n in sorted(scan.mentions) if n <= len(lines)]
    return problems, notes


_BACKEND = "a backend the removal deletes"


def kept_refusal(problems: List[str]) -> Refused:
    """The refusal naming every use of what goes, once each, by file and line.

    It also says the next step for each kind of use, naming its files.
    """
    unique = sorted(set(problems), key=_file_and_line)
    uses = sorted({_file_and_line(p)[0] for p in unique if not p.endswith(_BACKEND)})
    backends = sorted({_file_and_line(p)[0] for p in unique if p.endswith(_BACKEND)})
    steps = []
    if uses:
        steps.append(f"in {', '.join(uses)}, drop each import, use or load of what goes "
                     "(or the file, if it serves only the feature)")
    if backends:
        steps.append(f"in {', '.join(backends)}, drop each branch, argument or list entry naming the removed backend")
    head = f"kept files would use what the removal deletes: next, {'; '.join(steps)}; then run remove again. The uses:"
    return Refused("\n".join([head, *(f"  {p}" for p in unique)]))


def _file_and_line(problem: str) -> tuple:
    rel, _, rest = problem.partition(":")
    line = rest.partition(":")[0]
    return (rel, int(line) if line.isdigit() else 0, problem)


def _parse(data: bytes) -> Optional[ast.Module]:
    try:
        return parsed.tree(data)
    except (SyntaxError, ValueError):
        return None


class KeptScan:
    """One kept file's uses of what the removal deletes.

    `problems` would break, or test what is gone. `mentions` are lines a person
    should read.
    """

    def __init__(self, project, file: KeptFile, tree: ast.Module, lost: Lost) -> None:
        self.project, self.rel, self.module, self.lost = project, file.rel, file.module, lost
        self.is_test = file.is_test
        self.package = facts_package_of(file.module, file.is_package)
        nodes = list(ast.walk(tree))  # walked once; every pass below reads this list
        self.bound = self._bindings(nodes)
        self.toplevel = _toplevel_names(tree)
        self._problems: List[tuple] = []  # (line, reason)
        self.judged: Set[int] = set()  # string constants already reported
        self.mentions: List[int] = []
        self.docstrings = docstring_ids(nodes)
        self._uses(nodes)
        self._loads(nodes)
        if lost.retired:
            self._backend_mentions(nodes)

    @property
    def problems(self) -> List[str]:
        return [f"{self.rel}:{line}: {text}" for line, text in sorted(self._problems)]

    def _report(self, node, text: str) -> None:
        self._problems.append((node.lineno, text))

    def _mention(self, node) -> None:
        if node.lineno not in self.mentions:
            self.mentions.append(node.lineno)

    def _uses(self, nodes) -> None:
        """Imports and uses of removed code; removed backends named where one is meant."""
        skip: Set[int] = set()
        for node in nodes:
            if isinstance(node, ast.Import):
                self._import(node)
            elif isinstance(node, ast.ImportFrom):
                self._import_from(node)
            elif isinstance(node, ast.Attribute) and id(node) not in skip and self._attribute(node):
                skip |= {id(n) for n in ast.walk(node)}
            elif isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Compare):
                self._compare(node)
            elif isinstance(node, ast.Subscript):
                literal = _last_name(node.value) == "Literal"
                self._judge(node, _literals(node.slice), "lists {} in Literal[...]" if literal else "looks up {}")

    def _backend_mentions(self, nodes) -> None:
        for node in nodes:
            if _literals(node) == [node] and node.value in self.lost.retired and id(node) not in self.judged | self.docstrings:
                self._mention(node)

    def _loads(self, nodes) -> None:
        """Refuse strings and path expressions naming a module or the directory that goes.

        They refuse when handed to a loader anywhere. In code that is not a test,
        they refuse however they are used. In a test they are data, for a person to
        read.
        """
        seen: Set[int] = set(self.docstrings)
        for node in nodes:
            if id(node) in seen:
                continue
            if isinstance(node, ast.Call) and loads(node):
                for argument in [*node.args, *(k.value for k in node.keywords)]:
                    self._name_gone(argument, loaded=True)
                    seen |= {id(n) for n in ast.walk(argument)}
            elif is_path_expression(node) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                self._name_gone(node, loaded=False)
                seen |= {id(n) for n in ast.walk(node)}

    def _name_gone(self, node, loaded: bool) -> None:
        files = self.lost.files
        pieces = path_pieces(node)
        module = files.names_module(pieces[0]) if pieces and isinstance(pieces[0], str) else None
        if module is None and not files.names_path(pieces):
            return
        what = module or f"a path into {files.directory}/"
        if loaded:
            self._report(node, f"loads {what}, which the removal deletes")
        elif self.is_test:
            self._mention(node)
        else:
            verb = "builds" if module is None and len(pieces) > 1 else "names"
            self._report(node, f"{verb} {what}, which the removal deletes")

    def _bindings(self, nodes) -> Dict[str, str]:
        """Local name -> the absolute dotted name an import binds it to (any scope)."""
        bound = {}
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = resolve_relative(self.package, node.level, node.module)
                for alias in node.names:
                    if base and alias.name != "*":
                        bound[alias.asname or alias.name] = f"{base}.{alias.name}"
        return bound

    def _absolute(self, dotted: Optional[str]) -> Optional[str]:
        if not dotted:
            return None
        first, dot, rest = dotted.partition(".")
        if first in self.bound:
            return self.bound[first] + dot + rest
        if first not in self.toplevel:  # a local, a parameter, ``self``: nothing the removal deletes
            return None
        return f"{self.module}.{dotted}" if self.project.is_module(self.module) else None

    def _gone_module(self, name: str) -> bool:
        return under_any(name, self.lost.files.modules)

    def _gone(self, absolute: str) -> bool:
        """Does `absolute` name a module or definition the removal deletes?"""
        if self._gone_module(absolute) or any(module_under(absolute, d) for d in self.lost.dotted):
            return True
        target = self.project.resolve_absolute(absolute)
        if isinstance(target, ModuleTarget):
            return self._gone_module(target.name)
        if isinstance(target, DefTarget):
            parts = target.definition.qualname.split(".")
            return self._gone_module(target.module) or any(
                (target.module, ".".join(parts[:i])) in self.lost.defs for i in range(1, len(parts) + 1)
            )
        return False

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            if self._gone_module(alias.name):
                self._report(node, f"imports {alias.name}, which the removal deletes")

    def _import_from(self, node: ast.ImportFrom) -> None:
        base = resolve_relative(self.package, node.level, node.module)
        if base is None:
            return
        # a name the removal deletes is spelt here, or by the module it is imported from
        # (which is then a kept file that refuses itself, or goes)
        spelt = bool(set(base.split(".")) & self.lost.words)
        used = [a.name for a in node.names
                if a.name != "*" and (spelt or a.name in self.lost.words) and self._gone(f"{base}.{a.name}")]
        if used:
            self._report(node, f"imports {', '.join(used)} from {base}, which the removal deletes")
        elif self._gone_module(base):
            self._report(node, f"imports from {base}, which the removal deletes")

    def _attribute(self, node: ast.Attribute) -> bool:
        dotted = ast_dotted_name(node)
        absolute = self._absolute(dotted)
        if absolute is None or not set(absolute.split(".")) & self.lost.words or not self._gone(absolute):
            return False
        self._report(node, f"uses {dotted}, which the removal deletes")
        return True

    def _call(self, node: ast.Call) -> None:
        for keyword in node.keywords:
            if keyword.arg is None or "backend" not in keyword.arg.lower():
                continue
            for string in _literals(keyword.value):
                apis = self.lost.backends.get(string.value)
                if apis is None or string.value in self.lost.retired:
                    continue
                api = self._api(node.func)
                if api in apis:
                    self.judged.add(id(string))
                    self._report(string, f"calls {api} with {keyword.arg}={string.value!r}, a backend the removal deletes")
            self._judge(keyword.value, _literals(keyword.value), f"passes {keyword.arg}={{}}")
        if _last_name(node.func) == "parametrize" and len(node.args) > 1:
            names = _literals(node.args[0])
            if any("backend" in n.value.lower() for n in names):
                self._judge(node, _literals(node.args[1]), "parametrizes a backend with {}")

    def _api(self, func) -> Optional[str]:
        absolute = self._absolute(ast_dotted_name(func))
        target = self.project.resolve_absolute(absolute) if absolute else None
        return f"{target.module}.{target.definition.qualname}" if isinstance(target, DefTarget) else None

    def _compare(self, node: ast.Compare) -> None:
        if any(isinstance(op, (ast.Eq, ast.In, ast.Is)) for op in node.ops):
            for operand in (node.left, *node.comparators):
                self._judge(node, _literals(operand), "compares with {}")

    def _judge(self, node, strings, what: str) -> None:
        """Report the retired backends among `strings`, named where a backend is meant.

        `what` says how, with ``{}`` standing for the name.
        """
        for string in strings:
            if string.value in self.lost.retired and id(string) not in self.judged:
                self.judged.add(id(string))
                self._report(string, f"{what.format(repr(string.value))}, a backend the removal deletes")


def _toplevel_names(tree: ast.Module) -> Set[str]:
    """Names the module's top-level statements define or assign."""
    names: Set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


# removed backends ---------------------------------------------------------------------


def retired_backends(project, texts: Texts, removal: Plan, backends, after_of) -> Set[str]:
    """The removed backends that no kept core module still declares.

    A module declares a backend by a ``backend_checks`` key, or by comparing a
    ``backend`` name with it. A name another API still dispatches on is checked
    per API only.
    """
    retired = set(backends)
    for rel in sorted(project.files):
        source = project.files[rel]
        if not retired or removal.gone(rel) or not project.settings.is_core(source.module):
            continue
        if rel not in after_of and not texts.mentions(rel, retired):
            continue
        tree = _parse(after_of[rel]) if rel in after_of else texts.tree(rel)
        if tree is not None:
            retired -= _declared_backends(tree, retired)
    return retired


def _declared_backends(tree: ast.Module, names) -> Set[str]:
    found = set()
    assigned = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and markers.is_marker(_last_name(node.func), BACKEND_REQUIREMENT):
            checks = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "backend_checks"), None)
            checks = assigned.get(checks.id) if isinstance(checks, ast.Name) else checks
            if isinstance(checks, ast.Dict):
                found |= {k.value for k in checks.keys if isinstance(k, ast.Constant) and k.value in names}
        elif isinstance(node, ast.Compare) and _names_a_backend(node.left):
            found |= {s.value for c in node.comparators for s in _literals(c) if s.value in names}
    return found


def _last_name(node: ast.AST) -> str:
    dotted = ast_dotted_name(node) or ""
    return dotted.rpartition(".")[2]


def _names_a_backend(node: ast.AST) -> bool:
    """Does `node` name the backend(s) chosen?

    Examples are ``backend``, ``self.backends`` and ``list(backends)``.
    """
    if isinstance(node, ast.Call) and _last_name(node.func) in ("list", "tuple") and len(node.args) == 1:
        node = node.args[0]
    return "backend" in _last_name(node).lower()


def _literals(node: ast.AST) -> List[ast.Constant]:
    """The string constant `node` is, or those of a tuple, list or set display, nested too."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for element in node.elts for s in _literals(element)]
    return []


# what no step edits --------------------------------------------------------------------


def left_in_losing_apis(core, after_of: Dict[str, bytes]) -> List[str]:
    """Lines of an API that lost a backend which still name it in a string.

    Such a line may be a backend list no edit can shorten
    (``list(backends) not in (["a"], ["cake"])``). It may be an error message, or
    the API's docstring. No step can rewrite prose or change what a test accepts.
    So each line is listed for a person ("file:line: text").
    """
    notes: List[str] = []
    for rel, mod in sorted(core.modules.items()):
        losing = _lost_by_api(mod.file.module_name, core.backends)
        data = after_of.get(rel)
        tree = _parse(data) if losing and data is not None else None
        if tree is None:
            continue
        lines = data.decode("utf-8", "replace").splitlines()
        for node, qualname in _definitions(tree.body, ""):
            if qualname in losing:
                marked = _string_lines(node, _word(losing[qualname]), lines)
                notes += [f"{rel}:{n}: {lines[n - 1].strip()}" for n in sorted(marked)]
    return notes


def _lost_by_api(module: str, backends) -> Dict[str, Set[str]]:
    """Qualname in `module` -> the removed backends that API loses."""
    prefix = module + "."
    losing: Dict[str, Set[str]] = {}
    for name, apis in backends.items():
        for api in apis:
            if api.startswith(prefix):
                losing.setdefault(api[len(prefix):], set()).add(name)
    return losing


def _definitions(body, prefix: str):
    """``(node, qualname)`` of the functions and classes of `body`, methods included."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            qualname = prefix + node.name
            yield node, qualname
            if isinstance(node, ast.ClassDef):
                yield from _definitions(node.body, qualname + ".")


def _word(names) -> "re.Pattern[str]":
    """A backend name standing whole: ``cake``, but not ``cake_mm`` nor ``cute-cake``."""
    return re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")(?![\w-])")


def _string_lines(node: ast.AST, word, lines: List[str]) -> Set[int]:
    """The lines of the strings inside `node` that spell `word`."""
    found: Set[int] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and word.search(sub.value):
            found |= {n for n in range(sub.lineno, (sub.end_lineno or sub.lineno) + 1)
                      if n <= len(lines) and word.search(lines[n - 1])}
    return found
