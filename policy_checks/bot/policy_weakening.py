"""Policy weakenings: what a pull request changes to let more through.

A weakening loosens the checker, its baseline, the test lanes or the gates themselves.
Each is judged from the files' texts at the PR's base and head commits
(`revisions.FileAtRevisions`). The judgement goes by what the texts mean, not by how the
diff's lines look.

* **the checker's settings**: ``[tool.policy-check]`` of the root ``pyproject.toml``. It is
  read at both commits with the checker's own ``config.from_table`` and
  ``registry.check_settings``. Weakenings are:

  - rules the head stops checking (``select``, ``ignore``);
  - per-file ignores added;
  - paths excluded (``exclude``, ``extend-exclude``);
  - the package and path settings changed;
  - ``type-checking-imports`` turned off;
  - a head the checker cannot read.

* **suppressions**: a ``policy: ignore[...]`` comment at the head of a changed file. The file
  must be one the checker reads suppressions in. Python is tokenized as the checker does.
  Docs pages, ``FEATURE.toml`` and pytest's configuration are read a line at a time. It is a
  weakening when its stripped line is not at the base as often. A copied line silences a
  second finding.
* **the test lanes**, as EXP008 reads them. Each counts when the base does not hold it:

  - the pytest configuration ``pytest tests/`` would use at each commit. The search follows
    pytest's own order, in ``tests/`` and then at the root, as EXP008 follows it. Every key
    counts but a few harmless ones (markers, warnings filters, logging, timeouts...);
  - any change to the root ``conftest.py``;
  - hook statements of the lane's other conftests that re-admit or add tests
    (`lane_weakening`);
  - workflows' pytest arguments that undo the isolation (`lane_weakening`).

* **the gates**:

  - a changed file of ``.github/workflows/`` or ``.github/actions/`` that mentions
    ``policy-check``, ``policy_checks`` or ``experimental-track``. The mention may be at
    either commit, or in its name;
  - such a file that can post a commit status or a check at the head (`status_power`). A
    status named at run time is the gate's status too;
  - any change to ``CODEOWNERS``, ``.github/CODEOWNERS`` or ``docs/CODEOWNERS``.

* **the baseline**: ``policy-check-baseline.json`` at the root, however it arrives. It may be
  added, modified, renamed or copied onto that name. Entries are compared between the two
  texts (`baseline_diff.baseline_texts_change`). Weakenings are:

  - debt added;
  - an entry moved under a module that does not exist at the head. Such an entry accepts its
    finding in any module;
  - lines that are no entry;
  - a file the checker would refuse.

* **what could not be read** (fail closed): a needed file GitHub would not send whole.

Tightening is never a weakening: ignores removed, rules added, debt paid off.

Each weakening has a key: 16 hex digits of SHA-256 over what it is. A maintainer approves a
set of keys. A later push that brings a weakening with a new key needs a new approval. A
change that cannot be judged is keyed by its text at the head. Such changes are a workflow,
``CODEOWNERS`` or the root ``conftest.py``. What could not be read is keyed by the head
commit. So any further change needs approval again.

Everything here is pure: no request. Every piece of PR text reaches the Markdown through
`markdown.code`.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import re
import shlex
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from ..model.config import ConfigError, Settings, from_table
from ..model.facts import python_suppressions, text_suppressions
from ..rules.registry import ALL_IDS, check_settings, matches, selected_ids
from ..model.markers import RECORD
from ..rules import exp008
from ..rules.readers.workflows import is_workflow_file
from . import lane_weakening as lanes
from .baseline_diff import BASELINE_FILE, BaselineChange, BaselineEntry
from .markdown import code
from .revisions import FileAtRevisions

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

PYPROJECT = "pyproject.toml"
# pytest's own search order in a directory: the first holding its configuration is the one it uses
PYTEST_FILES = exp008.CONFIG_FILES
# ... asked of the stable lane's directory first, then of each directory above it (`pytest tests/`).
PYTEST_PATHS = lanes.config_paths()
ROOT_CONFTEST = "conftest.py"
CODEOWNERS_FILES = ("CODEOWNERS", ".github/CODEOWNERS", "docs/CODEOWNERS")
CI_DIRS = (".github/workflows/", ".github/actions/")
GATE_WORDS = ("policy-check", "policy_checks", "experimental-track")
# pytest settings that do not decide what is collected, imported or run (everything else counts).
HARMLESS_PYTEST_KEYS = frozenset({
    "markers", "filterwarnings", "minversion", "required_plugins", "xfail_strict", "timeout", "timeout_method",
    "faulthandler_timeout", "console_output_style", "cache_dir", "empty_parameter_set_mark", "junit_family",
    "junit_suite_name", "junit_logging", "junit_log_passing_tests", "junit_duration_report", "log_cli",
    "log_cli_level", "log_cli_format", "log_cli_date_format", "log_level", "log_format", "log_date_format",
    "log_file", "log_file_level", "log_file_format", "log_file_date_format", "log_file_mode", "log_auto_indent",
    "verbosity_assertions", "verbosity_test_cases", "truncation_limit_lines", "truncation_limit_chars",
})
# Settings that say where things are: any change to them moves what the checker sees.
_LAYOUT = (("package", "package"), ("experimental_package", "experimental-package"), ("aot_modules", "aot-modules"),
           ("aot_listing", "aot-listing"), ("docs", "docs"), ("stable_tests", "stable-tests"), ("experimental_tests", "experimental-tests"),
           ("examples", "examples"))
# Files whose suppressions the checker reads a line at a time (`needs.Kind.comment_markers`).
_DOCS_MARKERS = ("..", "#")
_CONFIG_MARKERS = ("#", ";")
FEATURE_RECORD = RECORD
MAX_RECORDED_KEYS = 400  # keys one approval names one by one; beyond, the whole set is one key

# Kinds of weakening: the baseline's are shown in the baseline section of the comment.
SETTINGS, SUPPRESSION, PYTEST, CI, CODEOWNERS, BASELINE, UNREAD = (
    "settings", "suppression", "pytest", "ci", "codeowners", "baseline", "unread")


def key_of(*parts) -> str:
    """16 hex digits of SHA-256 over ``parts`` (JSON): what an approval names."""
    data = json.dumps(parts, ensure_ascii=True, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def _digest(text: str | None) -> str:
    return "absent" if text is None else hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Weakening:
    """One weakening: ``text`` is one Markdown line, and ``key`` names it.

    PR text in ``text`` sits inside code spans."""

    kind: str
    text: str
    key: str


@dataclass(frozen=True)
class Changed:
    """A listed file of the PR, as far as this module reads it."""

    path: str
    status: str
    previous: str | None = None  # for renamed and copied files

    @classmethod
    def of(cls, listed) -> Changed:
        """From a PyGithub ``File``, or anything with its attributes."""
        status = getattr(listed, "status", None) or "modified"
        previous = getattr(listed, "previous_filename", None) if status in ("renamed", "copied") else None
        return cls(listed.filename, status, previous or None)


def touched(listed: Iterable[Changed]) -> set[str]:
    """Every path the PR touches.

    That is each listed path, and the previous path of each rename or copy."""
    paths = set()
    for changed in listed:
        paths.add(changed.path)
        if changed.previous:
            paths.add(changed.previous)
    return paths


def _is_ci(path: str) -> bool:
    return path.startswith(CI_DIRS)


def policy_paths(listed: Iterable[Changed]) -> list[str]:
    """The policy files to read at both commits, each at the same path on both sides.

    They are what the PR touches of:

    - the settings;
    - pytest's configuration. All its candidates are read, to know which one pytest uses. A
      changed workflow needs them too;
    - the workflows, CODEOWNERS and the baseline."""
    paths = touched(listed)
    wanted: list[str] = []
    if paths & {*PYTEST_PATHS, ROOT_CONFTEST} or any(map(is_workflow_file, paths)):
        wanted += [*PYTEST_PATHS, ROOT_CONFTEST]  # a workflow's ``-c`` is judged against the configuration
    wanted += sorted(p for p in paths if _is_ci(p) or p in CODEOWNERS_FILES)
    if BASELINE_FILE in paths:
        wanted.append(BASELINE_FILE)
    return list(dict.fromkeys(wanted))


def reads_suppressions(path: str) -> bool:
    """Whether the checker reads suppressions in a file of this name.

    It does in Python code, docs pages and records."""
    name = path.rpartition("/")[2]
    return path.endswith((".py", ".rst")) or name == FEATURE_RECORD


def code_paths(listed: Iterable[Changed]) -> list[tuple[str, str]]:
    """``(path, base path)`` of every listed file to read for suppressions.

    The graduation reader uses them too. They are the Python files, docs pages and feature
    records that exist at the head. A renamed file is read at its previous path at the base. A
    copied one is new, so its suppressions are new ones."""
    out = []
    for changed in listed:
        if changed.status == "removed" or not reads_suppressions(changed.path):
            continue
        renamed = changed.status == "renamed" and changed.previous
        out.append((changed.path, changed.previous if renamed else changed.path))
    return out


# ----- the checker's settings -----------------------------------------------------------------

def settings_at(text: str | None) -> tuple[Settings | None, str | None]:
    """The settings the checker would run with, from a ``pyproject.toml``'s text.

    None as the text means no file: the defaults. The answer may instead be why the checker
    would refuse them."""
    if text is None:
        return Settings(), None
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as error:  # nesting deeper than the parser recurses
        return None, f"pyproject.toml is not valid TOML ({type(error).__name__}: {error})"
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        return None, "[tool] is not a table"
    table = tool.get("policy-check")
    try:
        settings = Settings() if table is None else from_table(table)
        check_settings(settings)
    except ConfigError as error:
        return None, str(error)
    return settings, None


def _ids(ids: Iterable[str]) -> str:
    return ", ".join(code(i, 40) for i in ids)


def settings_weakenings(pyproject: FileAtRevisions) -> list[Weakening]:
    """What ``[tool.policy-check]`` at the head lets through that the base did not."""
    base, _ = settings_at(pyproject.base)
    if base is None:
        base = Settings()  # a base the checker refused: judge the head against the defaults
    head, why = settings_at(pyproject.head)
    if head is None:
        return [Weakening(SETTINGS, f"the checker cannot read `[tool.policy-check]` at the head commit: {code(why)}",
                          key_of(SETTINGS, "unreadable", _digest(pyproject.head)))]
    out = []
    checked_base, checked_head = selected_ids(base), selected_ids(head)
    lost = sorted(checked_base - checked_head)
    if lost:
        out.append(Weakening(SETTINGS, f"`[tool.policy-check]` stops checking {_ids(lost)} (`select`, `ignore`)",
                             key_of(SETTINGS, "rules", lost)))
    before = _per_file(base, ALL_IDS)
    added: dict[str, list[str]] = {}
    for glob, rule in sorted(_per_file(head, checked_head) - before):
        added.setdefault(glob, []).append(rule)
    for glob, rules in added.items():
        out.append(Weakening(SETTINGS, f"`[tool.policy-check]` `per-file-ignores` stops checking {_ids(rules)} "
                                       f"in {code(glob, 200)}", key_of(SETTINGS, "per-file", glob, rules)))
    for pattern in head.exclude:
        if pattern not in base.exclude:
            out.append(Weakening(SETTINGS, f"`[tool.policy-check]` excludes {code(pattern, 200)} from the check "
                                           f"(`exclude`, `extend-exclude`)", key_of(SETTINGS, "exclude", pattern)))
    for attribute, name in _LAYOUT:
        old, new = getattr(base, attribute), getattr(head, attribute)
        if old != new:
            out.append(Weakening(SETTINGS, f"`[tool.policy-check]` `{name}` changes from {code(_shown(old), 200)} "
                                           f"to {code(_shown(new), 200)}", key_of(SETTINGS, "layout", name, new)))
    if base.type_checking_imports and not head.type_checking_imports:
        out.append(Weakening(SETTINGS, "`[tool.policy-check]` `type-checking-imports` is turned off: imports under "
                                       "`if TYPE_CHECKING:` no longer count", key_of(SETTINGS, "type-checking")))
    return out


def _per_file(settings: Settings, checked) -> set[tuple[str, str]]:
    """``(glob, rule id)`` for each rule a per-file ignore silences, of those in ``checked``."""
    return {(glob, rule) for glob, ids in settings.per_file_ignores for rule in checked if matches(rule, ids)}


def _shown(value) -> str:
    return " ".join(value) if isinstance(value, tuple) else str(value)


# ----- suppressions ---------------------------------------------------------------------------

def _lines_with_suppressions(path: str, text: str) -> list[tuple[str, str]]:
    """``(stripped line, suppression text)`` of each suppression naming rule ids.

    The checker would find the same ones."""
    name = path.rpartition("/")[2]
    if path.endswith(".py"):
        found = python_suppressions(text.encode("utf-8", "surrogatepass"))
        lines = text.split("\n")  # tokenize numbers the lines its readline yields: split at "\n"
    else:
        markers = _DOCS_MARKERS if path.endswith(".rst") else ("#",) if is_workflow_file(path) else _CONFIG_MARKERS
        if name not in (*PYTEST_FILES, FEATURE_RECORD) and not path.endswith(".rst") and not is_workflow_file(path):
            return []
        found = text_suppressions(text, markers)
        lines = text.splitlines()
    out = []
    for suppression in found:
        if suppression.ids and 1 <= suppression.line <= len(lines):
            out.append((lines[suppression.line - 1].strip(), suppression.text))
    return out


def suppression_weakenings(files: Iterable[FileAtRevisions]) -> list[Weakening]:
    """Suppressions at the head whose stripped line the base holds fewer times.

    They are new, moved or copied."""
    out = []
    for f in files:
        if f.head is None or not f.complete or "policy" not in f.head:
            continue
        head = _lines_with_suppressions(f.path, f.head)
        if not head:
            continue
        before = Counter(line for line, _ in _lines_with_suppressions(f.path, f.base)) if f.base else Counter()
        seen: Counter = Counter()
        for line, text in head:
            seen[line] += 1
            if seen[line] > before[line]:
                out.append(Weakening(SUPPRESSION, f"{code(f.path, 200)} adds the suppression {code(text, 200)}",
                                     key_of(SUPPRESSION, f.path, line, seen[line])))
    return out


# ----- pytest's configuration -----------------------------------------------------------------

@dataclass
class PytestConfig:
    """The configuration pytest would use.

    It holds its file, and its settings that matter as token tuples."""

    name: str | None = None  # None: no configuration file
    settings: dict[str, tuple] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)  # candidate file -> why pytest cannot read it


def _tokens(value) -> tuple:
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError:
            return tuple(value.split())
    if isinstance(value, list):
        return tuple(str(item) for item in value)
    return (json.dumps(value, default=str),)


def _relevant(table: Mapping) -> dict[str, tuple]:
    return {str(k): _tokens(v) for k, v in table.items() if str(k) not in HARMLESS_PYTEST_KEYS}


def pytest_config(texts: Mapping[str, str | None]) -> PytestConfig:
    """The pytest configuration the stable lane uses at one commit.

    It comes from the texts of `PYTEST_PATHS`; a path not in ``texts`` is absent. It is the
    first candidate holding pytest's configuration, in pytest's order."""
    config = PytestConfig()
    for path in PYTEST_PATHS:
        text = texts.get(path)
        if text is None:
            continue
        name = path.rpartition("/")[2]
        if name.endswith(".toml"):
            try:
                data = tomllib.loads(text)
            except (tomllib.TOMLDecodeError, RecursionError) as error:
                config.unreadable[path] = f"not valid TOML ({type(error).__name__}: {error})"
                continue
            if name != PYPROJECT:
                table = data.get("pytest", {})
            else:
                tool = data.get("tool", {})
                pytest = tool.get("pytest", {}) if isinstance(tool, dict) else {}
                if not isinstance(pytest, dict):
                    config.unreadable[path] = "[tool.pytest] is not a table"
                    continue
                native = {k: v for k, v in pytest.items() if k != "ini_options"}
                if native:
                    table = native
                elif "ini_options" in pytest:
                    table = pytest["ini_options"]
                else:
                    continue
            if not isinstance(table, dict):
                config.unreadable[path] = "pytest's table is not a table"
                continue
            config.name, config.settings = path, _relevant(table)
            return config
        section = "tool:pytest" if name == "setup.cfg" else "pytest"
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error as error:
            config.unreadable[path] = f"not a valid ini file ({type(error).__name__})"
            continue
        if parser.has_section(section):
            config.name, config.settings = path, _relevant(dict(parser.items(section)))
            return config
        if name in ("pytest.ini", ".pytest.ini"):  # pytest's even without a [pytest] section
            config.name = path
            return config
    return config


def pytest_weakenings(files: Mapping[str, FileAtRevisions]) -> list[Weakening]:
    """Changes to what pytest collects and runs.

    They are the configuration's keys, and the root ``conftest.py``. The keys are read in the
    file the stable lane uses at each commit. A configuration added under ``tests/`` replaces
    the root's."""
    base = pytest_config({n: files[n].base for n in PYTEST_PATHS if n in files})
    head = pytest_config({n: files[n].head for n in PYTEST_PATHS if n in files})
    out = []
    where = code(head.name) if head.name else "no configuration file"
    for key in sorted(set(base.settings) | set(head.settings)):
        old, new = base.settings.get(key), head.settings.get(key)
        if old == new:
            continue
        before = code(" ".join(old), 200) if old is not None else "unset"
        after = code(" ".join(new), 200) if new is not None else "unset"
        out.append(Weakening(PYTEST, f"pytest's {code(key, 60)} changes from {before} to {after} (pytest reads "
                                     f"{where}): it decides what the test lanes collect",
                             key_of(PYTEST, key, head.name, new)))
    for name, why in sorted(head.unreadable.items()):
        if files[name].base != files[name].head:
            out.append(Weakening(PYTEST, f"pytest cannot read {code(name)} at the head commit: {code(why, 200)}",
                                 key_of(PYTEST, "unreadable", name, _digest(files[name].head))))
    conftest = files.get(ROOT_CONFTEST)
    if conftest is not None and conftest.base != conftest.head:
        verb = "is added" if conftest.base is None else "is removed" if conftest.head is None else "changes"
        out.append(Weakening(PYTEST, f"the root `conftest.py` {verb}: it can change what every test lane collects",
                             key_of(PYTEST, "conftest", _digest(conftest.head))))
    return out


