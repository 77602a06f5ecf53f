"""What a rule reads, declared beside the rule, and the prefilter the runner
composes from those declarations.

Every rule class declares two things (`policy_checks.rules.base.Rule`):

- ``reads``: the kinds of file it inspects (`Kind` values below: core modules,
  stable tests, docs pages, FEATURE.toml records, ...);
- ``triggers``: what a Python file of one of those kinds must contain for the rule
  to need the file's complete facts up front. Such a file is *primary*.

`Prefilter` composes the declarations of the rules a run checks: a Python file is
primary when one of those rules reads a kind the file belongs to and one of that
rule's triggers occurs in the file. Every other file is read as bytes only, not
parsed (EXP000 reports only the files the checker must read), and a rule that follows
a reference into one gets its facts on demand.

Why that is sound: a rule reaches primary files only through
``Project.primary_facts(kind)`` for kinds it declares, and each rule's class says
why its triggers occur in every file it must inspect that way. The union of sound
declarations is sound for any selection of rules, so adding a rule never means
editing the prefilter: its declaration is the argument.
``tests/policy_checks/engine/test_runner.py`` checks it by running each rule alone, and
all together, with and without the prefilter over generated import forms.

The import-time follow-ups (`policy_checks.analysis.import_time`) look beyond the triggers,
and ask the same scan first: a follow-up's ``scans`` join the vocabulary without making
any file primary. `MAY_LOAD` flags every file that may make a load the facts record
(``tests/policy_checks/analysis/test_needs.py`` ties the two vocabularies, spelling by
spelling); a file it does not flag uses no name of the load vocabulary, so its symbol
table need not be built to say so. A file that is not parsed is not syntax-checked:
EXP000 reports the files the checker must read and cannot.

Triggers are matched as Python reads identifiers (NFKC, PEP 3131): the bytes of a
non-ASCII file are normalised first, so ``ｅxperimental`` is found too. Which
triggers occur in a file depends only on its bytes, so the runner keeps the answer
(`Scanner.scan`, a bit mask over every registered rule's triggers) beside the file's
facts in the cache, and a warm run decides which files are primary without
scanning them again. A file is searched only for what some registered rule asks of
its kinds (`Prefilter.want`); a bit it was not searched for reads as found, which can
make a file primary or summarised that need not be, never the reverse.

Rules, the project model and the runner import this module; it imports only the
names of the import functions and the whole-word search (`facts.word_offsets`) from
`facts`.
"""

from __future__ import annotations

import io
import re
import tokenize
import unicodedata
from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

from ..model import markers
from ..model.facts import IMPORT_FUNCTIONS, word_offsets


# kinds of file ---------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Kind:
    """A kind of file a rule reads.

    A Python kind classifies the project's Python files (`member`). Any other kind
    names files the checker finds another way; one whose files findings point at
    has `locate` (its files, relative to the root) and `comment_markers` (how a
    comment starts there), so that suppression comments in them are read.
    """

    name: str
    member: Optional[Callable] = None  # (project, SourceFile) -> bool
    locate: Optional[Callable] = None  # project -> iterable of relative paths
    comment_markers: tuple = ()

    @property
    def python(self) -> bool:
        return self.member is not None


# Which Python files are of a kind. A package module counts only as the file its
# module is read from (``a/__init__.py``, not an ``a.py`` beside it).


def _any_file(project, source) -> bool:
    return True


def _package_init(project, source) -> bool:
    return source.is_package and source.module == project.settings.package and project.is_module_file(source.rel)


def _aot_module(project, source) -> bool:
    return source.module in project.settings.aot_modules and project.is_module_file(source.rel)


def _core_module(project, source) -> bool:
    return project.settings.is_core(source.module) and project.is_module_file(source.rel)


def _experimental_module(project, source) -> bool:
    return project.settings.is_experimental_module(source.module) and project.is_module_file(source.rel)


def _stable_test(project, source) -> bool:
    return project.is_stable_test(source.rel)


def _experimental_test(project, source) -> bool:
    return project.is_experimental_test(source.rel)


PYTHON_FILE = Kind("every Python file", member=_any_file)
PACKAGE_INIT = Kind("the package's __init__.py", member=_package_init)
AOT_MODULE = Kind("AOT modules", member=_aot_module)
CORE_MODULE = Kind("core modules", member=_core_module)
EXPERIMENTAL_MODULE = Kind("experimental modules", member=_experimental_module)
STABLE_TEST = Kind("stable tests", member=_stable_test)
EXPERIMENTAL_TEST = Kind("experimental tests", member=_experimental_test)
DOCS_PAGE = Kind(
    "docs pages", locate=lambda project: [rel for rel, _ in project.docs_pages()], comment_markers=("..", "#")
)
FEATURE_TOML = Kind("FEATURE.toml records", locate=lambda project: project.feature_records(), comment_markers=("#", ";"))
FEATURE_README = Kind("feature README.md files")
EXAMPLE = Kind("examples")


