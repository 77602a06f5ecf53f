"""Fact extraction: every import form, scopes, positions, suppressions."""

from __future__ import annotations

import re

from policy_checks.model.facts import FUNCTION, MODULE, TYPE_CHECKING, extract, parse_suppression, resolve_relative, syntax_error
from policy_checks.model.facts import AliasBinding, CallRef, DefBinding, DictBinding, Entry, Import, NameRef


def imports_of(source, module="flashinfer.ops.a", is_package=False):
    facts = extract(source.encode() if isinstance(source, str) else source, module, is_package)
    assert facts.syntax_error is None, facts.syntax_error
    return [(i.module, i.names, i.line, i.column, i.scope) for i in facts.imports]


def test_resolve_relative_at_any_depth():
    assert resolve_relative("flashinfer.ops", 1, "x") == "flashinfer.ops.x"
    assert resolve_relative("flashinfer.ops", 2, "experimental.f") == "flashinfer.experimental.f"
    assert resolve_relative("flashinfer.ops", 2, None) == "flashinfer"
    assert resolve_relative("flashinfer.ops", 3, "x") is None  # climbs above the top
    assert resolve_relative("flashinfer", 0, "a.b") == "a.b"


def test_every_static_form():
    got = imports_of(
        "import a.b\nimport a.b as c\nfrom a.b import c\nfrom . import x\nfrom .. import experimental\n"
        "from ..experimental.f import g as h\nfrom .y import *\n"
    )
    assert got == [
        ("a.b", (), 1, 1, MODULE),
        ("a.b", (), 2, 1, MODULE),
        ("a.b", (("c", "c"),), 3, 1, MODULE),
        ("flashinfer.ops", (("x", "x"),), 4, 1, MODULE),
        ("flashinfer", (("experimental", "experimental"),), 5, 1, MODULE),
        ("flashinfer.experimental.f", (("g", "h"),), 6, 1, MODULE),
        ("flashinfer.ops.y", (("*", "*"),), 7, 1, MODULE),
    ]


def test_relative_import_in_package_init_is_relative_to_the_package():
    got = imports_of("from .experimental import f\n", module="flashinfer", is_package=True)
    assert got[0][0] == "flashinfer.experimental"


def test_dynamic_imports_with_literal_arguments():
    got = imports_of(
        "import importlib\nfrom importlib import import_module as im\n"
        "importlib.import_module('flashinfer.experimental.f')\n"
        "importlib.import_module('..experimental', package='flashinfer.ops')\n"
        "importlib.import_module('.z', __package__)\n"
        "importlib.import_module('.w', __name__)\n"
        "__import__('a.b')\n"
        "__import__('experimental', globals(), locals(), [], 2)\n"
        "import_module(name)\n"  # not a literal: not followed
        "x = ('flashinfer.exp' 'erimental')\nimportlib.import_module('flashinfer.exp' 'erimental.g')\n"
    )
    dynamic = [g[0] for g in got[1:] if g[0] != "importlib"]
    assert dynamic == [
        "flashinfer.experimental.f",
        "flashinfer.experimental",
        "flashinfer.ops.z",
        "flashinfer.ops.a.w",
        "a.b",
        "flashinfer.experimental",
        "flashinfer.experimental.g",
    ]


