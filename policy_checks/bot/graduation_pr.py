"""A graduation PR, recognised from the PR's file listing, and the state of each graduation step.

The PR check already lists the PR's files with their diffs (``pull.get_files()``): each
entry has a ``filename``, a ``status`` (added, removed, modified, renamed, copied, changed,
unchanged), a ``previous_filename`` for a rename or copy, and a ``patch`` that GitHub leaves
out for binary files and diffs too large to show. Everything here is read from that
listing: no request of its own.

A PR graduates feature ``<f>`` when it removes ``flashinfer/experimental/<f>/FEATURE.toml``
(or renames it away) AND a core Python file's diff removes an ``@flashinfer_experimental_api``
decorator line and adds an ``@flashinfer_api`` one. A PR that removes the record and the
feature's code without that swap is a removal, not a graduation.

Each of the seven steps of `policy_checks.graduation.GRADUATION_STEPS` gets a state:

* step 2 (move the code): a file of ``flashinfer/experimental/<f>/`` other than its record
  and README was removed, renamed to a path outside the experimental package, or turned
  into a shim (a line ``__graduated_to__ = "flashinfer.x"`` added under the directory);
* step 3 (the decorator swap): the swap is seen and no added line (in a core file or in
  the feature's own directories) uses ``@flashinfer_experimental_api`` or
  ``@experimental_backend`` or calls a ``require_experimental_*`` gate;
* step 5 (AOT): done when the AOT module (``flashinfer/aot.py``) changes, else not part
  of this PR (needed only when the kernels ship prebuilt);
* step 6 (tests): a test of ``tests/experimental/<f>/`` was renamed into the stable lane,
  or removed while a stable test was added, and no test stays changed under the
  experimental lane;
* steps 1, 4 and 7 are for a person; step 7 names the tracking issue when the bot knows
  it (the removed record's ``tracking_issue``, else the PR's ``Tracking issue:``).

Patches are untrusted: each is scanned once, line by line, with anchored regexes that do
not backtrack more than a line, so the work is linear in the size of the listing. Text
from the listing reaches the comment only through `markdown.code`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ..config import DEFAULT, Settings, under
from ..features import SHIM_MARKER, TrackingRef, is_feature_name, parse as parse_record
from ..graduation import GRADUATION_STEPS, GraduationStep
from .markdown import bullet_list, code

RECORD = "FEATURE.toml"
NOT_CODE = frozenset({RECORD, "README.md"})  # a feature's paperwork: removing it moves no code
EXPERIMENTAL_API = "flashinfer_experimental_api"
STABLE_API = "flashinfer_api"
BACKEND_MARKER = "experimental_backend"
SHIM_BINDING = SHIM_MARKER  # what ``policy-check graduate`` binds in the shim package's __init__
MAX_RECORD_CHARS = 64 * 1024  # a FEATURE.toml is a few hundred bytes; a longer "record" is not parsed
MAX_CHECKLISTS = 3  # features whose checklist one comment shows

# Step states.
DONE = "done"
OPEN = "open"
OPTIONAL = "optional"  # not in this PR, and not always needed
PERSON = "person"

_DECORATOR_RE = re.compile(r"[ \t]*@[ \t]*([\w.]+)")  # anchored; [\w.]+ is greedy with nothing after it
_GATE_RE = re.compile(r"\brequire_experimental_\w*")
_OPEN_PAREN_RE = re.compile(r"[ \t]*\(")
_SHIM_RE = re.compile(r"[ \t]*" + SHIM_BINDING + r"[ \t]*(?::[ \t]*str[ \t]*)?=[ \t]*([\"'])([A-Za-z_][\w.]*)\1")
_NOT_CALLS = ("def ", "async def ", "import ", "from ", "#")


def changed_lines(patch: str | None) -> Iterator[tuple[str, str]]:
    """``("+", text)`` for each added line and ``("-", text)`` for each removed one of a unified diff.

    Lines are split at ``\\n`` only (a Unicode line separator inside a line does not start a
    new diff line); ``+++``/``---`` file headers are skipped.
    """
    for line in (patch or "").split("\n"):
        if not line or line[0] not in "+-" or line.startswith(("+++", "---")):
            continue
        yield line[0], line[1:].rstrip("\r")


def decorator_name(text: str) -> str | None:
    """The last dotted component of the decorator a line applies (``@api_logging.flashinfer_api(...)``)."""
    match = _DECORATOR_RE.match(text)
    return match.group(1).rpartition(".")[2] if match else None


def calls_gate(text: str) -> bool:
    """Whether a line calls a ``require_experimental_*`` gate (not defines, imports or mentions it in a comment)."""
    if text.lstrip().startswith(_NOT_CALLS):
        return False
    # Each match ends a word and its parenthesis test reads only the blanks after it: linear.
    return any(_OPEN_PAREN_RE.match(text, found.end()) for found in _GATE_RE.finditer(text))


def uses_experimental_gate(text: str) -> bool:
    """An experimental decorator or gate call on one line: what a graduated feature must no longer add."""
    return decorator_name(text) in (EXPERIMENTAL_API, BACKEND_MARKER) or calls_gate(text)


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


@dataclass(frozen=True)
class Listed:
    """One entry of the PR's file listing, as the parts this module reads."""

    path: str
    status: str
    previous: str | None  # for renamed and copied files
    patch: str | None  # None: GitHub sent no diff

    @classmethod
    def of(cls, changed) -> Listed:
        """From a PyGithub ``File`` (or anything with its attributes)."""
        status = getattr(changed, "status", None) or "modified"
        previous = getattr(changed, "previous_filename", None) if status in ("renamed", "copied") else None
        return cls(changed.filename, status, previous or None, getattr(changed, "patch", None))


