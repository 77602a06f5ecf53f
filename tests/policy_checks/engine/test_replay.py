"""A run on unchanged inputs replays the stored result of the run before it
(`policy_checks.engine.replay`): the same report, without the runner. Any changed
input makes the next run compute its result again, and a stored result nobody can
vouch for is never believed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_checks.cli import main
from policy_checks.engine import replay, runner as runner_module, store
from policy_checks.engine.context import Context
from policy_checks.model import gitfiles

from ..conftest import write_tree
from .test_cache import git, needs_git

CHECKOUT = Path(__file__).resolve().parents[3]
TREE = {
    "pyproject.toml": "[tool.policy-check]\n",
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/gemm.py": "from .experimental import splitk\n",
    "flashinfer/norm.py": "def norm(x):\n    return x\n",
    "docs/index.rst": "Docs\n====\n",
}
pytestmark = needs_git


def committed(tmp_path: Path, files: dict = TREE) -> Path:
    root = write_tree(tmp_path / "project", files)
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    return root


@pytest.fixture
def counted(monkeypatch):
    """How many runs computed their result (the rest were replayed)."""
    calls = []
    check = runner_module.check

    def counting(*args, **kwargs):
        calls.append(1)
        return check(*args, **kwargs)

    monkeypatch.setattr(runner_module, "check", counting)
    return calls


def invoke(root: Path, *options: str) -> tuple:
    done = CliRunner().invoke(main, ["run", "--root", str(root), "--format", "json", *options])
    assert done.exit_code in (0, 1), done.output
    return done.exit_code, json.loads(done.stdout)


def stored_results() -> list:
    directory = store.location() / replay.DIRECTORY
    return sorted(directory.glob("*.json")) if directory.is_dir() else []


def no_cache(root: Path, *options: str) -> tuple:
    return invoke(root, "--no-cache", *options)


def test_a_run_on_unchanged_inputs_replays_the_first_runs_report(tmp_path, counted):
    root = committed(tmp_path)
    cold = invoke(root)
    assert [f["rule"] for f in cold[1]["findings"]] == ["EXP001"] and len(counted) == 1
    assert len(stored_results()) == 1
    warm = invoke(root)
    assert warm == cold == no_cache(root) and len(counted) == 2  # the --no-cache run computed; the warm one did not


def test_a_replay_gives_a_baselines_report_in_every_format(tmp_path, counted):
    """The baseline's accepted findings, their fingerprints and its paid-off entries
    come back as the run computed them (SARIF lists all three with --sarif-suppressed)."""
    root = committed(tmp_path, {**TREE, "flashinfer/norm.py": "from .experimental import fused\n"})
    assert CliRunner().invoke(main, ["baseline", "--root", str(root)]).exit_code == 0
    (root / "flashinfer/gemm.py").write_text("import os\n")  # one accepted finding paid off
    (root / "flashinfer/rope.py").write_text("from .experimental import rope\n")  # a new one
    for options in (["--format", "text"], ["--format", "json"], ["--format", "sarif", "--sarif-suppressed"],
                    ["--format", "github"], ["--format", "text", "--statistics"]):
        outputs = [CliRunner().invoke(main, ["run", "--root", str(root), *options]) for _ in range(2)]
        assert outputs[0].exit_code == outputs[1].exit_code == 1
        assert outputs[0].stdout == outputs[1].stdout
        if options[1] == "sarif":
            sarif = outputs[1].stdout
    assert len(counted) == 2  # `baseline`, then one run: the format is not an input, one result serves all
    assert "rope.py" in sarif and "norm.py" in sarif and '"suppressions"' in sarif


def _edit_tracked(root, monkeypatch):
    (root / "flashinfer/gemm.py").write_text("import os\n")


def _edit_a_docs_page(root, monkeypatch):  # not Python: still an input (docs rules read pages)
    (root / "docs/index.rst").write_text("Docs\n====\n\nMore.\n")


def _add_untracked(root, monkeypatch):
    (root / "flashinfer/rope.py").write_text("from .experimental import rope\n")


def _delete_tracked(root, monkeypatch):
    (root / "flashinfer/gemm.py").unlink()


def _stage_an_edit(root, monkeypatch):
    (root / "flashinfer/norm.py").write_text("from .experimental import fused\n")
    git(root, "add", "flashinfer/norm.py")


def _change_a_setting(root, monkeypatch):
    (root / "pyproject.toml").write_text('[tool.policy-check]\nper-file-ignores = { "flashinfer/gemm.py" = ["EXP001"] }\n')


def _mark_executable(root, monkeypatch):
    os.chmod(root / "flashinfer/norm.py", 0o755)


def _set_a_git_variable(root, monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.excludesFile")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "/nonexistent")


def _set_a_checker_variable(root, monkeypatch):
    monkeypatch.setenv("POLICY_CHECK_SOMETHING", "1")


def _add_conversion_attributes(root, monkeypatch):
    (root / ".gitattributes").write_text("*.py text eol=crlf\n")


@pytest.mark.parametrize("change", [
    _edit_tracked, _edit_a_docs_page, _add_untracked, _delete_tracked, _stage_an_edit, _change_a_setting,
    _mark_executable, _set_a_git_variable, _set_a_checker_variable, _add_conversion_attributes,
])
def test_a_changed_input_makes_the_run_compute_again(tmp_path, monkeypatch, counted, change):
    root = committed(tmp_path)
    invoke(root)
    change(root, monkeypatch)
    after = invoke(root)
    assert len(counted) == 2, "the run after the change was replayed"
    assert after == no_cache(root)
    assert invoke(root) == after and len(counted) == 3  # and the new inputs' result is replayed in turn


def test_an_edited_feature_record_or_baseline_makes_the_run_compute_again(tmp_path, counted):
    """A feature's ``FEATURE.toml`` and the baseline are inputs: editing either gives the
    findings a run without a cache gives, never the stored ones."""
    record = "flashinfer/experimental/feat/FEATURE.toml"
    root = committed(tmp_path, {**TREE, "flashinfer/experimental/feat/__init__.py": "", record: 'owner = "someone"\n'})
    cold = invoke(root)
    assert invoke(root) == cold and len(counted) == 1
    (root / record).write_text('owner = "someone"\nkind = "backend"\n')
    edited = invoke(root)
    assert len(counted) == 2 and edited == no_cache(root) and edited != cold
    assert CliRunner().invoke(main, ["baseline", "--root", str(root)]).exit_code == 0
    accepted = invoke(root)
    assert accepted[1]["findings"] == [] and invoke(root) == accepted
    computed = len(counted)
    path = root / "policy-check-baseline.json"
    data = json.loads(path.read_text())
    data["entries"] = data["entries"][1:]  # one accepted finding no longer accepted
    path.write_text(json.dumps(data, indent=2) + "\n")
    reopened = invoke(root)
    assert len(counted) == computed + 1 and len(reopened[1]["findings"]) == 1
    assert reopened == no_cache(root)


@pytest.mark.parametrize("options", [("--select", "EXP002"), ("--ignore", "EXP001"), ("--staged",),
                                     ("--no-baseline",), ("flashinfer/norm.py",)])
def test_other_options_are_other_runs(tmp_path, counted, options, monkeypatch):
    root = committed(tmp_path)
    (root / "flashinfer/rope.py").write_text("from .experimental import rope\n")  # untracked: --staged skips it
    invoke(root)
    monkeypatch.chdir(root)
    other = invoke(root, *options)
    assert len(counted) == 2
    assert other == no_cache(root, *options)


def test_the_key_binds_every_listed_file_and_no_ignored_one(tmp_path):
    """Every file git lists, any kind, changes the key when its bytes change; an ignored
    file's bytes do not (the run never reads it)."""
    root = committed(tmp_path, {**TREE, ".gitignore": "build/\n*.log\n", "build/out.py": "x = 1\n",
                                "setup.log": "a\n"})
    context = Context.build(root, read=False)
    first = replay.plan(context).key
    for rel in sorted(replay.plan(context).tree.files()):
        path = root / rel
        original = path.read_bytes()
        path.write_bytes(original + b"\n#\n")
        assert replay.plan(context).key != first, rel
        path.write_bytes(original)
    assert replay.plan(context).key == first
    (root / "build/out.py").write_text("x = 2\n")
    (root / "setup.log").write_text("b\n")
    assert replay.plan(context).key == first
    (root / "build/new.py").write_text("")  # inside an ignored directory: not even its name counts
    assert replay.plan(context).key == first
    (root / "new.log").write_text("")  # an ignored name beside listed files: its name counts
    assert replay.plan(context).key != first


