"""``policy-check bot note``: post a removed feature's closing note on its tracking issue.

The note is the one ``policy-check remove`` printed, posted as one comment. The lifecycle
commands never talk to GitHub, because the checker sits below the bot. The person who lands
the removal runs this with the note, the change filled in. The bot never closes the issue."""

from __future__ import annotations

from .client import call, fetched

MAX_BODY = 65536  # GitHub's limit on a comment body, in characters


def post_note(gh, repo: str, number: int, body: str) -> str:
    """Comment `body` on issue `number` of `repo`; return the new comment's URL."""
    issue = call(f"read issue #{number} of {repo}", lambda: fetched(gh.get_repo(repo).get_issue(number)))
    comment = call(f"comment on issue #{number} of {repo}", issue.create_comment, body)
    return comment.html_url