def lane_weakenings(listed: list[Changed], complete: Mapping[str, FileAtRevisions], pytest_read: bool) -> list[Weakening]:
    """What EXP008 reads beyond the configuration's keys (`lane_weakening`).

    That is conftest hooks of the stable lane that re-admit or add tests. It is also
    workflows' pytest arguments that undo the lane's isolation."""
    out = []
    by_path = {c.path: c for c in listed}
    paths = touched(listed)
    for path in lanes.lane_conftests(paths, complete):
        changed = by_path.get(path)
        f = complete[path]
        base = None if changed and lanes.renamed_into_lane(path, changed.status, changed.previous) else f.base
        out += [Weakening(PYTEST, text, key_of(PYTEST, *parts)) for text, parts in lanes.conftest_weakenings(path, base, f.head)]
    ci = [path for path in sorted(paths) if is_workflow_file(path) and path in complete
          and complete[path].base != complete[path].head]
    if ci:
        configs = {n: complete[n] for n in PYTEST_PATHS if n in complete} if pytest_read else {}
        config_base = pytest_config({n: f.base for n, f in configs.items()}).name if configs else None
        config_head = pytest_config({n: f.head for n, f in configs.items()}).name if configs else None
        for path in ci:
            f = complete[path]
            out += [Weakening(PYTEST, text, key_of(PYTEST, *parts))
                    for text, parts in lanes.workflow_weakenings(path, f.base, f.head, config_base, config_head)]
    return out


