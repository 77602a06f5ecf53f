"""``policy-check features init``: a FEATURE.toml for every feature that lacks one, filled from
the README's prose and the directory's first commit, never overwriting, idempotent."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_checks.lifecycle import drafting as features_init
from policy_checks.model import records as features
from policy_checks.cli import main
from policy_checks.lifecycle.drafting import FirstCommit, draft, noreply_login, readme_statements
from policy_checks.engine.runner import run

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from ..conftest import write_tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed")

EXP = "flashinfer/experimental"
JANE = ("Jane Roe", "jane@example.com")
BOT = ("Beta Dev", "123+beta-dev@users.noreply.github.com")
OLD_BOT = ("Gamma Dev", "gamma-dev@users.noreply.github.com")


def git(root: Path, *args: str, author=JANE, when: str = "2026-03-01T12:00:00+00:00") -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1], "GIT_AUTHOR_DATE": when,
           "GIT_COMMITTER_NAME": "CI", "GIT_COMMITTER_EMAIL": "ci@example.com", "GIT_COMMITTER_DATE": when,
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


def commit(root: Path, files: dict, author=JANE, when: str = "2026-03-01T12:00:00+00:00") -> None:
    write_tree(root, files)
    git(root, "add", "--", *files)
    git(root, "commit", "-q", "-m", "change", author=author, when=when)


@pytest.fixture
def repo(tmp_path):
    """Five features committed by different authors on different days, one with a record."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "remote", "add", "origin", "git@github.com:acme/widgets.git")
    commit(root, {"flashinfer/__init__.py": "", f"{EXP}/__init__.py": ""}, when="2026-01-05T10:00:00+00:00")
    # 23:30 in New York is the next day in UTC
    commit(root, {f"{EXP}/alpha/__init__.py": "", f"{EXP}/alpha/kernels.py": "X = 1\n"},
           author=JANE, when="2026-03-01T23:30:00-05:00")
    commit(root, {f"{EXP}/alpha/README.md": (
        "# Alpha gated attention (experimental)\n\nOwner: @octocat. Tracking issue: "
        "https://github.com/acme/widgets/issues/77.\n\n```bash\n# Owner: @mallory\n```\n")},
        author=BOT, when="2026-04-20T09:00:00+00:00")
    commit(root, {f"{EXP}/beta/__init__.py": ""}, author=BOT, when="2026-04-10T09:00:00+00:00")
    commit(root, {f"{EXP}/gamma/__init__.py": "", f"{EXP}/gamma/README.md": (
        "# Gamma\n\n**Owner:** Jane Roe. **Tracking:** [#12](https://github.com/acme/widgets/issues/12)\n")},
        author=JANE, when="2026-05-02T08:00:00+02:00")
    commit(root, {f"{EXP}/delta/__init__.py": "", f"{EXP}/delta/FEATURE.toml": "kind = 'api'\n"},
           author=OLD_BOT, when="2026-05-03T08:00:00+00:00")
    write_tree(root, {f"{EXP}/epsilon/__init__.py": ""})  # not committed yet
    return root


def init(root: Path, *args: str):
    return CliRunner().invoke(main, ["features", "init", "--root", str(root), *args])


def snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def record(root: Path, feature: str) -> dict:
    return tomllib.loads((root / EXP / feature / "FEATURE.toml").read_text())


