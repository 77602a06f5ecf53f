"""Judging a tree with another revision's policy: ``policy-check run --policy-from REV``.

What counts as a finding is decided by the *policy*: the ``[tool.policy-check]``
settings of ``pyproject.toml``, the baseline file and the ``# policy: ignore[...]``
comments. A pull request's tree carries all three, so a pull request that adds a
violation could, in the same diff, ignore the rule, exclude the file, accept the
finding in the baseline or suppress it on its line, and a check that takes its
policy from the tree it checks would be green.

``--policy-from REV`` evaluates the tree twice: with its own policy (the usual run,
whose findings are reported as usual) and with REV's: the settings and the baseline
read from git at REV, and only the suppression comments REV already had
(`SuppressionJudge`: a comment is REV's when the same file at REV has a line with
the same text, stripped, so moving code keeps its comments). A finding that REV's
policy reports and the tree's does not is *hidden by the policy change*: reported
with what hid it (`Hidden`), and failing the check unless a maintainer approved
the change (``--approved-policy-change``). The tree's policy may add findings
(tightening is fine); it cannot take one away unseen.

A rule may read files beside the code that a pull request can change: EXP008 reads
the pytest configuration. Each rule declares them (`Rule.configuration`), and they
are read at REV too. They are not a policy the base imposes on the tree: what pytest
will use once the pull request is merged is the tree's configuration, so both
evaluations check that one. A pull request that weakens it gets the EXP008 finding
under either policy. One that also hides that finding (a new suppression comment in
``pytest.ini``, ``ignore``, ``per-file-ignores``, a baseline entry) has it reported
as hidden, the reason naming the configuration's change from REV's.

The second evaluation reuses the first's facts (one in-memory `cache.FactsCache`
shared by both): it reads and hashes each file again but parses none, unless REV's
settings make other files worth a complete parse (another experimental package).

Git runs with a list argv, never a shell. REV is checked with ``git rev-parse
--verify REV^{commit}`` and then read only by its commit id; what is read at REV is
bounded in size; a path absent at REV, or there as anything but a regular file (a
directory, a symbolic link, a submodule), is "absent at base": no settings (the
defaults), no baseline, no suppression comments. Every error (git missing, not a
repository, an unknown revision, unreadable settings or baseline at REV) is a
`PolicyChangeError`, exit status 2.
"""

from __future__ import annotations

import fnmatch
import io
import json
import os
import subprocess
import tokenize
from collections import Counter
from dataclasses import fields
from pathlib import Path
from typing import NamedTuple, Optional

from . import baseline as baseline_module
from .store import read_bounded
from ..model.config import ConfigError, Settings, from_table, under
from .context import Context
from ..model.project import excluder
from ..rules.base import Finding
from ..rules.registry import RULES, check_settings, matches
from .runner import Result, check

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

PYPROJECT = "pyproject.toml"
MAX_POLICY_BYTES = baseline_module.MAX_BYTES  # a settings, baseline or pytest file at REV; more is an error
MAX_SOURCE_BYTES = 16 * 1024 * 1024  # a file holding suppressions, at REV; more: absent (its comments are new)
MAX_TOTAL_BYTES = 256 * 1024 * 1024  # everything one call reads at REV
_MAX_REVISION = 256  # characters of REV
_PATHS_PER_CALL = 256  # paths per ``git ls-tree`` argv
_GIT_TIMEOUT = 120  # seconds
_REGULAR = (b"100644", b"100755")  # git's modes of a regular file
# settings that decide the layout (which modules are core, experimental, tests...):
# `Settings` attribute -> key in pyproject.toml
_LAYOUT = {
    "package": "package",
    "experimental_package": "experimental-package",
    "aot_modules": "aot-modules",
    "docs": "docs",
    "stable_tests": "stable-tests",
    "experimental_tests": "experimental-tests",
    "examples": "examples",
    "type_checking_imports": "type-checking-imports",
}


class PolicyChangeError(ValueError):
    """``--policy-from`` cannot be honoured; the message says why (exit status 2)."""


# reading a revision ---------------------------------------------------------------


def _git(root: Path, *args, stdin: Optional[bytes] = None) -> subprocess.CompletedProcess:
    # the revision's own objects: a `git replace` ref (which code the audit ran could have
    # added to the repository) must not make the base seem to hold other text
    command = ["git", "-C", str(root), *args]
    env = {**os.environ, "GIT_NO_REPLACE_OBJECTS": "1"}
    try:
        if stdin is None:
            return subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=_GIT_TIMEOUT,
                                  env=env)
        return subprocess.run(command, input=stdin, capture_output=True, timeout=_GIT_TIMEOUT, env=env)
    except FileNotFoundError:
        raise PolicyChangeError("--policy-from needs git, and there is no `git` on the PATH") from None
    except subprocess.TimeoutExpired:
        raise PolicyChangeError(f"--policy-from: `git {args[0]}` took more than {_GIT_TIMEOUT} s") from None


