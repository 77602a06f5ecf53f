"""Files of a pull request read at its base and head commits.

The bot judges a file by what the code says, not by what its diff's lines look like.

A file's text at a revision comes whole or not at all. A file too large to read, binary, or
cut short by GitHub is marked incomplete. Whoever judges it fails closed.

Everything is read through GraphQL, many files per request. ``Repository.object(expression:
"<sha>:<path>")`` answers one of:

- a ``Blob`` (``text``, ``byteSize``, ``isBinary``, ``isTruncated``);
- a ``Tree`` for a directory;
- ``null`` when nothing is at that path.

GitHub cuts ``text`` short at 512,000 bytes, and says so with ``isTruncated``. ``isBinary``
is true for binary content, and null when GitHub cannot tell the encoding. One request reads
at most `PATHS_PER_REQUEST` paths at both commits. It makes as many presence checks
(``__typename`` only): is anything at this path at the head commit? Paths and commits travel
as variables, never inside the query's text.

A renamed file is read at its previous path at the base commit (``(path, base_path)``). Its
text at the base is what it was before the rename.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Union

from . import graphql
from .client import BotError

PATHS_PER_REQUEST = 50  # each read at both commits: 100 blob lookups per request
PRESENCE_PER_REQUEST = 50
DIRECTORIES_PER_REQUEST = 100  # directories whose entries' git modes one request lists (both sides of 50 paths)
LINK_MODE = 0o120000  # git's mode of a symbolic link (TreeEntry.mode: 40960)
TREES_PER_REQUEST = 10
TREE_DEPTH = 5  # directory levels a tree listing reaches; a deeper tree is "could not be listed"
_BLOB_FIELDS = "__typename ... on Blob { text byteSize isBinary isTruncated }"


def _tree_fields(depth: int) -> str:
    inner = "path type"
    for _ in range(depth - 1):
        inner = f"path type object {{ ... on Tree {{ entries {{ {inner} }} }} }}"
    return f"__typename ... on Tree {{ entries {{ {inner} }} }}"

Wanted = Union[str, "tuple[str, str | None]"]  # a path, or (path at head, path at base)


@dataclass(frozen=True)
class FileAtRevisions:
    """One path of the PR: its text at the base commit and at the head commit."""

    path: str
    base: str | None  # None: the path does not exist at the base commit
    head: str | None  # None: the path does not exist at the head commit (deleted)
    complete: bool = True  # False: a side exists but could not be read whole
    problem: str | None = None  # why it is incomplete, for the comment
    link: bool = False  # a symbolic link at the head commit: never read as the file it points to


@dataclass
class Revisions:
    """What `read_revisions` read: files at both commits, and presence at the head commit."""

    files: dict[str, FileAtRevisions] = field(default_factory=dict)
    present: dict[str, bool | None] = field(default_factory=dict)  # None: GitHub did not say
    trees: dict[str, list[str] | None] = field(default_factory=dict)  # directory -> file paths at head (None: unknown)
    links: set[str] = field(default_factory=set)  # paths that are symbolic links at the head commit
    requests: int = 0


def files_query(paths: int, presence: int, commits: bool, trees: int = 0, directories: int = 0) -> str:
    """``FilesAtRevisions``, the query that reads files at both commits.

    - ``bK``/``hK`` read path K at the base and head (variables ``$bK``, ``$hK``).
    - ``pK`` asks whether anything is at ``$pK``.
    - ``tK`` lists the files under directory ``$tK`` (`TREE_DEPTH` levels).
    - With ``commits``, ``baseCommit``/``headCommit`` prove that GitHub knows both commits.
      Otherwise every path would read as missing."""
    params = ["$owner: String!", "$name: String!"]
    fields = []
    if commits:
        params += ["$baseSha: String!", "$headSha: String!"]
        fields += ["    baseCommit: object(expression: $baseSha) { __typename }",
                   "    headCommit: object(expression: $headSha) { __typename }"]
    for k in range(paths):
        params += [f"$b{k}: String!", f"$h{k}: String!"]
        fields += [f"    b{k}: object(expression: $b{k}) {{ {_BLOB_FIELDS} }}",
                   f"    h{k}: object(expression: $h{k}) {{ {_BLOB_FIELDS} }}"]
    for k in range(presence):
        params.append(f"$p{k}: String!")
        fields.append(f"    p{k}: object(expression: $p{k}) {{ __typename }}")
    for k in range(trees):
        params.append(f"$t{k}: String!")
        fields.append(f"    t{k}: object(expression: $t{k}) {{ {_tree_fields(TREE_DEPTH)} }}")
    for k in range(directories):  # the git mode of each entry: a symbolic link is 120000
        params.append(f"$d{k}: String!")
        fields.append(f"    d{k}: object(expression: $d{k}) {{ __typename ... on Tree {{ entries {{ name mode }} }} }}")
    return ("query FilesAtRevisions(" + ", ".join(params) + ") {\n"
            "  repository(owner: $owner, name: $name) {\n" + "\n".join(fields) + "\n  }\n}\n")


def _pairs(paths: Iterable[Wanted]) -> list[tuple[str, str]]:
    """``(path, base_path)`` for each wanted path, each path once; the first wish wins."""
    seen: dict[str, str] = {}
    for wanted in paths:
        path, base_path = (wanted, wanted) if isinstance(wanted, str) else (wanted[0], wanted[1] or wanted[0])
        seen.setdefault(path, base_path)
    return list(seen.items())


def _side(node: dict | None, error: dict | None) -> tuple[str | None, str | None]:
    """``(text, problem)`` of one side.

    No text and no problem means nothing is at that path."""
    if node is None:
        if error is not None:
            return None, f"GitHub did not answer for it ({str(error.get('message', ''))[:200]})"
        return None, None
    kind = node.get("__typename")
    if kind != "Blob":
        return None, f"it is a {'directory' if kind == 'Tree' else str(kind)}, not a file"
    size = node.get("byteSize")
    if node.get("isBinary") is not False:
        return None, "GitHub reads it as binary" if node.get("isBinary") else "GitHub cannot tell its encoding"
    if node.get("isTruncated") or node.get("text") is None:
        return None, f"it is too large for GitHub to send whole ({size} bytes)"
    return node["text"], None


def _files_under(node: dict | None, depth: int) -> list[str] | None:
    """Every file path under a listed tree.

    None when the listing stops before the tree's end."""
    if node is None:
        return []
    if node.get("__typename") != "Tree":
        return None
    out: list[str] = []
    for entry in node.get("entries") or []:
        if entry.get("type") == "tree":
            inner = entry.get("object")
            if depth <= 1 or inner is None:
                return None
            found = _files_under(inner if "__typename" in inner else {"__typename": "Tree", **inner}, depth - 1)
            if found is None:
                return None
            out += found
        elif entry.get("path"):
            out.append(entry["path"])
    return out


