"""``policy-check remove``: the docs of a removed feature.

Its own pages go (a page named after it, or any page in a directory named after
it, below the docs directory the ``docs`` setting points into), and so do the
toctree lines that name them, every other byte of the page kept. Prose elsewhere
that mentions the feature is listed for a person, never a refusal.
"""

from __future__ import annotations

from click.testing import CliRunner

from policy_checks.cli import main

OPS = """\
from .api_logging import flashinfer_experimental_api


@flashinfer_experimental_api
def fancy(x):
    from .experimental.feat.kernels import run

    return run(x)


def keep():
    return 1
"""

INDEX = (
    b"Docs\r\n====\r\n\r\n.. toctree::\r\n   :maxdepth: 2\r\n\r\n   guide\r\n   experimental/feat\r\n"
    b"   Feature page <experimental/feat.rst>\r\n   /experimental/other\r\n\r\nThe end.\r\n"
)


def remove(tree, *extra):
    return CliRunner().invoke(main, ["remove", "feat", "--root", str(tree.root), *extra])


def test_feature_pages_and_their_toctree_lines_go(tree):
    tree.write(
        {
            "fxpkg/ops.py": OPS,
            "docs/conf.py": "project = 'x'\n",
            "docs/index.rst": INDEX,
            "docs/guide.rst": "Guide\n=====\n\nCall ``fxpkg.ops.fancy`` for the feat kernels.\nNothing else.\n",
            "docs/experimental/feat.rst": "Feat\n====\n",
            "docs/experimental/other.rst": ".. toctree::\n\n   feat\n   ../guide\n",
            "docs/api/ops.rst": "Ops\n===\n\n.. autofunction:: fxpkg.ops.keep\n",
        }
    )
    result = remove(tree)
    assert result.exit_code == 0, result.output
    assert not (tree.root / "docs/experimental/feat.rst").exists()
    assert "removed: docs/experimental/feat.rst" in result.output
    # only the entry lines go: CRLF, options, the titled and the absolute entries stay as they were
    assert tree.read("docs/index.rst") == INDEX.replace(b"   experimental/feat\r\n", b"").replace(
        b"   Feature page <experimental/feat.rst>\r\n", b""
    )
    assert tree.read("docs/experimental/other.rst") == b".. toctree::\n\n   ../guide\n"
    assert "left for a person: docs/guide.rst:4: Call ``fxpkg.ops.fancy`` for the feat kernels." in result.output
    assert "docs/index.rst:" not in result.output.replace("rewrote: docs/index.rst", "")


def test_a_directory_named_after_the_feature_and_myst_toctrees(tree):
    tree.write(
        {
            "fxpkg/ops.py": OPS,
            "docs/feat/index.md": "# Feat\n",
            "docs/feat/usage.rst": "Usage\n",
            "docs/index.md": "# Docs\n\n```{toctree}\n:maxdepth: 1\n\nfeat/index\nfeat/usage\nintro\n```\n\nfeat/index is not an entry here.\n",
        }
    )
    result = remove(tree)
    assert result.exit_code == 0, result.output
    assert not (tree.root / "docs/feat/index.md").exists() and not (tree.root / "docs/feat/usage.rst").exists()
    page = tree.read("docs/index.md").decode()
    assert page == "# Docs\n\n```{toctree}\n:maxdepth: 1\n\nintro\n```\n\nfeat/index is not an entry here.\n"
    assert "left for a person: docs/index.md:11: feat/index is not an entry here." in result.output


def test_diff_shows_the_docs_and_writes_nothing(tree):
    tree.write({"fxpkg/ops.py": OPS, "docs/index.rst": INDEX, "docs/experimental/feat.rst": "Feat\n====\n"})
    before = {p: p.read_bytes() for p in tree.root.rglob("*") if p.is_file()}
    result = remove(tree, "--diff")
    assert result.exit_code == 0, result.output
    assert "-   experimental/feat\n" in result.stdout and "--- a/docs/experimental/feat.rst\n" in result.stdout
    assert "would rewrite: docs/index.rst" in result.stderr and "would remove: docs/experimental/feat.rst" in result.stderr
    assert {p: p.read_bytes() for p in tree.root.rglob("*") if p.is_file()} == before


def test_the_docs_directory_follows_the_docs_setting(tree):
    pyproject = tree.read("pyproject.toml").decode().replace('docs = ["docs/api/*.rst"]', 'docs = ["manual/api/*.rst"]')
    tree.write(
        {
            "pyproject.toml": pyproject,
            "fxpkg/ops.py": OPS,
            "manual/feat.md": "# Feat\n",
            "docs/feat.md": "# not the docs directory\n",
        }
    )
    result = remove(tree)
    assert result.exit_code == 0, result.output
    assert not (tree.root / "manual/feat.md").exists() and (tree.root / "docs/feat.md").exists()