def _said(process: subprocess.CompletedProcess) -> str:
    return process.stderr.decode("utf-8", "replace").strip() or f"exit status {process.returncode}"


class Revision:
    """A commit of the git repository that holds the project at `root`, read by
    its commit id. `name` is the revision as given (``origin/main``, a SHA)."""

    def __init__(self, root: Path, name: str):
        self.root, self.name = Path(root), name
        if (
            not name
            or len(name) > _MAX_REVISION
            or name.startswith("-")
            or any(c.isspace() or not c.isprintable() for c in name)
        ):
            raise PolicyChangeError(f"--policy-from: {name!r} is not a git revision")
        inside = _git(self.root, "rev-parse", "--is-inside-work-tree")
        if inside.returncode != 0 or inside.stdout.strip() != b"true":
            raise PolicyChangeError(f"--policy-from: {self.root} is not in a git work tree ({_said(inside)})")
        found = _git(self.root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}")
        commit = found.stdout.decode("ascii", "replace").strip()
        if found.returncode != 0 or not commit:
            raise PolicyChangeError(
                f"--policy-from: unknown revision {name!r}: no such commit in the repository at {self.root} "
                "(a CI checkout may need the base commit fetched: fetch-depth 0)"
            )
        self.commit = commit

    def __str__(self) -> str:
        return self.name if self.name == self.commit else f"{self.name} ({self.commit[:12]})"

    def read(self, paths, limit: int, too_big_is_error: bool = True) -> dict:
        """rel -> the bytes of each of `paths` (relative to the root) at this
        revision, or None where it is absent there (not in its tree, or not a
        regular file). A file over `limit` bytes is an error, or absent unless
        `too_big_is_error`."""
        wanted = sorted(set(paths))
        found = dict.fromkeys(wanted)
        blobs, total = {}, 0
        for start in range(0, len(wanted), _PATHS_PER_CALL):
            chunk = [os.fsencode(rel) for rel in wanted[start:start + _PATHS_PER_CALL]]
            listed = _git(self.root, "--literal-pathspecs", "ls-tree", "-z", "-l", self.commit, "--", *chunk)
            if listed.returncode != 0:
                raise PolicyChangeError(f"--policy-from: cannot list files at {self}: {_said(listed)}")
            for record in listed.stdout.split(b"\0"):
                meta, _, name = record.partition(b"\t")
                parts = meta.split()
                rel = os.fsdecode(name)
                if len(parts) != 4 or rel not in found or parts[1] != b"blob" or parts[0] not in _REGULAR:
                    continue
                size = int(parts[3])
                if size > limit:
                    if too_big_is_error:
                        raise PolicyChangeError(f"--policy-from: {rel} at {self} is larger than {limit} bytes")
                    continue
                total += size
                if total > MAX_TOTAL_BYTES:
                    raise PolicyChangeError(f"--policy-from: more than {MAX_TOTAL_BYTES} bytes to read at {self}")
                blobs[rel] = parts[2]
        contents = self._blobs(set(blobs.values())) if blobs else {}
        for rel, oid in blobs.items():
            found[rel] = contents[oid]
        return found

    def _blobs(self, oids: set) -> dict:
        """object id -> bytes, with one ``git cat-file --batch``."""
        ordered = sorted(oids)
        answer = _git(self.root, "cat-file", "--batch", stdin=b"".join(oid + b"\n" for oid in ordered))
        if answer.returncode != 0:
            raise PolicyChangeError(f"--policy-from: cannot read files at {self}: {_said(answer)}")
        out, at, contents = answer.stdout, 0, {}
        for oid in ordered:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            if len(header) != 3 or header[0] != oid or header[1] != b"blob":
                raise PolicyChangeError(f"--policy-from: git answered {out[at:end][:80]!r} for {oid.decode()}")
            size = int(header[2])
            contents[oid] = out[end + 1:end + 1 + size]
            at = end + 1 + size + 1
        return contents


# a policy -------------------------------------------------------------------------


class Policy(NamedTuple):
    """What decides which findings count, as one revision has it."""

    settings: Settings
    table: dict  # the [tool.policy-check] table as written ({} without one)
    baseline: Optional[baseline_module.Baseline]
    # rule id -> what its `Rule.configuration` reads here (None: none), for each rule declaring one
    configurations: dict