# ----- the gates: workflows and CODEOWNERS ----------------------------------------------------

def _mentions_gate(*texts: str | None) -> bool:
    return any(word in (text or "").lower() for text in texts for word in GATE_WORDS)


# What lets a workflow's token write: a scope given ``write`` (or ``write-all``). Scopes that cannot post
# a commit status or a check run are harmless; any other key (``statuses``, ``checks``, a key spelt with
# an escape or quoted oddly) is read as able to. Every pattern starts at a literal and matches classes
# that cannot fail after it: linear.
_WRITE_SCOPE_RE = re.compile(r"""([\w\\-]*)["']?[ \t]*:[ \t]*["']?write\b""", re.IGNORECASE)
_WRITE_ALL_RE = re.compile(r"write-all", re.IGNORECASE)
_TOP_PERMISSIONS_RE = re.compile(r"^permissions[ \t]*:", re.MULTILINE)
SCOPES_WITHOUT_STATUSES = frozenset({
    "contents", "issues", "pull-requests", "packages", "pages", "deployments", "id-token", "actions",
    "discussions", "security-events", "attestations", "repository-projects", "models"})
# The statuses and checks APIs however a step calls them (REST paths, Octokit and PyGithub names, gh),
# and tokens other than the job's own (a secret may be a token with any scope).
STATUS_API_WORDS = ("statuses", "commitstatus", "commit_status", "check-runs", "check_runs", "checks.create",
                    "create_check_run", "createcheckrun", "secrets")


