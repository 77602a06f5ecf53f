"""Issue 25, route 8, past the bot: everything EXP008 reads of the stable lane is policy. Through the fake
GitHub, each PR below undoes the lane's isolation in a file the bot used not to read (a configuration under
``tests/``, a conftest hook of the lane, a workflow's pytest command line) and used to end green; now it
fails until a maintainer approves. Each sits beside a harmless twin that stays green, and tightening never
needs approval.
"""

from __future__ import annotations

import sys

import pytest

from policy_checks.bot import lane_weakening as lanes
from policy_checks.bot import policy_weakening as pw
from policy_checks.bot.revisions import FileAtRevisions

from . import test_bot_policy_weakening as helpers  # its PR helpers and the `repo` fixture

REPO, pull, check, comment_of = helpers.REPO, helpers.pull, helpers.check, helpers.comment_of
assert_flagged, assert_green, approve_command = helpers.assert_flagged, helpers.assert_green, helpers.approve_command
PYTEST_INI, TESTS_WORKFLOW = helpers.PYTEST_INI, helpers.TESTS_WORKFLOW
repo = helpers.repo  # the fixture: a repository with a maintainer, a reader and a writer
TESTS_RUN = "      - run: python -m pytest tests/\n"
assert TESTS_RUN in TESTS_WORKFLOW


def workflow(command: str) -> dict:
    return {".github/workflows/tests.yml": TESTS_WORKFLOW.replace(TESTS_RUN, f"      - run: {command}\n")}


# ----- a configuration under tests/: pytest tests/ reads it before the root's ------------------------

def test_a_configuration_added_under_tests_that_drops_the_exclusion_is_flagged(repo, bot_cli):
    pr = pull(repo, {"tests/pytest.ini": "[pytest]\nnorecursedirs = .git\n"})
    assert_flagged(repo, bot_cli, pr, "pytest's `norecursedirs` changes from `test_helpers tests/experimental",
                   "to `.git` (pytest reads `tests/pytest.ini`)")


