"""Which files the lifecycle commands read and edit as the docs: text files below a
docs directory, never through a link, build output and hidden folders left out."""

from __future__ import annotations

import os

from policy_checks.editing.docs_tree import docs_files, lines_naming
from policy_checks.editing.target import FixTarget
from policy_checks.model.config import Settings
from policy_checks.model.project import Project


def test_a_link_in_the_docs_is_no_docs_file(tmp_path):
    """A link to a page outside the repository is not read, so never edited: a lifecycle
    command that rewrote it would write outside the repository."""
    root, outside = tmp_path / "repo", tmp_path / "outside.rst"
    outside.write_text("Fancy\n=====\n\nfancy_api is here\n")
    for rel, text in {"docs/index.rst": "Docs\n\nfancy_api\n", "docs/api/ops.rst": "Ops\n",
                      "docs/_build/index.rst": "fancy_api\n", "docs/.hidden/a.rst": "fancy_api\n",
                      "docs/api/notes.txt": "fancy_api\n", "docs/api/image.png": "fancy_api\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    os.symlink(outside, root / "docs" / "api" / "linked.rst")
    settings = Settings(package="fxpkg", experimental_package="fxpkg.experimental", docs=("docs/api/*.rst",))
    target, project = FixTarget(root, settings), Project(root, settings, load_facts=None)
    assert docs_files(target, project, "docs") == ["docs/api/notes.txt", "docs/api/ops.rst", "docs/index.rst"]
    assert [rel for rel, _, _ in lines_naming(target, project, ["fancy_api"])] == ["docs/api/notes.txt",
                                                                                  "docs/index.rst"]