def test_init_fills_what_the_tree_states_and_leaves_the_rest_visible(repo):
    result = init(repo)
    assert result.exit_code == 0, result.output
    assert "wrote 4 record(s) and 3 README skeleton(s); 1 feature(s) already had a record" in result.output
    assert record(repo, "alpha") == {"owner": "octocat", "tracking_issue": 77, "admitted": dt.date(2026, 3, 2)}
    assert record(repo, "beta") == {"owner": "beta-dev", "admitted": dt.date(2026, 4, 10)}  # no-reply e-mail
    assert record(repo, "gamma") == {"tracking_issue": 12, "admitted": dt.date(2026, 5, 2)}
    assert record(repo, "epsilon") == {}  # never committed: no date
    assert (repo / EXP / "delta/FEATURE.toml").read_text() == "kind = 'api'\n"  # never overwritten
    gamma = (repo / EXP / "gamma/FEATURE.toml").read_text()
    assert '# owner = ""  # TODO: ' in gamma and "README.md line 3 names the owner, but not by a GitHub @login" in gamma
    assert "# target_date = 2026-05-30  # TODO:" in gamma  # the default deadline, for a person to confirm
    alpha = (repo / EXP / "alpha/FEATURE.toml").read_text()
    assert 'owner = "octocat"  # README.md line 3' in alpha and "mallory" not in alpha
    # EXP009 keeps asking for what was left unfilled, and the board agrees
    result = run(repo, features_init_settings(repo), select=["EXP009"], use_cache=False, progress=False)
    asked = {f.subject for f in result.findings if f.subject.startswith("alpha: ")}
    assert {s.split(": ", 1)[1] for s in asked if "README" not in s} == {
        "kind", "target_release", "target_date", "apis", "backends", "auto_routing"}


def test_a_second_run_changes_nothing(repo):
    assert init(repo).exit_code == 0
    before = snapshot(repo)
    again = init(repo)
    assert again.exit_code == 0 and "wrote 0 record(s) and 0 README skeleton(s); 5 feature(s) already had a record" in again.output
    assert snapshot(repo) == before
    assert init(repo, "--diff").exit_code == 0


def test_diff_shows_new_files_and_writes_nothing(repo):
    before = snapshot(repo)
    result = init(repo, "--diff")
    assert result.exit_code == 1  # there are records to write
    assert snapshot(repo) == before
    assert f"--- /dev/null\n+++ b/{EXP}/alpha/FEATURE.toml\n@@ -0,0 +1,14 @@\n" in result.stdout
    assert '+owner = "octocat"  # README.md line 3\n' in result.stdout
    assert "would write 4 record(s)" in result.stderr


def test_without_git_there_are_no_dates(repo, monkeypatch):
    monkeypatch.setattr(features_init, "GIT", str(repo / "no-such-git"))
    assert init(repo).exit_code == 0
    assert record(repo, "alpha") == {"owner": "octocat", "tracking_issue": "acme/widgets#77"}  # no remote known
    assert record(repo, "beta") == {}
    assert "no git history here" in (repo / EXP / "beta/FEATURE.toml").read_text()


def test_outside_a_repository_there_are_no_dates(tmp_path):
    root = write_tree(tmp_path / "plain", {"flashinfer/__init__.py": "", f"{EXP}/solo/__init__.py": "",
                                           f"{EXP}/solo/README.md": "Owners: @octocat\n"})
    result = init(root)
    assert result.exit_code == 0 and "admission dates: no git history here" in result.output
    assert record(root, "solo") == {"owner": "octocat"}


def test_a_shallow_clone_dates_nothing(repo, tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(clone)], check=True,
                   capture_output=True)
    result = init(clone)
    assert result.exit_code == 0 and "a shallow clone" in result.output
    assert "admitted" not in record(clone, "beta")


def test_nothing_is_written_over_a_file_that_appears(repo):
    made, _, _ = features_init.drafts(repo, features_init_settings(repo))
    alpha = next(d for d in made if d.feature == "alpha")
    (repo / alpha.rel).write_text("kind = 'api'\n")
    assert features_init.write(repo, alpha) is False
    assert (repo / alpha.rel).read_text() == "kind = 'api'\n"
    (repo / EXP / "beta/FEATURE.toml").symlink_to("nowhere")  # a dangling link is something by that name
    made, having, _ = features_init.drafts(repo, features_init_settings(repo))
    assert "beta" not in {d.feature for d in made} and having == 3