def status_power(path: str, text: str | None) -> str | None:
    """Why a workflow or action at this text can post a commit status or a check.

    None when it cannot. Whatever it names the status counts, ``experimental-track``
    included, built at run time or not.

    The reading is conservative, from the text. Any of these is enough:

    - a token scope other than the harmless ones given ``write`` (``statuses: write``,
      ``checks: write``), or ``write-all``;
    - a workflow with no top-level ``permissions:``. The repository's default token may write;
    - a call of the statuses or checks API, in a workflow or an action;
    - a secret (another token), in a workflow or an action."""
    if text is None:
        return None
    lowered = text.lower().replace("secrets.github_token", "")  # the job's own token: its permissions decide
    if _WRITE_ALL_RE.search(text):
        return "`write-all` permissions"
    for match in _WRITE_SCOPE_RE.finditer(text):
        if match.group(1).lower() not in SCOPES_WITHOUT_STATUSES:
            return f"the permission {code(match.group(0).strip(), 80)}"
    if path.startswith(CI_DIRS[0]) and not _TOP_PERMISSIONS_RE.search(text):
        return "no top-level `permissions:`, so its token has the repository's default permissions, which may write"
    # Whole-line comments say nothing a step does (a ``#`` later in a line may sit inside a string: kept).
    code_lines = "\n".join(line for line in lowered.split("\n") if not line.lstrip().startswith("#"))
    found = next((word for word in STATUS_API_WORDS if word in code_lines), None)
    if found is not None:
        return f"it mentions {code(found, 40)} (the statuses or checks API, or a token of its own)"
    return None


