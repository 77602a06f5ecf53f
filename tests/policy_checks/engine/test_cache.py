"""Where the facts cache lives: outside the checked tree, so that a cache planted in a
pull request changes no finding; a location inside the project only when git ignores
it and tracks nothing there; never where another local user could have written; and
reading the cache file is bounded."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest
import yaml
from click.testing import CliRunner

from policy_checks.cli import main
from policy_checks.engine import cache as cache_module
from policy_checks.engine import store
from policy_checks.engine.runner import run
from policy_checks.model import gitfiles
from policy_checks.model.config import Settings
from policy_checks.model.facts import FileFacts, to_data

from ..conftest import located, write_tree

CHECKOUT = Path(__file__).resolve().parents[3]
TREE = {
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/gemm.py": "from .experimental import splitk\n",
}
FINDING = [("flashinfer/gemm.py", 1)]
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
as_root = pytest.mark.skipif(getattr(os, "geteuid", lambda: -1)() != 0, reason="chown to another user needs root")
STRANGER = 12345  # a uid that is neither this user nor root


def forge(cache_file: Path, root: Path) -> None:
    """A cache file whose entries for the bytes of gemm.py say it imports nothing:
    under the key of its bytes, and under the key of its git object id (what a run
    uses once git tracks the file unchanged)."""
    rel = "flashinfer/gemm.py"
    data = (root / rel).read_bytes()
    entry = to_data(FileFacts("flashinfer.gemm", False))
    keys = (cache_module.key(rel, data), cache_module.blob_key(rel, cache_module.git_blob_id(data)))
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    cache_file.write_text(stored(dict.fromkeys(keys, entry)))


def stored(entries: dict, day=None) -> str:
    """A cache file's text holding `entries` (key -> value), last used on `day` (today)."""
    day = cache_module.today() if day is None else day
    items = {k.hex(): [day, v] for k, v in entries.items()}
    return json.dumps({cache_module.FORMAT_KEY: cache_module.FORMAT, "entries": items})


def git(root: Path, *args: str) -> None:
    identity = ["-c", "user.name=policy-check test", "-c", "user.email=test@example.invalid"]
    environment = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", *identity, *args], cwd=root, env=environment, check=True, capture_output=True)


def checked(root: Path, **options):
    return run(root, Settings(), jobs=1, progress=False, **options)


def tree_files(root: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts}


@needs_git
def test_a_cache_planted_in_the_tree_changes_nothing(tmp_path, monkeypatch):
    """A pull request force-adds a forged cache at the old location and in a
    directory it then names with --cache-dir / $POLICY_CHECK_CACHE_DIR: every run
    finds what --no-cache finds, and the tree is left as it was."""
    root = write_tree(tmp_path / "project", TREE)
    planted = root / "ci-cache"
    forge(root / ".policy-check-cache" / cache_module._FILE, root)
    forge(cache_module.location(root, planted) / cache_module._FILE, root)
    git(root, "init", "-q")
    git(root, "add", "-f", ".")
    git(root, "commit", "-q", "-m", "a pull request")
    before = tree_files(root)

    runner = CliRunner()
    no_cache = runner.invoke(main, ["run", "--root", str(root), "--no-cache"])
    assert no_cache.exit_code == 1 and "flashinfer/gemm.py:1:1: EXP001" in no_cache.stdout
    default = runner.invoke(main, ["run", "--root", str(root)])
    option = runner.invoke(main, ["run", "--root", str(root), "--cache-dir", str(planted)])
    monkeypatch.setenv(store.ENVIRONMENT, str(planted))
    variable = runner.invoke(main, ["run", "--root", str(root)])
    for result in (default, option, variable):
        assert (result.exit_code, result.stdout) == (1, no_cache.stdout)
    for result in (option, variable):
        assert "not using the cache in" in result.stderr and "git tracks files in it" in result.stderr
    assert tree_files(root) == before

    # control: the same forgery where the user keeps the cache is believed, so the
    # assertions above are not vacuous (the cache is trusted where it lives)
    monkeypatch.delenv(store.ENVIRONMENT)
    forge(cache_module.location(root) / cache_module._FILE, root)
    assert located(checked(root, use_cache=True), "EXP001") == []