def test_scopes():
    facts = extract(
        (
            "import typing\nfrom typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    import t1\nelse:\n    import t2\n"
            "try:\n    import t3\nexcept ImportError:\n    import t4\n"
            "with ctx():\n    import t5\n"
            "for _ in []:\n    import t6\n"
            "class C:\n    import t7\n    def m(self):\n        import t8\n"
            "def f(x=__import__('t9')):\n    import t10\n    def g():\n        import t11\n"
            "lam = lambda: __import__('t12')\n"
            "@deco(__import__('t13'))\ndef h():\n    pass\n"
            "if typing.TYPE_CHECKING:\n    import t14\n"
        ).encode(),
        "flashinfer.a",
        False,
    )
    scopes = {i.module: (i.scope, i.functions) for i in facts.imports}
    assert scopes["t1"] == (TYPE_CHECKING, ())
    assert scopes["t2"] == (MODULE, ())
    for name in ("t3", "t4", "t5", "t6", "t7", "t9", "t13"):
        assert scopes[name] == (MODULE, ()), name
    assert scopes["t8"] == (FUNCTION, ("C.m",))
    assert scopes["t10"] == (FUNCTION, ("f",))
    assert scopes["t11"] == (FUNCTION, ("f", "f.g"))
    assert scopes["t12"][0] == FUNCTION
    assert scopes["t14"] == (TYPE_CHECKING, ())


def test_positions_with_bom_crlf_tabs_form_feed_and_non_ascii():
    source = (
        b"\xef\xbb\xbf# coding: utf-8\r\n"
        b"x = '\xc3\xa9t\xc3\xa9'; import a\r\n"
        b"if x:\r\n\timport b\r\n"
        b"\x0cimport c\r\n"
        b"y = 1\n"
    )
    got = imports_of(source)
    assert [(g[0], g[2], g[3]) for g in got] == [("a", 2, 12), ("b", 4, 2), ("c", 5, 2)]


def test_decorators_are_resolved_through_aliases():
    facts = extract(
        (
            "import flashinfer.utils as fu\nfrom flashinfer.utils import experimental_backend as eb\n"
            "mark = eb\n"
            "@eb\ndef a(): pass\n@fu.experimental_backend\ndef b(): pass\n@mark\ndef c(): pass\n"
            "@supported_compute_capability([90])\ndef d(): pass\n"
        ).encode(),
        "flashinfer.experimental.f.support",
        False,
    )
    decorators = {q: d.decorators for q, d in facts.definitions.items()}
    assert decorators["a"] == ("flashinfer.utils.experimental_backend",)
    assert decorators["b"] == ("flashinfer.utils.experimental_backend",)
    assert decorators["c"] == ("flashinfer.utils.experimental_backend",)
    assert decorators["d"] == ("supported_compute_capability",)


def test_every_spelling_of_a_decorator_is_read_as_markers_reads_it():
    """Parentheses, calls on calls, ``getattr`` and any other expression: the same reading as
    `policy_checks.model.markers` (the bot's), so the checker cannot be told one thing and the bot another."""
    facts = extract(
        (
            "from . import api_logging\nfrom .api_logging import flashinfer_experimental_api as fx\n"
            "@(fx)(feature='x')\ndef a(): pass\n@ fx()(trace=None)\ndef b(): pass\n"
            "@getattr(api_logging, 'flashinfer_experimental_api')\ndef c(): pass\n@[fx][0]\ndef d(): pass\n"
            "@(lambda f: f)\ndef e(): pass\n"
        ).encode(),
        "flashinfer.norm",
        False,
    )
    decorators = {q: d.decorators for q, d in facts.definitions.items()}
    assert decorators == {
        "a": ("flashinfer.api_logging.flashinfer_experimental_api",),
        "b": ("flashinfer.api_logging.flashinfer_experimental_api",),
        "c": ("flashinfer.api_logging.flashinfer_experimental_api",),
        "d": ("flashinfer_experimental_api",),
        "e": ("",),
    }


def test_backend_calls_and_module_level_dicts():
    facts = extract(
        (
            "from flashinfer.utils import backend_requirement as br\n"
            "CHECKS = {'a': x.a, **OTHER}\nCHECKS['b'] = b\n"
            "@br(backend_checks=CHECKS)\ndef f(): pass\n"
            "g = br({'c': experimental_backend(c)})(h)\n"
        ).encode(),
        "flashinfer.gemm",
        False,
    )
    assert facts.bindings["CHECKS"][0] == "dict"
    assert facts.bindings["CHECKS"][1].entries == (("a", ("name", "x.a")), (None, ("name", "OTHER")), ("b", ("name", "b")))
    assert [(c.checks, c.line) for c in facts.backend_calls] == [
        (("name", "CHECKS"), 4),
        (("dict", (("c", ("call", "experimental_backend", (("name", "c"),))),)), 6),
    ]