@dataclass(frozen=True)
class StepState:
    """A step of the checklist and what the PR shows of it; ``detail`` is rendered Markdown."""

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
    new_home: str | None = None  # from a shim's ``__graduated_to__``, when the PR adds one
    tracking: TrackingRef | None = None
    steps: list[StepState] = field(default_factory=list)

    @property
    def done(self) -> int:
        return sum(step.done for step in self.steps)


@dataclass
class _Feature:
    """What the listing shows of one feature's directories."""

    record_patch: str | None = None
    removed_record: bool = False
    moved: list[tuple[str, str | None]] = field(default_factory=list)  # (old path, new path or None if removed)
    shims: list[str] = field(default_factory=list)  # files under the directory that bind __graduated_to__
    new_home: str | None = None
    tests_out: list[tuple[str, str | None]] = field(default_factory=list)  # renamed into the stable lane, or removed
    tests_renamed_out: int = 0
    tests_stayed: list[str] = field(default_factory=list)  # added, changed or moved within the experimental lane
    gate_lines: list[str] = field(default_factory=list)  # files of the feature that still add the gate


@dataclass
class _Listing:
    """One pass over the listing: per feature, and for the PR as a whole."""

    features: dict[str, _Feature] = field(default_factory=dict)
    swap_files: list[str] = field(default_factory=list)  # core files swapping the experimental decorator
    gate_files: list[str] = field(default_factory=list)  # core files whose added lines still use the gate
    stable_tests_added: int = 0
    aot_changed: list[str] = field(default_factory=list)

    def feature(self, name: str) -> _Feature:
        return self.features.setdefault(name, _Feature())


def aot_paths(settings: Settings) -> list[str]:
    """The AOT modules as paths: ``flashinfer.aot`` -> ``flashinfer/aot.py`` (or the package directory)."""
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
            feature = seen.feature(name)
            feature.removed_record, feature.record_patch = True, changed.patch
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
        _scan_patch(changed, settings, seen)
    return seen


def _scan_patch(changed: Listed, settings: Settings, seen: _Listing) -> None:
    """The diff of one file: the decorator swap, the gate still added, a shim's new home."""
    if changed.patch is None or changed.status == "removed":
        return
    path = changed.path
    core = not settings.is_experimental_path(path)
    owner = feature_under(path, settings.experimental_dir)  # its tests are step 6's business
    if not core and owner is None:
        return  # the experimental package's own modules: neither a feature nor core
    removed_experimental = added_stable = gate = False
    home = None
    for sign, text in changed_lines(changed.patch):
        if sign == "-":
            removed_experimental = removed_experimental or decorator_name(text) == EXPERIMENTAL_API
            continue
        added_stable = added_stable or decorator_name(text) == STABLE_API
        gate = gate or uses_experimental_gate(text)
        if owner is not None and home is None and SHIM_BINDING in text:
            found = _SHIM_RE.match(text)
            home = found.group(2) if found else None
    if core and path.endswith(".py") and removed_experimental and added_stable:
        seen.swap_files.append(path)
    if gate:
        (seen.gate_files if core else seen.feature(owner).gate_lines).append(path)
    if home is not None and owner is not None:
        feature = seen.feature(owner)
        feature.shims.append(path)
        feature.new_home = feature.new_home or home


def _record_tracking(name: str, patch: str | None) -> TrackingRef | None:
    """The ``tracking_issue`` of a removed record, read back from the removed lines of its diff."""
    if patch is None or len(patch) > MAX_RECORD_CHARS:
        return None
    text = "\n".join(text for sign, text in changed_lines(patch) if sign == "-")
    return parse_record(name, text, quote=code).tracking


