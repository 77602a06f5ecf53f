"""Recognise a graduation PR from what its code says at base and head, and state each step.

The PR check lists the PR's files (``pull.get_files()``). Each entry has a ``filename`` and
a ``status`` (added, removed, modified, renamed, copied, changed, unchanged). A rename or
copy also has a ``previous_filename``. That listing says which files moved. What they hold
is read from their texts at the base and head commits (`FileAtRevisions`). The PR check's
reader fills those in. The look of diff lines is never used. Each of these is read for what
it is (`policy_checks.model.markers`):

- a decorator spelt ``@api_logging.flashinfer_experimental_api``;
- ``@(fx)(...)`` through an alias;
- a docstring line starting ``@flashinfer_api``.

A PR graduates feature ``<f>`` when all of these hold:

* Its record ``flashinfer/experimental/<f>/FEATURE.toml`` is removed, or renamed away. Its
  text at base is readable, since its ``apis`` and ``tracking_issue`` are read from it.
* The directory ``flashinfer/experimental/<f>/`` at head is a pure re-export shim. The test
  is `policy_checks.model.markers.is_pure_shim`, the same one EXP009 and the board apply.
  Every file under it at head is listed in ``trees``, and its text given.
* ``<f>``'s own entry points are not marked experimental at head. They are the definitions
  marked experimental for it at base:

  - every experimental definition in the feature's own files;
  - each core definition marked ``@flashinfer_experimental_api`` that names the feature
    (``feature="<f>"``), imports it, or is one of the record's ``apis``.

  There is at least one, and each API the record lists is among them.

Anything the decision needs may be missing or incomplete. Examples: a text GitHub could not
give whole, a file that does not parse, an unlisted directory. Then there is no graduation.
The reason is returned (`Recognition.not_recognised`) so that the caller fails closed.

Other experimental code a PR adds, in the feature's directory or anywhere, is not part of a
graduation. `added_experimental` lists it for the caller. The caller asks for a declaration,
as for any experimental change.

Each of the seven steps of `policy_checks.model.window.GRADUATION_STEPS` gets a state:

* Step 2 (move the code): the directory is a pure shim (required), with the files moved out.
* Step 3 (the decorator swap): each core entry point is marked ``@flashinfer_api`` at head.
  No experimental mark is added outside the experimental package. No gate call stays in the
  entry points, and none is added in core.
* Step 5 (AOT): done when the AOT module (``flashinfer/aot.py``) changes. Otherwise it is not
  part of this PR. It is needed only when the kernels ship prebuilt.
* Step 6 (tests): a test of ``tests/experimental/<f>/`` was renamed into the stable lane, or
  removed while a stable test was added. No test stays changed under the experimental lane.
* Steps 1, 4 and 7 are for a person. Step 7 names the tracking issue when the bot knows it:
  the removed record's ``tracking_issue``, else the PR's ``Tracking issue:``.

Texts are untrusted. They are parsed by ``ast`` and read by `policy_checks.model.markers`,
in time linear in their size. Text from them reaches the comment only through
`markdown.code`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Collection, Iterable, Iterator, Mapping

from ..model import markers
from ..model.config import DEFAULT, Settings, under
from ..model.records import TrackingRef, is_feature_name, parse as parse_record
from ..model.window import GRADUATION_STEPS, GraduationStep
from ..model.markers import Marked
from .aliases import AliasTable
from .markdown import bullet_list, code
from .revisions import FileAtRevisions

RECORD = markers.RECORD
NOT_CODE = frozenset({RECORD, markers.README})  # a feature's paperwork: removing it moves no code
EXPERIMENTAL_API = markers.EXPERIMENTAL_API
STABLE_API = markers.STABLE_API
MAX_RECORD_CHARS = 64 * 1024  # a FEATURE.toml is a few hundred bytes; a longer "record" is not parsed
MAX_CHECKLISTS = 3  # features whose checklist one comment shows

# Step states.
DONE = "done"
OPEN = "open"
OPTIONAL = "optional"  # not in this PR, and not always needed
PERSON = "person"

NEEDS_TEXTS = ("the bot needs the texts of the PR's files at the base and head commits to recognise a "
               "graduation, and was given none")


def changed_lines(patch: str | None) -> Iterator[tuple[str, str]]:
    """``("+", text)`` for each added line and ``("-", text)`` for each removed one of a diff.

    The diff is a unified diff. Lines are split at ``\\n`` only: a Unicode line separator
    inside a line does not start a new diff line. ``+++``/``---`` file headers are skipped.
    """
    for line in (patch or "").split("\n"):
        if not line or line[0] not in "+-" or line.startswith(("+++", "---")):
            continue
        yield line[0], line[1:].rstrip("\r")


def feature_under(path: str | None, top: str) -> str | None:
    """The feature directory ``top/<feature>/...`` that ``path`` lies in; None outside one.

    As for the weekly review, a directory whose name starts with ``_`` or ``.`` is not a feature.
    """
    if not path:
        return None
    prefix = top.rstrip("/") + "/"
    if not path.startswith(prefix):
        return None
    name, slash, rest = path[len(prefix):].partition("/")
    return name if slash and rest and is_feature_name(name) else None


def is_python(path: str | None) -> bool:
    return bool(path) and path.endswith(".py")


@dataclass(frozen=True)
class Listed:
    """One entry of the PR's file listing, as the parts this module reads."""

    path: str
    status: str
    previous: str | None  # for renamed and copied files
    patch: str | None  # None: GitHub sent no diff

    @classmethod
    def of(cls, changed) -> Listed:
        """From a PyGithub ``File``, or anything with its attributes."""
        status = getattr(changed, "status", None) or "modified"
        previous = getattr(changed, "previous_filename", None) if status in ("renamed", "copied") else None
        return cls(changed.filename, status, previous or None, getattr(changed, "patch", None))

    @property
    def base_path(self) -> str | None:
        """Where the file's base text is.

        It is the previous path of a rename, and None for a new file."""
        if self.status == "renamed":
            return self.previous
        return None if self.status in ("added", "copied") else self.path


