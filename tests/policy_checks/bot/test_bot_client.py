"""Faults on the wire: 5xx, rate limits, slow answers, refusals; retried within a budget, then reported."""

from __future__ import annotations

import time

import pytest

REPO = "acme/widgets"
PULL = r"^/repos/acme/widgets/pulls/\d+$"


@pytest.fixture
def pr(github_api):
    return github_api.add_pull(REPO, "Fix a typo.", [("README.md", "+typo")])


def check(bot_cli, pr, *extra):
    return bot_cli("pr", "--repo", REPO, "--pr", str(pr), *extra)


def test_server_errors_are_retried(github_api, bot_cli, pr):
    github_api.inject("GET", PULL, 502, times=2)
    result = check(bot_cli, pr)
    assert result.exit_code == 0, result.output
    assert github_api.count("GET", PULL) == 3


def test_429_with_retry_after_is_retried(github_api, bot_cli, pr):
    github_api.inject("GET", r"/files$", 429, headers={"Retry-After": "0"})
    assert check(bot_cli, pr).exit_code == 0
    assert github_api.count("GET", r"/files$") == 2


def test_primary_rate_limit_waits_for_the_reset(github_api, bot_cli, pr):
    reset = str(int(time.time()))  # already reached: no real waiting in the test
    github_api.inject("GET", PULL, 403, headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset},
                      body={"message": "API rate limit exceeded"})
    assert check(bot_cli, pr).exit_code == 0
    assert github_api.count("GET", PULL) == 2


def test_rate_limit_beyond_the_budget_is_reported_at_once(github_api, bot_cli, pr):
    reset = str(int(time.time()) + 3600)
    github_api.inject("GET", PULL, 403, headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset},
                      body={"message": "API rate limit exceeded"})
    started = time.monotonic()
    result = check(bot_cli, pr)
    assert time.monotonic() - started < 3
    assert result.exit_code == 2
    assert "rate limit was still exceeded after the retry budget" in result.output
    assert github_api.count("GET", PULL) == 1


def test_persistent_server_errors_stop_within_the_budget(github_api, bot_cli, pr):
    github_api.inject("GET", PULL, 503, times=100)
    started = time.monotonic()
    result = check(bot_cli, pr, "--retry-budget", "0.5")
    assert time.monotonic() - started < 3
    assert result.exit_code == 2 and "kept failing (503)" in result.output
    assert 2 <= github_api.count("GET", PULL) < 10


def test_slow_answer_times_out_and_is_retried(github_api, bot_cli, pr):
    github_api.inject("GET", PULL, None, delay=2.5)
    result = check(bot_cli, pr, "--timeout", "1")
    assert result.exit_code == 0, result.output
    assert github_api.count("GET", PULL) == 2


def test_refusal_is_not_retried(github_api, bot_cli, pr):
    github_api.inject("GET", PULL, 403, body={"message": "Resource not accessible by integration"})
    result = check(bot_cli, pr)
    assert result.exit_code == 2 and "the token may not do this (403" in result.output
    assert github_api.count("GET", PULL) == 1


def test_failed_write_is_retried_then_reported_and_the_rest_goes_on(github_api, bot_cli):
    pr = github_api.add_pull(REPO, None, [("flashinfer/experimental/x/a.py", "+x")])
    github_api.inject("POST", r"/statuses/", 502)  # once: retried
    assert check(bot_cli, pr).exit_code == 1  # undeclared experimental code
    assert github_api.count("POST", r"/statuses/") == 2
    github_api.repo(REPO).issues[pr]["body"] = "## Experimental Track\n- [x] experimental\n"
    github_api.inject("POST", r"/statuses/", 500, times=100)
    result = check(bot_cli, pr, "--retry-budget", "0.2")
    assert result.exit_code == 2 and "Failed" in result.output
    assert github_api.count("PATCH", r"/issues/comments/") == 1  # the comment was still updated


def test_graphql_failures_are_reported_without_the_token(github_api, bot_cli):
    pr = github_api.add_pull(REPO, "## Experimental Track\n- [x] experimental\n  - Tracking issue: #7\n",
                             [("flashinfer/experimental/x/a.py", "+x")])
    github_api.inject("POST", r"^/graphql$", 502, times=100)
    result = check(bot_cli, pr, "--retry-budget", "0.2")
    assert result.exit_code == 2 and "kept failing (502)" in result.output
    assert "read the comments and tracking issue of #" in result.output
    github_api.faults.clear()
    github_api.inject("POST", r"^/graphql$", 200, body={"errors": [{"message": "Something went wrong"}]})
    result = bot_cli("review", "--repo", REPO)
    assert result.exit_code == 2
    assert "GraphQL API answered with errors (Something went wrong)" in result.output
    assert github_api.token not in result.output and "Traceback" not in result.output
