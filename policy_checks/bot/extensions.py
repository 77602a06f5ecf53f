"""Maintainer commands on a tracking issue.

The commands are ``/experimental extend <weeks> <reason>`` and ``/experimental owner @login``.
Only users with write, maintain or admin permission on the repository the bot serves can
use them. They extend a deadline or confirm an owner.

An extension may repeat the reason of the previous accepted one. It is still counted, since
a maintainer granted it. But it is flagged, since the same reason twice suggests no progress.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import github
import requests

from .client import BotError, call, describe_failure, is_forbidden
from .deadlines import utc_date
from .parsers import normalise_reason, parse_extend_command

WRITE_LEVELS = frozenset({"admin", "maintain", "write"})
# ``author_association`` values of a comment that rule out write permission: no request needed.
NO_ACCESS_ASSOCIATIONS = frozenset({"NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "MANNEQUIN"})


class Permissions:
    """Repository permission of a login.

    It comes from the collaborator list when preloaded, else it is asked per user."""

    def __init__(self, repo, levels: dict[str, str] | None = None, unavailable: str = ""):
        self._repo = repo
        self._levels = levels  # lower-cased login -> level, from a complete collaborator listing
        self._asked: dict[str, str] = {}
        self.unavailable = unavailable  # why permissions could not be read, when they could not

    def preload(self) -> None:
        """One listing (100 per page) instead of a request per login.

        The orphan check needs it. A token that may not list collaborators leaves every
        permission unknown, reported in ``unavailable``. It does not stop the review.
        """
        try:
            self._levels = {user.login.lower(): _level(user) for user in self._repo.get_collaborators()}
        except github.GithubException as exc:
            if not is_forbidden(exc):
                raise BotError(describe_failure(exc, "list the repository's collaborators")) from None
            self.unavailable = describe_failure(exc, "list the repository's collaborators")
        except requests.RequestException as exc:
            raise BotError(describe_failure(exc, "list the repository's collaborators")) from None

    def is_collaborator(self, login: str) -> bool:
        """False only when the login is known not to be one."""
        return self.level(login) != "none"

    def level(self, login: str, association: str | None = None) -> str:
        """``admin``, ``maintain``, ``write``, ``triage``, ``read``, ``none``, or ``unknown``.

        ``association`` is a comment's ``author_association``. It saves the per-user request
        when it already says the login has no write access. Only members and collaborators are
        asked.
        """
        if self.unavailable:
            return "unknown"
        key = login.lower()
        if self._levels is not None:
            return self._levels.get(key, "none")
        if association in NO_ACCESS_ASSOCIATIONS:
            return "none"
        if key not in self._asked:
            def ask():
                try:
                    return self._repo.get_collaborator_permission(login)
                except github.UnknownObjectException:
                    return "none"
                except github.GithubException as exc:
                    if is_forbidden(exc):
                        return "unknown"
                    raise

            self._asked[key] = call(f"read the permission of {login}", ask)
        return self._asked[key]


def _level(user) -> str:
    role = getattr(user, "role_name", None)
    if role:
        return role
    perms = user.permissions
    if perms is None:
        return "read"
    for name, level in (("admin", "admin"), ("maintain", "maintain"), ("push", "write"), ("triage", "triage")):
        if getattr(perms, name, False):
            return level
    return "read"


@dataclass
class Extension:
    author: str
    date: dt.date
    weeks: int
    reason: str
    accepted: bool
    note: str = ""  # why it was refused, or that its reason repeats the previous one


def read_extensions(comments: list, permissions: Permissions, bot_marker_prefix: str) -> list[Extension]:
    """Every extension command on the thread, oldest first.

    Each is accepted, or refused with a note."""
    out: list[Extension] = []
    previous_reason: str | None = None
    for comment in sorted(comments, key=lambda c: (c.created_at, c.id)):
        body = comment.body or ""
        if body.startswith(bot_marker_prefix) or comment.user is None:
            continue
        command, problem = parse_extend_command(body)
        if command is None and problem is None:
            continue
        author = comment.user.login
        date = utc_date(comment.created_at)
        if command is None:
            out.append(Extension(author, date, 0, "", False, problem))
            continue
        level = permissions.level(author, getattr(comment, "author_association", None))
        if level not in WRITE_LEVELS:
            why = ("not counted: the bot could not read permissions" if level == "unknown"
                   else "refused: only users with write permission can extend")
            out.append(Extension(author, date, command.weeks, command.reason, False, why))
            continue
        note = ""
        if previous_reason is not None and normalise_reason(command.reason) == previous_reason:
            note = "repeats the previous extension's reason: is there new progress?"
        previous_reason = normalise_reason(command.reason)
        out.append(Extension(author, date, command.weeks, command.reason, True, note))
    return out


def extended_weeks(extensions: list[Extension]) -> int:
    return sum(e.weeks for e in extensions if e.accepted)


_OWNER_COMMAND_RE = re.compile(r"^[ \t]*/experimental[ \t]+owner[ \t]+@?([A-Za-z0-9-]{1,39})(?![\w-])",
                               re.IGNORECASE | re.MULTILINE)


def confirmed_owners(comments: list, permissions: Permissions, bot_marker_prefix: str) -> set[str]:
    """Logins a user with write permission confirmed as owner, lower-cased.

    The command is ``/experimental owner @login``."""
    confirmed = set()
    for comment in comments:
        body = comment.body or ""
        if body.startswith(bot_marker_prefix) or comment.user is None:
            continue
        named = {m.group(1).lower() for m in _OWNER_COMMAND_RE.finditer(body)}
        if named and permissions.level(comment.user.login, getattr(comment, "author_association", None)) in WRITE_LEVELS:
            confirmed |= named
    return confirmed
