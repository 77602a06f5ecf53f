"""Reading a PR's files at its base and head commits (``policy_checks/bot/revisions.py``): the GraphQL
query checked against GitHub's published schema, and the reader against the fake GitHub."""

from __future__ import annotations

import sys

import pytest

from policy_checks.bot.client import BotError, connect
from policy_checks.bot.revisions import (PATHS_PER_REQUEST, FileAtRevisions, files_query, read_at_revisions,
                                         read_revisions)

gs = sys.modules["bot_graphql_schema"]  # loaded once, by this directory's conftest.py

REPO = "acme/widgets"


def variables(paths: int, presence: int, commits: bool, trees: int = 0) -> dict:
    out = {"owner": "acme", "name": "widgets"}
    if commits:
        out.update(baseSha="a" * 40, headSha="b" * 40)
    for k in range(paths):
        out.update({f"b{k}": f"{'a' * 40}:flashinfer/m{k}.py", f"h{k}": f"{'b' * 40}:flashinfer/m{k}.py"})
    for k in range(presence):
        out[f"p{k}"] = f"{'b' * 40}:flashinfer/p{k}.py"
    for k in range(trees):
        out[f"t{k}"] = f"{'b' * 40}:flashinfer/experimental/f{k}"
    return out


@pytest.mark.parametrize("paths, presence, commits, trees",
                         [(1, 0, True, 0), (PATHS_PER_REQUEST, 50, True, 10), (7, 3, False, 2), (0, 5, True, 0)])
def test_the_query_is_valid_against_githubs_schema(paths, presence, commits, trees):
    query = files_query(paths, presence, commits, trees)
    sent = variables(paths, presence, commits, trees)
    assert gs.validate_request(query, sent) == []
    assert gs.check_request({"query": query, "variables": sent}) == []
    assert gs.deprecated_usages(query) == []


def test_paths_travel_as_variables_never_in_the_query(github_api):
    """A path is data: quotes, braces and colons in it change nothing in the query."""
    hostile = 'x") { repository(owner: "evil") } #:.py'
    number = github_api.add_pull(REPO, None, [(hostile, "+x")])
    github_api.set_contents(REPO, number, head={hostile: "print(1)\n"})
    pull = github_api.repo(REPO).pulls[number]
    read = read_at_revisions(gh_of(github_api), REPO, pull["base"]["sha"], pull["head"]["sha"], [hostile])
    assert read[hostile].head == "print(1)\n" and read[hostile].complete
    assert files_query(1, 0, True) == files_query(1, 0, True)  # the text depends on the counts alone


@pytest.fixture
def pr(github_api):
    """A PR whose base and head hold the files the tests read."""
    number = github_api.add_pull(REPO, None, [("a.py", "+x"), ("b.py", None, "renamed", "old_b.py")])
    github_api.set_contents(REPO, number, base={"a.py": "x = 1\n", "old_b.py": "b = 0\n", "gone.py": "g\n",
                                                 "big.py": "#" * 10},
                            head={"a.py": "x = 2\n", "b.py": "b = 0\n", "new.py": "n\n", "gone.py": None,
                                  "big.py": "#" * 600_000, "blob.bin": b"\x00\x01", "dir/x.py": "",
                                  "flashinfer/experimental/f/__init__.py": "", "flashinfer/experimental/f/k/a.py": ""})
    pull = github_api.repo(REPO).pulls[number]
    return github_api, pull["base"]["sha"], pull["head"]["sha"]


def gh_of(g):
    return connect(g.token, g.url, retry_budget_s=1, write_interval_s=0)


def test_texts_at_both_commits_in_one_request(pr):
    g, base, head = pr
    g.requests.clear()
    read = read_at_revisions(gh_of(g), REPO, base, head,
                             ["a.py", ("b.py", "old_b.py"), "new.py", "gone.py", "nowhere.py"])
    assert g.count("POST", "/graphql") == 1
    assert read["a.py"] == FileAtRevisions("a.py", "x = 1\n", "x = 2\n")
    assert read["b.py"] == FileAtRevisions("b.py", "b = 0\n", "b = 0\n")  # a rename: its previous path at base
    assert read["new.py"] == FileAtRevisions("new.py", None, "n\n")
    assert read["gone.py"] == FileAtRevisions("gone.py", "g\n", None)
    assert read["nowhere.py"] == FileAtRevisions("nowhere.py", None, None)  # null: nothing at that path


@pytest.mark.parametrize("path, problem", [
    ("big.py", "at the head commit, it is too large for GitHub to send whole (600000 bytes)"),
    ("blob.bin", "at the head commit, GitHub reads it as binary"),
    ("dir", "at the head commit, it is a directory, not a file"),
])
def test_what_cannot_be_read_whole_is_incomplete(pr, path, problem):
    g, base, head = pr
    [read] = read_at_revisions(gh_of(g), REPO, base, head, [path]).values()
    assert not read.complete and read.problem == problem and read.head is None


def test_the_fake_cuts_text_as_github_does(pr):
    """GitHub sends the first 512,000 bytes of a larger blob's text and says ``isTruncated``."""
    g, _, head = pr
    blob = g.graphql_endpoint._object(g.repo(REPO), f"{head}:big.py")
    assert blob["isTruncated"] and len(blob["text"]) == 512_000 and blob["byteSize"] == 600_000
    assert g.graphql_endpoint._object(g.repo(REPO), f"{head}:blob.bin")["text"] is None


def test_more_paths_take_more_requests(pr):
    g, base, head = pr
    g.requests.clear()
    read = read_at_revisions(gh_of(g), REPO, base, head, [f"m{i}.py" for i in range(PATHS_PER_REQUEST + 1)])
    assert len(read) == PATHS_PER_REQUEST + 1 and g.count("POST", "/graphql") == 2
    g.requests.clear()
    assert read_at_revisions(gh_of(g), REPO, base, head, []) == {} and g.requests == []  # nothing to ask


def test_presence_and_trees_at_the_head(pr):
    g, base, head = pr
    g.requests.clear()
    read = read_revisions(gh_of(g), REPO, base, head, ["a.py"], present_at_head=["new.py", "gone.py", "dir"],
                          trees_at_head=["flashinfer/experimental/f", "flashinfer/experimental/none"])
    assert g.count("POST", "/graphql") == 1
    assert read.present == {"new.py": True, "gone.py": False, "dir": True}
    assert read.trees == {"flashinfer/experimental/f": ["flashinfer/experimental/f/__init__.py",
                                                        "flashinfer/experimental/f/k/a.py"],
                          "flashinfer/experimental/none": []}


def test_a_commit_github_does_not_know_is_an_error(pr):
    g, base, _ = pr
    with pytest.raises(BotError, match="does not know the commit"):
        read_at_revisions(gh_of(g), REPO, base, "f" * 40, ["a.py"])