@dataclass(frozen=True)
class StepState:
    """A step of the checklist and what the PR shows of it.

    ``detail`` is rendered Markdown."""

    step: GraduationStep
    state: str
    detail: str = ""

    @property
    def done(self) -> bool:
        return self.state == DONE


@dataclass
class Graduation:
    """A feature this PR graduates, and the state of each step of its checklist."""

    feature: str
    new_home: str | None = None  # the shim's ``__graduated_to__``
    tracking: TrackingRef | None = None
    steps: list[StepState] = field(default_factory=list)

    @property
    def done(self) -> int:
        return sum(step.done for step in self.steps)


@dataclass(frozen=True)
class NotRecognised:
    """A feature whose record the PR removes but which it does not visibly graduate, and why.

    ``reason`` is Markdown: whatever it quotes from the PR is a code span.
    """

    feature: str
    reason: str

    def render(self) -> str:
        return f"{code(self.feature, 80)}: {self.reason}"


class Recognition(list):
    """What `recognise` finds: graduations, and removed records without a graduation.

    The `Graduation` s a PR makes come as a list. `not_recognised` holds the features whose
    record it removes without graduating them. The caller fails closed on those: the record is
    gone, so the feature needs a declaration."""

    def __init__(self, graduations: Iterable[Graduation] = (), not_recognised: Iterable[NotRecognised] = ()):
        super().__init__(graduations)
        self.not_recognised: list[NotRecognised] = list(not_recognised)

    @property
    def reasons(self) -> list[str]:
        """Each feature not recognised and why, as Markdown."""
        return [item.render() for item in self.not_recognised]


@dataclass
class _Feature:
    """What the listing shows of one feature's directories."""

    record: Listed | None = None  # the record's removal (or rename away)
    moved: list[tuple[str, str | None]] = field(default_factory=list)  # (old path, new path or None if removed)
    tests_out: list[tuple[str, str | None]] = field(default_factory=list)  # renamed into the stable lane, or removed
    tests_renamed_out: int = 0
    tests_stayed: list[str] = field(default_factory=list)  # added, changed or moved within the experimental lane


