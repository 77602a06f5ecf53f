"""What a package publishes: the facts it is kept in, the queries, the libcst editor."""

from __future__ import annotations

import json

import libcst as cst

from policy_checks.editing import cst_tools
from policy_checks.editing import exports as editor
from policy_checks.model import exports
from policy_checks.model.facts import COMPUTED_ALL, LITERAL_ALL, LazyExport, Listed, extract, from_data, to_data

PACKAGE = """\
import importlib
from typing import TYPE_CHECKING

from .ops import stable as stable

_LAZY = {
    "fancy": "experimental.feat.api",
    "plain": ".ops",
}
_LAZY["late"] = "fxpkg.late"

__all__ = [
    "fancy",
    "stable",
]
__all__ += ["plain"]

if TYPE_CHECKING:
    from .experimental.feat.api import fancy as fancy
    from .ops import plain as plain


def __getattr__(name):
    return getattr(importlib.import_module(f"fxpkg.{_LAZY[name]}"), name)
"""


def facts_of(source: str, module: str = "fxpkg", is_package: bool = True):
    return extract(source.encode(), module, is_package)


def test_the_facts_keep_all_lazy_tables_and_what_is_bound():
    facts = facts_of(PACKAGE)
    published = facts.published
    assert published.listed == (Listed("fancy", 13), Listed("stable", 14), Listed("plain", 16))
    assert published.all_form == LITERAL_ALL
    assert published.lazy == (LazyExport("fancy", "experimental.feat.api", "_LAZY", 7),
                              LazyExport("plain", ".ops", "_LAZY", 8), LazyExport("late", "fxpkg.late", "_LAZY", 10))
    assert set(published.bound.split()) >= {"TYPE_CHECKING", "stable", "_LAZY", "__all__", "fancy", "plain", "__getattr__"}
    assert set(published.served.split()) == {"fancy", "plain"}  # the table as bound: `_LAZY[k] = v` is not read
    assert from_data(json.loads(json.dumps(to_data(facts)))) == facts


def test_a_computed_all_and_a_module_without_exports():
    facts = facts_of("X = {'a': 'b'}\n__all__ = sorted(X) + ['y']\n", "fxpkg.m", False)
    assert facts.published.all_form == COMPUTED_ALL and exports.listed(facts) is None
    assert facts.published.lazy == ()  # no __getattr__: a dict is no lazy table
    assert facts_of("x = 1\n", "fxpkg.m", False).published.all_form == ""


def test_queries_read_the_table_its_typed_face_and_the_re_exports():
    facts = facts_of(PACKAGE)
    modules = {"fxpkg.experimental.feat.api", "fxpkg.ops", "fxpkg.late"}
    assert exports.lazy_module(facts, "fancy", modules.__contains__) == "fxpkg.experimental.feat.api"
    assert exports.lazy_module(facts, "plain", modules.__contains__) == "fxpkg.ops"
    assert exports.lazy_module(facts, "late", modules.__contains__) == "fxpkg.late"
    assert exports.lazy_module(facts, "stable", modules.__contains__) is None
    assert exports.listed(facts) == {"fancy", "stable", "plain"}
    assert [(r.name, r.bound, r.typed) for r in exports.reexports(facts)] == [
        ("TYPE_CHECKING", "TYPE_CHECKING", False), ("stable", "stable", False),
        ("fancy", "fancy", True), ("plain", "plain", True)]
    assert sorted(exports.typed_face(facts)) == ["fancy", "plain"]
    assert exports.face_problems(facts) == ["late: in _LAZY, not under TYPE_CHECKING"]
    assert exports.lazy_shim_names(facts) == ["fancy", "stable", "plain"]


def test_exported_names_follow_star_imports():
    tree = {"fxpkg": facts_of(PACKAGE.replace("import stable as stable\n", "import stable as stable\nfrom .norm import *\n")),
            "fxpkg.norm": facts_of("def rms():\n    pass\n_private = 1\n", "fxpkg.norm", False)}
    found = exports.exported_names(tree.get, "fxpkg")
    assert found["rms"] == "bound through `from fxpkg.norm import *`"
    assert found["stable"] == "bound in its __init__"
    assert found["fancy"] == "bound in its __init__" and "_private" not in found


def test_the_editor_adds_an_entry_to_the_table_and_its_typed_face():
    file = cst_tools.parse(PACKAGE.encode(), "fxpkg", True)
    edits: dict = {}
    table = editor.lazy_table(file)
    assert editor.served_modules(file, table) == {"experimental.feat.api", "ops"}
    editor.add_lazy_entries(file, table, [("extra", "ops")], edits)
    after = cst_tools.apply_edits(file, edits).decode()
    assert '    "plain": ".ops",\n    "extra": "ops",\n}' in after
    assert "    from .ops import plain as plain\n    from .ops import extra as extra\n\n\ndef __getattr__" in after


def test_the_editor_finds_table_and_all_entries_to_drop():
    file = cst_tools.parse(PACKAGE.encode(), "fxpkg", True)
    assert [e.key.evaluated_value for e in editor.table_elements(file, {"fancy", "stable"})] == ["fancy"]
    assert [e.value.evaluated_value for e in editor.all_elements(file, {"plain", "stable"})] == ["stable", "plain"]
    assert editor.all_names(file) == {"fancy", "stable", "plain"}


def test_the_typed_face_text_is_one_import_a_name():
    assert editor.typed_face_text([("a", "ops"), ("b", ".norm")]) == (
        "if TYPE_CHECKING:\n    from .ops import a as a\n    from .norm import b as b\n")
    assert isinstance(cst.parse_module(editor.typed_face_text([("a", "ops")])).body[0], cst.If)
