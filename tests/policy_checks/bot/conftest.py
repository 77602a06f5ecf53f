"""A fake GitHub REST API on 127.0.0.1, served by the test suite over real HTTP.

It keeps state for repositories, pulls and their files (listed at most 3,000, with the real
``changed_files``), the files' contents at each PR's base and head commits, issues, comments,
labels, statuses, collaborators and permissions, contents and users; it answers the bot's
named GraphQL queries from the same state (rendering ``@mentions`` of real users as
GitHub does); it counts every request it answers, and it can inject faults (error answers, rate limits, slow answers, a
barrier that makes two clients meet). The bot talks to it through PyGithub unchanged.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import importlib.util
import json
import logging
import re
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response


def _sibling(name: str):
    """A module beside this conftest (the suite imports in importlib mode: no package to import from)."""
    qualified = f"bot_{name}"  # the one name every loader of these modules shares
    if qualified not in sys.modules:
        spec = importlib.util.spec_from_file_location(qualified, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        spec.loader.exec_module(module)
    return sys.modules[qualified]


graphql_schema = _sibling("graphql_schema")
fake_graphql = _sibling("fake_graphql")

logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log per request

# As on GitHub Actions: GITHUB_TOKEN is an installation token acting as the Bot
# ``github-actions[bot]`` (REST spelling; GraphQL calls it ``github-actions``). It may not
# read ``GET /user``. On pull requests from forks it is read-only. A personal access token
# acts as an ordinary user account.
BOT_TOKEN = "fake-installation-token"
READ_ONLY_TOKEN = "fake-read-only-installation-token"
PAT_TOKEN = "fake-personal-access-token"
BOT_LOGIN = "github-actions[bot]"
PAT_LOGIN = "track-bot"
FIRST_COMMENT_ID = 2**31 + 1000  # GitHub's comment ids passed 2^31: GraphQL's Int databaseId is null for them
LEVELS = ("admin", "maintain", "write", "triage", "read")
MAX_LISTED_FILES = 3000  # GitHub's listing of a pull request's files stops here


def _iso(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Fault:
    method: str
    path: re.Pattern
    status: int | None = None  # None: answer normally (after delay / barrier)
    headers: dict = field(default_factory=dict)
    body: dict = field(default_factory=lambda: {"message": "injected fault"})
    times: int = 1
    delay: float = 0.0
    barrier: threading.Barrier | None = None


@dataclass
class RepoState:
    full_name: str
    default_branch: str = "main"
    files: dict[str, str] = field(default_factory=dict)  # path -> text at the default branch
    pulls: dict[int, dict] = field(default_factory=dict)
    pull_files: dict[int, list[dict]] = field(default_factory=dict)
    issues: dict[int, dict] = field(default_factory=dict)  # pulls appear here too, as on GitHub
    comments: dict[int, list[dict]] = field(default_factory=dict)
    statuses: dict[str, list[dict]] = field(default_factory=dict)
    collaborators: dict[str, str] = field(default_factory=dict)  # login -> level
    next_number: int = 1
    commits: dict[str, dict[str, str | bytes]] = field(default_factory=dict)  # sha -> path -> content
    # PR number -> {"base": {...}, "head": {...}}: contents a test set at the PR's base and head
    # commits (a None at the head deletes the path); see `FakeGitHub.tree_at`.
    pull_contents: dict[int, dict[str, dict]] = field(default_factory=dict)


class FakeGitHub:
    token = BOT_TOKEN
    read_only_token = READ_ONLY_TOKEN
    pat_token = PAT_TOKEN
    bot_login = BOT_LOGIN
    pat_login = PAT_LOGIN

    def __init__(self):
        self.users: set[str] = {BOT_LOGIN, PAT_LOGIN}
        # token -> (actor, may write, is an installation token)
        self.tokens = {BOT_TOKEN: (BOT_LOGIN, True, True), READ_ONLY_TOKEN: (BOT_LOGIN, False, True),
                       PAT_TOKEN: (PAT_LOGIN, True, False)}
        self.repos: dict[str, RepoState] = {}
        self.requests: list[tuple[str, str]] = []
        self.faults: list[Fault] = []
        self.lock = threading.RLock()
        self.next_id = FIRST_COMMENT_ID
        self.clock = dt.datetime(2026, 11, 2, 12, 0, 0)
        self.url = ""
        self.graphql_log: list[tuple[str, dict]] = []  # (operation, variables) of every GraphQL query
        self.collaborators_forbidden = False  # a token without push access may not list collaborators
        self.graphql_endpoint = fake_graphql.FakeGraphQL(self, graphql_schema.schema(), graphql_schema.check_request,
                                                          graphql_schema.validated)

    # ----- state helpers used by tests -------------------------------------------------
    def _tick(self) -> str:
        self.clock += dt.timedelta(seconds=1)
        return _iso(self.clock)

    def _user(self, login: str) -> dict:
        """A REST user object: Bots have ``[bot]`` in their login and ``type: "Bot"``."""
        return {"login": login, "id": 2**32 + zlib.crc32(login.encode()), "node_id": f"U_{login}",
                "type": "Bot" if login.endswith("[bot]") else "User", "url": f"{self.url}/users/{login}"}

    def repo(self, full_name: str = "acme/widgets") -> RepoState:
        if full_name not in self.repos:
            self.repos[full_name] = RepoState(full_name)
        return self.repos[full_name]

    def add_user(self, *logins: str) -> None:
        self.users.update(logins)

    def add_collaborator(self, repo: str, login: str, level: str = "write") -> None:
        self.add_user(login)
        self.repo(repo).collaborators[login] = level

    def add_issue(self, repo: str, body: str, *, author: str = "octocat", state: str = "open",
                  labels=("experimental",), number: int | None = None, created: str | None = None) -> int:
        r = self.repo(repo)
        number = number or r.next_number
        r.next_number = max(r.next_number, number + 1)
        self.add_user(author)
        r.issues[number] = {
            "number": number, "title": f"Issue {number}", "body": body, "state": state,
            "user": self._user(author), "labels": [{"name": n} for n in labels], "assignees": [],
            "created_at": created or self._tick(), "updated_at": self._tick(), "closed_at": None,
        }
        r.comments.setdefault(number, [])
        return number

    def add_pull(self, repo: str, body: str | None, files: list[tuple], *, author: str = "octocat",
                 created: str = "2026-11-02T09:00:00Z", labels=()) -> int:
        """A PR whose files are ``(path, patch)``, ``(path, patch, status)`` or, for a rename or copy,
        ``(path, patch, status, previous_path)``; a None patch is left out, as GitHub leaves it out of a
        diff too large to show (or of a binary file)."""
        r = self.repo(repo)
        number = self.add_issue(repo, body or "", author=author, labels=labels, created=created)
        r.issues[number]["body"] = body
        r.issues[number]["is_pull"] = True
        r.pulls[number] = {"head": {"sha": f"{number:04d}" + "ab" * 18, "ref": "topic"},
                           "base": {"ref": "main", "sha": f"{number:04d}" + "ba" * 18}}
        r.pull_files[number] = [_pull_file(*changed) for changed in files]
        r.pull_contents[number] = {"base": {}, "head": {}}
        return number

    def set_contents(self, repo: str, number: int, *, base: dict | None = None, head: dict | None = None) -> None:
        """Files of PR ``number`` at its base commit and at its head commit (whatever sha the PR's head
        has now: a "push" that changes the sha keeps them). ``head`` values of None delete the path."""
        contents = self.repo(repo).pull_contents[number]
        contents["base"].update(base or {})
        contents["head"].update(head or {})

    def tree_at(self, state: RepoState, rev: str) -> dict | None:
        """The files at ``rev``: the default branch (``HEAD`` or its name), a commit of ``state.commits``,
        or a PR's base or head commit; None for a revision the fake does not know.

        A PR's base is the default branch's files, then what the PR's listed patches show of them (the
        context and removed lines of their hunks), then what the test set (`set_contents`). Its head is
        the base with the listing applied (removed files gone, renamed ones moved, each patched file's
        context and added lines), then what the test set. So a test that gives only patches still has
        texts to read, and a test that cares gives the texts."""
        if rev in ("HEAD", state.default_branch):
            return state.files
        if rev in state.commits:
            return state.commits[rev]
        for number, pull in state.pulls.items():
            if rev not in (pull["base"].get("sha"), pull["head"]["sha"]):
                continue
            contents = state.pull_contents.get(number, {"base": {}, "head": {}})
            listed = state.pull_files.get(number, [])
            base = dict(state.files)
            for changed in listed:
                if changed.get("patch") is not None and changed["status"] != "added":
                    base[changed.get("previous_filename", changed["filename"])] = _side_of(changed["patch"], "-")
            base.update(contents["base"])
            if rev == pull["base"].get("sha"):
                return base
            head = dict(base)
            for changed in listed:
                path, status = changed["filename"], changed["status"]
                previous = changed.get("previous_filename")
                if status == "removed":
                    head.pop(path, None)
                    continue
                if status == "renamed" and previous is not None and previous in head:
                    head[path] = head.pop(previous)
                if changed.get("patch") is not None:
                    head[path] = _side_of(changed["patch"], "+")
            for path, content in contents["head"].items():
                if content is None:
                    head.pop(path, None)
                else:
                    head[path] = content
            return head
        return None

    def add_comment(self, repo: str, number: int, body: str, author: str, created: str | None = None) -> dict:
        self.add_user(author)
        self.next_id += 1
        r = self.repo(repo)
        comment = {"id": self.next_id, "body": body, "user": self._user(author),
                   "created_at": created or self._tick(), "updated_at": None,
                   "html_url": f"https://example.invalid/{repo}/issues/{number}#c{self.next_id}",
                   "_issue": number, "_repo": repo}
        comment["updated_at"] = comment["created_at"]  # as on GitHub: equal until the comment is edited
        comment["url"] = f"{self.url}/repos/{repo}/issues/comments/{comment['id']}"
        r.comments[number].append(comment)
        r.issues[number]["updated_at"] = comment["created_at"]
        return comment

    def edit_comment_as_user(self, comment: dict, body: str) -> None:
        """A person edits their comment (what ``PATCH .../issues/comments/{id}`` does)."""
        comment["body"] = body
        comment["updated_at"] = comment["_last_edited_at"] = self._tick()

    def delete_comment_as_user(self, repo: str, comment: dict) -> None:
        """A person deletes their comment: it is gone from every listing."""
        self.repo(repo).comments[comment["_issue"]].remove(comment)

    def comments_by(self, repo: str, number: int, login: str = BOT_LOGIN) -> list[dict]:
        return [c for c in self.repo(repo).comments[number] if c["user"]["login"] == login]

    def labels_of(self, repo: str, number: int) -> set[str]:
        return {label["name"] for label in self.repo(repo).issues[number]["labels"]}

    def inject(self, method: str, path: str, status: int | None = None, **kw) -> Fault:
        fault = Fault(method, re.compile(path), status, **kw)
        self.faults.append(fault)
        return fault

    def count(self, method: str | None = None, path: str = "") -> int:
        return sum(1 for m, p in self.requests if (method is None or m == method) and re.search(path, p))

    def writes(self) -> list[tuple[str, str]]:
        """Requests that change state (a GraphQL query is a POST but only reads)."""
        return [(m, p) for m, p in self.requests if m != "GET" and p != "/graphql"]

    # ----- HTTP ------------------------------------------------------------------------
    def __call__(self, environ, start_response):
        request = Request(environ)
        with self.lock:
            self.requests.append((request.method, request.path))
            fault = next((f for f in self.faults if f.times > 0 and f.method == request.method
                          and f.path.search(request.path)), None)
            if fault:
                fault.times -= 1
        if fault is not None:
            if fault.barrier is not None:
                fault.barrier.wait(timeout=60)  # generous: CI machines can be loaded
            if fault.delay:
                time.sleep(fault.delay)
            if fault.status is not None:
                return self._json(fault.body, fault.status, fault.headers)(environ, start_response)
        with self.lock:
            response = self._route(request)
        return response(environ, start_response)

    def _json(self, data, status: int = 200, headers: dict | None = None) -> Response:
        text = "" if data is None else json.dumps(data)
        return Response(text, status=status, headers=headers or {}, content_type="application/json")

    _ROUTES = [
        ("GET", r"/user", "get_me"),
        ("GET", r"/users/(?P<login>[^/]+)", "get_user"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)", "get_pull"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)/files", "list_pull_files"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues", "list_issues"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)", "get_issue"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/comments", "list_comments"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/comments", "create_comment"),
        ("PATCH", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<id>\d+)", "edit_comment"),
        ("DELETE", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<id>\d+)", "delete_comment"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/labels", "add_labels"),
        ("DELETE", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/labels/(?P<name>[^/]+)", "remove_label"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/statuses/(?P<sha>\w+)", "create_status"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>\w+)/statuses", "list_statuses"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/collaborators", "list_collaborators"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/collaborators/(?P<login>[^/]+)/permission", "get_permission"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/contents/(?P<path>.+)", "get_contents"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)", "get_repo"),
    ]

    def _route(self, request: Request) -> Response:
        auth = request.headers.get("Authorization", "")
        token = auth.split(" ", 1)[1] if " " in auth else ""
        if token not in self.tokens:
            return self._json({"message": "Bad credentials"}, 401)
        login, can_write, installation = self.tokens[token]
        if request.method != "GET" and request.path != "/graphql" and not can_write:
            return self._json({"message": "Resource not accessible by integration"}, 403)
        if request.path == "/user" and installation:
            return self._json({"message": "Resource not accessible by integration",
                               "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user",
                               "status": "403"}, 403)
        if request.path == "/graphql":
            return self.graphql(request, can_write)
        for method, pattern, handler in self._ROUTES:
            match = re.fullmatch(pattern, request.path)
            if match and method == request.method:
                args = match.groupdict()
                if "repo" in args and args["repo"] not in self.repos:
                    return self._json({"message": "Not Found"}, 404)
                return getattr(self, handler)(request, me=login, **args)
        return self._json({"message": "Not Found"}, 404)

    def _page(self, request: Request, items: list) -> Response:
        per_page = int(request.args.get("per_page", 30))
        page = int(request.args.get("page", 1))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            args = dict(request.args)
            args.update(page=str(page + 1), per_page=str(per_page))
            query = "&".join(f"{k}={v}" for k, v in args.items())
            headers["Link"] = f'<{self.url}{request.path}?{query}>; rel="next"'
        return self._json(chunk, 200, headers)

    def _issue_json(self, repo: str, issue: dict) -> dict:
        out = {k: v for k, v in issue.items() if k != "is_pull"}
        n = issue["number"]
        out["url"] = f"{self.url}/repos/{repo}/issues/{n}"
        out["labels"] = [{"name": label["name"], "url": f"{self.url}/repos/{repo}/labels/{label['name']}"}
                         for label in issue["labels"]]
        out["comments"] = len(self.repos[repo].comments[n])
        out["pull_request"] = {"url": f"{self.url}/repos/{repo}/pulls/{n}"} if issue.get("is_pull") else None
        return out

    def association(self, repo: str, login: str) -> str:
        """GitHub's ``author_association`` of a login with a repository (owner, collaborator or none)."""
        if login.lower() == repo.split("/")[0].lower():
            return "OWNER"
        return "COLLABORATOR" if login in self.repos[repo].collaborators else "NONE"

    def _comment_json(self, comment: dict) -> dict:
        out = {k: v for k, v in comment.items() if not k.startswith("_")}
        out["author_association"] = self.association(comment["_repo"], comment["user"]["login"])
        return out

    _MENTION_RE = re.compile(r"(?<![\w@/])@([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))")

    def render_html(self, body: str | None) -> str:
        """Markdown as GitHub renders mentions: ``@login`` becomes a user-mention link only for a real user."""
        def mention(match):
            login = match.group(1)
            if login not in self.users:
                return match.group(0)
            return (f'<a class="user-mention notranslate" data-hovercard-type="user" '
                    f'href="https://github.com/{login}">@{login}</a>')

        parts = re.split(r"(`[^`]*`)", html.escape(body or ""))  # no mentions inside code spans
        return "<p>" + "".join(part if part.startswith("`") else self._MENTION_RE.sub(mention, part)
                               for part in parts) + "</p>"

    def get_me(self, request, me):
        return self._json(self._user(me))

    def get_user(self, request, login, **_):
        return self._json(self._user(login)) if login in self.users else self._json({"message": "Not Found"}, 404)

    def get_repo(self, request, repo, **_):
        return self._json({"full_name": repo, "name": repo.split("/")[1], "default_branch": self.repos[repo].default_branch,
                           "url": f"{self.url}/repos/{repo}"})

    def get_pull(self, request, repo, n, **_):
        r = self.repos[repo]
        n = int(n)
        if n not in r.pulls:
            return self._json({"message": "Not Found"}, 404)
        issue = self._issue_json(repo, r.issues[n])
        data = dict(issue, **r.pulls[n])
        data.setdefault("changed_files", len(r.pull_files.get(n, [])))  # the real count (a test may set another)
        data.update(url=f"{self.url}/repos/{repo}/pulls/{n}", issue_url=f"{self.url}/repos/{repo}/issues/{n}")
        return self._json(data)

    def list_pull_files(self, request, repo, n, **_):
        """GitHub lists at most 3,000 files of a pull request, whatever ``changed_files`` says."""
        return self._page(request, self.repos[repo].pull_files.get(int(n), [])[:MAX_LISTED_FILES])

    def list_issues(self, request, repo, **_):
        state = request.args.get("state", "open")
        wanted = {s for s in request.args.get("labels", "").split(",") if s}
        issues = [self._issue_json(repo, i) for _, i in sorted(self.repos[repo].issues.items())]
        issues = [i for i in issues if state == "all" or i["state"] == state]
        issues = [i for i in issues if wanted <= {label["name"] for label in i["labels"]}]
        return self._page(request, issues)

    def get_issue(self, request, repo, n, **_):
        issue = self.repos[repo].issues.get(int(n))
        if not issue:
            return self._json({"message": "Not Found"}, 404)
        data = self._issue_json(repo, issue)
        accept = request.headers.get("Accept", "")
        if "full+json" in accept or "html+json" in accept:
            data["body_html"] = self.render_html(issue["body"])
        return self._json(data)

    def list_comments(self, request, repo, n, **_):
        if int(n) not in self.repos[repo].issues:
            return self._json({"message": "Not Found"}, 404)
        return self._page(request, [self._comment_json(c) for c in self.repos[repo].comments[int(n)]])

    def create_comment(self, request, repo, n, me):
        comment = self.add_comment(repo, int(n), request.get_json()["body"], me)
        return self._json(self._comment_json(comment), 201)

    def _find_comment(self, repo, comment_id):
        for comments in self.repos[repo].comments.values():
            for comment in comments:
                if comment["id"] == int(comment_id):
                    return comments, comment
        return None, None

    def edit_comment(self, request, repo, id, **_):
        _, comment = self._find_comment(repo, id)
        if comment is None:
            return self._json({"message": "Not Found"}, 404)
        comment["body"] = request.get_json()["body"]
        comment["updated_at"] = comment["_last_edited_at"] = self._tick()
        return self._json(self._comment_json(comment))

    def delete_comment(self, request, repo, id, **_):
        comments, comment = self._find_comment(repo, id)
        if comment is None:
            return self._json({"message": "Not Found"}, 404)
        comments.remove(comment)
        return Response(status=204)

    def add_labels(self, request, repo, n, **_):
        issue = self.repos[repo].issues[int(n)]
        payload = request.get_json()
        names = payload["labels"] if isinstance(payload, dict) else payload
        for name in names:
            if name not in {label["name"] for label in issue["labels"]}:
                issue["labels"].append({"name": name})
        return self._json(self._issue_json(repo, issue)["labels"])

    def remove_label(self, request, repo, n, name, **_):
        issue = self.repos[repo].issues[int(n)]
        issue["labels"] = [label for label in issue["labels"] if label["name"] != name]
        return self._json(self._issue_json(repo, issue)["labels"])

    def create_status(self, request, repo, sha, me):
        payload = request.get_json()
        status = {"id": self.next_id, "state": payload["state"], "context": payload.get("context", "default"),
                  "description": payload.get("description"), "creator": self._user(me), "created_at": self._tick()}
        self.next_id += 1
        self.repos[repo].statuses.setdefault(sha, []).insert(0, status)  # newest first, as on GitHub
        return self._json(status, 201)

    def list_statuses(self, request, repo, sha, **_):
        return self._page(request, self.repos[repo].statuses.get(sha, []))

    def list_collaborators(self, request, repo, **_):
        if self.collaborators_forbidden:
            return self._json({"message": "Must have push access to view repository collaborators."}, 403)
        users = []
        for login, level in sorted(self.repos[repo].collaborators.items()):
            rank = LEVELS.index(level)
            perms = {"admin": rank <= 0, "maintain": rank <= 1, "push": rank <= 2, "triage": rank <= 3, "pull": True}
            users.append(dict(self._user(login), permissions=perms, role_name=level))
        return self._page(request, users)

    def get_permission(self, request, repo, login, **_):
        if login not in self.users:
            return self._json({"message": "Not Found"}, 404)
        level = self.repos[repo].collaborators.get(login, "none")
        legacy = {"maintain": "write", "triage": "read"}.get(level, level)
        return self._json({"permission": legacy, "role_name": level, "user": self._user(login)})

    def get_contents(self, request, repo, path, **_):
        files = self.repos[repo].files
        path = path.strip("/")
        base = f"{self.url}/repos/{repo}/contents"
        if path in files:
            raw = files[path].encode()
            return self._json({"type": "file", "encoding": "base64", "name": path.rsplit("/", 1)[-1], "path": path,
                               "content": base64.b64encode(raw).decode(), "size": len(raw), "sha": "f" * 40,
                               "url": f"{base}/{path}"})
        children = {}
        for name in files:
            if name.startswith(path + "/"):
                rest = name[len(path) + 1 :].split("/")
                children[rest[0]] = "dir" if len(rest) > 1 else "file"
        if not children:
            return self._json({"message": "Not Found"}, 404)
        return self._json([{"type": kind, "name": name, "path": f"{path}/{name}", "sha": "d" * 40,
                            "url": f"{base}/{path}/{name}"} for name, kind in sorted(children.items())])

    # ----- GraphQL: executed against GitHub's published schema (fake_graphql.py) ----------
    def graphql(self, request, can_write: bool):
        payload = request.get_json()
        match = re.match(r"\s*query\s+(\w+)", payload.get("query", ""))
        self.graphql_log.append((match.group(1) if match else "", payload.get("variables") or {}))
        return self._json(self.graphql_endpoint.answer(payload, token_can_list_collaborators=can_write))