def gate_weakenings(paths: Iterable[str], files: Mapping[str, FileAtRevisions]) -> list[Weakening]:
    """Changed workflows and actions that run the checker or the bot, or can post a status.

    Posting a commit status is judged by `status_power`. Changed CODEOWNERS files count too."""
    out = []
    for path in sorted(set(paths)):
        f = files.get(path)
        if f is None or not f.complete or f.base == f.head:
            continue
        verb = "is added" if f.base is None else "is removed" if f.head is None else "changes"
        if path in CODEOWNERS_FILES:
            out.append(Weakening(CODEOWNERS, f"{code(path)} {verb}: it says who must review what",
                                 key_of(CODEOWNERS, path, _digest(f.head))))
        elif _is_ci(path) and _mentions_gate(path, f.base, f.head):
            out.append(Weakening(CI, f"{code(path, 200)} {verb}: it runs the checker or the bot (or names their "
                                     "checks)", key_of(CI, path, _digest(f.head))))
        elif _is_ci(path) and (why := status_power(path, f.head)) is not None:
            out.append(Weakening(CI, f"{code(path, 200)} {verb}: it can post commit statuses or checks under any "
                                     f"name, `experimental-track` too ({why})",
                                 key_of(CI, "statuses", path, _digest(f.head))))
    return out