@dataclass
class _Listing:
    """One pass over the listing: per feature, and for the PR as a whole."""

    features: dict[str, _Feature] = field(default_factory=dict)
    stable_tests_added: int = 0
    aot_changed: list[str] = field(default_factory=list)

    def feature(self, name: str) -> _Feature:
        return self.features.setdefault(name, _Feature())


def aot_paths(settings: Settings) -> list[str]:
    """The AOT modules as paths.

    ``flashinfer.aot`` becomes ``flashinfer/aot.py``, or the package directory."""
    return [module.replace(".", "/") for module in settings.aot_modules]


def _is_aot(path: str | None, settings: Settings) -> bool:
    return bool(path) and any(path == f"{top}.py" or under(path, top) for top in aot_paths(settings))


def _in_stable_tests(path: str | None, settings: Settings) -> bool:
    return bool(path) and under(path, settings.stable_tests) and not settings.is_experimental_path(path)


def _scan(listing: list[Listed], settings: Settings) -> _Listing:
    seen = _Listing()
    code_top, tests_top = settings.experimental_dir, settings.experimental_tests
    for changed in listing:
        path, status, previous = changed.path, changed.status, changed.previous
        # The record removed (or renamed away from its directory).
        old = previous if status == "renamed" else path
        name = feature_under(old, code_top)
        if name is not None and old == f"{code_top}/{name}/{RECORD}" and (
                status == "removed" or (status == "renamed" and path != old)):
            seen.feature(name).record = changed
        # The code leaving the feature's directory.
        if name is not None and old.rpartition("/")[2] not in NOT_CODE:
            if status == "removed":
                seen.feature(name).moved.append((old, None))
            elif status == "renamed" and not settings.is_experimental_path(path):
                seen.feature(name).moved.append((old, path))
        # The tests leaving (or staying in) the experimental lane.
        test_old = feature_under(old, tests_top)
        if test_old is not None:
            if status == "removed":
                seen.feature(test_old).tests_out.append((old, None))
            elif status == "renamed" and _in_stable_tests(path, settings):
                seen.feature(test_old).tests_out.append((old, path))
                seen.feature(test_old).tests_renamed_out += 1
        test_new = feature_under(path, tests_top)
        if test_new is not None and status != "removed":
            seen.feature(test_new).tests_stayed.append(path)
        if status in ("added", "renamed", "copied") and _in_stable_tests(path, settings):
            seen.stable_tests_added += 1
        if _is_aot(path, settings) or _is_aot(previous, settings):
            seen.aot_changed.append(path)
    return seen


# --- what the texts say --------------------------------------------------------------------


def _experimental(marks: Iterable[Marked]) -> list[Marked]:
    return [m for m in marks if m.kind in markers.EXPERIMENTAL_KINDS]


def added_experimental(files_at_revisions: Mapping[str, FileAtRevisions]) -> list[tuple[str, Marked]]:
    """``(path, Marked)`` for each definition a PR newly marks experimental.

    That is a definition of a Python file marked experimental at head, but not at base by the
    same qualname and kind. Experimental means an experimental API or backend, however spelt.
    It is what a PR adds to the track, so the caller requires a declaration for it.

    A renamed file's base is its previous path's text, as the reader gives it. Some entries are
    not judged here: an incomplete one, or one whose head text does not parse. `unjudged` names
    those, and the caller fails closed on them."""
    found: list[tuple[str, Marked]] = []
    head_aliases, base_aliases = side_aliases(files_at_revisions, "head"), side_aliases(files_at_revisions, "base")
    for key in sorted(files_at_revisions):
        entry = files_at_revisions[key]
        if not is_python(entry.path) or not entry.complete or entry.head is None:
            continue
        head = markers.marked_definitions(entry.head, head_aliases.imported(entry.path))
        if head is None:
            continue
        before = (markers.marked_definitions(entry.base, base_aliases.imported(entry.path))
                  if entry.base is not None else [])
        known = {(m.qualname, m.kind) for m in before or ()}  # a base that does not parse counts as empty
        found += [(entry.path, m) for m in _experimental(head) if (m.qualname, m.kind) not in known]
    return found


