"""The .rst reader EXP006 uses (`policy_checks.rules.readers.rst_listing`), held against
docutils' own parser: on every page of the corpus, the directives docutils runs are
exactly the ones the reader lists."""

from __future__ import annotations

import docutils.core
import pytest
from docutils.parsers.rst import Directive, directives

from policy_checks.rules.readers import rst_listing
from policy_checks.rules.readers.sphinx_conf import autodoc_defaults

from ...conftest import python_calls

LISTING = ("autofunction", "autoclass", "automodule", "autosummary", "py:function", "function", "py:class",
           "py:method", "py:module")
CONTAINERS = ("note", "only", "container", "admonition", "warning")


def docutils_listing(page: str) -> list:
    """``(line, directive)`` of each listing directive docutils runs on `page`
    (container directives parse their content; code directives do not)."""
    seen = []

    class Listing(Directive):
        has_content = True
        optional_arguments = 1
        final_argument_whitespace = True
        option_spec = None

        def run(self):
            seen.append((self.lineno, self.name))
            node = docutils.nodes.container()
            if self.name != "autosummary":
                self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    class Literal(Listing):
        def run(self):
            return []

    class Container(Listing):
        def run(self):
            node = docutils.nodes.container()
            self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    for name in LISTING:
        directives.register_directive(name, Listing)
    for name in ("code-block", "code", "sourcecode", "raw", "math", "parsed-literal"):
        directives.register_directive(name, Literal)
    for name in CONTAINERS:
        directives.register_directive(name, Container)
    docutils.core.publish_doctree(page, settings_overrides={
        "report_level": 5, "halt_level": 5, "file_insertion_enabled": False, "raw_enabled": False})
    return sorted(seen)


CORPUS = [
    ".. autofunction:: a\n.. autofunction:: b\n",
    "Text\n.. autofunction:: a\n",
    "Title\n=====\n.. autofunction:: a\n",
    "Text::\n\n   .. autofunction:: a\n\nAfter\n\n.. autofunction:: b\n",
    "Text::\n\n.. autofunction:: quoted\n.. autofunction:: quoted_too\n\n.. autofunction:: real\n",
    "Text: ::\n\n  .. autofunction:: a\n",
    "::\n\n  .. autofunction:: a\n",
    "- item::\n\n  .. autofunction:: a\n\n- other\n\n  .. autofunction:: b\n",
    "1. item::\n\n     .. autofunction:: a\n",
    "term\n  definition::\n\n    .. autofunction:: a\n",
    ".. code-block:: rst\n\n   .. autofunction:: a\n\n.. autofunction:: b\n",
    ".. code-block:: rst\n   :caption: x\n\n      .. autofunction:: a\n   .. autofunction:: b\n.. autofunction:: c\n",
    "..\n   .. autofunction:: a\n\n.. autofunction:: b\n",
    "..\n\n   .. autofunction:: quoted_block\n",
    ".. this is a comment\n   .. autofunction:: a\n",
    ".. _target:\n\n.. autofunction:: a\n",
    ".. note::\n\n   .. autofunction:: a\n\n   Text::\n\n      .. autofunction:: b\n",
    ".. only:: html\n\n   .. autosummary::\n\n      a\n      b\n\n   .. automodule:: m\n      :members:\n",
    ".. py:class:: C\n\n   .. py:method:: m()\n\n.. py:function:: f()\n",
    "  .. autofunction:: indented\n",
    "Para\n\n   .. autofunction:: in_a_quote\n",
    ".. |sub| replace:: text\n.. autofunction:: a\n",
    "Text\n\n  more::\n\n    .. autofunction:: a\n  .. autofunction:: b\n",
    "\t.. autofunction:: tab\n",
    "Text\n   .. autofunction:: in_a_definition\n",
    "Text::\n.. autofunction:: same_paragraph\n",
    ":field: value::\n\n   .. autofunction:: a\n",
    "* a\n* b::\n\n    .. autofunction:: c\n\n  .. autofunction:: d\n",
    ".. note:: inline\n   .. autofunction:: a\n",
    "| line\n| block\n\n.. autofunction:: a\n",
    ">>> x = 1\n.. autofunction:: a\n",
]


