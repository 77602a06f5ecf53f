"""Bulk reads through GitHub's GraphQL API: one request where REST needs one per issue or file.

Four named queries keep the request budgets:

- ``PrContext``: the PR's comments, and the tracking issue with its rendered body and
  comments. It also reads the repository's collaborators.
- ``LifecycleReview``: every ``FEATURE.toml``, and the issues labelled ``experimental`` with
  their comments and labels. It also reads the collaborators.
- ``TrackingIssues``: any other issues, by number.
- ``FilesAtRevisions`` (``revisions.py``): the PR's files at its base and head commits, 50
  paths a request. It reads through ``Repository.object(expression: "<sha>:<path>")``.

The answers become the PyGithub objects the rest of the bot uses, or
`revisions.FileAtRevisions`. So writes go through REST.

A part the token may not read comes back as ``None`` with a note, not as a failure.
Collaborators, for one, need push access. A connection with more than 100 entries is marked
incomplete. The caller reads the rest through REST.

Actors are turned into REST's spelling on the way in. GraphQL names the Bot that
``GITHUB_TOKEN`` acts as ``github-actions`` (``__typename: Bot``). REST names it
``github-actions[bot]``. Every login the rest of the bot compares is REST's.
"""

from __future__ import annotations

from dataclasses import dataclass

import github
import github.Issue
import github.IssueComment
import requests

from .client import BotError, describe_failure

_COMMENT_FIELDS = """
fragment CommentFields on IssueComment {
  fullDatabaseId body createdAt lastEditedAt includesCreatedEdit authorAssociation author { login __typename }
}
"""
_ISSUE_FIELDS = """
fragment IssueFields on Issue {
  number state body author { login __typename }
  labels(first: 100) { nodes { name } }
  comments(first: 100) { totalCount nodes { ...CommentFields } }
}
""" + _COMMENT_FIELDS

# Permissions are always those of the repository the bot serves ($owner/$name), never of the
# tracking issue's repository, which the PR's author chooses.
PR_CONTEXT = """
query PrContext($owner: String!, $name: String!, $pr: Int!,
                $withIssue: Boolean!, $issueOwner: String!, $issueName: String!, $issue: Int!) {
  thread: repository(owner: $owner, name: $name) {
    pullRequest(number: $pr) { comments(first: 100) { totalCount nodes { ...CommentFields } } }
    collaborators(first: 100) { pageInfo { hasNextPage } edges { permission node { login } } }
  }
  tracking: repository(owner: $issueOwner, name: $issueName) @include(if: $withIssue) {
    issueOrPullRequest(number: $issue) {
      __typename
      ... on Issue {
        number state body bodyHTML author { login __typename }
        assignees(first: 20) { nodes { login } }
        comments(first: 100) { totalCount nodes { ...CommentFields } }
      }
      ... on PullRequest { number }
    }
  }
}
""" + _COMMENT_FIELDS

# Records and collaborators come with the first page of issues only ($firstPage).
LIFECYCLE_REVIEW = """
query LifecycleReview($owner: String!, $name: String!, $records: String!, $labels: [String!],
                       $firstPage: Boolean!, $after: String) {
  repository(owner: $owner, name: $name) {
    records: object(expression: $records) @include(if: $firstPage) {
      ... on Tree { entries { name type object { ... on Tree { entries { name type
        object { ... on Blob { text isBinary } } } } } } }
    }
    collaborators(first: 100) @include(if: $firstPage) {
      pageInfo { hasNextPage } edges { permission node { login } }
    }
    issues(labels: $labels, states: [OPEN, CLOSED], first: 100, after: $after) {
      pageInfo { hasNextPage endCursor }
      nodes { ...IssueFields }
    }
  }
}
""" + _ISSUE_FIELDS


def tracking_issues_query(count: int) -> str:
    """``TrackingIssues``: ``count`` issues by repository and number, as ``tK``.

    The variables are ``oK``, ``nK`` and ``iK``."""
    params = ", ".join(f"$o{k}: String!, $n{k}: String!, $i{k}: Int!" for k in range(count))
    fields = "\n".join(
        f"  t{k}: repository(owner: $o{k}, name: $n{k}) {{ issueOrPullRequest(number: $i{k}) "
        "{ __typename ...IssueFields ... on PullRequest { number } } }"
        for k in range(count))
    return f"query TrackingIssues({params}) {{\n{fields}\n}}\n" + _ISSUE_FIELDS


def rest_login(actor: dict | None) -> str | None:
    """An actor's login as REST spells it.

    A Bot's gets the ``[bot]`` suffix GraphQL leaves off."""
    if not actor or not actor.get("login"):
        return None  # a deleted account ("ghost") comes back as a null author
    login = actor["login"]
    if actor.get("__typename") == "Bot" and not login.endswith("[bot]"):
        return login + "[bot]"
    return login