def side_aliases(files_at_revisions: Mapping[str, FileAtRevisions], which: str) -> AliasTable:
    """The cross-module alias table of one side of the PR's Python files read whole.

    The side is "base" or "head" (`aliases.AliasTable`). A file is keyed by its head path on
    both sides."""
    return AliasTable({entry.path: (entry.base if which == "base" else entry.head)
                       for entry in files_at_revisions.values() if is_python(entry.path) and entry.complete})


def unjudged(files_at_revisions: Mapping[str, FileAtRevisions]) -> list[tuple[str, str]]:
    """``(path, why)`` for each Python file whose marks could not be read.

    The file is incomplete, or its head text is not Python. What it adds cannot be known, so
    the caller fails closed on it."""
    found = []
    for key in sorted(files_at_revisions):
        entry = files_at_revisions[key]
        if not is_python(entry.path):
            continue
        if not entry.complete:
            found.append((entry.path, entry.problem or "its text could not be read whole"))
        elif entry.head is not None and markers.parse(entry.head) is None:
            found.append((entry.path, "its text at the head commit is not Python"))
    return found


def directories_to_list(files: Iterable, settings: Settings = DEFAULT) -> list[str]:
    """The feature directories whose record the PR removes.

    The caller lists every file under each at the head commit (``trees`` of `recognise`)."""
    listing = [f if isinstance(f, Listed) else Listed.of(f) for f in files]
    return [f"{settings.experimental_dir}/{name}" for name, feature in sorted(_scan(listing, settings).features.items())
            if feature.record is not None]


def paths_needed(files: Iterable, trees: Mapping[str, Collection[str] | None] | None = None,
                 settings: Settings = DEFAULT) -> list[str]:
    """The paths whose texts `recognise` reads, given the directories' listings.

    They are every Python file of the PR and each removed record. They are also every Python
    file under a listed directory at head. Unchanged ones count too: they are part of the shim."""
    listing = [f if isinstance(f, Listed) else Listed.of(f) for f in files]
    wanted = {f.path for f in listing if is_python(f.path) or is_python(f.previous)}
    for directory in directories_to_list(listing, settings):
        wanted.add(f"{directory}/{RECORD}")
        for path in _tree(trees, directory) or ():
            if is_python(path):
                wanted.add(path)
    return sorted(wanted)


def _tree(trees: Mapping[str, Collection[str] | None] | None, directory: str) -> list[str] | None:
    if trees is None:
        return None
    paths = trees.get(directory, trees.get(directory + "/"))
    if paths is None:
        return None
    return [p for p in paths if p.startswith(directory + "/")]


@dataclass(frozen=True)
class _EntryPoint:
    """A definition marked experimental for the feature at base, and where it is at head."""

    base_path: str
    head_path: str | None  # None: the file is gone at head
    marked: Marked
    core: bool  # outside the experimental package (an API), else in the feature's own files


class _Undecided(Exception):
    """Something the decision needs is missing: the reason, as Markdown."""


