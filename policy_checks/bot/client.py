"""The GitHub connection: PyGithub with a bounded retry budget, and failures worded for people.

These are retried while the run's total waiting stays within ``retry_budget_s``:

- rate limits (403 with ``X-RateLimit-Remaining: 0``, 403/429 with ``Retry-After``);
- 5xx answers;
- dropped or slow connections.

After that, the answer is handed back and reported as a `BotError`. A 403 that is not a rate
limit is never retried: it means a read-only token.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import github
import requests
from urllib3.exceptions import MaxRetryError
from urllib3.util.retry import Retry


class BotError(Exception):
    """A failure worded for the person reading the workflow log; it never holds the token."""


@dataclass
class RetryClock:
    """Waiting shared by every request of one run, so the whole run's retrying is bounded."""

    budget_s: float
    waited_s: float = 0.0
    retries: int = 0


def _rate_limited(headers) -> bool:
    return headers.get("Retry-After") is not None or headers.get("X-RateLimit-Remaining") == "0"


class BoundedRetry(Retry):
    """urllib3 retry policy for GitHub, within a time budget.

    It retries rate limits, 5xx answers and connection errors."""

    STATUSES = frozenset({403, 429, 500, 502, 503, 504})

    def __init__(self, clock: RetryClock | None = None, planned_wait: float | None = None, **kwargs):
        self.clock = clock if clock is not None else RetryClock(60.0)
        self.planned_wait = planned_wait
        kwargs.setdefault("total", 6)
        kwargs.setdefault("backoff_factor", 0.5)
        kwargs.setdefault("status_forcelist", self.STATUSES)
        # Retry writes too: a repeated comment is removed by the comment keeper, labels
        # and statuses are idempotent, and a rate-limited request never ran.
        kwargs.setdefault("allowed_methods", None)
        # Hand the last answer back to PyGithub instead of raising, so it is reported as such.
        kwargs.setdefault("raise_on_status", False)
        super().__init__(**kwargs)

    def new(self, **kwargs) -> BoundedRetry:
        kwargs.setdefault("clock", self.clock)
        return super().new(**kwargs)

    def increment(self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None):
        if response is not None and response.status == 403 and not _rate_limited(response.headers):
            raise MaxRetryError(_pool, url, "403 without a rate limit: not retried")
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        wait = self._wait_after(response, retry)
        if self.clock.waited_s + wait > self.clock.budget_s:
            raise MaxRetryError(_pool, url, f"retry budget of {self.clock.budget_s:g}s spent")
        retry.planned_wait = wait
        return retry

    def _wait_after(self, response, retry: Retry) -> float:
        """Seconds to wait.

        ``Retry-After`` first, else until ``X-RateLimit-Reset``, else exponential backoff."""
        if response is not None:
            after = response.headers.get("Retry-After")
            if after is not None:
                try:
                    return max(0.0, float(after))
                except ValueError:
                    pass
            reset = response.headers.get("X-RateLimit-Reset")
            if response.headers.get("X-RateLimit-Remaining") == "0" and reset and reset.isdigit():
                return max(0.0, int(reset) - time.time())
        return retry.get_backoff_time()

    def sleep(self, response=None) -> None:
        wait = self.planned_wait or 0.0
        self.clock.waited_s += wait
        self.clock.retries += 1
        if wait:
            time.sleep(wait)


def connect(
    token: str,
    api_url: str,
    *,
    retry_budget_s: float = 60.0,
    timeout_s: int = 15,
    write_interval_s: float = 1.0,
) -> github.Github:
    """A lazy PyGithub client: objects are fetched when first read, never twice."""
    return github.Github(
        base_url=api_url.rstrip("/"),
        auth=github.Auth.Token(token),
        retry=BoundedRetry(RetryClock(retry_budget_s)),
        timeout=timeout_s,
        per_page=100,
        seconds_between_requests=None,
        seconds_between_writes=write_interval_s or None,
        lazy=True,
    )


def describe_failure(exc: BaseException, action: str) -> str:
    """One line saying what failed and why, from the API's own message.

    It never shows the request headers."""
    if isinstance(exc, github.GithubException):
        message = ""
        if isinstance(exc.data, dict):
            message = str(exc.data.get("message", ""))
        elif exc.data:
            message = str(exc.data)[:200]
        if isinstance(exc, github.RateLimitExceededException) or (
            exc.status in (403, 429) and exc.headers and _rate_limited(exc.headers)
        ):
            return f"{action}: GitHub's rate limit was still exceeded after the retry budget ({message})"
        if exc.status == 401:
            return f"{action}: GitHub rejected the token (401 {message})"
        if exc.status == 403:
            return f"{action}: the token may not do this (403 {message})"
        if exc.status == 404:
            return f"{action}: not found, or not visible to the token (404)"
        if exc.status >= 500:
            return f"{action}: GitHub kept failing ({exc.status}) until the retry budget ran out"
        return f"{action}: GitHub answered {exc.status} {message}".rstrip()
    if isinstance(exc, requests.RequestException):
        return f"{action}: no usable answer from the GitHub API ({type(exc).__name__}) within the retry budget"
    return f"{action}: {type(exc).__name__}"


def is_forbidden(exc: BaseException) -> bool:
    """A write refused for lack of permission (read-only token), as opposed to a failure."""
    return (
        isinstance(exc, github.GithubException)
        and exc.status == 403
        and not (exc.headers and _rate_limited(exc.headers))
    )


def fetched(obj):
    """Complete a lazy PyGithub object now, with one GET, so that a failure surfaces here."""
    _ = obj.raw_data
    return obj


def call(action: str, fn, *args, **kwargs):
    """Run one API call.

    Any GitHub or transport failure becomes a `BotError` naming ``action``."""
    try:
        return fn(*args, **kwargs)
    except (github.GithubException, requests.RequestException) as exc:
        raise BotError(describe_failure(exc, action)) from None