# triggers ----------------------------------------------------------------------------


class Spelled(NamedTuple):
    """The file spells `token` anywhere: in code, a string or a comment."""

    token: bytes

    def bound(self, settings) -> "Spelled":
        return self

    @property
    def key(self) -> str:
        return "spelled:" + self.token.decode()

    def __call__(self, data: bytes) -> bool:
        return self.token in data


class _NamesModule(NamedTuple):
    word: bytes
    head: bytes

    @property
    def key(self) -> str:
        return f"names:{self.word.decode()}:{self.head.decode()}"

    def __call__(self, data: bytes) -> bool:
        return names_experimental(data, self.head.decode(), self.word)


class _ExperimentalName:
    """The experimental package's last name (``experimental``) stands alone in the
    file, other than as the last part of a dotted chain headed by another top-level
    package (``cutlass.cute.experimental``): every import of the experimental package
    or below it, in a module outside it, spells that name so (`names_experimental`)."""

    def bound(self, settings) -> _NamesModule:
        word = settings.experimental_package.rpartition(".")[2]
        return _NamesModule(word.encode(), settings.package.partition(".")[0].encode())

    def __repr__(self) -> str:
        return "EXPERIMENTAL_NAME"


class _Always:
    """Every file of the kinds the rule reads is primary."""

    def bound(self, settings) -> "_Always":
        return self

    def __repr__(self) -> str:
        return "ALWAYS"


ALWAYS = _Always()
EXPERIMENTAL_NAME = _ExperimentalName()
# The extractor recognises dynamic imports only by these names, so a file that calls one spells
# it (or binds an alias to it, which spells it too); string escapes and implicit
# concatenation in the literal argument then cannot hide a target.
IMPORT_CALLS_ONLY = tuple(Spelled(name.encode()) for name in IMPORT_FUNCTIONS)


class _RunsSource(NamedTuple):
    """The file may run source text: ``exec`` or ``eval`` called, one of them or
    ``compile`` bound to another name (``e = exec``), or ``builtins`` spelt
    (``builtins.exec``, ``getattr(builtins, ...)``). A ``compile`` runs nothing until its
    code is given to ``exec`` or ``eval``, which the file then calls (a code object handed
    to another module is not followed). Not a bare substring: ``re.compile(`` and
    ``.eval()`` are everywhere and run no source."""

    pattern: bytes

    def bound(self, settings) -> "_RunsSource":
        return self

    @property
    def key(self) -> str:
        return "runs-source"

    def __call__(self, data: bytes) -> bool:
        """As `_RUNS_SOURCE` matches, found with `bytes.find` (the pattern's look-behind
        tried at every position took seconds on FlashInfer's 100 MB of core modules)."""
        if b"builtins" in data:
            return True
        for word in (b"exec", b"eval", b"compile"):
            at = data.find(word)
            while at >= 0:
                end = at + len(word)
                before, after = data[max(at - 1, 0):at], data[end:end + 1]
                if after not in _IDENTIFIER_BYTES:
                    if word != b"compile" and before not in _IDENTIFIER_BYTES and before != b"." \
                            and _OPENS_CALL.match(data, end):
                        return True  # exec( / eval(
                    back = at
                    while back > 0 and data[back - 1] in _SPACE:
                        back -= 1
                    if back > 0 and data[back - 1] == 0x3D:
                        return True  # = exec: an alias
                at = data.find(word, end)
        return False