class _Texts:
    """The texts of the PR's files, looked up by listing entry.

    Anything missing is `_Undecided`."""

    def __init__(self, texts: Mapping[str, FileAtRevisions]):
        self.texts = texts
        self.parsed: dict[tuple[str, str], list[tuple[Marked, ast.AST]] | None] = {}  # each text read once

    @cached_property
    def aliases(self) -> dict[str, AliasTable]:
        return {"base": side_aliases(self.texts, "base"), "head": side_aliases(self.texts, "head")}

    @cached_property
    def added(self) -> list[tuple[str, Marked]]:
        return added_experimental(self.texts)

    @cached_property
    def gates(self) -> dict[str, tuple[list, list]]:
        """Path -> the gate calls of its text at head and at base (`markers.gate_calls`).

        Only files that have both sides' texts whole are included. An absent side has none."""
        found = {}
        for path, entry in self.texts.items():
            if is_python(entry.path) and entry.complete and entry.head is not None:
                base = (markers.gate_calls(entry.base) or []) if entry.base is not None else []
                found[entry.path] = (markers.gate_calls(entry.head) or [], base)
        return found

    def marks(self, text: str, path: str, where: str) -> list[tuple[Marked, ast.AST]]:
        """The marked definitions of a text (`markers.marked_nodes`).

        `_Undecided` when it is not Python."""
        key = (path, where)
        if key not in self.parsed:
            self.parsed[key] = markers.marked_nodes(text, self.aliases[where].imported(path))
        found = self.parsed[key]
        if found is None:
            raise _Undecided(f"{code(path, 200)} is not Python at the {where} commit")
        return found

    def entry(self, path: str, previous: str | None = None) -> FileAtRevisions | None:
        found = self.texts.get(path)
        if found is None and previous:
            found = self.texts.get(previous)
        return found

    def side(self, path: str, which: str, previous: str | None = None) -> str | None:
        """The text at ``which`` ("base" or "head") of a listed path.

        `_Undecided` when it is not given whole."""
        entry = self.entry(path, previous)
        where = "base" if which == "base" else "head"
        if entry is None:
            raise _Undecided(f"the text of {code(path, 200)} at the {where} commit is needed")
        if not entry.complete:
            why = f" ({code(entry.problem, 120)})" if entry.problem else ""
            raise _Undecided(f"the text of {code(path, 200)} could not be read whole{why}")
        return entry.base if which == "base" else entry.head


def _names_feature(node: ast.AST, feature: str) -> bool:
    """A decorator of ``node``, or the call of an assignment, passes ``feature="<feature>"``."""
    calls = node.decorator_list if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
        else [getattr(node, "value", None)]
    for call in calls:
        while isinstance(call, ast.Call):
            if any(k.arg == "feature" and isinstance(k.value, ast.Constant) and k.value.value == feature
                   for k in call.keywords):
                return True
            call = call.func
    return False


def _imports_feature(node: ast.AST, feature: str, settings: Settings) -> bool:
    """The definition's body imports the feature.

    Examples: ``from .experimental.<f>.kernel import run`` and
    ``import_module("flashinfer.experimental.<f>")``."""
    package = settings.experimental_package.rpartition(".")[2]
    pattern = re.compile(rf"(?:^|\.){re.escape(package)}\.{re.escape(feature)}(?:\.|$)")
    for inner in ast.walk(node):
        if isinstance(inner, ast.ImportFrom) and inner.module and pattern.search("." + inner.module):
            return True
        if isinstance(inner, ast.Import) and any(pattern.search("." + alias.name) for alias in inner.names):
            return True
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str) and len(inner.value) < 1000 \
                and pattern.search("." + inner.value):
            return True
    return False


def _entry_points(name: str, listing: list[Listed], texts: _Texts, apis: tuple[str, ...],
                  settings: Settings) -> list[_EntryPoint]:
    """The definitions marked experimental for the feature at base, in the PR's Python files."""
    own = f"{settings.experimental_dir}/{name}/"
    api_names = {api.rpartition(".")[2] for api in apis}
    found: list[_EntryPoint] = []
    for changed in listing:
        base_path = changed.base_path
        if not is_python(base_path):
            continue
        in_feature = base_path.startswith(own)
        if not in_feature and settings.is_experimental_path(base_path):
            continue  # another feature's files, or the experimental package's own modules
        base = texts.side(changed.path, "base", changed.previous)
        if base is None:
            continue
        head_path = None if changed.status == "removed" else changed.path
        for marked, node in texts.marks(base, base_path, "base"):
            if in_feature and marked.kind in markers.EXPERIMENTAL_KINDS:
                found.append(_EntryPoint(base_path, head_path, marked, False))
            elif not in_feature and marked.kind == markers.KIND_EXPERIMENTAL_API and (
                    marked.qualname.rpartition(".")[2] in api_names or _names_feature(node, name)
                    or _imports_feature(node, name, settings)):
                found.append(_EntryPoint(base_path, head_path, marked, True))
    return found