def _settings_table(text: str, where: str) -> Optional[dict]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PolicyChangeError(f"{where}: cannot read settings: {error}") from None
    tool = document.get("tool")
    return tool.get("policy-check") if isinstance(tool, dict) else None


def _decoded(data: Optional[bytes]) -> Optional[str]:
    return None if data is None else data.decode("utf-8", "replace")


# rule id -> its `Rule.configuration`, for each rule declaring one
_CONFIGURED = {rule_id: rule.configuration for rule_id, rule in RULES.items() if rule.configuration is not None}


def _configurations(text_of) -> dict:
    return {rule_id: config.read(text_of) for rule_id, config in _CONFIGURED.items()}


def read_policy(revision: Revision, baseline_rel: Optional[str]) -> Policy:
    """The policy at `revision`: its settings (defaults without a
    ``[tool.policy-check]``), its baseline at `baseline_rel` (None: no baseline),
    what each rule's `Rule.configuration` reads. Raises `PolicyChangeError` for settings or a
    baseline that cannot be read."""
    configured = dict.fromkeys(name for config in _CONFIGURED.values() for name in config.files)
    wanted = list(dict.fromkeys([PYPROJECT, *configured] + ([baseline_rel] if baseline_rel else [])))
    files = revision.read(wanted, MAX_POLICY_BYTES)
    where = f"{PYPROJECT} at {revision}"
    table, settings = {}, Settings()
    if files[PYPROJECT] is not None:
        try:
            text = files[PYPROJECT].decode("utf-8")
        except UnicodeDecodeError as error:
            raise PolicyChangeError(f"{where}: cannot read settings: {error}") from None
        found = _settings_table(text, where)
        if found is not None:
            try:
                settings = from_table(found)
                check_settings(settings)
            except ConfigError as error:
                raise PolicyChangeError(f"{where}: {error}") from None
            table = found
    accepted = None
    if baseline_rel and files[baseline_rel] is not None:
        accepted = baseline_module.loads(files[baseline_rel], f"{baseline_rel} at {revision}")
    return Policy(settings, table, accepted, _configurations(lambda name: _decoded(files[name])))


def tree_policy(root: Path, settings: Settings, accepted) -> Policy:
    """The policy of the working tree at `root` (`settings` already read and checked)."""
    table = {}
    path = root / PYPROJECT
    if path.is_file():
        found = _settings_table(path.read_text(encoding="utf-8"), str(path))
        table = found if isinstance(found, dict) else {}

    def text_of(name: str) -> Optional[str]:
        try:
            return (root / name).read_text(encoding="utf-8", errors="replace") if (root / name).is_file() else None
        except OSError:
            return None

    return Policy(settings, table, accepted, _configurations(text_of))


# suppression comments -------------------------------------------------------------


def _text(data: Optional[bytes], python: bool) -> Optional[str]:
    """`data` as text, as the suppression comments in it were read."""
    if data is None:
        return None
    encoding = "utf-8"
    if python:
        try:
            encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        except (SyntaxError, LookupError):
            pass
    try:
        return data.decode(encoding, "replace")
    except LookupError:
        return data.decode("utf-8", "replace")


# two ways of numbering lines: what tokenize counts (``\n``) and str.splitlines'
_SPLITS = (lambda text: text.split("\n"), str.splitlines)


class SuppressionJudge:
    """Which of the tree's suppression comments the base revision already had: the
    base policy applies only those (`__call__`, the runner's `suppressions`).

    A comment is the base's when the same file at the base has a line whose text,
    stripped, is that of the comment's line, counted (two such lines need two at
    the base). Moving code, or lines around it, keeps its comments the base's; a new
    comment, or an old one on a line that changed (another import behind the same
    comment), is new; so is every comment of a file that is absent at the base
    (added, or renamed). `new` maps ``(path, line)`` to the new ones, to say what
    hid a finding."""

    def __init__(self, root: Path, revision: Revision):
        self.root, self.revision = Path(root), revision
        self.new: dict = {}

    def __call__(self, found: dict) -> dict:
        at_base = self.revision.read(found, MAX_SOURCE_BYTES, too_big_is_error=False) if found else {}
        kept = {}
        for path in sorted(found):
            python = path.endswith(".py")
            try:
                here = _text(read_bounded(self.root / path, MAX_SOURCE_BYTES), python)
            except (OSError, ValueError):
                here = None
            base = _text(at_base.get(path), python)
            by_line = {}
            for s in found[path]:
                by_line.setdefault(s.line, []).append(s)
            counts = {}
            for number in sorted(by_line):
                items = by_line[number]
                line, split = _line_of(here, number, items)
                if line is not None and base is not None:
                    left = counts.setdefault(split, Counter(text.strip() for text in split(base)))
                    if left[line] > 0:
                        left[line] -= 1
                        kept.setdefault(path, []).extend(items)
                        continue
                self.new[(path, number)] = items
        return kept


