"""Every GraphQL request the bot can send, checked against GitHub's published schema.

The schema is vendored in ``github_schema/`` (see its README); ``graphql_schema.py`` checks a
request as GitHub would: standard validation, variable coercion, and the ``first``/``last``
limits of 1-100 on every connection. The variables below are the ones the bot builds
(``pr_check.read_context``, ``review.read_in_bulk``, ``review._Issues.read_others``).
"""

from __future__ import annotations

import hashlib
import sys

import pytest

from policy_checks.bot import graphql as bot_graphql


gs = sys.modules["bot_graphql_schema"]  # loaded once, by this directory's conftest.py

SCHEMA_BLOB = "55a7e16f1e6cce02df23725cc7f470ebf23bec1c"  # git blob of schema.graphql, as in the README

PR_VARIABLES = {"owner": "acme", "name": "widgets", "pr": 12, "withIssue": True,
                "issueOwner": "acme", "issueName": "tracking", "issue": 7}
# No tracking reference: the bot still sends every declared variable (they are non-null), issue 0.
PR_VARIABLES_NO_ISSUE = {"owner": "acme", "name": "widgets", "pr": 12, "withIssue": False,
                         "issueOwner": "acme", "issueName": "widgets", "issue": 0}
REVIEW_FIRST_PAGE = {"owner": "acme", "name": "widgets", "records": "HEAD:flashinfer/experimental",
                     "labels": ["experimental"], "firstPage": True, "after": None}
REVIEW_LATER_PAGE = dict(REVIEW_FIRST_PAGE, firstPage=False, after="Y3Vyc29yOnYyOpHOAAAAZA==")


def tracking_variables(count: int) -> dict:
    variables = {}
    for k in range(count):
        owner, name = ("acme", "widgets") if k % 2 == 0 else ("other-org", "other-repo")
        variables.update({f"o{k}": owner, f"n{k}": name, f"i{k}": 100 + k})
    return variables


BOT_REQUESTS = {
    "PrContext, with the tracking issue": (bot_graphql.PR_CONTEXT, PR_VARIABLES),
    "PrContext, without an issue": (bot_graphql.PR_CONTEXT, PR_VARIABLES_NO_ISSUE),
    "LifecycleReview, first page": (bot_graphql.LIFECYCLE_REVIEW, REVIEW_FIRST_PAGE),
    "LifecycleReview, a later page": (bot_graphql.LIFECYCLE_REVIEW, REVIEW_LATER_PAGE),
    **{f"TrackingIssues({n})": (bot_graphql.tracking_issues_query(n), tracking_variables(n)) for n in (1, 2, 50)},
}


def only(problems: list[str], *needles: str) -> None:
    """Some problem mentions every needle."""
    assert any(all(n in p for n in needles) for p in problems), problems


# ----- the schema ---------------------------------------------------------------------------

def test_vendored_schema_is_the_recorded_snapshot():
    data = gs.SCHEMA_PATH.read_bytes()
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    assert blob == SCHEMA_BLOB, "schema.graphql differs from the snapshot the README records: refresh both"
    readme = (gs.SCHEMA_PATH.parent / "README.md").read_text(encoding="utf-8")
    assert SCHEMA_BLOB in readme
    assert "Permission is hereby granted" in (gs.SCHEMA_PATH.parent / "LICENSE.md").read_text(encoding="utf-8")


def test_schema_is_built_once():
    assert gs.schema() is gs.schema()
    assert "issues" in gs.schema().get_type("Repository").fields


def test_vendored_schema_defects_are_only_the_known_ones():
    duplicated = {"Field 'EnterpriseOwnerInfo.repositoryDeployKeySetting' can only be defined once.",
                  "Field 'EnterpriseOwnerInfo.repositoryDeployKeySettingOrganizations' can only be defined once."}
    defects = gs.schema_defects()
    unknown = [d for d in defects if d not in duplicated
               and not ("is not deprecated, so implementation field" in d and d.endswith("must not be deprecated."))]
    assert unknown == [], "the refreshed schema has new defects: see github_schema/README.md"


# ----- the bot's queries --------------------------------------------------------------------

@pytest.mark.parametrize("which", list(BOT_REQUESTS))
def test_bot_query_is_valid_against_githubs_schema(which):
    query, variables = BOT_REQUESTS[which]
    assert gs.validate_request(query, variables) == []
    assert gs.check_request({"query": query, "variables": variables}) == []


@pytest.mark.parametrize("which", list(BOT_REQUESTS))
def test_bot_query_uses_no_deprecated_field(which):
    query, _ = BOT_REQUESTS[which]
    assert gs.deprecated_usages(query) == []


def test_the_bot_reads_comment_ids_as_bigint():
    """``fullDatabaseId`` (BigInt, a string on the wire) is the REST id; ``databaseId`` is a 32-bit Int."""
    comment = gs.schema().get_type("IssueComment").fields
    assert str(comment["fullDatabaseId"].type) == "BigInt"
    assert str(comment["databaseId"].type) == "Int"
    assert "fullDatabaseId" in bot_graphql.PR_CONTEXT