# ----- the baseline ---------------------------------------------------------------------------

def entry_text(entry: BaselineEntry) -> str:
    """One entry, every field quoted inertly, since they are the PR's text."""
    scope = f", scope {code(entry.scope)}" if entry.scope else ""
    more = f" ({entry.count} findings)" if entry.count > 1 else ""
    return f"{code(entry.rule, 40)} in {code(entry.module, 200)}{scope}: {code(entry.subject)}{more}"


def baseline_weakenings(change: BaselineChange | None, head_sha: str) -> list[Weakening]:
    """Each thing the baseline at the head accepts that the base did not."""
    if change is None:
        return []
    if change.delta is None:
        why = change.unread or "it could not be read"
        return [Weakening(UNREAD, f"the bot could not read {code(BASELINE_FILE)} whole: {code(why, 200)}",
                          key_of(UNREAD, BASELINE_FILE, head_sha))]
    out = [Weakening(BASELINE, f"baseline debt added: {entry_text(e)}", key_of(BASELINE, "added", e.key, e.count))
           for e in change.delta.added]
    out += [Weakening(BASELINE, f"a baseline entry moved under a module that does not exist at the head commit, "
                                f"so it accepts its finding in any module: {entry_text(e)}",
                      key_of(BASELINE, "anywhere", e.key, e.count))
            for e in change.anywhere]
    out += [Weakening(BASELINE, f"a baseline line the bot cannot read: {code(line)}", key_of(BASELINE, "line", line))
            for line in change.delta.unreadable]
    if change.problem:
        out.append(Weakening(BASELINE, f"the checker would refuse {code(BASELINE_FILE)} at the head commit: "
                                       f"{code(change.problem, 200)}", key_of(BASELINE, "refused", change.problem)))
    return out


# ----- everything -----------------------------------------------------------------------------

def unread_weakenings(files: Iterable[FileAtRevisions], head_sha: str) -> list[Weakening]:
    """Files the bot needed but GitHub would not send whole.

    They fail closed, keyed by the head commit."""
    return [Weakening(UNREAD, f"the bot could not read {code(f.path, 200)} whole ({code(f.problem or '?', 200)}): "
                              "it cannot tell what the change does", key_of(UNREAD, f.path, head_sha))
            for f in files if not f.complete]