def _decide(name: str, feature: _Feature, listing: list[Listed], texts: _Texts,
            trees: Mapping[str, Collection[str] | None] | None, settings: Settings,
            tracking: TrackingRef | None, seen: _Listing) -> Graduation:
    directory = f"{settings.experimental_dir}/{name}"
    record = feature.record
    text = texts.side(record.path, "base", record.previous)
    if text is None or len(text) > MAX_RECORD_CHARS:
        raise _Undecided(f"the removed {code(RECORD)} could not be read at the base commit")
    parsed = parse_record(name, text, quote=code)
    apis = parsed.apis or ()

    # The directory at head: a pure re-export shim, and nothing else.
    paths = _tree(trees, directory)
    if paths is None:
        raise _Undecided(f"the files of {code(directory + '/', 200)} at the head commit are needed")
    sources: dict[str, str | None] = {}
    for path in paths:
        rel = path[len(directory) + 1:]
        sources[rel] = texts.side(path, "head") if is_python(path) and "__pycache__" not in rel.split("/") else ""
    if not sources:
        raise _Undecided(f"it leaves no re-export shim in {code(directory + '/', 200)}: that is a removal")
    problem = markers.shim_problem(sources, settings.experimental_package)
    if problem is not None:
        raise _Undecided(f"{code(directory + '/', 200)} at the head commit is not a pure re-export shim: "
                         f"{code(problem, 200)}")
    home = markers.shim_home(sources["__init__.py"] or "")

    # Its entry points at base, no longer experimental at head.
    points = _entry_points(name, listing, texts, apis, settings)
    if not points:
        raise _Undecided("no definition marked experimental for it at the base commit is among this PR's files: "
                         "its entry points are not seen leaving the track")
    names = {p.marked.qualname.rpartition(".")[2] for p in points}
    for api in apis:
        if api.rpartition(".")[2] not in names:
            raise _Undecided(f"the record's API {code(api, 200)} is not among the definitions this PR changes: "
                             "it stays experimental")
    head_marks: dict[str, list[Marked]] = {}
    for point in points:
        if point.head_path is None:
            continue
        if point.head_path not in head_marks:
            head = texts.side(point.head_path, "head")
            head_marks[point.head_path] = [m for m, _ in texts.marks(head, point.head_path, "head")] if head else []
        still = [m for m in head_marks[point.head_path]
                 if m.qualname == point.marked.qualname and m.kind in markers.EXPERIMENTAL_KINDS]
        if still:
            raise _Undecided(f"{code(point.head_path, 200)}: {code(point.marked.qualname, 120)} is still marked "
                             "experimental at the head commit")

    graduation = Graduation(feature=name, new_home=home, tracking=parsed.tracking or tracking)
    states = {
        2: _step2(directory, sources, feature),
        3: _step3(points, head_marks, listing, texts, settings),
        5: _step5(seen),
        6: _step6(name, feature, seen, settings),
    }
    steps = {step.number: step for step in GRADUATION_STEPS}
    for number in (1, 4, 7):
        states[number] = StepState(steps[number], PERSON, "for a person")
    graduation.steps = [states[step.number] for step in GRADUATION_STEPS]
    return graduation