AUTHOR_IDENTITY = """
query AuthorIdentity($owner: String!, $name: String!, $pr: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $pr) {
      comments(first: 100) {
        nodes { fullDatabaseId author { __typename login ... on Bot { databaseId } ... on User { databaseId } } }
      }
    }
  }
}
"""


def test_an_author_identity_selection_that_github_accepts():
    variables = {"owner": "acme", "name": "widgets", "pr": 1}
    assert gs.validate_request(AUTHOR_IDENTITY, variables) == []
    # The Actor interface has no id of its own, and Bot has no fullDatabaseId.
    only(gs.validate_request(AUTHOR_IDENTITY.replace("author { __typename", "author { databaseId __typename"),
                             variables), "Cannot query field 'databaseId' on type 'Actor'")
    only(gs.validate_request(AUTHOR_IDENTITY.replace("... on Bot { databaseId }", "... on Bot { fullDatabaseId }"),
                             variables), "Cannot query field 'fullDatabaseId' on type 'Bot'")


# ----- the validator catches what GitHub would refuse ---------------------------------------

def changed(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def test_a_misspelt_field_is_caught():
    query = changed(bot_graphql.PR_CONTEXT, "bodyHTML", "bodyHtml")
    only(gs.validate_request(query, PR_VARIABLES), "Cannot query field 'bodyHtml' on type 'Issue'")


def test_first_over_100_is_caught():
    query = changed(bot_graphql.LIFECYCLE_REVIEW, "labels(first: 100)", "labels(first: 101)")
    problems = gs.validate_request(query, REVIEW_FIRST_PAGE)
    only(problems, "repository.issues.nodes.labels",
         "Requesting 101 records on the `labels` connection exceeds the `first` limit of 100 records.")
    assert len(problems) == 1, problems


def test_first_over_100_through_a_variable_is_caught():
    query = "query Q($n: Int!) { viewer { repositories(first: $n) { totalCount } } }"
    assert gs.validate_request(query, {"n": 100}) == []
    only(gs.validate_request(query, {"n": 500}), "Requesting 500 records on the `repositories` connection")


@pytest.mark.parametrize("bound", ["first: 0", "last: -1"])
def test_a_bound_under_1_is_caught(bound):
    query = f"query {{ viewer {{ repositories({bound}) {{ totalCount }} }} }}"
    only(gs.validate_request(query, {}), "viewer.repositories", "must be within 1-100")


def test_a_missing_first_on_a_connection_is_caught():
    query = changed(bot_graphql.PR_CONTEXT, "assignees(first: 20)", "assignees")
    only(gs.validate_request(query, PR_VARIABLES), "tracking.issueOrPullRequest.assignees",
         "You must provide a `first` or `last` value to properly paginate the `assignees` connection.")


def test_a_bound_whose_variable_has_no_value_is_caught():
    query = "query Q($n: Int) { viewer { repositories(first: $n) { totalCount } } }"
    only(gs.validate_request(query, {}), "`first` on the `repositories` connection has no value")
    only(gs.validate_request(query, {"n": None}), "You must provide a `first` or `last` value")
    assert gs.validate_request("query Q($n: Int = 30) { viewer { repositories(first: $n) { totalCount } } }", {}) == []


def test_a_connection_in_a_fragment_is_checked_where_it_is_used():
    query = changed(bot_graphql.tracking_issues_query(2), "comments(first: 100)", "comments(last: 200)")
    problems = gs.validate_request(query, tracking_variables(2))
    only(problems, "t0.issueOrPullRequest.comments", "exceeds the `last` limit of 100 records")
    only(problems, "t1.issueOrPullRequest.comments", "exceeds the `last` limit of 100 records")


def test_skipped_connections_are_not_counted():
    """``@include(if: false)``/``@skip(if: true)`` parts are not executed, so GitHub does not count them."""
    query = changed(bot_graphql.PR_CONTEXT, "assignees(first: 20)", "assignees")
    assert gs.validate_request(query, PR_VARIABLES_NO_ISSUE) == []
    skip = "query Q($s: Boolean!) { viewer { repositories @skip(if: $s) { totalCount } } }"
    assert gs.validate_request(skip, {"s": True}) == []
    only(gs.validate_request(skip, {"s": False}), "properly paginate the `repositories` connection")
    assert gs.validate_request("{ viewer { repositories @include(if: false) { totalCount } } }", {}) == []


def test_a_variable_of_the_wrong_type_is_caught():
    problems = gs.validate_request(bot_graphql.PR_CONTEXT, dict(PR_VARIABLES, pr="12"))
    only(problems, "$pr", "Int cannot represent non-integer value: '12'")
    only(gs.validate_request(bot_graphql.LIFECYCLE_REVIEW, dict(REVIEW_FIRST_PAGE, labels="experimental", firstPage=1)),
         "$firstPage", "Boolean cannot represent a non boolean value")


def test_a_missing_required_variable_is_caught():
    variables = {k: v for k, v in PR_VARIABLES_NO_ISSUE.items() if k != "issueOwner"}
    # graphql-core 3.2: "... of required type 'String!' was not provided."; 3.3: "... has invalid
    # value: Expected a value of non-null type 'String!' to be provided."
    only(gs.validate_request(bot_graphql.PR_CONTEXT, variables), "[variables]", "'$issueOwner'", "'String!'")
    only(gs.validate_request(bot_graphql.PR_CONTEXT, dict(PR_VARIABLES, withIssue=None)),
         "[variables]", "'$withIssue'", "'Boolean!'", "null")


def test_an_undeclared_variable_is_caught():
    only(gs.validate_request(bot_graphql.tracking_issues_query(1), tracking_variables(2)),
         "Variable '$o1' was sent but operation 'TrackingIssues' does not declare it.")


def test_an_unknown_fragment_is_caught():
    query = changed(bot_graphql.PR_CONTEXT, "nodes { ...CommentFields }", "nodes { ...CommentField }")
    only(gs.validate_request(query, PR_VARIABLES), "Unknown fragment 'CommentField'.")


def test_a_field_the_type_does_not_have_is_caught():
    query = changed(bot_graphql.tracking_issues_query(1), "... on PullRequest { number }",
                    "... on PullRequest { number merged } ... on Issue { merged }")
    problems = gs.validate_request(query, tracking_variables(1))
    only(problems, "Cannot query field 'merged' on type 'Issue'")
    assert not any("on type 'PullRequest'" in p for p in problems), problems  # PullRequest.merged exists


def test_a_fragment_on_an_unknown_or_impossible_type_is_caught():
    query = changed(bot_graphql.PR_CONTEXT, "... on PullRequest { number }", "... on PullReqest { number }")
    only(gs.validate_request(query, PR_VARIABLES), "Unknown type 'PullReqest'.")
    query = changed(bot_graphql.PR_CONTEXT, "... on PullRequest { number }", "... on Commit { oid }")
    only(gs.validate_request(query, PR_VARIABLES),
         "Fragment cannot be spread here as objects of type 'IssueOrPullRequest' can never be of type 'Commit'.")


def test_a_syntax_error_is_caught():
    only(gs.validate_request(bot_graphql.PR_CONTEXT[:-20], PR_VARIABLES), "[syntax]", "Syntax Error")


# ----- check_request: what the fake answers, as GitHub would --------------------------------

def test_check_request_answers_github_style_errors():
    query = changed(bot_graphql.PR_CONTEXT, "bodyHTML", "bodyHtml")
    errors = gs.check_request({"query": query, "variables": PR_VARIABLES})
    assert errors and all(set(e) <= {"type", "path", "locations", "message"} for e in errors)
    assert errors[0]["message"].startswith("Cannot query field 'bodyHtml' on type 'Issue'.")
    line, column = errors[0]["locations"][0]["line"], errors[0]["locations"][0]["column"]
    assert query.splitlines()[line - 1][column - 1:].startswith("bodyHtml")


def test_check_request_stops_at_the_first_failing_stage():
    query = changed(bot_graphql.PR_CONTEXT, "bodyHTML", "bodyHtml")
    query = changed(query, "comments(first: 100)", "comments(first: 500)")
    errors = gs.check_request({"query": query, "variables": dict(PR_VARIABLES, pr="x")})
    assert len(errors) == 1, errors
    assert errors[0]["message"].startswith("Cannot query field 'bodyHtml' on type 'Issue'.")


def test_check_request_reports_pagination_as_github_does():
    query = changed(bot_graphql.PR_CONTEXT, "comments(first: 100)", "comments(first: 500)")
    errors = gs.check_request({"query": query, "variables": PR_VARIABLES, "operationName": "PrContext"})
    assert errors == [{
        "type": "EXCESSIVE_PAGINATION", "path": ["thread", "pullRequest", "comments"],
        "locations": [{"line": 5, "column": 32}],
        "message": "Requesting 500 records on the `comments` connection exceeds the `first` limit of 100 records."}]


def test_check_request_reports_bad_variables():
    errors = gs.check_request({"query": bot_graphql.PR_CONTEXT, "variables": dict(PR_VARIABLES, pr="x")})
    assert len(errors) == 1 and "$pr" in errors[0]["message"] and errors[0]["locations"]


@pytest.mark.parametrize("payload", [{}, {"query": ""}, {"query": 3}, {"query": "{ viewer { login } }", "variables": [1]},
                                     {"query": "query A { viewer { login } } query B { viewer { login } }"}])
def test_check_request_refuses_malformed_bodies(payload):
    errors = gs.check_request(payload)
    assert errors and all(isinstance(e["message"], str) for e in errors)