def recognise(files: Iterable, tracking: TrackingRef | None = None,
              settings: Settings = DEFAULT) -> list[Graduation]:
    """The features this PR graduates, each with its checklist; empty when the PR graduates none.

    ``files`` is the PR's listing (PyGithub ``File`` objects or `Listed`); ``tracking`` is the
    PR's own tracking reference, named in step 7 when the removed record names none.
    """
    listing = [f if isinstance(f, Listed) else Listed.of(f) for f in files]
    seen = _scan(listing, settings)
    removed = [name for name, feature in seen.features.items() if feature.removed_record]
    if not removed or not seen.swap_files:
        return []
    # Of several records removed, the ones whose code visibly moved graduate; a feature only deleted
    # beside them is being removed. When none visibly moved, each is taken for a graduation.
    relocated = [name for name in removed
                 if seen.features[name].shims or any(new for _, new in seen.features[name].moved)]
    return [_graduation(name, seen, tracking, settings) for name in (relocated or removed)]


def _more(paths: list[str], limit: int = 200) -> str:
    """The first path as code, and how many more there are."""
    first = code(paths[0], limit)
    return first if len(paths) == 1 else f"{first} and {len(paths) - 1} more"


def _files(count: int) -> str:
    return f"{count} file" + ("" if count == 1 else "s")


def _graduation(name: str, seen: _Listing, tracking: TrackingRef | None, settings: Settings) -> Graduation:
    feature = seen.features[name]
    code_dir = f"{settings.experimental_dir}/{name}/"
    tests_dir = f"{settings.experimental_tests}/{name}/"
    states: dict[int, StepState] = {}
    steps = {step.number: step for step in GRADUATION_STEPS}

    moved_away = [new for _, new in feature.moved if new]
    if feature.moved or feature.shims:
        parts = []
        if moved_away:
            parts.append(f"{_files(len(moved_away))} moved out of {code(code_dir, 200)}, "
                         f"e.g. to {code(moved_away[0], 200)}")
        deleted = len(feature.moved) - len(moved_away)
        if deleted:
            parts.append(f"{_files(deleted)} removed from {code(code_dir, 200)}")
        if feature.shims:
            parts.append(f"a re-export shim in {_more(feature.shims)}")
        states[2] = StepState(steps[2], DONE, "; ".join(parts))
    else:
        states[2] = StepState(steps[2], OPEN, f"no code of {code(code_dir, 200)} was moved out or removed in this PR")

    gate_files = seen.gate_files + feature.gate_lines
    if gate_files:
        states[3] = StepState(steps[3], OPEN, f"the swap is seen in {_more(seen.swap_files)}, but an added line still "
                                              f"uses an experimental decorator or gate in {_more(gate_files)}")
    else:
        states[3] = StepState(steps[3], DONE, f"seen in {_more(seen.swap_files)}")

    if seen.aot_changed:
        states[5] = StepState(steps[5], DONE, f"{_more(seen.aot_changed)} changed")
    else:
        states[5] = StepState(steps[5], OPTIONAL, "not in this PR (only needed if kernels ship prebuilt)")

    renamed_out = feature.tests_renamed_out
    removed_tests = len(feature.tests_out) - renamed_out
    out = renamed_out + (removed_tests if seen.stable_tests_added else 0)
    if feature.tests_stayed:
        states[6] = StepState(steps[6], OPEN, f"{_files(len(feature.tests_stayed))} still changed under "
                                              f"{code(tests_dir, 200)}: {_more(feature.tests_stayed)}")
    elif out:
        states[6] = StepState(steps[6], DONE, f"{_files(out)} moved out of {code(tests_dir, 200)} into the stable lane")
    elif removed_tests:
        states[6] = StepState(steps[6], OPEN, f"tests were removed from {code(tests_dir, 200)} but no stable test "
                                              f"was added under {code(settings.stable_tests + '/', 200)}")
    else:
        states[6] = StepState(steps[6], OPEN, f"no test of {code(tests_dir, 200)} was moved to the stable lane "
                                              "in this PR")

    ref = _record_tracking(name, feature.record_patch) or tracking
    for number in (1, 4, 7):
        states[number] = StepState(steps[number], PERSON, "for a person")
    graduation = Graduation(feature=name, new_home=feature.new_home, tracking=ref)
    graduation.steps = [states[step.number] for step in GRADUATION_STEPS]
    return graduation


def checklist_lines(graduations: list[Graduation], repo_name: str, issue_state: str | None = None,
                    issue_ref: TrackingRef | None = None) -> list[str]:
    """The comment's "Graduation checklist" section(s) as Markdown lines; empty without a graduation.

    ``issue_state`` is the state of ``issue_ref`` when the bot read that issue (the PR's own
    tracking reference); step 7 shows it beside the issue when the checklist names the same one.
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
    """What follows a step's text: done and how it shows, not yet and why, or who does it."""
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