def recognise(files: Iterable, tracking: TrackingRef | None = None, settings: Settings = DEFAULT,
              texts: Mapping[str, FileAtRevisions] | None = None,
              trees: Mapping[str, Collection[str] | None] | None = None) -> Recognition:
    """The features this PR graduates, each with its checklist, and those it does not, with why.

    ``files`` is the PR's listing: PyGithub ``File`` objects or `Listed`. ``tracking`` is the
    PR's own tracking reference. Step 7 names it when the removed record names none.

    ``texts`` maps each path of `paths_needed` to its `FileAtRevisions`. A listed file is keyed
    by its head path. ``trees`` maps each directory of `directories_to_list` to every file path
    under it at the head commit. None means it could not be listed.

    Without ``texts`` no graduation is recognised. Each feature whose record goes is then not
    recognised, and the reason says the texts are needed.
    """
    listing = [f if isinstance(f, Listed) else Listed.of(f) for f in files]
    seen = _scan(listing, settings)
    removed = sorted(name for name, feature in seen.features.items() if feature.record is not None)
    result = Recognition()
    if not removed:
        return result
    if texts is None:
        result.not_recognised = [NotRecognised(name, NEEDS_TEXTS) for name in removed]
        return result
    reader = _Texts(texts)
    for name in removed:
        try:
            result.append(_decide(name, seen.features[name], listing, reader, trees, settings, tracking, seen))
        except _Undecided as why:
            result.not_recognised.append(NotRecognised(name, str(why)))
    return result


# --- the steps --------------------------------------------------------------------------------


def _more(paths: list[str], limit: int = 200) -> str:
    """The first path as code, and how many more there are."""
    first = code(paths[0], limit)
    return first if len(paths) == 1 else f"{first} and {len(paths) - 1} more"


def _files(count: int) -> str:
    return f"{count} file" + ("" if count == 1 else "s")


def _step(number: int, state: str, detail: str) -> StepState:
    return StepState(next(s for s in GRADUATION_STEPS if s.number == number), state, detail)


def _step2(directory: str, sources: dict, feature: _Feature) -> StepState:
    moved_away = [new for _, new in feature.moved if new]
    parts = [f"{code(directory + '/', 200)} is a pure re-export shim ({_files(len(sources))})"]
    if moved_away:
        parts.append(f"{_files(len(moved_away))} moved out, e.g. to {code(moved_away[0], 200)}")
    deleted = len(feature.moved) - len(moved_away)
    if deleted:
        parts.append(f"{_files(deleted)} removed from it")
    return _step(2, DONE, "; ".join(parts))


def _step3(points: list[_EntryPoint], head_marks: dict[str, list[Marked]], listing: list[Listed], texts: _Texts,
           settings: Settings) -> StepState:
    """The state of step 3, the decorator swap.

    The swap on each core entry point is read from the resolved decorators at head. No
    experimental mark may be added outside the experimental package. No gate call may be left
    in an entry point, or added in core."""
    open_parts = []
    core = [p for p in points if p.core]
    not_stable = [p for p in core if p.head_path is not None and not any(
        m.qualname == p.marked.qualname and m.kind == markers.KIND_STABLE_API for m in head_marks[p.head_path])]
    if not_stable:
        open_parts.append(f"{code(not_stable[0].marked.qualname, 120)} in {code(not_stable[0].head_path, 200)} is "
                          f"not marked `@{STABLE_API}` at the head commit")
    added = [(path, m) for path, m in texts.added if not settings.is_experimental_path(path)]
    if added:
        open_parts.append(f"an experimental mark is added on {code(added[0][1].qualname, 120)} in "
                          f"{_more(sorted({path for path, _ in added}))}")
    gated = []
    for changed in listing:
        if not is_python(changed.path) or changed.status == "removed" or settings.is_experimental_path(changed.path):
            continue
        if changed.path not in texts.gates:
            continue
        head, base = texts.gates[changed.path]
        scopes = {p.marked.qualname for p in core if p.head_path == changed.path}
        in_entry_point = any(scope == q or scope.startswith(q + ".") for scope, _ in head for q in scopes)
        if in_entry_point or len(head) > len(base):
            gated.append(changed.path)
    if gated:
        open_parts.append(f"a gate call stays or is added in {_more(gated)}")
    if open_parts:
        return _step(3, OPEN, "; ".join(open_parts))
    where = sorted({p.head_path for p in core if p.head_path}) or sorted({p.base_path for p in points})
    return _step(3, DONE, f"no entry point of the feature is marked experimental at the head commit "
                          f"(seen in {_more(where)})")