@pytest.fixture
def own_directives(monkeypatch):
    """docutils' directive registry is global: the generic directives registered here
    must not leak into a Sphinx build later in the same process (tests/docs)."""
    monkeypatch.setattr(directives, "_directives", dict(directives._directives))


@pytest.mark.parametrize("page", CORPUS)
def test_the_reader_lists_what_docutils_runs(page, own_directives):
    short = lambda name: name[3:] if name.startswith("py:") else name  # noqa: E731
    read = list(rst_listing.listed(page))
    ran = docutils_listing(page)
    assert sorted({(i.line, short(i.directive)) for i in read if i.directive != "autosummary"}) == sorted(
        {(line, short(name)) for line, name in ran if name != "autosummary"})
    # autosummary entries: each below an autosummary docutils ran, none where it ran none
    summaries = [line for line, name in ran if name == "autosummary"]
    entries = [i.line for i in read if i.directive == "autosummary"]
    assert all(any(s < e for s in summaries) for e in entries)


def test_names_and_classes():
    page = ".. py:class:: flashinfer.C\n\n   .. py:method:: run(x) -> int\n\n.. py:function:: async f()\n"
    assert [(i.name, i.directive) for i in rst_listing.listed(page)] == [
        ("flashinfer.C", "class"), ("flashinfer.C.run", "method"), ("f", "function")]


def test_includes_are_followed_bounded_and_without_cycles():
    files = {
        "docs/a.rst": ".. include:: b.rst\n",
        "docs/b.rst": "Intro\n\n.. autofunction:: f\n.. include:: a.rst\n.. include:: /c.rst\n   :start-after: START\n",
        "docs/c.rst": ".. autofunction:: not_this\nSTART\n\n.. autofunction:: g\n",
    }

    def include(origin, argument):
        rel = "docs/" + argument.lstrip("/")
        return (rel, files[rel]) if rel in files else None

    found = [(i.line, i.name, i.via) for i in rst_listing.listed(files["docs/a.rst"], include, "docs/a.rst")]
    assert found == [(1, "f", ("docs/b.rst:3",)), (1, "g", ("docs/b.rst:5", "docs/c.rst:4"))]


def test_diamond_includes_stop_at_the_budget(monkeypatch):
    monkeypatch.setattr(rst_listing, "MAX_LINES_PER_PAGE", 10_000)
    # each level includes the next one ten times: 10**8 reads without a budget
    files = {f"l{n}.rst": "\n".join([f".. include:: l{n + 1}.rst"] * 10) for n in range(8)}
    files["l8.rst"] = ".. autofunction:: f\n"
    calls = python_calls(lambda: list(rst_listing.listed(files["l0.rst"], lambda o, a: (a, files[a]), "l0.rst")))
    assert calls < 500_000


def test_reading_is_linear():
    def cost(n):
        page = ("Text::\n\n   .. autofunction:: a\n\n.. note::\n\n   .. autofunction:: b\n   x\n- item\n" * n)
        return python_calls(lambda: list(rst_listing.listed(page)))

    assert cost(800) < 5 * cost(200)


def test_autodoc_defaults_from_conf_py():
    assert autodoc_defaults("autodoc_default_options = {'members': True, 'exclude-members': 'x'}") == {
        "members": "", "exclude-members": "x"}
    assert autodoc_defaults("autodoc_default_options = dict(members=False)") == {}
    assert autodoc_defaults("autodoc_default_options = {}\nautodoc_default_options['members'] = 'a, b'") == {
        "members": "a, b"}
    assert autodoc_defaults("autodoc_default_options = load()\n") == {"members": ""}  # unseen: members on
    assert autodoc_defaults("autodoc_default_flags = ['members']\n") == {"members": ""}
    assert autodoc_defaults("import os\nos.system('x')\n") == {}  # read, never run