def weakenings(listed: Iterable[Changed], files: Mapping[str, FileAtRevisions], baseline: BaselineChange | None,
               head_sha: str) -> list[Weakening]:
    """Every weakening of a PR whose listed files are ``listed``.

    ``files`` holds the texts `policy_paths` and `code_paths` asked for. ``baseline`` is the
    change to the baseline (`baseline_diff`)."""
    listed = list(listed)
    paths = touched(listed)
    needed = set(policy_paths(listed)) | {path for path, _ in code_paths(listed)}
    out = unread_weakenings([f for path, f in sorted(files.items()) if path in needed and path != BASELINE_FILE],
                            head_sha)
    complete = {path: f for path, f in files.items() if f.complete}
    if PYPROJECT in paths and PYPROJECT in complete:
        out += settings_weakenings(complete[PYPROJECT])
    pytest_read = all(f.complete for name, f in files.items() if name in (*PYTEST_PATHS, ROOT_CONFTEST))
    if paths & {*PYTEST_PATHS, ROOT_CONFTEST} and pytest_read:
        out += pytest_weakenings(complete)
    out += suppression_weakenings(complete[path] for path, _ in code_paths(listed) if path in complete)
    out += suppression_weakenings(complete[name] for name in PYTEST_PATHS
                                  if name in paths and name in complete and not name.endswith(".py"))
    out += suppression_weakenings(complete[name] for name in sorted(paths) if is_workflow_file(name) and name in complete)
    out += lane_weakenings(listed, complete, pytest_read)
    out += gate_weakenings((p for p in paths if _is_ci(p) or p in CODEOWNERS_FILES), complete)
    out += baseline_weakenings(baseline, head_sha)
    return out


# ----- approval -------------------------------------------------------------------------------

RECORD_PREFIX = "<!-- experimental-track-bot:policy-"
_SHOWN = RECORD_PREFIX + "shown "
_APPROVED = RECORD_PREFIX + "approved "
_SUFFIX = " -->"


def approval_keys(items: Iterable[Weakening]) -> list[str]:
    """The keys an approval names.

    Each weakening has its own key. When there are very many, one key names the whole set."""
    keys = sorted({item.key for item in items})
    return keys if len(keys) <= MAX_RECORDED_KEYS else [key_of("all", keys)]


def set_digest(keys: Iterable[str]) -> str:
    """What an approval command names: 16 hex digits for a set of keys."""
    return key_of("set", sorted(set(keys)))


@dataclass
class Record:
    """What the bot's own comment recorded.

    It holds the approved keys, with who approved them, and the set it showed."""

    approved: dict[str, str] = field(default_factory=dict)  # key -> login
    sources: dict[str, int] = field(default_factory=dict)  # key -> id of the comment that approved it
    shown_digest: str | None = None
    shown: frozenset[str] = frozenset()


def _hex(word: str) -> bool:
    return len(word) == 16 and all(c in "0123456789abcdef" for c in word)


def read_record(body: str | None) -> Record:
    """The record in the bot's own comment.

    Never read it from anyone else's comment: a marker can be pasted."""
    record = Record()
    for line in (body or "").split("\n"):
        if not (line.startswith(RECORD_PREFIX) and line.endswith(_SUFFIX)):
            continue
        words = line[: -len(_SUFFIX)].split(" ")
        if line.startswith(_SHOWN) and len(words) >= 3 and _hex(words[2]):
            record.shown_digest = words[2]
            record.shown = frozenset(w for w in words[3:] if _hex(w))
        elif line.startswith(_APPROVED) and len(words) >= 3:
            login = words[2]
            source = next((int(w[1:]) for w in words[3:] if w[:1] == "c" and w[1:].isascii()
                           and w[1:].isdigit() and len(w) <= 21), None)
            for word in words[3:]:
                if _hex(word) and word not in record.approved:
                    record.approved[word] = login
                    if source is not None:
                        record.sources[word] = source
    return record


def record_lines(keys: list[str], approved: Mapping[str, str], sources: Mapping[str, int] | None = None) -> list[str]:
    """The hidden lines that record the set shown and who approved which of its keys.

    Each approval names its comment as ``c<id>``. At every later run that comment must still be
    there, unedited."""
    if not keys:
        return []
    sources = sources or {}
    lines = [f"{_SHOWN}{set_digest(keys)} {' '.join(keys)}{_SUFFIX}"]
    by_source: dict[tuple[str, int | None], list[str]] = {}
    for key in keys:
        if key in approved:
            by_source.setdefault((approved[key], sources.get(key)), []).append(key)
    for (login, source), ks in sorted(by_source.items(), key=lambda item: (item[0][0], item[0][1] or 0)):
        where = f" c{source}" if source is not None else ""
        lines.append(f"{_APPROVED}{login}{where} {' '.join(ks)}{_SUFFIX}")
    return lines


