"""Where the stable lane's collection is decided outside its configuration (EXP008).

That is links under the lane's directory, and the conftest files pytest loads for it.

pytest follows a link to a directory. It matches ``norecursedirs`` against the path it walks
(``tests/more/...``), not the link's target. So a link under ``tests/`` to
``tests/experimental`` collects experimental tests however the configuration excludes them.
A link into it, or to a directory holding it, does the same. Links are found on disk without
following any, so there are no loops. When the root is a repository, only the files git
selects are searched.
"""

from __future__ import annotations

import os
from typing import Iterator, List

from ...model import walk
from ...model.config import under


def links_to_experimental(project) -> Iterator[tuple]:
    """``(link, target)`` for each symbolic link from the stable tests to experimental ones.

    Paths are relative to the root where inside it. A link counts when it is under the stable
    tests directory and outside the experimental tests directory. It must resolve to the
    experimental tests directory, into it, or to a directory holding it."""
    s, root = project.settings, str(project.root)
    experimental = os.path.realpath(os.path.join(root, s.experimental_tests))
    listing = getattr(project, "listing", None)
    prefix = len(root) + 1

    def enter(entry: walk.Entry) -> bool:
        return not under(entry.rel, s.experimental_tests) and not project.excluded(entry.rel) and (
            listing is None or listing.has_directory(entry.rel))

    found = []
    for entry in walk.walk(root, s.stable_tests, enter=enter):
        if entry.kind != walk.LINK or under(entry.rel, s.experimental_tests):
            continue  # the experimental lane's own business
        if listing is not None and not listing.has_file(entry.rel):
            continue
        real = os.path.realpath(entry.path)
        if real == experimental or under(real, experimental) or under(experimental, real):
            shown = real[prefix:].replace(os.sep, "/") if under(real, root) else real
            found.append((entry.rel, shown or "."))
    yield from sorted(found)


def lane_directories(settings) -> List[str]:
    """Where pytest looks for its configuration when run on the stable lane.

    It also loads conftest files there. That is the lane's directory, then each directory
    above it up to the root ("")."""
    parts = settings.stable_tests.strip("/").split("/")
    return ["/".join(parts[:n]) for n in range(len(parts), -1, -1)]


def lane_conftests(project) -> List[str]:
    """The conftest files pytest loads for the stable lane.

    They are those in the lane's directory and each directory above it up to the root. Every
    stable test directory's conftest counts too."""
    s = project.settings
    found = set()
    listing = getattr(project, "listing", None)
    for directory in lane_directories(s):
        rel = f"{directory}/conftest.py" if directory else "conftest.py"
        if (project.root / rel).is_file() and (listing is None or listing.has_file(rel)):
            found.add(rel)
    for rel in project.files:
        if rel.rpartition("/")[2] == "conftest.py" and project.is_stable_test(rel):
            found.add(rel)
    return sorted(found)
