"""One bot comment per thread: found by a hidden marker and the bot's login, edited in place.

Anyone can paste the marker. So a comment counts as the bot's only when the bot wrote it:
its author is the bot's login. The author is spelt as REST spells it
(``github-actions[bot]``). ``graphql.rest_login`` turns GraphQL's ``github-actions`` back
into that.

Two runs racing on one thread may both create a comment. So after creating, the keeper lists
the thread again. It keeps the oldest of its own comments and deletes the rest.
"""

from __future__ import annotations

from itertools import islice

import github

from .client import BotError, call, describe_failure
from .writes import Writes

FALLBACK_LOGIN = "github-actions[bot]"  # who GITHUB_TOKEN comments as; it may not call GET /user


class BotIdentity:
    """The bot's login.

    It is configured, learnt from a comment it wrote, or asked of ``GET /user`` once."""

    def __init__(self, gh: github.Github, login: str | None = None):
        self._gh = gh
        self._login = login

    def learn(self, login: str) -> None:
        self._login = self._login or login

    @property
    def login(self) -> str:
        if self._login is None:
            try:
                self._login = self._gh.get_user().login
            except github.GithubException as exc:
                if exc.status != 403:
                    raise BotError(describe_failure(exc, "read the bot's own login (GET /user)")) from None
                self._login = FALLBACK_LOGIN  # installation tokens may not read /user
        return self._login


def _age(comment) -> tuple:
    return (comment.created_at, comment.id)


def is_edited(comment) -> bool:
    """Whether a comment was edited after it was posted.

    REST's ``updated_at`` then differs from ``created_at``. In GraphQL, ``lastEditedAt`` is set,
    or ``includesCreatedEdit``. `graphql.comment_objects` spells those as REST does. What an
    edited comment says now is not what was there when it was read."""
    updated = getattr(comment, "updated_at", None)
    return updated is not None and updated != comment.created_at


def own_comments(comments: list, marker: str, identity: BotIdentity) -> list:
    """The bot's comments starting with ``marker``, oldest first.

    The login is asked only if needed."""
    marked = [c for c in comments if (c.body or "").startswith(marker)]
    if not marked:
        return []  # no need to learn the login
    login = identity.login.lower()
    return sorted((c for c in marked if c.user is not None and c.user.login.lower() == login), key=_age)


MAX_COMMENT_PAGES = 20  # 2,000 comments: a bound on what one run reads from a thread anyone can fill


class Comments(list):
    """A thread's comments, oldest first.

    ``truncated`` is set when the thread is longer than was read."""

    truncated = False


def list_comments(thread, where: str) -> Comments:
    """The thread's comments, at most ``MAX_COMMENT_PAGES`` pages of 100.

    One more page is asked for, to tell whether the thread goes on."""
    limit = MAX_COMMENT_PAGES * 100
    comments = Comments(call(f"list the comments of {where}", lambda: list(islice(thread.get_comments(), limit + 1))))
    if len(comments) > limit:
        del comments[limit:]
        comments.truncated = True
    return comments


def keep_comment(thread, marker: str, body: str, identity: BotIdentity, writes: Writes, where: str,
                 comments: list | None = None, recheck: bool = True) -> str:
    """Make the bot's comment on ``thread`` read ``body``.

    Returns "unchanged", "updated", "created" or "skipped". ``body`` must start with
    ``marker``. ``comments`` saves a listing when the caller has one. ``recheck=False`` skips
    the listing after a create. It is for callers whose runs never overlap. A duplicate left by
    an overlap would be removed by the next run anyway.
    """
    assert body.startswith(marker)
    if comments is None:
        comments = list_comments(thread, where)
    ours = own_comments(comments, marker, identity)
    if not ours and getattr(comments, "truncated", False):
        # The bot's comment may lie past what was read: creating one could repeat it on every run.
        writes.echo(f"{where} has more comments than the bot reads: its comment is left alone (the status still says it)")
        return "skipped"
    if ours:
        keep, extra = ours[0], ours[1:]
        for duplicate in extra:
            _delete(duplicate, writes, where)
        if (keep.body or "").rstrip() == body.rstrip():
            return "unchanged"
        writes.perform(f"update the bot comment on {where}", lambda: keep.edit(body), preview=body)
        return "updated"
    created = writes.perform(f"create a bot comment on {where}", lambda: thread.create_comment(body), preview=body)
    if created is not None:
        identity.learn(created.user.login)
    if created is not None and recheck:
        # A concurrent run may have created one too: keep the oldest, delete ours that are newer.
        ours = own_comments(list_comments(thread, where), marker, identity)
        for duplicate in ours[1:]:
            _delete(duplicate, writes, where)
    return "created"


def _delete(comment, writes: Writes, where: str) -> None:
    def delete():
        try:
            comment.delete()
        except github.UnknownObjectException:
            pass  # the other run deleted it first

    writes.perform(f"delete a duplicate bot comment on {where}", delete)