_LEVELS = {"ADMIN": "admin", "MAINTAIN": "maintain", "WRITE": "write", "TRIAGE": "triage", "READ": "read"}


def query(gh: github.Github, text: str, variables: dict, action: str) -> tuple[dict, list[dict]]:
    """Run one query.

    Return its data, and the errors GitHub attached to parts it could not answer."""
    try:
        _, answer = gh.requester.requestJsonAndCheck("POST", gh.requester.graphql_url,
                                                     input={"query": text, "variables": variables})
    except (github.GithubException, requests.RequestException) as exc:
        raise BotError(describe_failure(exc, action)) from None
    errors = answer.get("errors") or []
    if answer.get("data") is None:
        message = "; ".join(str(e.get("message", "")) for e in errors)[:300]
        raise BotError(f"{action}: GitHub's GraphQL API answered with errors ({message})")
    return answer["data"], errors


def error_at(errors: list[dict], *path) -> dict | None:
    """The error GitHub reported for the part of the answer at ``path``, above it or below it."""
    for error in errors:
        where = tuple(error.get("path") or ())
        if where[: len(path)] == path or path[: len(where)] == where:
            return error
    return None


@dataclass
class Collaborators:
    """Permission levels by lower-cased login, or why they could not be read."""

    levels: dict[str, str] | None = None
    unavailable: str = ""
    complete: bool = True


def collaborators(node: dict | None, errors: list[dict], *path) -> Collaborators:
    error = error_at(errors, *path, "collaborators")
    if node is None or node.get("collaborators") is None:
        why = (error or {}).get("message", "not answered")
        return Collaborators(unavailable=f"list the repository's collaborators: {why}")
    conn = node["collaborators"]
    levels = {e["node"]["login"].lower(): _LEVELS.get(e["permission"], "read") for e in conn["edges"] if e.get("node")}
    return Collaborators(levels=levels, complete=not conn["pageInfo"]["hasNextPage"])


_EDITED_AT_CREATION = "1970-01-01T00:00:00Z"  # edited, though GitHub gives no time: never equal to createdAt


def comment_objects(gh: github.Github, repo_name: str, nodes: list[dict]) -> list:
    """GraphQL comments as PyGithub ``IssueComment`` objects that can be edited and deleted."""
    out = []
    for node in nodes:
        author = rest_login(node.get("author"))
        comment_id = int(node["fullDatabaseId"])  # the REST id (a BigInt, sent as a string)
        attributes = {
            "id": comment_id, "body": node.get("body") or "", "created_at": node["createdAt"],
            # REST's spelling of an edit: updated_at differs from created_at (`comments.is_edited`)
            "updated_at": node.get("lastEditedAt") or (_EDITED_AT_CREATION if node.get("includesCreatedEdit")
                                                       else node["createdAt"]),
            "user": {"login": author} if author else None,
            "author_association": node.get("authorAssociation"),
            "url": f"/repos/{repo_name}/issues/comments/{comment_id}",
        }
        out.append(github.IssueComment.IssueComment(gh.requester, {}, attributes, completed=True))
    return out


@dataclass
class IssueData:
    """An issue read through GraphQL: the PyGithub object and its comments.

    ``None`` comments mean: read them through REST."""

    issue: object
    comments: list | None = None


def issue_object(gh: github.Github, repo_name: str, node: dict) -> IssueData:
    """A GraphQL issue or pull request as a completed PyGithub ``Issue``.

    Writes go to its REST URL."""
    number = node["number"]
    url = f"/repos/{repo_name}/issues/{number}"
    is_pull = node.get("__typename") == "PullRequest"
    comments = node.get("comments") or {"totalCount": 0, "nodes": []}
    attributes = {
        "number": number, "url": url, "state": str(node.get("state", "open")).lower(), "body": node.get("body"),
        "body_html": node.get("bodyHTML"),
        "user": {"login": rest_login(node.get("author"))} if rest_login(node.get("author")) else None,
        "assignees": [{"login": a["login"]} for a in (node.get("assignees") or {}).get("nodes", [])],
        "labels": [{"name": label["name"]} for label in (node.get("labels") or {}).get("nodes", [])],
        "comments": comments["totalCount"],
        "pull_request": {"url": f"/repos/{repo_name}/pulls/{number}"} if is_pull else None,
    }
    issue = github.Issue.Issue(gh.requester, {}, attributes, completed=True)
    complete = len(comments["nodes"]) >= comments["totalCount"]
    return IssueData(issue, comment_objects(gh, repo_name, comments["nodes"]) if complete else None)