_RUNS_SOURCE = re.compile(rb"builtins|(?<![\w.])(?:exec|eval)\s*\(|=\s*(?:exec|eval|compile)(?!\w)")
_OPENS_CALL = re.compile(rb"\s*\(")
_SPACE = frozenset(b" \t\n\r\x0b\x0c")
_IDENTIFIER_BYTES = frozenset(bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
RUNS_SOURCE = _RunsSource(_RUNS_SOURCE.pattern)
# Every call the extractor reads as an import: the import functions, the loaders of
# a literal name or path (the extractor reads them only as attributes of their module,
# or under a name imported from it, so the file spells the module: runpy, pkgutil; or
# the loader's own name, importlib.util's), and the builtins that run source text.
IMPORT_CALLS = IMPORT_CALLS_ONLY + tuple(
    Spelled(name.encode()) for name in markers.LOADER_SPELLINGS
) + (RUNS_SOURCE,)


def may_load(data: bytes) -> bool:
    """Could `data` make a load `facts.Load` records, other than a loader call
    (`IMPORT_CALLS`)? It spells, as a whole word, one of the modules whose calls start
    threads or processes, register hooks or load libraries (``threading``, ``ctypes``,
    ``atexit``, ...), one of importlib's loaders of any spec, the import system's state
    (``meta_path``, ``__path__``), or, for ``os``, ``sys`` and ``signal``, whose names are
    everywhere, the call with its module (``os.system``, ``sys.path``), a name imported
    from the module, or the module bound under another name. Found with `bytes.find`
    word by word and one pattern with a literal start each (an alternation of words
    tried at every position took a second on FlashInfer's excluded folder)."""
    if any(next(word_offsets(data, word), None) is not None for word in _LOAD_WORDS):
        return True
    return any(pattern.search(data) for pattern in _LOAD_PATTERNS)


class _MayLoad:
    """`may_load` as a matcher a `Scanner` holds (the excluded folders' scan)."""

    key = "may-load"

    def bound(self, settings) -> "_MayLoad":
        return self

    def __call__(self, data: bytes) -> bool:
        return may_load(data)

    def __repr__(self) -> str:
        return "MAY_LOAD"


MAY_LOAD = _MayLoad()
_LOAD_WORDS = tuple(word.encode() for word in (
    "meta_path", "path_hooks", "path_importer_cache", "ctypes", "atexit", "threading", "_thread", "subprocess",
    "multiprocessing", "concurrent", "weakref", "LazyLoader", "module_from_spec", "exec_module", "load_module",
    "walk_packages", "register_at_fork",
    "addaudithook", "settrace", "setprofile", "excepthook", "displayhook", "__path__"))
_LOAD_PATTERNS = tuple(re.compile(p) for p in (
    rb"sys\s*\.\s*(?:path|modules)\b", rb"os\s*\.\s*(?:system|popen|fork|spawn|exec|posix_spawn)",
    rb"signal\s*\.\s*signal\b", rb"FileLoader\b", rb"from\s+(?:os|sys|signal)\s+import\b", rb"import\s+(?:os|sys|signal)\s+as\b"))
# The extractor recognises a ``backend_requirement`` call by that name or an alias
# bound in the same file (whose binding spells it); an alias bound in another module
# is followed by the runner after the first pass (`runner.requirement_aliases`).
BACKEND_REQUIREMENT = Spelled(markers.BACKEND_REQUIREMENT.encode())


# matching ---------------------------------------------------------------------------

_IDENTIFIER = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def names_experimental(data: bytes, package: str, word: bytes = b"experimental") -> bool:
    """Could `data` name this project's module called `word` (the experimental
    package's last name)?

    In an import, the experimental package is a dotted-name component, so `word`
    stands alone: ``flashinfer_experimental_api`` cannot name it. An absolute form
    spells every component; a relative form in a module outside the experimental
    package can reach it only by spelling it (``from . import experimental``,
    ``from ..experimental.x import``), because a relative import only climbs. An
    occurrence inside an absolute dotted chain whose head is another top-level name
    (``cutlass.cute.experimental``, ``cuda.core.experimental``) names a third-party
    module. Any other occurrence (in code, a string or a comment alike) makes the
    file a candidate; that over-approximation is what keeps the filter sound.
    """
    head = package.partition(".")[0].encode()
    at = data.find(word)
    while at >= 0:
        end = at + len(word)
        standalone = (at == 0 or data[at - 1] not in _IDENTIFIER) and (end == len(data) or data[end] not in _IDENTIFIER)
        if standalone and _chain_head(data, at) in (None, head):
            return True
        at = data.find(word, end)
    return False


def _chain_head(data: bytes, at: int):
    """The first name of the absolute dotted chain ending at `at` (``b"cutlass"`` for
    ``cutlass.cute.experimental``), or None when the word there is not such a chain's
    last component (or the chain is relative)."""
    position = at
    head = None
    while position > 0 and data[position - 1] == ord("."):
        end = position - 1
        start = end
        while start > 0 and data[start - 1] in _IDENTIFIER:
            start -= 1
        if start == end or data[start] in b"0123456789":
            return None  # ".experimental" after a non-name: relative or odd, keep it
        head, position = data[start:end], start
    if head is None or (position > 0 and data[position - 1] == ord(".")):
        return None
    return head


def as_python_reads_names(data: bytes) -> bytes:
    """`data` decoded with its declared encoding (PEP 263) and NFKC-normalised, as
    the tokenizer normalises identifiers; strings and comments change too, which
    only widens the prefilter."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        encoding, text = "", data.decode("utf-8", "replace")
    if encoding.startswith("utf-8") and unicodedata.is_normalized("NFKC", text):
        return data  # the common case: nothing to rewrite
    return unicodedata.normalize("NFKC", text).encode("utf-8", "replace")


class Scanner(NamedTuple):
    """Which of a fixed list of bound triggers occur in a file's bytes. Small and
    picklable: worker processes scan the files they parse."""

    matchers: tuple

    @property
    def key(self) -> str:
        """Names the vocabulary: bit i of a mask means ``matchers[i]`` was found."""
        return ",".join(m.key for m in self.matchers)

    def scan(self, data: bytes, asked: int = -1) -> int:
        """The mask of the matchers found in `data`, of those `asked` names (bit i for
        ``matchers[i]``; default all). A matcher not asked reads as found: what a run
        learns from a mask only spares work, so a bit it did not look for costs work,
        never a finding (`Prefilter.want`)."""
        if not self.matchers:
            return 0
        everything = (1 << len(self.matchers)) - 1
        asked &= everything
        if not asked:
            return everything
        if not data.isascii():
            data = as_python_reads_names(data)
        return everything & ~asked | sum(
            1 << bit for bit, matcher in enumerate(self.matchers) if asked >> bit & 1 and matcher(data))


class Prefilter:
    """The prefilter of one run: the declarations of the rules it checks, composed.

    `scanner` covers the triggers of every registered rule (`all_rules`), not only
    the selected ones, so that a cached scan serves runs with any selection, and what
    their follow-ups ask of a file's bytes (a follow-up's ``scans``), which makes no
    file primary.
    `triggers` are the selected rules' triggers, unbound.
    A file is scanned only for what some registered rule asks of its kinds: its
    triggers, and its follow-ups' scans of the files it reads (`want`'s third item).
    The experimental modules, a third of FlashInfer's bytes, are then searched for
    one word (EXP004's ``backend_requirement``), not for every rule's.
    """

    def __init__(self, selected_rules, all_rules, settings, enabled: bool = True):
        vocabulary = []
        for rule in all_rules:
            scans = [matcher for follow in rule.follow_ups for matcher in getattr(follow, "scans", ())]
            for trigger in (*rule.triggers, *scans):
                if trigger is not ALWAYS and trigger.bound(settings) not in vocabulary:
                    vocabulary.append(trigger.bound(settings))
        self.scanner = Scanner(tuple(vocabulary))
        self.enabled = enabled
        asked = {}  # Python kind -> mask of what every registered rule asks of its files
        for rule in all_rules:
            scans = [matcher for follow in rule.follow_ups for matcher in getattr(follow, "scans", ())]
            bits = sum({1 << vocabulary.index(t.bound(settings)) for t in (*rule.triggers, *scans) if t is not ALWAYS})
            for kind in rule.reads:
                if kind.python and bits:
                    asked[kind] = asked.get(kind, 0) | bits
        self._asked = list(asked.items())
        declaring = []  # a rule that reports what every rule reads (EXP000) declares for them all
        for rule in selected_rules:
            declaring.extend(all_rules if getattr(rule, "reads_every_rules_files", False) else (rule,))
        declaring = list(dict.fromkeys(declaring))
        self.triggers = frozenset(t for rule in declaring for t in rule.triggers)
        wants = {}  # Python kind -> [always, mask]
        for rule in declaring:
            for kind in rule.reads:
                if not kind.python or not rule.triggers:
                    continue
                want = wants.setdefault(kind, [False, 0])
                for trigger in rule.triggers:
                    if trigger is ALWAYS:
                        want[0] = True
                    else:
                        want[1] |= 1 << vocabulary.index(trigger.bound(settings))
        self._wants = [(kind, always, mask) for kind, (always, mask) in wants.items()]

    def want(self, project, source) -> tuple:
        """``(always, mask, asked)`` for one Python file: primary whatever its bytes, or
        when its scan shares a bit with `mask`; `asked`, what its scan must look for
        (`Scanner.scan`), covers `mask` and what any other selection or a follow-up asks
        of the file."""
        asked = 0
        for kind, kind_asked in self._asked:
            if kind_asked & ~asked and kind.member(project, source):
                asked |= kind_asked
        if not self.enabled:
            return True, 0, asked
        always, mask = False, 0
        for kind, kind_always, kind_mask in self._wants:
            if (kind_always or kind_mask & ~mask) and kind.member(project, source):
                always, mask = always or kind_always, mask | kind_mask
        return always, mask, asked


def is_primary(want: tuple, found: int) -> bool:
    """Does a file that `Prefilter.want` gave `want` and whose scan is `found` need
    its complete facts up front?"""
    always, mask = want[0], want[1]
    return always or bool(mask & found)