def test_a_tests_pyproject_table_is_read_in_its_turn(repo, bot_cli):
    pr = pull(repo, {"tests/pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-o norecursedirs=.git"\n'})
    assert_flagged(repo, bot_cli, pr, "pytest's `norecursedirs` changes", "(pytest reads `tests/pyproject.toml`)")


@pytest.mark.parametrize("head", [
    {"tests/unit/pytest.ini": "[pytest]\nnorecursedirs = .git\n"},  # below the lane's directory: never read for it
    {"tests/pytest.ini": PYTEST_INI.replace("timeout = 900", "timeout = 60")},  # the same keys that matter
    {"tests/pyproject.toml": "[tool.ruff]\nline-length = 100\n"},  # no pytest table: pytest goes on up
], ids=["folder-pytest-never-reads", "same-settings", "not-pytests"])
def test_a_configuration_pytest_does_not_use_or_that_keeps_the_lane_is_not_flagged(repo, bot_cli, head):
    assert_green(repo, bot_cli, pull(repo, head))


def test_a_suppression_in_the_configuration_under_tests_is_flagged(repo, bot_cli):
    head = PYTEST_INI.replace("norecursedirs", "# policy: ignore[EXP008] local runs\nnorecursedirs")
    pr = pull(repo, {"tests/pytest.ini": head})
    body = assert_flagged(repo, bot_cli, pr, "`tests/pytest.ini` adds the suppression "
                                             "`# policy: ignore[EXP008] local runs`")
    assert "pytest's `norecursedirs` changes" not in body  # the same settings as the root's


# ----- conftest hooks of the lane ----------------------------------------------------------------------

READMITS = ("def pytest_ignore_collect(collection_path, config):\n"
            "    return collection_path.name == 'slow'\n")  # False for everything else: re-admits it
SKIPS_ONLY = ("import pytest\n\n\n"
              "def pytest_ignore_collect(collection_path, config):\n"
              "    if collection_path.name == 'slow':\n        return True\n    return None\n\n\n"
              "def pytest_collection_modifyitems(config, items):\n"
              "    for item in items:\n        item.add_marker(pytest.mark.skip(reason='no GPU'))\n"
              "    items[:] = [item for item in items if 'gpu' not in item.keywords]\n")


@pytest.mark.parametrize("head, base, renames, expected", [
    ({"tests/conftest.py": READMITS}, None, None, "`tests/conftest.py` `return collection_path.name == 'slow'`"),
    ({"tests/conftest.py": SKIPS_ONLY.replace("return None", "return False")}, {"tests/conftest.py": SKIPS_ONLY},
     None, "`tests/conftest.py` `return False`: pytest_ignore_collect can answer a false value"),
    ({"tests/attention/conftest.py": "def pytest_configure(config):\n    config.args.append('tests/experimental')\n"},
     None, None, "`tests/attention/conftest.py` `config.args.append('tests/experimental')`"),
    ({"tests/conftest.py": READMITS}, {"tests/experimental/conftest.py": READMITS},
     {"tests/conftest.py": "tests/experimental/conftest.py"}, "`tests/conftest.py` `return collection_path.name"),
], ids=["added", "changed-to-readmit", "nested-rewrites-args", "renamed-in-from-the-experimental-lane"])
def test_a_lane_conftest_hook_that_readmits_tests_is_flagged(repo, bot_cli, head, base, renames, expected):
    pr = pull(repo, head, base=base, renames=renames)
    assert_flagged(repo, bot_cli, pr, expected, "the stable lane may collect experimental tests")


@pytest.mark.parametrize("head, base", [
    ({"tests/conftest.py": SKIPS_ONLY}, None),  # skips and deselects only
    ({"tests/conftest.py": "import os\n" + READMITS}, {"tests/conftest.py": READMITS}),  # the same hook, moved
    ({"tests/conftest.py": SKIPS_ONLY}, {"tests/conftest.py": READMITS}),  # tightening: the re-admission goes
], ids=["skip-only-hook", "unchanged-hook", "tightened"])
def test_a_conftest_hook_that_only_skips_is_not_flagged(repo, bot_cli, head, base):
    assert_green(repo, bot_cli, pull(repo, head, base=base))


def test_a_hook_in_the_experimental_lanes_own_conftest_is_no_policy_edit(repo, bot_cli):
    """The PR touches experimental tests (undeclared, so it fails for that), but weakens no policy."""
    pr = pull(repo, {"tests/experimental/conftest.py": READMITS})
    check(bot_cli, pr)
    body = comment_of(repo, pr)
    assert "tests/experimental/conftest.py" in body and "Policy weakened" not in body


# ----- workflows' pytest command lines -------------------------------------------------------------------

@pytest.mark.parametrize("command, expected", [
    ("python -m pytest tests/ -o norecursedirs=.git", "`-o norecursedirs`"),
    ("pytest tests/ --override-ini=norecursedirs=.git", "`-o norecursedirs`"),
    ("python3 -I -m pytest tests/ -c other.ini", "`-c`: `` `-c other.ini` makes pytest read another configuration"
                                                 " than pytest.ini ``"),
    ("pytest --rootdir=tests/experimental tests/", "`--rootdir`"),
    ("pytest -p no:python tests/", "`-p no:python`"),
    ("pytest tests/ tests/experimental/feat/test_feat.py", "`experimental path`"),
], ids=["-o", "--override-ini", "-c", "--rootdir", "-p-no", "experimental-path"])
def test_a_workflow_pytest_command_that_undoes_the_isolation_is_flagged(repo, bot_cli, command, expected):
    pr = pull(repo, workflow(command))
    assert_flagged(repo, bot_cli, pr, "`.github/workflows/tests.yml` runs pytest with " + expected)


def test_pytest_addopts_in_a_workflow_is_read_and_the_change_can_be_approved(repo, bot_cli):
    text = TESTS_WORKFLOW.replace(TESTS_RUN, "      - env:\n          PYTEST_ADDOPTS: -o norecursedirs=.git\n"
                                             "        run: pytest tests/\n")
    pr = pull(repo, {".github/workflows/tests.yml": text})
    command = approve_command(assert_flagged(repo, bot_cli, pr, "runs pytest with `-o norecursedirs`"))
    repo.add_comment(REPO, pr, command, "maintainer")
    assert check(bot_cli, pr).exit_code == 0
    assert "approved by" in comment_of(repo, pr)


@pytest.mark.parametrize("command", [
    "python -m pytest tests/ -p no:cacheprovider -q",
    "pytest tests/experimental/ -o norecursedirs=.git",  # the experimental lane's own command line
    "pytest tests/ -o 'norecursedirs=.git tests/experimental'",  # the override keeps the exclusion
    "pytest tests/ -c pytest.ini",  # the configuration pytest uses anyway
], ids=["harmless-plugin", "experimental-lane", "keeps-exclusion", "same-config"])
def test_a_workflow_pytest_command_that_keeps_the_isolation_is_not_flagged(repo, bot_cli, command):
    assert_green(repo, bot_cli, pull(repo, workflow(command)))


def test_dropping_an_override_from_a_workflow_is_tightening(repo, bot_cli):
    base = workflow("python -m pytest tests/ -o norecursedirs=.git")
    assert_green(repo, bot_cli, pull(repo, workflow("python -m pytest tests/"), base=base))


def test_a_suppression_added_to_a_workflow_is_flagged(repo, bot_cli):
    """EXP008 reads suppression comments in workflows: one added there silences it."""
    head = TESTS_WORKFLOW.replace("jobs:\n", "# policy: ignore[EXP008] the GPU lane\njobs:\n")
    pr = pull(repo, {".github/workflows/tests.yml": head})
    assert_flagged(repo, bot_cli, pr, "`.github/workflows/tests.yml` adds the suppression "
                                      "`# policy: ignore[EXP008] the GPU lane`")


# ----- links: the bot fails a link in the test lanes outright ------------------------------------------------

def test_a_link_under_tests_to_the_experimental_folder_fails(repo, bot_cli):
    Link = sys.modules["bot_fake_graphql"].Link  # loaded by conftest.py under this name
    pr = pull(repo, {"tests/more": Link("experimental")})
    result = check(bot_cli, pr)
    assert result.exit_code == 1 and helpers.status_of(repo, pr)["state"] == "failure"
    assert "`tests/more` is a symbolic link (git mode 120000) inside the checked package or the test lanes" in (
        result.output)


# ----- the readers, without GitHub ---------------------------------------------------------------------------

def test_the_lane_reads_pytests_candidates_directory_by_directory():
    assert pw.PYTEST_PATHS[:2] == ("tests/pytest.toml", "tests/.pytest.toml")
    assert pw.PYTEST_PATHS[-len(pw.PYTEST_FILES):] == pw.PYTEST_FILES
    assert pw.pytest_config({"tests/setup.cfg": "[tool:pytest]\naddopts = -q\n", "pytest.ini": PYTEST_INI}).name == (
        "tests/setup.cfg")
    assert pw.pytest_config({"tests/setup.cfg": "[metadata]\n", "pytest.ini": PYTEST_INI}).name == "pytest.ini"


def test_which_conftests_the_lane_loads():
    assert [p for p in ("conftest.py", "tests/conftest.py", "tests/a/b/conftest.py", "tests/experimental/conftest.py",
                        "tests/experimental/x/conftest.py", "docs/conftest.py", "tests/a/conftest.txt")
            if lanes.is_lane_conftest(p)] == ["tests/conftest.py", "tests/a/b/conftest.py"]


def test_a_readmission_the_base_held_as_often_is_not_new():
    assert lanes.conftest_weakenings("tests/conftest.py", READMITS, "\n\n" + READMITS) == []
    [(text, parts)] = lanes.conftest_weakenings("tests/conftest.py", READMITS, READMITS + READMITS)  # a copy
    assert parts[-1] == 2 and "`return collection_path.name == 'slow'`" in text
    files = {"tests/conftest.py": FileAtRevisions("tests/conftest.py", None, READMITS)}
    listed = [pw.Changed("tests/conftest.py", "added")]
    assert [w.kind for w in pw.lane_weakenings(listed, files, True)] == [pw.PYTEST]



def test_a_conftest_python_cannot_parse_fails_closed():
    [(text, _)] = lanes.conftest_weakenings("tests/conftest.py", None, "\"entries\": " + "[" * 5000)
    assert text.startswith("`tests/conftest.py`: the bot cannot parse it")