def features_init_settings(root):
    from policy_checks.model.config import load

    return load(root)


# --- what a README states -------------------------------------------------------------------

@pytest.mark.parametrize("text, owner, tracking", [
    ("Owner: @octocat. Tracking issue: #123.\n", "octocat", 123),
    ("Owner: [@octo-cat](https://github.com/octo-cat)\nTracking: [#9](https://x/issues/9)\n", "octo-cat", 9),
    ("**Owners**: https://github.com/octocat\n**Tracking issue**: other/widgets#5\n", "octocat", "other/widgets#5"),
    ("Tracking issue: Acme/widgets#5.\n", None, 5),  # this repository, however spelt
    ("Tracking issue: https://github.com/other/repo/issues/8 (the parent)\n", None, "other/repo#8"),
    ("Tracking issue: https://github.com/acme/widgets/issues/8\n", None, 8),  # this repository
    ("Tracking issue: https://github.com/acme/widgets/pull/8\n", None, None),  # a pull request
    ("Owner: Jane Roe\nTracking issue: soon\n", None, None),
    ("Owner: @octo_cat, @octocat-\nTracking issue: #0, #1234567890\n", None, None),  # no login, no issue
    ("Owner: @a\nOwner: @b\n", None, None),  # two owners: no answer
    ("ownership: @a\nmy-owner: @b\nbacktracking: #3\n", None, None),  # other words
    ("```\nOwner: @a\nTracking issue: #3\n```\n", None, None),  # code, not prose
])
def test_readme_statements(text, owner, tracking):
    stated_owner, stated_tracking = readme_statements(text, this_repo="acme/widgets")
    assert (stated_owner.value, stated_tracking.value) == (owner, tracking)


def test_noreply_addresses_hold_a_login():
    assert noreply_login("123+octo-cat@users.noreply.github.com") == "octo-cat"
    assert noreply_login("octocat@users.noreply.github.com") == "octocat"
    for email in ("octocat@example.com", "-x@users.noreply.github.com", "a_b@users.noreply.github.com",
                  "x@users.noreply.github.com.evil.org"):
        assert noreply_login(email) is None


HOSTILE = [
    'Owner: @octocat"\nevil = true', "Owner: @octo\\ncat", 'Tracking issue: #12"]\n[table]', "Owner: @\u202eoctocat",
    "Owner: @octocat\x1b[2J", 'Tracking issue: https://github.com/a"b/c/issues/1', "Owner: @" + "a" * 5000,
    "Tracking issue: " + "acme/" * 5000 + "#1", "Owner:" + " " * 100_000 + "@x", "owner " * 50_000,
]


@pytest.mark.parametrize("readme", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_readmes_never_break_the_record(readme):
    start = time.perf_counter()
    made = draft("feat", f"{EXP}/feat", readme, FirstCommit("0" * 40, dt.date(2026, 1, 2), "x\x00\n\u2028y\x1b", "e"),
                 "acme/widgets")
    assert time.perf_counter() - start < 2.0
    assert_sound(made)


def assert_sound(made) -> None:
    data = tomllib.loads(made.text)  # parses
    assert set(data) == set(made.filled)
    parsed = features.parse("feat", made.text)
    assert all(p.key in parsed.absent for p in parsed.problems), parsed.problems  # what is there is valid
    assert all(line.isprintable() for line in made.text.splitlines())


@settings(max_examples=200, deadline=None)
@given(readme=st.text(max_size=200), name=st.text(max_size=40),
       prefix=st.sampled_from(["Owner: @", "Tracking issue: ", "Tracking: #", "Owner: https://github.com/", ""]))
def test_any_readme_and_author_give_a_sound_record(readme, name, prefix):
    first = FirstCommit("a" * 40, dt.date(2026, 1, 2), name, f"{name}@users.noreply.github.com")
    assert_sound(draft("feat", f"{EXP}/feat", prefix + readme, first, None))