class _Stats:
    """Every path `os.stat` and `os.lstat` were asked about (what ``Path.exists``,
    ``is_file`` and ``os.path.isdir`` ask)."""

    def __init__(self, monkeypatch):
        self.paths = []
        stat, lstat = os.stat, os.lstat

        def recording(function):
            def recorded(path, *args, **kwargs):
                if not isinstance(path, int):
                    self.paths.append(os.fspath(path))
                return function(path, *args, **kwargs)
            return recorded

        monkeypatch.setattr(os, "stat", recording(stat))
        monkeypatch.setattr(os, "lstat", recording(lstat))


def _uncovered_stats(plan, paths) -> list:
    """The paths below the root whose kind the key leaves out (`replay.kind_keyed`)."""
    inside = str(plan.root) + os.sep
    missed = []
    for path in paths:
        path = os.path.abspath(os.fsdecode(path))
        if path.startswith(inside) and not replay.kind_keyed(plan, path[len(inside):].replace(os.sep, "/")):
            missed.append(path)
    return missed


@pytest.mark.parametrize("tree", ["small", "this checkout"])
def test_a_run_reads_nothing_the_key_leaves_out(tmp_path, monkeypatch, tree):
    """Every file a run opens (the workers' too), every directory it lists and every
    path it stats inside the tree is covered by the key, on a small tree with an
    ignored directory and on this repository."""
    if tree == "small":
        root = committed(tmp_path, {**TREE, ".gitignore": "build/\n__pycache__/\n", "build/flashinfer/gemm.py": "import x\n",
                                    "flashinfer/experimental/__pycache__/gemm.cpython-311.pyc": b""})
    else:
        root = CHECKOUT
    context = Context.build(root, read=False)
    plan = replay.plan(context)
    assert plan is not None
    stats = _Stats(monkeypatch)
    with replay.watching() as seen:
        result = runner_module.check(context.reading_baseline(), jobs=2)
    assert seen and replay.covered(plan, seen)
    assert [rel for kind, rel in seen if kind == "open" and str(rel).startswith(str(root))]  # not vacuous
    assert _uncovered_stats(plan, stats.paths) == []
    assert not result.warnings


