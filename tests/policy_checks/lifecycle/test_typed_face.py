"""A package's lazy table and its typed face (``if TYPE_CHECKING:`` imports of the lazy
names) are one export table: ``remove`` drops an entry from both, ``graduate`` points
both at the new home or adds to both; the model then finds them in step. The same on a
copy of this repository is a round trip (``tests/round_trips/test_typed_face_this_repository.py``)."""

from __future__ import annotations

from click.testing import CliRunner

from policy_checks.cli import main
from policy_checks.model import exports
from policy_checks.model.facts import extract

# a core package serving one name from core and one from the feature, lazily, with a typed face
PACKAGE = """\
    \"\"\"The fixture package.\"\"\"

    import importlib
    from typing import TYPE_CHECKING

    _LAZY_EXPORTS = {
        "stable": "ops",
        "fancy": "experimental.feat.api",
    }

    if TYPE_CHECKING:
        from .ops import stable as stable
        from .experimental.feat.api import fancy as fancy


    def __getattr__(name):
        return getattr(importlib.import_module(f"fxpkg.{_LAZY_EXPORTS[name]}"), name)
    """
FILES = {
    "fxpkg/__init__.py": PACKAGE,
    "fxpkg/ops.py": "from .api_logging import flashinfer_api\n\n\n@flashinfer_api\ndef stable(x):\n    return x\n",
    "fxpkg/experimental/feat/api.py": """\
        from ...api_logging import flashinfer_experimental_api
        from .kernels import run


        @flashinfer_experimental_api(feature="feat")
        def fancy(x):
            return run(x)
        """,
    "fxpkg/experimental/feat/FEATURE.toml": 'kind = "api"\ntracking_issue = 12\n',
    "fxpkg/experimental/feat/README.md": "# feat\n",
}


def run(tree, *args):
    return CliRunner().invoke(main, [*args, "--root", str(tree.root)])


def face_of(tree) -> list:
    """The model's disagreements between the package's table and its typed face."""
    return exports.face_problems(extract(tree.read("fxpkg/__init__.py"), "fxpkg", True))


def test_remove_drops_the_entry_and_its_typed_face(tree):
    tree.write(FILES)
    assert face_of(tree) == []
    result = run(tree, "remove", "feat")
    assert result.exit_code == 0, result.output
    text = tree.read("fxpkg/__init__.py").decode()
    assert "fancy" not in text and "experimental" not in text
    assert '"stable": "ops",\n}' in text and "    from .ops import stable as stable\n" in text
    assert face_of(tree) == []
    assert tree.imported("fxpkg").stable(3) == 3


def test_remove_drops_a_lazy_entry_served_from_the_feature(tree):
    """The entry goes where the package has no typed face too: left, ``fxpkg.fancy`` would fail to import."""
    tree.write({**FILES, "fxpkg/__init__.py": PACKAGE.replace(
        "    if TYPE_CHECKING:\n        from .ops import stable as stable\n"
        "        from .experimental.feat.api import fancy as fancy\n", "")})
    result = run(tree, "remove", "feat")
    assert result.exit_code == 0, result.output
    assert "fancy" not in tree.read("fxpkg/__init__.py").decode()


def test_graduate_points_the_entry_and_its_typed_face_at_the_new_home(tree):
    tree.write(FILES)
    result = run(tree, "graduate", "feat", "--to", "fxpkg.feat_api")
    assert result.exit_code == 0, result.output
    text = tree.read("fxpkg/__init__.py").decode()
    assert '"fancy": "feat_api.api",' in text and "from .feat_api.api import fancy as fancy" in text
    assert "fxpkg/__init__.py: its lazy table serves fancy from fxpkg.feat_api" in result.output
    assert face_of(tree) == []


def test_graduate_exports_a_new_name_in_the_table_and_its_typed_face(tree):
    tree.write({
        "fxpkg/__init__.py": PACKAGE.replace('    "fancy": "experimental.feat.api",\n', "").replace(
            "        from .experimental.feat.api import fancy as fancy\n", ""),
        "fxpkg/ops.py": """\
            from .api_logging import flashinfer_api, flashinfer_experimental_api


            @flashinfer_api
            def stable(x):
                return x


            @flashinfer_experimental_api(feature="feat")
            def fancy(x):
                from .experimental.feat.kernels import run

                return run(x)
            """,
        "fxpkg/experimental/feat/FEATURE.toml": 'kind = "api"\ntracking_issue = 12\n',
    })
    result = run(tree, "graduate", "feat", "--to", "fxpkg.feat_api")
    assert result.exit_code == 0, result.output
    text = tree.read("fxpkg/__init__.py").decode()
    assert '"fancy": "ops",' in text and "    from .ops import fancy as fancy\n" in text
    assert face_of(tree) == []