def _side_of(patch: str, sign: str) -> str:
    """One side of a unified diff as text: its context lines and those marked ``sign``."""
    lines = []
    for line in patch.split("\n"):
        if line.startswith(("@@", "\\", "+++", "---")):
            continue
        if line[:1] in ("+", "-", " "):
            if line[0] in (" ", sign):
                lines.append(line[1:])
        else:
            lines.append(line)
    return "\n".join(lines)


def _pull_file(path: str, patch: str | None, status: str = "modified", previous: str | None = None) -> dict:
    """One entry of GitHub's listing of a PR's files: ``previous_filename`` only for renamed and copied
    files, no ``patch`` when there is no diff to show (binary, too large, or a pure rename)."""
    listed = {"filename": path, "status": status}
    if previous is not None:
        assert status in ("renamed", "copied"), "GitHub names a previous path only for renames and copies"
        listed["previous_filename"] = previous
    if patch is not None:
        listed["patch"] = patch
    return listed


class _Served:
    """A WSGI server on 127.0.0.1 whose fake can be swapped for a fresh one (one server, many examples)."""

    def __init__(self):
        self.fake = FakeGitHub()
        self.server = make_server("127.0.0.1", 0, self, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def __call__(self, environ, start_response):
        return self.fake(environ, start_response)

    def fresh(self) -> FakeGitHub:
        self.fake = FakeGitHub()
        self.fake.url = self.url
        return self.fake

    def close(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=5)


@pytest.fixture
def github_api():
    """A running fake GitHub; ``github_api.url`` is the base URL to pass as ``--api-url``."""
    served = _Served()
    try:
        yield served.fresh()
    finally:
        served.close()


@pytest.fixture(scope="module")
def fresh_github():
    """For property tests: a function that answers a new, empty fake GitHub on one running server."""
    served = _Served()
    try:
        yield served.fresh
    finally:
        served.close()


@pytest.fixture
def bot_cli(github_api):
    """Run ``policy-check bot ...`` in process against the fake API; returns the click Result."""
    from click.testing import CliRunner

    from policy_checks.bot.cli import bot

    def invoke(*args: str, token: str = BOT_TOKEN, env: dict | None = None):
        full = [args[0], "--api-url", github_api.url, "--write-interval", "0", "--retry-budget", "3", *args[1:]]
        return CliRunner().invoke(bot, full, env={"GITHUB_TOKEN": token, "GITHUB_STEP_SUMMARY": None, **(env or {})})

    return invoke