def test_the_default_cache_is_private_and_shared_by_content(tmp_path, monkeypatch, private_cache):
    """One store in the user's cache directory for every project: entries are keyed by
    content (and the path in the project), so a second tree with the same files at
    another path starts warm, and a tree with other files parses only those."""
    monkeypatch.delenv(store.ENVIRONMENT)
    users = Path(platformdirs.user_cache_dir("policy-check"))
    if not users.is_relative_to(private_cache):
        pytest.skip("platformdirs does not read XDG_CACHE_HOME on this platform")
    first = write_tree(tmp_path / "first", TREE)
    second = write_tree(tmp_path / "second", TREE)
    before = tree_files(tmp_path)
    cold = checked(first, use_cache=True)
    warm = checked(second, use_cache=True)
    assert located(cold, "EXP001") == located(warm, "EXP001") == FINDING
    assert cold.parsed == len(TREE) and warm.parsed == 0
    assert tree_files(tmp_path) == before  # nothing written in either tree
    where = {cache_module.location(root) for root in (first, second)}
    assert where == {users / store.STORE}
    for directory in (*where, users, users.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    assert stat.S_IMODE((users / store.STORE / cache_module._FILE).stat().st_mode) == 0o600
    (second / "flashinfer/gemm.py").write_text("import os\n")
    changed = checked(second, use_cache=True)
    assert changed.parsed == 1 and located(changed, "EXP001") == []
    assert checked(first, use_cache=True).parsed == 0  # the first tree's entries are still there


@needs_git
def test_a_cache_inside_the_project_needs_git_to_ignore_it_and_track_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # no repository around the scratch one
    root = write_tree(tmp_path / "project", TREE)
    inside = root / ".cache"

    def refused(reason):
        result = checked(root, use_cache=True, cache_dir=inside)
        assert located(result, "EXP001") == FINDING
        assert any(reason in w and "running without a cache" in w for w in result.warnings), result.warnings
        assert not (cache_module.location(root, inside) / cache_module._FILE).exists()

    refused("git cannot say that no checkout put it there")  # not a repository
    git(root, "init", "-q")
    refused("git does not ignore it")
    (root / ".gitignore").write_text(".cache/\n")
    forge(inside / "planted" / cache_module._FILE, root)  # not where this project's cache goes
    git(root, "add", "-f", ".")
    refused("git tracks files in it")  # the directory belongs to the tree

    git(root, "rm", "-q", "-r", "--cached", ".cache")
    shutil.rmtree(inside)
    used = checked(root, use_cache=True, cache_dir=inside)
    assert used.warnings == [] and located(used, "EXP001") == FINDING
    assert (cache_module.location(root, inside) / cache_module._FILE).is_file()
    assert checked(root, use_cache=True, cache_dir=inside).parsed == 0


@pytest.mark.timeout(120)  # a FIFO opened for reading without O_NONBLOCK would wait forever
@pytest.mark.parametrize("kind", ["symlink", "fifo", "too big"])
def test_reading_the_cache_is_bounded(tmp_path, monkeypatch, kind):
    """A cache file that is a symbolic link (to a forged cache), a FIFO or larger
    than the cap is ignored with a warning, and the run finds what it must."""
    root = write_tree(tmp_path / "project", TREE)
    cache_file = cache_module.location(root) / cache_module._FILE
    cache_file.parent.mkdir(parents=True)
    if kind == "symlink":
        forge(tmp_path / "forged.json", root)
        cache_file.symlink_to(tmp_path / "forged.json")
        expected = "a symbolic link"
    elif kind == "fifo":
        os.mkfifo(cache_file)
        expected = "not a regular file"
    else:
        forge(cache_file, root)
        monkeypatch.setattr(cache_module, "MAX_BYTES", cache_file.stat().st_size - 1)
        expected = "larger than"
    result = checked(root, use_cache=True)
    assert located(result, "EXP001") == FINDING
    assert any("ignoring unreadable cache" in w and expected in w for w in result.warnings), result.warnings


WORKFLOW = CHECKOUT / ".github/workflows/policy-check.yml"
CACHE_PATH = "${{ runner.temp }}/policy-check-cache"  # what the cache actions keep
CACHE_OPTION = '--cache-dir "$RUNNER_TEMP/policy-check-cache"'  # the same directory, to the checker


def _uses(job: dict, action: str) -> list:
    return [step for step in job["steps"] if step.get("uses", "").partition("@")[0] == action]


def _checks(job: dict) -> list:
    return [step for step in job["steps"] if "policy_checks run" in step.get("run", "")]


def test_ci_saves_the_cache_only_on_the_default_branch_and_a_pull_request_only_restores_it():
    """The facts cache a PR's check starts from comes from a push to the default branch
    (merged code, its own checker): only that job saves, a PR's job only restores, both
    under one key (the runner's OS, the Python version, the base checker's sources and the
    base's pyproject.toml with its settings, then the commit), and every check keeps its
    cache in the directory the actions restore and save, in the runner's temporary
    directory, never in a checkout."""
    workflow = yaml.safe_load(WORKFLOW.read_text())
    on = workflow.get("on", workflow.get(True))
    jobs = workflow["jobs"]
    assert on["push"] == {"branches": ["main"]} and set(on) == {"pull_request", "push"}
    assert not [job for job in jobs.values() if _uses(job, "actions/cache")]  # no save in a post step
    saving = {name for name, job in jobs.items() if _uses(job, "actions/cache/save")}
    assert saving == {"facts-cache"}
    condition = jobs["facts-cache"]["if"]
    assert condition == ("github.event_name == 'push' && "
                         "github.ref == format('refs/heads/{0}', github.event.repository.default_branch)")
    pr = jobs["policy-check"]
    assert pr["if"] == "github.event_name == 'pull_request'"
    assert len(_uses(pr, "actions/cache/restore")) == 1

    [save] = _uses(jobs["facts-cache"], "actions/cache/save")
    prefix = save["with"]["key"].removesuffix("${{ github.sha }}")
    assert prefix != save["with"]["key"] and prefix.endswith("-")
    for piece in ("${{ runner.os }}", "${{ steps.python.outputs.python-version }}",
                  "${{ hashFiles('base/policy_checks/**') }}", "${{ hashFiles('base/pyproject.toml') }}"):
        assert piece in prefix
    restores = [(name, step) for name, job in jobs.items() for step in _uses(job, "actions/cache/restore")]
    assert {name for name, _ in restores} == {"policy-check", "facts-cache"}
    for name, restore in restores:
        assert restore["with"]["restore-keys"].strip() == prefix
        assert restore["with"]["key"] == prefix + ("${{ github.event.pull_request.base.sha }}"
                                                   if name == "policy-check" else "${{ github.sha }}")
    for name, job in jobs.items():
        steps = job["steps"]
        [python] = [step for step in steps if step.get("uses", "").startswith("actions/setup-python@")]
        assert python["id"] == "python"
        [base] = [s for s in _uses(job, "actions/checkout") if s["with"]["path"] == "base"]  # hashFiles' base/
        assert "ref" not in base["with"] or base["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
        [restore] = _uses(job, "actions/cache/restore")
        assert all(step["with"]["path"] == CACHE_PATH for step in _uses(job, "actions/cache/restore") + _uses(job, "actions/cache/save"))
        checks = _checks(job)
        assert checks and all(CACHE_OPTION in step["run"] for step in checks), name
        assert steps.index(restore) < min(map(steps.index, checks))
        # git's index refreshed once before the checks, for the checked tree (racily clean files)
        root = checks[0]["run"].split("--root ")[1].split()[0]
        [refresh] = [step for step in steps if step.get("run") == f"git -C {root} update-index -q --refresh"]
        assert steps.index(refresh) < min(map(steps.index, checks))
    assert max(map(jobs["facts-cache"]["steps"].index, _checks(jobs["facts-cache"]))) < jobs["facts-cache"]["steps"].index(save)


def _workflow_step(job: str, start: str) -> dict:
    """The first step of `job` whose script starts with `start`."""
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"][job]["steps"]
    return next(s for s in steps if s.get("run", "").startswith(start))


def _as_the_runner_runs(step: dict, workspace: Path, runner_temp: Path, **env) -> subprocess.CompletedProcess:
    """A workflow step's script, run by bash in `workspace` with this interpreter first on the PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    environment = {**os.environ, "PATH": path, "RUNNER_TEMP": str(runner_temp), **env}
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=workspace, env=environment, capture_output=True,
                          text=True, timeout=300)


@needs_git
@pytest.mark.skipif(shutil.which("tar") is None or shutil.which("bash") is None, reason="needs tar and bash")
def test_a_cache_the_default_branch_saved_makes_a_pull_requests_check_warm(tmp_path):
    """The restore path, with the workflow's own commands: the default branch's job checks
    its checkout with the cache in its RUNNER_TEMP; the cache actions carry that directory
    as a tar archive to a PR's job, which extracts it into its own RUNNER_TEMP; there the
    PR's checkout, one file changed, parses that file alone, and the PR's check takes the
    restored cache without a warning."""
    files = {**TREE, **{f"flashinfer/m{n}.py": f"def f{n}():\n    return {n}\n" for n in range(20)}}
    origin = committed(write_tree(tmp_path / "origin", files))
    base_sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=origin, capture_output=True, text=True,
                              check=True).stdout.strip()

    pushed, push_temp = tmp_path / "push-workspace", tmp_path / "push-temp"
    push_temp.mkdir()
    git(tmp_path, "clone", "-q", str(origin), str(pushed / "base"))
    warmed = _as_the_runner_runs(_workflow_step("facts-cache", "python -I -m policy_checks run"), pushed, push_temp)
    assert warmed.returncode == 0 and "warning" not in warmed.stderr, warmed.stderr
    archive = tmp_path / "cache.tar"
    subprocess.run(["tar", "-cf", str(archive), "-C", str(push_temp), "policy-check-cache"], check=True)

    workspace, pr_temp = tmp_path / "pr-workspace", tmp_path / "pr-temp"
    pr_temp.mkdir()
    git(tmp_path, "clone", "-q", str(origin), str(workspace / "pr"))
    (workspace / "pr/flashinfer/m3.py").write_text("def f3():\n    return 'changed'\n")
    git(workspace / "pr", "commit", "-q", "-am", "a pull request")
    subprocess.run(["tar", "-xf", str(archive), "-C", str(pr_temp)], check=True)

    restored = pr_temp / "policy-check-cache"
    warm = checked(workspace / "pr", use_cache=True, cache_dir=restored)
    assert warm.parsed == 1 and warm.warnings == [] and located(warm, "EXP001") == FINDING
    cold = checked(workspace / "pr", use_cache=True, cache_dir=tmp_path / "nothing-restored")
    assert cold.parsed == len(files)
    gate = _as_the_runner_runs(_workflow_step("policy-check", "python -I -m policy_checks run"), workspace, pr_temp,
                               BASE_SHA=base_sha)
    assert gate.returncode == 1 and "::error file=flashinfer/gemm.py" in gate.stdout
    assert "warning" not in gate.stderr, gate.stderr


# -- another local user ----------------------------------------------------------
# Whoever can write the cache decides what the checker believes, and that includes
# another user of the machine: one who owns a shared $POLICY_CHECK_CACHE_DIR, or who
# created this project's (predictable) subdirectory before the checker did. Such a
# location is refused like one in the tree: one warning, and the run finds what
# --no-cache finds. Each test plants a forged cache there (gemm.py "imports
# nothing"), so a cache that was believed would hide the finding.


def _other_user(path: Path) -> str:
    os.chown(path, STRANGER, -1)
    return f"owned by uid {STRANGER}, neither this user ({os.geteuid()}) nor root"


def _everyone(path: Path) -> str:
    os.chmod(path, 0o777)
    return "writable by group or others (mode 777)"


def _group(path: Path) -> str:
    os.chmod(path, 0o775)
    return "writable by group or others (mode 775)"


UNTRUSTED_DIRECTORIES = [
    pytest.param(_other_user, id="another-user", marks=as_root),
    pytest.param(_everyone, id="world-writable"),
    pytest.param(_group, id="group-writable"),
]


def _warnings(stderr: str) -> list:
    return [line for line in stderr.splitlines() if line.startswith("policy-check: warning:")]


@pytest.mark.parametrize("plant", UNTRUSTED_DIRECTORIES)
@pytest.mark.parametrize("chosen_by", ["variable", "option"])
def test_a_shared_cache_directory_is_refused(tmp_path, monkeypatch, plant, chosen_by):
    """$POLICY_CHECK_CACHE_DIR / --cache-dir names a directory another user owns or
    anyone may write, holding a forged cache for this project."""
    root = write_tree(tmp_path / "project", TREE)
    shared = tmp_path / "shared"
    cache_file = cache_module.location(root, shared) / cache_module._FILE
    forge(cache_file, root)
    reason = plant(shared)
    forged = cache_file.read_bytes()

    runner = CliRunner()
    no_cache = runner.invoke(main, ["run", "--root", str(root), "--no-cache"])
    if chosen_by == "variable":
        monkeypatch.setenv(store.ENVIRONMENT, str(shared))
        result = runner.invoke(main, ["run", "--root", str(root)])
    else:
        result = runner.invoke(main, ["run", "--root", str(root), "--cache-dir", str(shared)])
    assert (result.exit_code, result.stdout) == (1, no_cache.stdout)
    assert "flashinfer/gemm.py:1:1: EXP001" in result.stdout
    [warning] = _warnings(result.stderr)
    assert f"not using the cache in {cache_file.parent}: {shared} is {reason}" in warning, warning
    assert warning.endswith("running without a cache")
    assert cache_file.read_bytes() == forged  # neither read nor rewritten
    assert sorted(p.name for p in cache_file.parent.iterdir()) == [cache_module._FILE]

    # control: the same directory once it is ours and private is trusted, forgery and all
    os.chown(shared, os.geteuid(), -1)
    os.chmod(shared, 0o700)
    assert located(checked(root, use_cache=True, cache_dir=shared), "EXP001") == []


@pytest.mark.parametrize("plant", UNTRUSTED_DIRECTORIES)
def test_a_project_directory_someone_else_created_first_is_refused(tmp_path, plant):
    """The user's own cache directory, but the store's subdirectory (its name is known
    to anyone) was made by someone else."""
    root = write_tree(tmp_path / "project", TREE)
    base = tmp_path / "mine"
    base.mkdir(mode=0o700)
    cache_file = cache_module.location(root, base) / cache_module._FILE
    forge(cache_file, root)
    reason = plant(cache_file.parent)
    if plant is _other_user:
        os.chown(cache_file, STRANGER, -1)

    result = checked(root, use_cache=True, cache_dir=base)
    assert located(result, "EXP001") == FINDING
    assert result.warnings == [
        f"not using the cache in {cache_file.parent}: {cache_file.parent} is {reason}; running without a cache"
    ]


@pytest.mark.parametrize(
    "plant",
    [
        pytest.param(_other_user, id="another-user", marks=as_root),
        pytest.param(lambda path: os.chmod(path, 0o666) or "writable by group or others (mode 666)", id="world-writable"),
        pytest.param(lambda path: os.chmod(path, 0o620) or "writable by group or others (mode 620)", id="group-writable"),
    ],
)
def test_a_cache_file_someone_else_could_write_is_not_read(tmp_path, plant):
    """Private directories, but the cache file itself is another user's or writable by
    others: not read; the run's own cache replaces it, and the next run uses that."""
    root = write_tree(tmp_path / "project", TREE)
    base = tmp_path / "mine"
    base.mkdir(mode=0o700)
    cache_file = cache_module.location(root, base) / cache_module._FILE
    forge(cache_file, root)
    reason = plant(cache_file)

    result = checked(root, use_cache=True, cache_dir=base)
    assert located(result, "EXP001") == FINDING
    assert result.warnings == [f"not using the cache file {cache_file}: it is {reason}; running without a cache"]
    info = os.lstat(cache_file)
    assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o600
    again = checked(root, use_cache=True, cache_dir=base)
    assert again.warnings == [] and again.parsed == 0 and located(again, "EXP001") == FINDING


@as_root
def test_a_project_directory_made_by_someone_else_during_the_run_is_not_written(tmp_path):
    """The subdirectory did not exist when the run looked, and another user creates it
    before the run saves: nothing is written into it."""
    root = write_tree(tmp_path / "project", TREE)
    base = tmp_path / "mine"
    facts_cache = cache_module.FactsCache(root, directory=base)
    assert facts_cache.enabled and facts_cache.warnings == []
    facts_cache.path.parent.mkdir(parents=True)
    os.chmod(base, 0o700)
    os.chown(facts_cache.path.parent, STRANGER, -1)
    facts_cache.put(cache_module.key("flashinfer/gemm.py", b""), FileFacts("flashinfer.gemm", False))
    facts_cache.save()
    assert list(facts_cache.path.parent.iterdir()) == []
    assert facts_cache.warnings == [
        f"not writing cache {facts_cache.path}: {facts_cache.path.parent} is owned by uid {STRANGER}, "
        f"neither this user ({os.geteuid()}) nor root"
    ]


def test_directories_the_checker_creates_are_private(tmp_path):
    root = write_tree(tmp_path / "project", TREE)
    base = tmp_path / "new" / "caches"
    assert located(checked(root, use_cache=True, cache_dir=base), "EXP001") == FINDING
    where = cache_module.location(root, base)
    for directory in (where, base, base.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    assert stat.S_IMODE((where / cache_module._FILE).stat().st_mode) == 0o600
    assert checked(root, use_cache=True, cache_dir=base).parsed == 0


# -- one store for every project ---------------------------------------------------
# Entries are keyed by content and the path in the project, never by where the project
# lies: a second clone or worktree of a repository starts warm. Measured by the files a
# run parses (`Result.parsed`), not by time.


@needs_git
def test_a_second_clone_and_a_worktree_start_warm(tmp_path):
    files = {**TREE, **{f"flashinfer/m{n}.py": f"def f{n}():\n    return {n}\n" for n in range(20)}}
    first = write_tree(tmp_path / "first", files)
    git(first, "init", "-q")
    git(first, "add", ".")
    git(first, "commit", "-q", "-m", "the repository")
    base = tmp_path / "caches"
    cold = checked(first, use_cache=True, cache_dir=base)
    assert cold.parsed == len(files) and checked(first, use_cache=True, cache_dir=base).parsed == 0
    git(tmp_path, "clone", "-q", str(first), str(tmp_path / "second"))
    git(first, "worktree", "add", "-q", str(tmp_path / "worktree"))
    for other in (tmp_path / "second", tmp_path / "worktree"):
        warm = checked(other, use_cache=True, cache_dir=base)
        assert warm.parsed == 0 and located(warm, "EXP001") == FINDING, other
        assert warm.warnings == []
    assert [p.name for p in base.iterdir()] == [store.STORE]


def test_entries_unused_for_keep_days_are_dropped(tmp_path):
    """What another project used lately stays; what no run used for `KEEP_DAYS` goes."""
    root = write_tree(tmp_path / "project", TREE)
    base = tmp_path / "caches"
    cache_file = cache_module.location(root, base) / cache_module._FILE
    recent, old = cache_module.key("other/recent.py", b"x"), cache_module.key("other/old.py", b"y")
    today = cache_module.today()
    cache_file.parent.mkdir(parents=True, mode=0o700)
    cache_file.write_text(json.dumps({cache_module.FORMAT_KEY: cache_module.FORMAT, "entries": {
        recent.hex(): [today - cache_module.KEEP_DAYS + 1, to_data(FileFacts("other.recent", False))],
        old.hex(): [today - cache_module.KEEP_DAYS, to_data(FileFacts("other.old", False))],
    }}))
    os.chmod(cache_file, 0o600)
    assert checked(root, use_cache=True, cache_dir=base).parsed == len(TREE)
    entries = json.loads(cache_file.read_text())["entries"]
    assert recent.hex() in entries and old.hex() not in entries
    assert {day for day, _ in entries.values()} == {today, today - cache_module.KEEP_DAYS + 1}


def test_a_save_merges_what_a_concurrent_run_saved(tmp_path):
    """Two runs (of two projects) read the store, each computes other facts, both save:
    the store holds both, whichever saved last."""
    first = write_tree(tmp_path / "first", TREE)
    second = write_tree(tmp_path / "second", {**TREE, "flashinfer/gemm.py": "import os\n"})
    base = tmp_path / "caches"
    one = cache_module.FactsCache(first, directory=base)
    two = cache_module.FactsCache(second, directory=base)
    k1, k2 = cache_module.key("flashinfer/a.py", b"1"), cache_module.key("flashinfer/b.py", b"2")
    one.put(k1, FileFacts("flashinfer.a", False), 0)
    two.put(k2, FileFacts("flashinfer.b", False), 0)
    one.save()
    two.save()
    assert one.warnings == two.warnings == []
    again = cache_module.FactsCache(first, directory=base)
    assert again.get(k1) is not None and again.get(k2) is not None
    assert again.found(k1) == again.found(k2) == 0


# -- keys from git's object ids -----------------------------------------------------
# Where git vouches for a file's bytes (`gitfiles.vouched`), a warm run keys it by git's
# object id without reading it; an entry is still never used for bytes it was not
# computed from.


def committed(root: Path) -> Path:
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "the repository")
    return root


@needs_git
def test_a_warm_run_in_a_clean_work_tree_hashes_nothing(tmp_path, monkeypatch):
    root = committed(write_tree(tmp_path / "project", TREE))
    base = tmp_path / "caches"
    cold = checked(root, use_cache=True, cache_dir=base)
    hashed = []
    real_key, real_blob_id = cache_module.key, cache_module.git_blob_id
    monkeypatch.setattr(cache_module, "key", lambda rel, data, variant="": hashed.append(rel) or real_key(rel, data, variant))
    monkeypatch.setattr(cache_module, "git_blob_id", lambda data, n=40: hashed.append(data) or real_blob_id(data, n))
    warm = checked(root, use_cache=True, cache_dir=base)
    assert (warm.parsed, hashed) == (0, [])
    assert warm.findings == cold.findings and located(warm, "EXP001") == FINDING

    (root / "flashinfer/scratch.py").write_text("x = 1\n")  # untracked: hashed, as is an edited file
    (root / "flashinfer/__init__.py").write_text("# edited\n")
    again = checked(root, use_cache=True, cache_dir=base)
    assert {r for r in hashed if isinstance(r, str)} == {"flashinfer/__init__.py", "flashinfer/scratch.py"}
    assert again.parsed == 2 and again.findings == cold.findings


@needs_git
@pytest.mark.parametrize("how", ["edited", "assume-unchanged", "skip-worktree", "staged, then edited"])
def test_an_entry_is_never_used_for_bytes_git_does_not_vouch_for(tmp_path, how):
    """The cache holds the facts of the committed, clean gemm.py; the file on disk now
    holds a violation that git does not see (flags that make git not look) or that
    differs from what is staged: the run reads and hashes it, as ``--no-cache`` does."""
    root = committed(write_tree(tmp_path / "project", {**TREE, "flashinfer/gemm.py": "x = 1\n"}))
    base = tmp_path / "caches"
    assert located(checked(root, use_cache=True, cache_dir=base), "EXP001") == []
    if how in ("assume-unchanged", "skip-worktree"):
        git(root, "update-index", f"--{how}", "flashinfer/gemm.py")
    if how.startswith("staged"):
        (root / "flashinfer/gemm.py").write_text("y = 2\n")
        git(root, "add", "flashinfer/gemm.py")
    (root / "flashinfer/gemm.py").write_text(TREE["flashinfer/gemm.py"])
    for chosen in gitfiles.MODES:  # --staged reads the work tree's bytes too
        with gitfiles.selecting(chosen):
            assert located(checked(root, use_cache=True, cache_dir=base), "EXP001") == FINDING, (how, chosen)
            assert located(checked(root, use_cache=False), "EXP001") == FINDING


@needs_git
def test_a_key_from_an_object_id_is_only_for_that_blob():
    data = b"x = 1\n"
    oid = cache_module.git_blob_id(data)
    hashed = subprocess.run(["git", "hash-object", "--stdin"], input=data, capture_output=True, check=True)
    assert oid == hashed.stdout.decode().strip()
    assert cache_module.key_of("a.py", data, oid) == cache_module.blob_key("a.py", oid)
    assert cache_module.key_of("a.py", b"x = 2\n", oid) == cache_module.key("a.py", b"x = 2\n")  # changed meanwhile
    assert cache_module.key_of("a.py", data, None) == cache_module.key("a.py", data)
    assert cache_module.blob_key("a.py", oid) != cache_module.blob_key("b.py", oid)
    sha256_oid = cache_module.git_blob_id(data, 64)
    assert len(sha256_oid) == 64 and cache_module.key_of("a.py", data, sha256_oid) == cache_module.blob_key("a.py", sha256_oid)


# -- a save that adds a few entries to a big store -----------------------------------
# It appends them to the bytes it read instead of writing every entry again, only when
# the result is what writing every entry gives.


def _store(tmp_path, entries: dict, day=None) -> cache_module.FactsCache:
    """A store holding `entries`, written as a save writes it, last used on `day` (today)."""
    base = tmp_path / "caches"
    cache_file = cache_module.location(None, base) / cache_module._FILE
    cache_module._private_directories(cache_file.parent)
    day = cache_module.today() if day is None else day
    cache_file.write_bytes(cache_module._dumps(entries, dict.fromkeys(entries, day), set(entries)))
    cache_file.chmod(0o600)
    return _reopened(tmp_path)


def _reopened(tmp_path) -> cache_module.FactsCache:
    (tmp_path / "project").mkdir(exist_ok=True)
    return cache_module.FactsCache(tmp_path / "project", directory=tmp_path / "caches")


def _facts(n: int):
    return FileFacts(f"flashinfer.m{n}", False)


def test_a_save_appends_new_entries_to_what_it_read(tmp_path):
    old = {bytes([n]) * 16: to_data(_facts(n)) for n in range(3)}
    store = _store(tmp_path, old)
    before = store.path.read_bytes()
    assert store.get(bytes([1]) * 16) == _facts(1)
    store.put(b"\x09" * 16, _facts(9), 5)
    now = cache_module.today()
    appended = store._appended(now)
    assert appended is not None and appended.startswith(before[:-2])
    assert cache_module._parse(appended) == cache_module._parse(store._whole(now))
    store.save()
    again = _reopened(tmp_path)
    assert again.warnings == [] and again.get(b"\x09" * 16) == _facts(9) and again.get(b"\x00" * 16) == _facts(0)
    assert again.found(b"\x09" * 16) == 5


@pytest.mark.parametrize("change", ["replaced", "damaged", "used-another-day", "old-entry", "concurrent",
                                    "foreign-layout"])
def test_a_save_writes_every_entry_when_appending_would_not_give_the_same(tmp_path, change):
    now = cache_module.today()
    day = now - 1 if change == "used-another-day" else now - cache_module.KEEP_DAYS if change == "old-entry" else None
    old = {bytes([n]) * 16: to_data(_facts(n)) for n in range(3)}
    if change == "damaged":
        old[b"\x02" * 16] = "not facts"
    store = _store(tmp_path, old, day)
    if change == "foreign-layout":
        store.path.write_text(json.dumps({"entries": json.loads(store.path.read_text())["entries"],
                                          cache_module.FORMAT_KEY: cache_module.FORMAT}))
        store = _reopened(tmp_path)
    store.put(b"\x09" * 16, _facts(9))
    if change == "replaced":
        store.put(b"\x00" * 16, _facts(7))
    elif change == "damaged":
        assert store.get(b"\x02" * 16) is None
    elif change == "used-another-day":
        store.get(b"\x01" * 16)
    elif change == "concurrent":
        os.utime(store.path, ns=(0, 0))
    assert store._appended(now) is None
    store.save()
    assert store.warnings == []
    entries, days = cache_module._parse(store.path.read_bytes())
    assert b"\x09" * 16 in entries
    if change == "replaced":
        assert entries[b"\x00" * 16] == to_data(_facts(7))
    if change == "old-entry":
        assert b"\x00" * 16 not in entries


@needs_git
@pytest.mark.skipif(getattr(os, "geteuid", lambda: 0)() == 0, reason="root reads a file of mode 000")
def test_a_file_git_vouches_for_but_this_user_cannot_read_is_still_reported(tmp_path):
    """Git vouches for the bytes, not for the permission to read them."""
    root = committed(write_tree(tmp_path / "project", TREE))
    base = tmp_path / "caches"
    checked(root, use_cache=True, cache_dir=base)
    (root / "flashinfer/gemm.py").chmod(0)
    try:
        warm = checked(root, use_cache=True, cache_dir=base)
        cold = checked(root, use_cache=False)
    finally:
        (root / "flashinfer/gemm.py").chmod(0o644)
    assert warm.findings == cold.findings and any(f.rule == "EXP000" for f in warm.findings)


@pytest.mark.parametrize("plant", ["symlink", "group-writable"])
def test_the_follow_ups_records_are_read_as_strictly_as_the_facts(tmp_path, plant):
    """The follow-ups' records live in a file of their own beside the facts
    (`FactsCache.records`), kept by the same rules: one that is a symbolic link (to a
    forged file) or that others could write is not read, the run says so and finds what
    it must, and writes a private file of its own in its place."""
    root = write_tree(tmp_path / "project", TREE)
    base = tmp_path / "mine"
    base.mkdir(mode=0o700)
    records = cache_module.location(root, base) / cache_module._RECORDS_FILE
    records.parent.mkdir(parents=True)
    if plant == "symlink":
        (tmp_path / "forged.json").write_text(stored({}))
        records.symlink_to(tmp_path / "forged.json")
        reason = "a symbolic link"
    else:
        records.write_text(stored({}))
        os.chmod(records, 0o620)
        reason = "writable by group or others (mode 620)"
    result = checked(root, use_cache=True, cache_dir=base)
    assert located(result, "EXP001") == FINDING
    assert any(str(records) in w and reason in w for w in result.warnings), result.warnings
    info = os.lstat(records)
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    again = checked(root, use_cache=True, cache_dir=base)
    assert again.warnings == [] and located(again, "EXP001") == FINDING