def test_syntax_errors_and_bad_bytes_are_reported_not_raised():
    assert syntax_error(b"def f(:\n") [0] == 1
    assert syntax_error(b"x = 1\n") is None
    assert syntax_error(b"s = '\xff'\n") is not None
    assert syntax_error(b"x = 1\0\n") is not None
    assert extract(b"(" * 300 + b")" * 300, "m", False).syntax_error is not None
    facts = extract(b"def f(:\n", "m", False)
    assert facts.syntax_error[0] == 1 and facts.imports == []


def test_suppression_comments():
    ok = parse_suppression("# policy: ignore[EXP001, EXP007] hand-off is reviewed", 3, 5)
    assert ok.ids == ("EXP001", "EXP007") and ok.reason == "hand-off is reviewed" and ok.problem is None
    assert "no rule id" in parse_suppression("# policy: ignore because", 1, 1).problem
    assert "no rule id" in parse_suppression("# policy: ignore[] because", 1, 1).problem
    assert "no reason" in parse_suppression("# policy: ignore[EXP001]", 1, 1).problem
    assert "invalid rule id" in parse_suppression("# policy: ignore[exp1] x", 1, 1).problem
    assert parse_suppression("# nothing here", 1, 1) is None


def test_suppressions_in_strings_do_not_count():
    facts = extract(b"s = '# policy: ignore[EXP001] x'\nimport a  # policy: ignore[EXP001] why\n", "m", False)
    assert [(s.line, s.column) for s in facts.suppressions] == [(2, 11)]


def test_alias_cycles_do_not_recurse_forever():
    facts = extract(b"a = b\nb = a\n@a\ndef f(): pass\n", "m", False)
    assert facts.syntax_error is None and len(facts.definitions["f"].decorators) == 1


def test_facts_survive_the_json_round_trip():
    import json

    from policy_checks.model.facts import from_data, to_data

    source = (
        "from flashinfer.utils import backend_requirement as br, experimental_backend\n"
        "import importlib\nCHECKS = {'a': x.a, **OTHER, 'c': experimental_backend(c)}\nCHECKS['b'] = b\nalias = br\n"
        "@br(backend_checks=CHECKS)\ndef f():\n    importlib.import_module('.m', __package__)\n"
        "class K:\n    @staticmethod\n    def g(): pass\n"
        "x = 1  # policy: ignore[EXP001] reason\n__all__ = ['f', 'K']\n"
    ).encode()
    facts = extract(source, "flashinfer.gemm", False)
    assert facts.bindings["__all__"] == ("names", ("f", "K"))
    # every fact is a named tuple; a tagged one still equals its tagged tuple
    checks = facts.bindings["CHECKS"]
    assert isinstance(checks, DictBinding) and checks.value.entries[0] == Entry("a", NameRef("name", "x.a"))
    assert checks.value.entries[2].value == CallRef("call", "experimental_backend", (NameRef("name", "c"),))
    assert facts.bindings["alias"] == AliasBinding("alias", "br") and facts.bindings["K"] == DefBinding("def", "K")
    assert isinstance(facts.backend_calls[0].checks, NameRef) and isinstance(facts.imports[0], Import)
    assert from_data(json.loads(json.dumps(to_data(facts)))) == facts
    broken = extract(b"def (:\n", "m", False)
    assert from_data(json.loads(json.dumps(to_data(broken)))) == broken