def _line_of(text: Optional[str], number: int, items: list) -> tuple:
    """``(stripped text, split)`` of line `number` of `text`, as the way of
    numbering lines (`_SPLITS`) that puts the comments `items` on it; ``(None,
    None)`` when neither does (then the comments count as new)."""
    if text is None:
        return None, None
    for split in _SPLITS:
        lines = split(text)
        if 0 < number <= len(lines) and all(s.text in lines[number - 1] for s in items):
            return lines[number - 1].strip(), split
    return None, None


# comparing the two evaluations ----------------------------------------------------


class Hidden(NamedTuple):
    """A finding the base revision's policy reports and the tree's hides."""

    finding: Finding
    reason: str  # what hid it, in words: "hidden by `ignore = [\"EXP\"]` added in pyproject.toml"
    # what hid it, as stable codes (the JSON report's "causes"): "select", "ignore",
    # "exclude", "extend-exclude", "per-file-ignores", "suppression", "baseline",
    # "setting:<key>" (a layout setting such as experimental-package),
    # a rule's configuration code, beside another (`Rule.configuration`: "pytest-config",
    # the pytest configuration EXP008 reads changed),
    # "policy" (none of those could be named)
    causes: tuple
    fingerprint: Optional[baseline_module.Fingerprint]


class Comparison(NamedTuple):
    head: Result  # the tree under its own policy (what is reported as usual)
    base: Result  # the tree under the base revision's policy
    hidden: list  # `Hidden`
    revision: Revision


def _key(finding) -> tuple:
    # The two evaluations check the same bytes, so a finding is at the same place in
    # both; its message may differ (it can name a setting), so it is not compared.
    return finding.path, finding.line, finding.column, finding.rule


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def _setting(key: str, head: Policy, base: Policy) -> str:
    """How the tree's ``pyproject.toml`` changed `key`, in words."""
    if key not in head.table:
        was = f" (base: `{key} = {_toml(base.table[key])}`)" if key in base.table else ""
        return f"`{key}` removed in {PYPROJECT}{was}"
    now = f"`{key} = {_toml(head.table[key])}`"
    if key not in base.table:
        return f"{now} added in {PYPROJECT}"
    return f"{now} changed in {PYPROJECT} (base: `{key} = {_toml(base.table[key])}`)"


def _per_file(settings: Settings, finding) -> list:
    """The ``per-file-ignores`` entries that drop `finding` (as the runner matches them)."""
    return [
        (glob, ids) for glob, ids in settings.per_file_ignores
        if (fnmatch.fnmatchcase(finding.path, glob) or under(finding.path, glob)) and matches(finding.rule, ids)
    ]


def _causes(finding, fp, head: Policy, base: Policy, judge: SuppressionJudge, select, baselined: bool) -> list:
    """``(code, words)`` for what in the tree's policy hides `finding`."""
    hs, bs = head.settings, base.settings
    causes = []
    if matches(finding.rule, hs.ignore) and not matches(finding.rule, bs.ignore):
        causes.append(("ignore", f"hidden by {_setting('ignore', head, base)}"))
    if not select and hs.select and not matches(finding.rule, hs.select):
        causes.append(("select", f"hidden by {_setting('select', head, base)}"))
    if excluder(hs.exclude)(finding.path) and not excluder(bs.exclude)(finding.path):
        named = False
        for key in ("extend-exclude", "exclude"):
            written = head.table.get(key, ())
            for pattern in [written] if isinstance(written, str) else written:
                if isinstance(pattern, str) and pattern not in bs.exclude and excluder([pattern])(finding.path):
                    causes.append((key, f"hidden by `{key}` entry {json.dumps(pattern)} added in {PYPROJECT}"))
                    named = True
                    break
        if not named:
            causes.append(("exclude", f"hidden by `exclude` changed in {PYPROJECT}"))
    for glob, ids in _per_file(hs, finding):
        if (glob, ids) not in bs.per_file_ignores and not _per_file(bs, finding):
            causes.append(("per-file-ignores", f"hidden by `per-file-ignores` entry {json.dumps(glob)} = "
                                               f"{_toml(list(ids))} added in {PYPROJECT}"))
            break
    for s in judge.new.get((finding.path, finding.line), ()):
        if s.problem is None and finding.rule in s.ids:
            causes.append(("suppression", f"hidden by a new suppression comment `{s.text}` "
                                          "(no line of this file at base has it)"))
            break
    if baselined:
        entry = f" ({fp.rule} in {fp.module}, {fp.scope or 'file'}: {fp.subject})" if fp else ""
        if fp is not None and base.baseline is not None and fp in base.baseline.counts:
            causes.append(("baseline", f"accepted by a baseline entry whose count was raised at head{entry}"))
        else:
            causes.append(("baseline", f"accepted by a baseline entry added at head{entry}"))
    if not causes:
        for field in fields(Settings):
            key = _LAYOUT.get(field.name)
            if key is not None and getattr(hs, field.name) != getattr(bs, field.name):
                causes.append((f"setting:{key}", f"hidden by {_setting(key, head, base)}"))
    config = _CONFIGURED.get(finding.rule)
    was, now = base.configurations.get(finding.rule), head.configurations.get(finding.rule)
    if config is not None and was != now:
        causes.append((config.code, f"the {config.what} {finding.rule} reads changed in this pull request: "
                                    f"{config.words(was)} at base, {config.words(now)} in this tree"))
    if not causes or all(code == getattr(config, "code", None) for code, _ in causes):
        causes.insert(0, ("policy", "hidden by this pull request's policy change"))
    return causes


