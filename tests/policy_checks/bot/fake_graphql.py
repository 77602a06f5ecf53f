"""The fake GitHub's GraphQL endpoint: the bot's queries executed against GitHub's published schema.

Nothing here knows which queries the bot sends. A query is validated as GitHub would
(the schema's rules, pagination limits, variable types: ``graphql_schema.check_request``)
and then executed by graphql-core over resolvers that read the fake's state, so an
answer holds exactly the fields asked for, spelt as GitHub spells them:

- an actor is an ``Actor`` whose ``__typename`` is ``Bot`` or ``User``; a Bot's ``login``
  carries no ``[bot]`` suffix (REST's ``github-actions[bot]`` is GraphQL's ``github-actions``);
- ``IssueComment.databaseId`` is null for ids above 2^31 - 1 and ``fullDatabaseId`` is a
  string (a ``BigInt``);
- a missing repository or issue is ``null`` plus an error of ``type: NOT_FOUND`` with its
  ``path``; collaborators a token may not list are ``null`` plus a ``FORBIDDEN`` error;
- ``Repository.object(expression: "<rev>:<path>")`` is null when nothing is at that path (or
  the revision is unknown), a ``Tree`` for a directory, else a ``Blob`` whose ``text`` is null
  for binary content and cut short at 512,000 bytes with ``isTruncated: true`` for a larger
  file (what GitHub does; ``byteSize`` is always the whole size); a tree entry's ``mode`` is git's
  (100644 a file, 120000 a symbolic link, 040000 a tree), and a symbolic link (`Link`) is the Blob of
  its target's path, as git stores it.
"""

from __future__ import annotations

import graphql

MAX_INT = 2**31 - 1
FILE_MODE, LINK_MODE, TREE_MODE = 0o100644, 0o120000, 0o040000  # TreeEntry.mode: git's modes, as integers


class Link(str):
    """A symbolic link among a revision's files: git stores the target's path as the blob's content, so
    ``object(expression:)`` at the link's path is a Blob whose text is that path (git follows no link),
    and its tree entry's ``mode`` is 120000. A path through a linked directory is nothing."""
BLOB_TEXT_LIMIT = 512_000  # GitHub cuts Blob.text here and sets isTruncated


