"""``policy-check bot pr``, ``policy-check bot review`` and ``policy-check bot note``.

The token comes from ``GITHUB_TOKEN`` only, and is never printed. It is never an option, so
it never lands in a shell history or a process list.

Exit status:

- 0: fine;
- 1: the PR check failed, or a review write failed;
- 2: usage, configuration or API error.

PyGithub is an optional extra (``[bot]``, `policy_checks.report.install_forms`). This module
imports nothing that needs it until a command runs. So ``policy-check --help`` and
``policy-check bot pr --help`` work without it. A command says in one line what to install.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import os

import click

from ..report.install_forms import needs_extra
from ..model.records import repository_problem

DEFAULT_API_URL = "https://api.github.com"
NEEDS_PYGITHUB = needs_extra("the bot needs PyGithub")


def _require_pygithub() -> None:
    """Exit with status 2 when PyGithub cannot be imported.

    One line names the extra to install."""
    try:
        for module in ("github", "requests", "markdown_it"):  # PyGithub, its HTTP library, the approvals' parser
            importlib.import_module(module)
    except ImportError:
        click.echo(NEEDS_PYGITHUB, err=True)
        raise SystemExit(2) from None


class BotFailure(click.ClickException):
    """An API or configuration failure, already worded for the log."""

    exit_code = 2


def _repo(ctx, param, value: str) -> str:
    owner, slash, name = value.partition("/")
    why = repository_problem(owner, name) if slash else None
    if not slash or why:
        raise click.BadParameter("expected OWNER/NAME, e.g. flashinfer-ai/flashinfer" + (f": {why}" if why else ""))
    return value


def _repos(ctx, param, values: tuple[str, ...]) -> frozenset[str]:
    for value in values:
        _repo(ctx, param, value)
    return frozenset(value.lower() for value in values)


def _session(api_url: str, retry_budget: float, timeout: int, write_interval: float, bot_login: str | None):
    """The PyGithub client and the bot's identity.

    When PyGithub is missing, it first prints one line naming the extra."""
    _require_pygithub()
    from .client import connect
    from .comments import BotIdentity

    token = os.environ.get("GITHUB_TOKEN", "").strip()
    if not token:
        raise click.UsageError("GITHUB_TOKEN is not set: the bot needs a token to read the repository")
    gh = connect(token, api_url, retry_budget_s=retry_budget, timeout_s=timeout, write_interval_s=write_interval)
    return gh, BotIdentity(gh, bot_login)


def _reported(work, *args):
    """Run ``work(*args)``; an API failure becomes one line of the log and exit status 2."""
    from .client import BotError

    try:
        return work(*args)
    except BotError as exc:
        raise BotFailure(str(exc)) from None


def _write_step_summary(markdown: str) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(markdown + "\n")


def _common(fn):
    options = [
        click.option("--repo", required=True, callback=_repo, metavar="OWNER/NAME", help="The repository, e.g. flashinfer-ai/flashinfer."),
        click.option("--dry-run", is_flag=True, help="Print every write it would make and make none."),
        click.option("--api-url", default=DEFAULT_API_URL, show_default=True, metavar="URL",
                     help="GitHub API base URL (GraphQL is asked at its /graphql; for GitHub Enterprise "
                          "give https://HOST/api/v3)."),
        click.option("--bot-login", envvar="BOT_LOGIN", default=None, metavar="LOGIN",
                     help="The bot's own login, to tell its comments from pasted copies [env BOT_LOGIN]. "
                          "Default: learnt from its first write, else asked of GET /user, "
                          "else github-actions[bot]."),
        click.option("--tracking-repo", "tracking_repos", multiple=True, envvar="TRACKING_REPOS", callback=_repos,
                     metavar="OWNER/NAME",
                     help="Another repository whose issues may serve as tracking issues (repeatable) "
                          "[env TRACKING_REPOS, space-separated]. Default: only the repository's own."),
        click.option("--retry-budget", type=click.FloatRange(0), default=60.0, show_default=True, metavar="SECONDS",
                     help="Total seconds the run may wait on rate limits and retries."),
        click.option("--timeout", type=click.IntRange(1), default=15, show_default=True, metavar="SECONDS",
                     help="Seconds to wait for one API answer."),
        click.option("--write-interval", type=click.FloatRange(0), default=1.0, show_default=True, metavar="SECONDS",
                     help="Seconds between writes (GitHub asks integrations to space them)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


_EPILOG = ("The token is read from GITHUB_TOKEN and never printed. Exit status: 0 fine, "
           "1 {failed}, 2 usage, configuration or API error.")


@click.group()
def bot() -> None:
    """The experimental-track bot: PR checks and the weekly lifecycle review (docs/bot.rst)."""


@bot.command(epilog=_EPILOG.format(failed="the PR fails the check"))
@_common
@click.option("--pr", "number", type=click.IntRange(1), required=True, metavar="N", help="Pull request number.")
def pr(repo, dry_run, api_url, bot_login, tracking_repos, retry_budget, timeout, write_interval, number) -> None:
    """Check one pull request against the Experimental Track.

    Reads the PR's `## Experimental Track` section, its tracking issue and its files. Sets the
    `experimental-track` commit status, adds the `experimental` label, and keeps one comment
    on the PR up to date.
    """
    gh, identity = _session(api_url, retry_budget, timeout, write_interval, bot_login)
    from .pr_check import render, run_pr_check
    from .writes import FAILED, Writes

    writes = Writes(dry_run=dry_run, echo=click.echo)
    verdict = _reported(run_pr_check, gh, repo, number, writes, identity, tracking_repos)
    report = render(verdict)
    click.echo(report)
    refused = writes.summary_lines()
    if refused:
        click.echo("\n".join(refused))
    _write_step_summary(report + ("\n" + "\n".join(refused) if refused else ""))
    if writes.of(FAILED):
        raise SystemExit(2)
    raise SystemExit(0 if verdict.ok else 1)


@bot.command(epilog=_EPILOG.format(failed="a write failed"))
@_common
@click.option("--today", type=click.DateTime(["%Y-%m-%d"]), default=None, metavar="YYYY-MM-DD",
              help="Review as of this UTC date (default: today in UTC).")
@click.option("--max-writes", type=click.IntRange(0), default=None, metavar="N",
              help="Make at most this many writes; the summary lists the rest for the next run.")
@click.option("--json", "as_json", is_flag=True, help="Print the review as JSON instead of Markdown.")
def review(repo, dry_run, api_url, bot_login, tracking_repos, retry_budget, timeout, write_interval, today, max_writes,
           as_json) -> None:
    """Review every experimental feature against its graduation deadline.

    Reads each flashinfer/experimental/*/FEATURE.toml at the default branch and its tracking
    issue. Posts one review comment per tracking issue per weekly cycle where something needs
    the owner. Labels overdue ones, and never closes an issue.
    """
    gh, identity = _session(api_url, retry_budget, timeout, write_interval, bot_login)
    from .deadlines import today_utc
    from .review import run_review
    from .writes import FAILED, Writes

    day: dt.date = today.date() if today else today_utc()
    # Dry-run lines go to stderr under --json so that stdout stays one JSON document.
    writes = Writes(dry_run=dry_run, max_writes=max_writes, echo=lambda s: click.echo(s, err=as_json))
    result = _reported(run_review, gh, repo, day, writes, identity, tracking_repos)
    markdown = result.markdown()
    click.echo(json.dumps(result.as_json(), indent=2) if as_json else markdown)
    _write_step_summary(markdown)
    raise SystemExit(1 if writes.of(FAILED) else 0)


@bot.command(epilog=_EPILOG.format(failed="the note was not posted"))
@_common
@click.option("--issue", "number", type=click.IntRange(1), required=True, metavar="N", help="The tracking issue.")
@click.option("--body-file", type=click.File("r", encoding="utf-8"), required=True, metavar="FILE",
              help="The note, as `policy-check remove` printed it with the change filled in ('-': stdin).")
def note(repo, dry_run, api_url, bot_login, tracking_repos, retry_budget, timeout, write_interval, number,
         body_file) -> None:
    """Post a removed feature's closing note on its tracking issue.

    It posts one comment; the issue stays open."""
    from .closing_note import MAX_BODY

    body = body_file.read(MAX_BODY + 1).strip()
    if not body or len(body) > MAX_BODY:
        raise click.UsageError(f"the note must hold 1 to {MAX_BODY} characters")
    if "<commit or PR>" in body:
        raise click.UsageError("the note still says <commit or PR>: name the change that removed the feature")
    if dry_run:
        click.echo(f"would comment on {repo}#{number}:\n{body}")
        raise SystemExit(0)
    gh, _ = _session(api_url, retry_budget, timeout, write_interval, bot_login)
    from .closing_note import post_note

    click.echo(f"posted: {_reported(post_note, gh, repo, number, body)}")