def test_a_run_that_reads_an_ignored_file_is_not_stored(tmp_path, counted, monkeypatch):
    """The check behind `remember`: an open or a listing the key leaves out keeps the
    result from the store."""
    root = committed(tmp_path, {**TREE, ".gitignore": "build/\n", "build/x.py": "import x\n"})
    plan = replay.plan(Context.build(root, read=False))
    assert replay.covered(plan, [("open", str(root / "flashinfer/gemm.py")), ("list", str(root / "flashinfer"))])
    assert not replay.covered(plan, [("open", str(root / "build/x.py"))])
    assert not replay.covered(plan, [("list", str(root / "build"))])

    check = runner_module.check

    def peeking(*args, **kwargs):
        (root / "build/x.py").read_bytes()
        return check(*args, **kwargs)

    monkeypatch.setattr(runner_module, "check", peeking)
    invoke(root)
    assert stored_results() == []


@pytest.mark.parametrize("setup", ["no git", "symbolic link", "submodule", "nested repository", "unreadable index"])
def test_a_tree_git_cannot_vouch_for_is_never_replayed(tmp_path, counted, setup):
    if setup == "no git":
        root = write_tree(tmp_path / "project", TREE)
    else:
        root = committed(tmp_path)
    if setup == "symbolic link":
        os.symlink("gemm.py", root / "flashinfer/alias.py")
        git(root, "add", ".")
        git(root, "commit", "-q", "-m", "link")
    elif setup in ("submodule", "nested repository"):
        inner = committed(tmp_path / "inner")
        if setup == "submodule":
            git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "vendor")
            git(root, "commit", "-q", "-m", "submodule")
        else:
            os.rename(inner, root / "vendor")
    elif setup == "unreadable index":
        (root / ".git/index").write_bytes(b"not an index")
    first, second = invoke(root), invoke(root)
    assert first == second == no_cache(root)
    assert len(counted) == 3 and stored_results() == []


def _forged(path: Path, findings: list) -> None:
    """The stored result at `path` rewritten to hold `findings`."""
    data = json.loads(path.read_text())
    data["result"]["findings"] = findings
    data["result"]["fingerprints"] = [["EXP001", "flashinfer.gemm", "", "x"] for _ in findings]
    path.write_text(json.dumps(data))


def test_a_stored_result_is_believed_only_where_only_this_user_could_write_it(tmp_path, counted):
    root = committed(tmp_path)
    cold = invoke(root)
    [path] = stored_results()
    _forged(path, [])
    os.chmod(path, 0o664)  # anyone in the group could have written this
    assert invoke(root) == cold and len(counted) == 2
    [path] = stored_results()  # the run stored its own result in its place
    assert invoke(root) == cold and len(counted) == 2
    # control: the same forgery in a private file is believed: what guards a stored
    # result is who may write the store, and the key it is stored under
    _forged(path, [])
    assert invoke(root)[1]["findings"] == []


@pytest.mark.parametrize("planted", ["symbolic link", "fifo"])
def test_a_stored_result_that_is_no_regular_file_is_never_read(tmp_path, counted, planted):
    """A link to a forged result (itself private) or a FIFO at a stored result's name is
    not read (nor waited on): the run computes its result."""
    root = committed(tmp_path)
    cold = invoke(root)
    [path] = stored_results()
    forged = tmp_path / "forged.json"
    forged.write_bytes(path.read_bytes())
    os.chmod(forged, 0o600)
    _forged(forged, [])
    path.unlink()
    if planted == "symbolic link":
        os.symlink(forged, path)
    else:
        os.mkfifo(path, 0o600)
    assert invoke(root) == cold and len(counted) == 2