def compare(head: Result, base: Result, head_policy: Policy, base_policy: Policy, judge: SuppressionJudge,
            select=()) -> list:
    """`Hidden` for each finding `base` reports and `head` does not (matched by
    place and rule, counted), with what hid it."""
    left = Counter(_key(f) for f in head.findings)
    accepted = Counter(_key(f) for f in head.baselined)
    hidden = []
    for index, finding in enumerate(base.findings):
        key = _key(finding)
        if left[key] > 0:
            left[key] -= 1
            continue
        baselined = accepted[key] > 0
        if baselined:
            accepted[key] -= 1
        fp = base.fingerprints[index] if base.fingerprints is not None else None
        causes = _causes(finding, fp, head_policy, base_policy, judge, select, baselined)
        hidden.append(Hidden(finding, "; ".join(words for _, words in causes), tuple(code for code, _ in causes), fp))
    return hidden


# the two evaluations --------------------------------------------------------------


def baseline_at_base(root: Path, path: Optional[Path]) -> tuple:
    """Where the base's baseline is, for the baseline file `path` the tree's run
    reads (None: no baseline, ``--no-baseline``): ``(rel, None)`` for a file
    inside the project, read at the base revision; ``(None, "outside")`` for one
    outside it, which both evaluations read alike (no pull request changes it)."""
    if path is None:
        return None, None
    try:
        rel = (Path(path).parent.resolve() / Path(path).name).relative_to(root).as_posix()
    except ValueError:
        return None, "outside"
    return rel, None


def evaluate(context: Context, revision: str, *, paths=(), select=(), ignore=(), jobs=None,
             progress=True) -> Comparison:
    """The tree of `context` under its own policy (its settings, its baseline read
    from its baseline file, every suppression comment) and under `revision`'s, and
    what the first hides of the second's findings."""
    root, baseline = context.root, context.baseline
    at = Revision(root, revision)
    rel, outside = baseline_at_base(root, context.baseline_path)
    base_policy = read_policy(at, rel)
    if outside:
        base_policy = base_policy._replace(baseline=baseline)
    head_policy = tree_policy(root, context.settings, baseline)
    shared = context.facts_cache()
    common = dict(paths=paths, select=select, ignore=ignore, jobs=jobs, facts_cache=shared)
    head = check(context, progress=progress, **common)
    comments = SuppressionJudge(root, at)
    try:
        base = check(context.with_policy(base_policy.settings, base_policy.baseline), fingerprints=True,
                     progress=False, suppressions=comments, **common)
    except PolicyChangeError:
        raise
    except ValueError as error:
        raise PolicyChangeError(f"the policy at {at}: {error}") from None
    shared.save()
    hidden = compare(head, base, head_policy, base_policy, comments, select)
    return Comparison(head, base, hidden, at)


def judge(context: Context, revision: str, approved: bool = False, **options) -> Result:
    """`evaluate`, as one result to report: the tree's findings as usual, plus
    those the policy change hides (`Result.hidden`), which fail the check unless
    `approved`."""
    comparison = evaluate(context, revision, **options)
    result = comparison.head
    result.hidden = comparison.hidden
    result.policy_from = (revision, comparison.revision.commit)
    result.approved = approved
    return result