def test_import_module_under_an_alias_by_keyword_and_with_an_f_string_prefix():
    got = imports_of(
        "import importlib\nfrom importlib import import_module as im\nload = importlib.import_module\n"
        "im('flashinfer.experimental.a')\n"  # 4
        "load('..experimental.b', package='flashinfer.ops')\n"  # 5
        "importlib.import_module(name='flashinfer.experimental.c')\n"  # 6
        "importlib.import_module(f'flashinfer.experimental.{x}')\n"  # 7: at least the package
        "importlib.import_module(f'.jit.{x}', __package__)\n"  # 8
        "importlib.import_module(f'{x}.experimental')\n"  # 9: nothing literal to follow
        "importlib.import_module('.experimental.d', __spec__.parent)\n"  # 10
    )
    dynamic = [(g[0], g[2]) for g in got if g[0] not in ("importlib",)]
    assert dynamic == [
        ("flashinfer.experimental.a", 4),
        ("flashinfer.experimental.b", 5),
        ("flashinfer.experimental.c", 6),
        ("flashinfer.experimental", 7),
        ("flashinfer.ops.jit", 8),
        ("flashinfer.ops.experimental.d", 10),
    ]


def test_a_module_level_lambda_is_a_function_scope_with_a_name():
    facts = extract(b"f = lambda: __import__('t1')\nclass C:\n    g = lambda self: __import__('t2')\n", "m", False)
    scopes = {i.module: (i.scope, i.functions) for i in facts.imports}
    assert scopes["t1"] == (FUNCTION, ("<lambda>",))
    assert scopes["t2"] == (FUNCTION, ("C.<lambda>",))


def test_the_else_branch_of_if_not_type_checking_is_type_checking_only():
    facts = extract(
        b"from typing import TYPE_CHECKING\nif not TYPE_CHECKING:\n    import t1\nelse:\n    import t2\n", "m", False
    )
    scopes = {i.module: i.scope for i in facts.imports}
    assert scopes == {"typing": MODULE, "t1": MODULE, "t2": TYPE_CHECKING}


def test_annotations_run_at_definition_time_unless_postponed():
    source = "def f(x: __import__('t1'), *a: __import__('t2')) -> __import__('t3'):\n    pass\nv: __import__('t4') = 1\n"
    scopes = {i.module: i.scope for i in extract(source.encode(), "m", False).imports}
    assert scopes == {"t1": MODULE, "t2": MODULE, "t3": MODULE, "t4": MODULE}
    postponed = extract(("from __future__ import annotations\n" + source).encode(), "m", False)
    assert [i.module for i in postponed.imports] == ["__future__"]


def test_positions_in_a_declared_encoding_and_with_old_mac_line_ends():
    latin = "# -*- coding: latin-1 -*-\nx = '\xe9'; import a\n".encode("latin-1")
    assert [(g[0], g[2], g[3]) for g in imports_of(latin)] == [("a", 2, 10)]
    cr_only = "x = 1\ry = '\xe9'; import b\r".encode()
    assert [(g[0], g[2], g[3]) for g in imports_of(cr_only)] == [("b", 2, 10)]


def test_a_dynamic_import_points_at_its_statement():
    """A finding on a Python statement points at the statement's first line and column
    (docs/policy_check.rst, "Running it"), where an editor takes the reader."""
    got = imports_of(
        "import importlib\n"
        "KERNELS = importlib.import_module(\n    'flashinfer.experimental.f'\n)\n"  # 2
        "if True:\n    x = [\n        __import__('a.b'),\n    ]\n"  # 6
        "def f(x=importlib.import_module('c')):\n    return getattr(\n        importlib.import_module('d'), 'x')\n"
    )
    assert [(g[0], g[2], g[3]) for g in got[1:]] == [
        ("flashinfer.experimental.f", 2, 1), ("a.b", 6, 5), ("c", 9, 1), ("d", 10, 5),
    ]