@dataclass(frozen=True)
class Command:
    """An approval command in the PR's thread.

    ``digest`` is as written, or "" when it names none."""

    login: str
    association: str | None
    digest: str
    comment_id: int | None = None  # the comment it is in: a recorded approval holds while that comment does
    edited: bool = False  # the comment was edited after it was posted: what it says now is not what was seen


@dataclass
class Decision:
    """Which weakenings are approved and by whom, and what to say about refused commands."""

    keys: list[str]
    digest: str
    approved: dict[str, str]  # key -> login, of ``keys`` only
    notes: list[str] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)  # key -> id of the approving comment

    @property
    def pending(self) -> list[str]:
        return [key for key in self.keys if key not in self.approved]

    @property
    def approvers(self) -> list[str]:
        return sorted(set(self.approved.values()), key=str.lower)


MAX_NOTES = 10
WRITE_LEVELS = frozenset({"admin", "maintain", "write"})


def decide(items: list[Weakening], record: Record, commands: list[Command], level: Callable[[str, str | None], str],
           author: str | None) -> Decision:
    """Apply the approval commands, oldest first, to the current weakenings.

    A command counts when all of these hold:

    - its comment was never edited;
    - its author has write access now (``level``, asked at this run);
    - its author is not the PR's author;
    - it names the digest of the current set, or of the set the bot's comment showed. The
      latter is what the maintainer saw.

    A command that counts approves that set's keys.

    Keys approved before (``record``) stay approved only while two things hold. The
    approving comment is still in the thread, unedited. Its author still has write access. A
    deleted or edited comment, or an approver who lost access, approves nothing. A weakening
    with a key nobody approved keeps the PR waiting.
    """
    keys = approval_keys(items)
    wanted = set(keys)
    digest = set_digest(keys) if keys else ""
    notes: list[str] = []
    levels: dict[str, str] = {}

    def writes(command: Command) -> str:
        login = command.login.lower()
        if login not in levels:
            levels[login] = level(command.login, command.association)
        return levels[login]

    live = {c.comment_id: c for c in commands if c.comment_id is not None and not c.edited}
    approved: dict[str, str] = {}
    sources: dict[str, int] = {}
    lapsed: dict[str, str] = {}  # login -> why its recorded approval no longer counts
    for key, login in record.approved.items():
        if key not in wanted:
            continue
        command = live.get(record.sources.get(key))
        if command is None or command.login.lower() != login.lower():
            lapsed.setdefault(login, "the comment that approved it was deleted or edited")
        elif writes(command) == "unknown":
            lapsed.setdefault(login, "the bot could not read their permission on this run")
        elif writes(command) not in WRITE_LEVELS:
            lapsed.setdefault(login, "they no longer have write access to this repository")
        else:
            approved[key], sources[key] = login, command.comment_id
    for login, why in sorted(lapsed.items()):
        notes.append(f"the approval by {code('@' + login, 60)} no longer counts: {why}")
    for number, command in enumerate(commands):
        who = code("@" + command.login, 60)
        if command.edited:
            notes.append(f"the approval by {who} is not counted: its comment was edited after it was posted "
                         "(post the command in a new comment)")
            continue
        if author is not None and command.login.lower() == author.lower():
            notes.append(f"the approval by {who} is not counted: the PR's author cannot approve their own PR's "
                         "policy changes")
            continue
        permission = writes(command)
        if permission not in WRITE_LEVELS:
            why = ("the bot could not read permissions" if permission == "unknown"
                   else "only users with write access to this repository can approve")
            notes.append(f"the approval by {who} is not counted: {why}")
            continue
        if keys and command.digest == digest:
            chosen = keys
        elif record.shown_digest and command.digest == record.shown_digest:
            chosen = sorted(record.shown)
        else:
            if number == len(commands) - 1 and keys and any(k not in approved for k in keys):
                notes.append(f"the approval by {who} names {code(command.digest or 'no digest', 40)}, which is not "
                             "the set of policy changes shown: copy the command from this comment")
            continue
        for key in chosen:
            if key in wanted and key not in approved:
                approved[key] = command.login
                if command.comment_id is not None:
                    sources[key] = command.comment_id
    if len(notes) > MAX_NOTES:
        notes = notes[:MAX_NOTES] + [f"… and {len(notes) - MAX_NOTES} more approvals not counted"]
    return Decision(keys, digest, {k: approved[k] for k in keys if k in approved}, notes,
                    {k: sources[k] for k in keys if k in sources})