def test_a_stored_result_under_another_key_or_malformed_is_ignored(tmp_path, counted):
    root = committed(tmp_path)
    invoke(root)
    [first] = stored_results()
    (root / "flashinfer/gemm.py").write_text("import os\n")
    clean = invoke(root)
    second = next(p for p in stored_results() if p != first)
    second.write_bytes(first.read_bytes())  # a result of other inputs, under this key's name
    assert invoke(root) == clean
    for broken in (b"", b"[]", b'{"policy-check-replay": 1}', first.read_bytes().replace(b'"EXP001"', b"1")):
        [path] = [p for p in stored_results() if p != first]
        path.write_bytes(broken.replace(first.stem.encode(), path.stem.encode()))
        assert invoke(root) == clean


def test_the_store_is_bounded(tmp_path, counted, monkeypatch):
    """At most `KEEP` results are kept, and none larger than `MAX_BYTES` is written or read."""
    monkeypatch.setattr(replay, "KEEP", 2)
    root = committed(tmp_path)
    for select in ("EXP001", "EXP002", "EXP004", "EXP006"):
        invoke(root, "--select", select)
    assert len(stored_results()) == 2
    for path in stored_results():
        path.unlink()
    monkeypatch.setattr(replay, "MAX_BYTES", 100)
    invoke(root)
    assert stored_results() == []


def test_a_store_inside_the_tree_is_used_only_where_git_ignores_it(tmp_path, counted):
    root = committed(tmp_path)
    cache = root / ".cache"
    invoke(root, "--cache-dir", str(cache))
    invoke(root, "--cache-dir", str(cache))
    assert not (cache / store.STORE / replay.DIRECTORY).exists() and len(counted) == 2  # not ignored: not used
    (root / ".gitignore").write_text(".cache/\n")
    for _ in range(3):  # the first run makes the store's directory, which changes what the tree holds
        invoke(root, "--cache-dir", str(cache))
    assert list((cache / store.STORE / replay.DIRECTORY).glob("*.json"))
    computed = len(counted)
    invoke(root, "--cache-dir", str(cache))
    assert len(counted) == computed


def test_a_replayed_run_imports_neither_the_runner_nor_the_rules(tmp_path):
    """The warm text run starts no rule machinery: the registry, the runner, the
    project model and the facts are not imported."""
    root = committed(tmp_path)
    probe = ("import sys\nfrom policy_checks.cli import main\n"
             "try:\n    main([" + ", ".join(repr(a) for a in ("run", "--root", str(root))) + "])\n"
             "except SystemExit:\n    pass\n"
             "print([m for m in ('policy_checks.engine.runner', 'policy_checks.rules.registry', "
             "'policy_checks.model.project', 'policy_checks.model.facts', 'policy_checks.engine.cache') "
             "if m in sys.modules])\n")
    environment = {**os.environ, "PYTHONPATH": str(CHECKOUT)}

    def loaded() -> str:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment,
                              cwd=CHECKOUT, check=True)
        assert "EXP001" in done.stdout
        return done.stdout.strip().splitlines()[-1]

    cold, warm = loaded(), loaded()
    assert "policy_checks.rules.registry" in cold and "policy_checks.engine.runner" in cold
    assert warm == "[]"


def test_gitfiles_state_hashes_what_git_does_not_vouch_for(tmp_path):
    """A modified tracked file counts by its bytes: two different edits give two states."""
    root = committed(tmp_path)
    before = gitfiles.state(root).digest
    (root / "flashinfer/norm.py").write_text("def norm(x):\n    return 1\n")
    one = gitfiles.state(root).digest
    (root / "flashinfer/norm.py").write_text("def norm(x):\n    return 2\n")
    two = gitfiles.state(root).digest
    assert len({before, one, two}) == 3


def test_the_key_binds_the_checkers_modules_and_the_libraries_it_reads_with(tmp_path, monkeypatch):
    root = committed(tmp_path)
    context = Context.build(root, read=False)
    checker = write_tree(tmp_path / "checker", {"policy_checks/__init__.py": "", "policy_checks/rules/a.py": "A = 1\n"})
    library = write_tree(tmp_path / "site", {"fakeyaml/__init__.py": "__version__ = '1'\n"})
    monkeypatch.setattr(replay, "PACKAGE", checker / "policy_checks")
    monkeypatch.setattr(replay, "LIBRARIES", ("fakeyaml",))
    monkeypatch.syspath_prepend(str(library))
    keys = [replay.plan(context).key]
    (checker / "policy_checks/rules/a.py").write_text("A = 2\n")
    keys.append(replay.plan(context).key)
    (library / "fakeyaml/__init__.py").write_text("__version__ = '2'\n")
    keys.append(replay.plan(context).key)
    assert len(set(keys)) == 3