def test_the_byte_readers_of_imports_take_linear_time_on_unclosed_lists():
    """Hostile bytes: thousands of ``from ... import (`` never closed. A list that may run
    to the end of the file would be scanned again from each of them (quadratic: tens of
    seconds here); each scan now stops at the next parenthesis. The bound is twenty
    times the linear cost on a loaded machine, a tenth of the quadratic one."""
    import time

    from policy_checks.model.facts import _aliases, _vocabulary, project_words

    hostile = b"from . import (\n" * 100_000
    vocabulary = b"from os import (\n" * 100_000 + b"from os import system as s\n"
    start = time.process_time()
    words, classes = project_words(hostile, "flashinfer")
    assert _aliases(vocabulary) == {"s": "system"} and _vocabulary({"system"}, vocabulary, {}) == {"system"}
    assert time.process_time() - start < 3.0
    assert words == "from import" and classes == ""
    # a list closed further on, with a comment holding parentheses, is still read whole
    closed = b"from .entry import (fast,  # see slow(x)\n    quick)\nclass Tool:\n    pass\n"
    assert set(project_words(closed, "flashinfer")[0].split()) >= {"entry", "fast", "quick"}
    assert project_words(closed, "flashinfer")[1] == "Tool"


def test_token_lines_skip_only_words_the_file_never_spells_whole():
    """The lines worth visiting are found by looking up each token among the file's
    whole words, then searching only for those present: the same lines as a search for
    every token. A name with non-ASCII letters is searched for (the words are ASCII runs)."""
    from policy_checks.model import facts

    def every_token(source, names, words):
        offsets = []
        for token, homes in facts._LOAD_TOKENS.items():
            homes = [home for home in homes if home in source]
            if token not in source or not homes:
                continue
            if b"" in homes or any(re.search(rb"from[ \t]+" + home + rb"[\w.]*[ \t]+import", source) for home in homes):
                offsets.extend(facts.word_offsets(source, token))
                continue
            for at in facts.word_offsets(source, token):
                start, stop = source.rfind(b"\n", 0, at) + 1, source.find(b"\n", at)
                if any(home in source[start:stop if stop >= 0 else len(source)] for home in homes):
                    offsets.append(at)
        for token in facts.CALL_TOKENS + tuple(w.encode() for w in words):
            offsets.extend(facts.word_offsets(source, token))
        for token in (n.encode() for n in names):
            offsets.extend(m.start() for m in re.finditer(re.escape(token), source))
        return sorted({source.count(b"\n", 0, at) + 1 for at in offsets})

    source = ("import os, sys\nexecute(x)\nexec(y)\nsys.path.insert(0, p)\nos.path.join(a)\n"
              "from threading import Thread\nThread(target=f)\nf\u00e4st()\nx.f\u00e4st\nrun_module('m')\n"
              "backend_requirementX = 1\nos.system('ls')  # \u00e9\n").encode()
    for names, words in [(frozenset({"backend_requirement"}), ()), (frozenset(), ("f\u00e4st", "execute"))]:
        assert facts._token_lines(source, names, words) == every_token(source, names, words)
    assert 8 in facts._token_lines(source, frozenset(), ("f\u00e4st",))


def test_a_module_rebinding_its_name_is_found_by_literal_patterns():
    """`_rebinds_name` answers as the one pattern it stands for, on every form."""
    from policy_checks.model import facts

    one = re.compile(rb"(?<![.\w])__name__\s*(?:=(?!=)|:=)|globals\(\)\s*\[\s*[\"']__name__|setattr\([^)\n]*[\"']__name__")
    samples = [b"__name__ = 'x'", b"x = 1\n__name__='__main__'", b"f.__name__ = 'g'", b"a__name__ = 1",
               b"if __name__ == '__main__':\n    pass", b"(__name__ := 'm')", b"globals()[ '__name__' ] = 'm'",
               b"setattr(sys.modules[m], \"__name__\", 'x')", b"setattr(x,\n'__name__', 1)", b"__name____name__ = 1",
               b"__name__\t=\t1", b"\xc3\xa9__name__ = 1", b"print(__name__)", b""]
    for source in samples:
        assert facts._rebinds_name(source) == (one.search(source) is not None), source