def _step5(seen: _Listing) -> StepState:
    if seen.aot_changed:
        return _step(5, DONE, f"{_more(seen.aot_changed)} changed")
    return _step(5, OPTIONAL, "not in this PR (only needed if kernels ship prebuilt)")


def _step6(name: str, feature: _Feature, seen: _Listing, settings: Settings) -> StepState:
    tests_dir = f"{settings.experimental_tests}/{name}/"
    renamed_out = feature.tests_renamed_out
    removed_tests = len(feature.tests_out) - renamed_out
    out = renamed_out + (removed_tests if seen.stable_tests_added else 0)
    if feature.tests_stayed:
        return _step(6, OPEN, f"{_files(len(feature.tests_stayed))} still changed under "
                              f"{code(tests_dir, 200)}: {_more(feature.tests_stayed)}")
    if out:
        return _step(6, DONE, f"{_files(out)} moved out of {code(tests_dir, 200)} into the stable lane")
    if removed_tests:
        return _step(6, OPEN, f"tests were removed from {code(tests_dir, 200)} but no stable test "
                              f"was added under {code(settings.stable_tests + '/', 200)}")
    return _step(6, OPEN, f"no test of {code(tests_dir, 200)} was moved to the stable lane in this PR")


def checklist_lines(graduations: list[Graduation], repo_name: str, issue_state: str | None = None,
                    issue_ref: TrackingRef | None = None) -> list[str]:
    """The comment's "Graduation checklist" sections as Markdown lines.

    The list is empty without a graduation. ``issue_state`` is the state of ``issue_ref`` when
    the bot read that issue, the PR's own tracking reference. Step 7 shows it beside the issue
    when the checklist names the same one.
    """
    lines: list[str] = []
    for graduation in graduations[:MAX_CHECKLISTS]:
        name = code(graduation.feature, 80)
        home = f", to {code(graduation.new_home, 200)}" if graduation.new_home else ""
        lines += [f"**Graduation checklist**: {name}{home}", "",
                  f"This PR graduates {name}: its `{RECORD}` is removed and `@{EXPERIMENTAL_API}` gives way to "
                  f"`@{STABLE_API}`. A box is ticked when this PR's files show the step done "
                  f"({graduation.done} of {len(graduation.steps)}); steps for a person stay open for them.", ""]
        for state in graduation.steps:
            lines.append(f"- [{'x' if state.done else ' '}] {state.step.number}. {state.step.text} "
                         f"{_detail(state, graduation, repo_name, issue_state, issue_ref)}")
        lines.append("")
    if len(graduations) > MAX_CHECKLISTS:
        more = [code(g.feature, 80) for g in graduations[MAX_CHECKLISTS:]]
        lines += [f"{len(more)} more features graduate in this PR:", ""] + bullet_list(more) + [""]
    return lines


def _detail(state: StepState, graduation: Graduation, repo_name: str, issue_state: str | None,
            issue_ref: TrackingRef | None) -> str:
    """What follows a step's text.

    That is done and how it shows, not yet and why, or who does it."""
    if state.state == DONE:
        return f"— done: {state.detail}"
    if state.state == OPEN:
        return f"— **not yet**: {state.detail}"
    if state.state == OPTIONAL:
        return f"— {state.detail}"
    if state.step.number != 7:
        return "— for a person"
    ref = graduation.tracking
    if ref is None:
        return "— for a person (the bot does not know the tracking issue)"
    known = f" ({issue_state})" if issue_state and issue_ref is not None and _same(ref, issue_ref, repo_name) else ""
    return f"— for a person: tracking issue {code(ref.render(repo_name), 120)}{known}"


def _same(a: TrackingRef, b: TrackingRef, repo_name: str) -> bool:
    return a.render(repo_name).lower() == b.render(repo_name).lower()