class FieldError(graphql.GraphQLError):
    """An error GitHub reports beside partial data, with its ``type`` (NOT_FOUND, FORBIDDEN)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message, extensions={"type": kind})


def graphql_login(rest_login: str) -> str:
    """GraphQL's spelling of an actor: Bots lose REST's ``[bot]`` suffix."""
    return rest_login[: -len("[bot]")] if rest_login.endswith("[bot]") else rest_login


def actor(rest_login: str) -> dict:
    kind = "Bot" if rest_login.endswith("[bot]") else "User"
    return {"__typename": kind, "login": graphql_login(rest_login)}


def _first(items: list, args: dict) -> list:
    """A page as the arguments ask; pagination limits were checked before execution."""
    if args.get("first") is not None:
        return items[: args["first"]]
    if args.get("last") is not None:
        return items[-args["last"] :]
    return items


class FakeGraphQL:
    """Answers ``POST /graphql`` from a ``FakeGitHub``'s state."""

    def __init__(self, fake, schema: graphql.GraphQLSchema, check_request, validated):
        self.fake = fake
        self.schema = schema
        self.check_request = check_request  # GitHub's answer to a request it would not run
        self.validated = validated  # a query text's document, parsed and validated once

    def answer(self, payload: dict, token_can_list_collaborators: bool = True) -> dict:
        """The JSON GitHub answers (always with HTTP 200): ``data`` and/or ``errors``."""
        problems = self.check_request(payload)
        if problems:
            return {"errors": problems}
        self._may_list = token_can_list_collaborators and not self.fake.collaborators_forbidden
        document, _ = self.validated(payload["query"])
        result = graphql.execute_sync(self.schema, document, root_value=self._root(),
                                      variable_values=payload.get("variables") or {},
                                      operation_name=payload.get("operationName"))
        out: dict = {"data": result.data}
        if result.errors:
            out["errors"] = [self._format(error) for error in result.errors]
        return out

    @staticmethod
    def _format(error: graphql.GraphQLError) -> dict:
        formatted = error.formatted
        kind = (formatted.pop("extensions", None) or {}).get("type")
        return {**({"type": kind} if kind else {}), **formatted}

    # ----- resolvers: dicts whose callables graphql-core calls with (info, **arguments) -----
    def _root(self) -> dict:
        trees: dict = {}  # (repository, rev) -> its files, built once per request (`_object`)
        return {"repository": lambda info, **args: self._repository(info, trees=trees, **args)}

    def _repository(self, info, owner: str, name: str, trees: dict | None = None, **_) -> dict:
        full = f"{owner}/{name}"
        state = next((r for key, r in self.fake.repos.items() if key.lower() == full.lower()), None)
        if state is None:
            raise FieldError("NOT_FOUND", f"Could not resolve to a Repository with the name '{full}'.")
        return {
            "nameWithOwner": state.full_name,
            "pullRequest": lambda info, number: self._pull(state, number),
            "issueOrPullRequest": lambda info, number: self._issue_or_pull(state, number),
            "collaborators": lambda info, **args: self._collaborators(state, args),
            "object": lambda info, expression=None, **_: self._object(state, expression, trees),
            "issues": lambda info, **args: self._issues(state, args),
        }

    def _pull(self, state, number: int) -> dict:
        if number not in state.pulls:
            raise FieldError("NOT_FOUND", f"Could not resolve to a PullRequest with the number of {number}.")
        return self._issue_fields(state, state.issues[number], "PullRequest")

    def _issue_or_pull(self, state, number: int) -> dict:
        issue = state.issues.get(number)
        if issue is None:
            raise FieldError("NOT_FOUND", f"Could not resolve to an issue or pull request with the number of {number}.")
        return self._issue_fields(state, issue, "PullRequest" if issue.get("is_pull") else "Issue")

    def _issue_fields(self, state, issue: dict, typename: str) -> dict:
        number = issue["number"]
        return {
            "__typename": typename, "number": number, "state": issue["state"].upper(),
            "body": issue["body"] or "", "bodyHTML": self.fake.render_html(issue["body"]),
            "author": actor(issue["user"]["login"]),
            "assignees": lambda info, **args: self._nodes([actor(a["login"]) for a in issue["assignees"]], args),
            "labels": lambda info, **args: self._nodes([{"name": label["name"]} for label in issue["labels"]], args),
            "comments": lambda info, **args: self._nodes(
                [self._comment(state, c) for c in state.comments[number]], args),
        }

    def _comment(self, state, comment: dict) -> dict:
        return {
            "fullDatabaseId": str(comment["id"]),
            "databaseId": comment["id"] if comment["id"] <= MAX_INT else None,
            "body": comment["body"], "createdAt": comment["created_at"],
            # GitHub: lastEditedAt is null for a comment never edited; includesCreatedEdit says whether
            # an edit was made (the fake edits only through REST's PATCH, which sets _last_edited_at)
            "lastEditedAt": comment.get("_last_edited_at"), "includesCreatedEdit": bool(comment.get("_last_edited_at")),
            "authorAssociation": self.fake.association(state.full_name, comment["user"]["login"]),
            "author": actor(comment["user"]["login"]),
        }

    @staticmethod
    def _nodes(items: list, args: dict) -> dict:
        page = _first(items, args)
        return {"totalCount": len(items), "nodes": page,
                "pageInfo": {"hasNextPage": len(page) < len(items), "endCursor": None}}

    def _collaborators(self, state, args: dict) -> dict:
        if not self._may_list:
            raise FieldError("FORBIDDEN", "Must have push access to view repository collaborators.")
        people = sorted(state.collaborators.items())
        page = _first(people, args)
        return {"totalCount": len(people), "pageInfo": {"hasNextPage": len(page) < len(people), "endCursor": None},
                "edges": [{"permission": level.upper(), "node": actor(login)} for login, level in page]}

    def _issues(self, state, args: dict) -> dict:
        wanted_states = set(args.get("states") or ["OPEN"])
        labels = set(args.get("labels") or [])
        issues = [i for _, i in sorted(state.issues.items()) if not i.get("is_pull")
                  and i["state"].upper() in wanted_states and labels <= {label["name"] for label in i["labels"]}]
        start = int(args.get("after") or 0)  # the fake's cursors are offsets
        page = issues[start : start + args["first"]]
        return {"totalCount": len(issues),
                "pageInfo": {"hasNextPage": start + len(page) < len(issues), "endCursor": str(start + len(page))},
                "nodes": [self._issue_fields(state, i, "Issue") for i in page]}

    def _object(self, state, expression: str | None, trees: dict | None = None):
        """``<rev>:<path>`` as git reads it: a Tree, a Blob, or null when nothing is there (or the
        revision is unknown); a bare ``<rev>`` is its Commit. The revision is ``HEAD`` or the default
        branch (the repository's files) or a commit the fake knows (``state.commits``).

        ``trees`` memoises ``tree_at`` for one request (the fake answers requests one at a time,
        so the state cannot change during one): a query for 50 paths at a PR's head builds that
        tree once, not 50 times."""
        if not expression:
            return None
        rev, colon, path = expression.partition(":")
        trees = {} if trees is None else trees
        key = (state.full_name, rev)
        if key not in trees:
            trees[key] = self.fake.tree_at(state, rev)
        files = trees[key]
        if files is None:
            return None
        if not colon:
            return {"__typename": "Commit"}
        path = path.strip("/")
        if path in files:
            return self._blob(files[path])
        return self._tree(files, path)

    @staticmethod
    def _blob(content) -> dict:
        """As GitHub answers a Blob: ``text`` null for binary content, and cut at `BLOB_TEXT_LIMIT` bytes
        with ``isTruncated`` for a larger file."""
        binary = isinstance(content, bytes)
        raw = content if binary else content.encode()
        text = None if binary else content
        truncated = not binary and len(raw) > BLOB_TEXT_LIMIT
        if truncated:
            text = raw[:BLOB_TEXT_LIMIT].decode("utf-8", "ignore")
        return {"__typename": "Blob", "text": text, "isBinary": binary, "isTruncated": truncated,
                "byteSize": len(raw)}

    def _tree(self, files: dict, path: str) -> dict | None:
        children: dict[str, str] = {}
        for name in files:
            if path == "" or name.startswith(path + "/"):
                rest = (name[len(path) + 1 :] if path else name).split("/")
                children[rest[0]] = "tree" if len(rest) > 1 else "blob"
        if not children:
            return None
        entries = []
        for name, kind in sorted(children.items()):
            full = f"{path}/{name}" if path else name
            obj = (lambda full=full: self._tree(files, full)) if kind == "tree" else self._blob(files[full])
            mode = TREE_MODE if kind == "tree" else LINK_MODE if isinstance(files[full], Link) else FILE_MODE
            entries.append({"name": name, "type": kind, "path": full, "mode": mode,
                            "object": (lambda info, obj=obj: obj()) if kind == "tree" else obj})
        return {"__typename": "Tree", "entries": entries}