def _parent(path: str) -> tuple[str, str]:
    directory, _, name = path.rpartition("/")
    return directory, name


def read_revisions(gh, repo_name: str, base_sha: str, head_sha: str, paths: Iterable[Wanted] = (),
                   present_at_head: Iterable[str] = (), trees_at_head: Iterable[str] = (),
                   modes_at_head: Iterable[str] = ()) -> Revisions:
    """Read files at both commits, check presence and list directories at the head.

    It reads ``paths`` at both commits. It asks whether anything is at each of
    ``present_at_head``. It lists the files under each directory of ``trees_at_head`` at the
    head commit. That takes one request per `PATHS_PER_REQUEST` paths. A request also carries as
    many presence checks and `TREES_PER_REQUEST` listings. There is no request when there is
    nothing to ask.

    Raises `BotError` when a request fails or GitHub knows neither commit. A directory absent at
    the head lists no file. One deeper than `TREE_DEPTH` lists None.

    The git mode of every path read is read at both commits, from its directory's entries. So is
    the mode of each of ``modes_at_head``. A request reads `DIRECTORIES_PER_REQUEST` directories.
    A symbolic link (mode 120000) is never taken for the file it points to. At the head it is
    `FileAtRevisions.link`, and in `Revisions.links`. It has no text, so it is incomplete and the
    caller fails closed. At the base a link has no text: the base held no such file."""
    pairs = _pairs(paths)
    presence = list(dict.fromkeys(present_at_head))
    directories = list(dict.fromkeys(trees_at_head))
    moded = [(head_sha, _parent(path)[0]) for path, _ in pairs]
    moded += [(base_sha, _parent(base_path)[0]) for _, base_path in pairs]
    moded += [(head_sha, _parent(path)[0]) for path in modes_at_head]
    moded = list(dict.fromkeys(moded))
    modes: dict[tuple[str, str], dict[str, int]] = {}  # (commit, directory) -> entry name -> git mode
    answers: list[tuple[list, dict, list]] = []  # each request's paths and answer, read once all are in
    out = Revisions()
    owner, name = repo_name.split("/")
    requests = max(-(-len(pairs) // PATHS_PER_REQUEST), -(-len(presence) // PRESENCE_PER_REQUEST),
                   -(-len(directories) // TREES_PER_REQUEST), -(-len(moded) // DIRECTORIES_PER_REQUEST))
    for number in range(requests):
        chunk = pairs[number * PATHS_PER_REQUEST:(number + 1) * PATHS_PER_REQUEST]
        asked = presence[number * PRESENCE_PER_REQUEST:(number + 1) * PRESENCE_PER_REQUEST]
        listed = directories[number * TREES_PER_REQUEST:(number + 1) * TREES_PER_REQUEST]
        folders = moded[number * DIRECTORIES_PER_REQUEST:(number + 1) * DIRECTORIES_PER_REQUEST]
        first = number == 0
        variables: dict = {"owner": owner, "name": name}
        if first:
            variables.update(baseSha=base_sha, headSha=head_sha)
        for k, (path, base_path) in enumerate(chunk):
            variables[f"b{k}"] = f"{base_sha}:{base_path}"
            variables[f"h{k}"] = f"{head_sha}:{path}"
        for k, path in enumerate(asked):
            variables[f"p{k}"] = f"{head_sha}:{path}"
        for k, path in enumerate(listed):
            variables[f"t{k}"] = f"{head_sha}:{path}"
        for k, (sha, folder) in enumerate(folders):
            variables[f"d{k}"] = f"{sha}:{folder}"
        count = len(chunk) + len(asked) + len(listed)
        data, errors = graphql.query(gh, files_query(len(chunk), len(asked), first, len(listed), len(folders)), variables,
                                     f"read {count} file{'' if count == 1 else 's'} of the PR at its base and head")
        out.requests += 1
        repo = data.get("repository")
        if repo is None:
            why = (graphql.error_at(errors, "repository") or {}).get("message", "no answer")
            raise BotError(f"read the files of the PR: {why}")
        if first:
            for which, sha in (("baseCommit", base_sha), ("headCommit", head_sha)):
                if repo.get(which) is None:
                    raise BotError(f"read the files of the PR: GitHub does not know the commit {sha[:12]}")
        for k, path in enumerate(asked):
            node = repo.get(f"p{k}")
            error = graphql.error_at(errors, "repository", f"p{k}")
            out.present[path] = None if node is None and error is not None else node is not None
        for k, path in enumerate(listed):
            error = graphql.error_at(errors, "repository", f"t{k}")
            out.trees[path] = None if error is not None else _files_under(repo.get(f"t{k}"), TREE_DEPTH)
        for k, folder in enumerate(folders):
            node = repo.get(f"d{k}")
            modes[folder] = {entry.get("name"): entry.get("mode") for entry in (node or {}).get("entries") or []}
        answers.append((chunk, repo, errors))
    for chunk, repo, errors in answers:  # after every request: a directory's modes may come in any of them
        for k, (path, base_path) in enumerate(chunk):
            base, base_problem = _side(repo.get(f"b{k}"), graphql.error_at(errors, "repository", f"b{k}"))
            head, head_problem = _side(repo.get(f"h{k}"), graphql.error_at(errors, "repository", f"h{k}"))
            link = _is_link(modes, head_sha, path)
            if link:
                head, head_problem = None, ("it is a symbolic link (git mode 120000), not a file: the bot does not "
                                            "read a link as the file it points to")
            if _is_link(modes, base_sha, base_path):
                base, base_problem = None, None  # a link at the base: no file of that name was there
            problem = None
            if head_problem:
                problem = f"at the head commit, {head_problem}"
            elif base_problem:
                where = "the base commit" if base_path == path else "the base commit (before its rename)"
                problem = f"at {where}, {base_problem}"
            out.files[path] = FileAtRevisions(path, base, head, complete=problem is None, problem=problem, link=link)
    out.links = {path for path in [*(p for p, _ in pairs), *modes_at_head] if _is_link(modes, head_sha, path)}
    return out


def _is_link(modes: dict, sha: str, path: str) -> bool:
    """Whether ``path`` is a symbolic link at ``sha``, from its directory's entries."""
    directory, name = _parent(path)
    return (modes.get((sha, directory)) or {}).get(name) == LINK_MODE


def read_at_revisions(gh, repo_name: str, base_sha: str, head_sha: str,
                      paths: Iterable[Wanted]) -> dict[str, FileAtRevisions]:
    """The text of each path at the base and the head commit, keyed by its head path.

    A path is read at the same path on both sides. A pair ``(path, base_path)`` reads the base
    side at ``base_path``, for a renamed file. One GraphQL request per `PATHS_PER_REQUEST` paths.
    """
    return read_revisions(gh, repo_name, base_sha, head_sha, paths).files
