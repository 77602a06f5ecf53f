"""`policy_checks.model.markers`: the track's vocabulary and the one reading of its marks.

Each spelling of a decorator resolves to its mark (and what only looks like one does not);
any text is read without raising; a hostile file is read in linear time; `is_pure_shim`
accepts exactly what ``policy-check graduate`` leaves at a feature's old path.
"""

from __future__ import annotations

import ast
import keyword
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..conftest import grows_linearly, python_calls
from policy_checks.model import markers
from policy_checks.lifecycle.graduate import _shim
from policy_checks.model.markers import Marked, gate_calls, is_pure_shim, marked_definitions, shim_problem

PRELUDE = """\
from . import api_logging
from .api_logging import flashinfer_experimental_api as fx
import flashinfer.api_logging as al
from flashinfer.api_logging import experimental_backend as eb
fa = api_logging.flashinfer_experimental_api
"""


def kinds(source: str, qualname: str = "f") -> set[str]:
    return {m.kind for m in marked_definitions(PRELUDE + source) if m.qualname == qualname}


EXPERIMENTAL = [
    "@flashinfer_experimental_api\ndef f(): pass",
    "@api_logging.flashinfer_experimental_api\ndef f(): pass",
    "@al.flashinfer_experimental_api(feature='x')\ndef f(): pass",
    "@ flashinfer_experimental_api\ndef f(): pass",
    "@\tflashinfer_experimental_api\ndef f(): pass",
    "@(flashinfer_experimental_api)\ndef f(): pass",
    "@(\n    flashinfer_experimental_api\n)\ndef f(): pass",
    "@flashinfer_experimental_api(feature='x')\ndef f(): pass",
    "@(flashinfer_experimental_api)(feature='x')\ndef f(): pass",
    "@flashinfer_experimental_api()(trace=None)\ndef f(): pass",
    "@fx\ndef f(): pass",
    "@fx(feature='x')\ndef f(): pass",
    "@(fx)(feature='x')\ndef f(): pass",
    "@fa\ndef f(): pass",
    "g = fx\nh = g\n@h\ndef f(): pass",
    "import flashinfer.api_logging.flashinfer_experimental_api as m\n@m\ndef f(): pass",
    "@getattr(api_logging, 'flashinfer_experimental_api')\ndef f(): pass",
    "@[fx][0]\ndef f(): pass",
    "@(fx if True else None)\ndef f(): pass",
    "@(g := flashinfer_experimental_api)\ndef f(): pass",
    "@functools.partial(flashinfer_experimental_api, feature='x')\ndef f(): pass",
    "def wrap(func):\n    return flashinfer_experimental_api(func)\n@wrap\ndef f(): pass",
    "async_ = fx\n@async_\nasync def f(): pass",
    "@fx\nclass f: pass",
    "f = flashinfer_experimental_api(feature='x')(lambda: 1)",
    "from .api_logging import flashinfer_experimental_api as flashinfer_api\n@flashinfer_api\ndef f(): pass",
]


@pytest.mark.parametrize("source", EXPERIMENTAL)
def test_each_spelling_of_an_experimental_api(source):
    assert "experimental_api" in kinds(source)


@pytest.mark.parametrize("source, expected", [
    ("@flashinfer_api\ndef f(): pass", {"stable_api"}),
    ("@api_logging.flashinfer_api(trace=t)\ndef f(): pass", {"stable_api"}),
    ("@experimental_backend\ndef f(): pass", {"experimental_backend"}),
    ("@eb\n@supported_compute_capability([80])\ndef f(): pass", {"experimental_backend"}),
    ("@(eb)\ndef f(): pass", {"experimental_backend"}),
    ("@flashinfer_api\n@fx\ndef f(): pass", {"stable_api", "experimental_api"}),
    # not marks: prose, comments, strings, other names, the marker's arguments to another decorator
    ('@flashinfer_api\ndef f():\n    """@flashinfer_experimental_api"""', {"stable_api"}),
    ("# @flashinfer_experimental_api\ndef f(): pass", set()),
    ("x = '@flashinfer_experimental_api'\ndef f(): pass", set()),
    ("@flashinfer_experimental_api_v2\ndef f(): pass", set()),
    ("@my.flashinfer_experimental_apis\ndef f(): pass", set()),
    ("@backend_requirement({'a': check})\ndef f(): pass", set()),
    ("@functools.lru_cache(maxsize=None)\ndef f(): pass", set()),
    ("def f(): pass", set()),
])
def test_what_each_decorator_marks(source, expected):
    assert kinds(source) == expected


def test_qualnames_and_lines():
    source = ("class K:\n    @flashinfer_experimental_api\n    def run(self): pass\n\n"
              "    class Inner:\n        @experimental_backend\n        def check(self): pass\n\n"
              "def outer():\n    @flashinfer_api\n    def inner(): pass\n")
    assert marked_definitions(source) == [Marked("K.run", 3, "experimental_api"),
                                          Marked("K.Inner.check", 7, "experimental_backend"),
                                          Marked("outer.inner", 11, "stable_api")]


def test_a_decorator_is_evaluated_in_the_enclosing_scope_and_bytes_read_alike():
    source = b"@flashinfer_api\nclass K:\n    @flashinfer_api\n    def m(self): pass\n"
    assert marked_definitions(source) == [Marked("K", 2, "stable_api"), Marked("K.m", 4, "stable_api")]


@pytest.mark.parametrize("source", ["def (", "\x00", "@\n", "x = (" * 300, b"\xff\xfe\x00", "\ufeff@@"])
def test_text_that_is_not_python_is_none(source):
    assert marked_definitions(source) is None and gate_calls(source) is None


def test_gate_calls_are_resolved_too():
    source = ("from .api_logging import require_experimental_auto_backends as gate\n"
              "def f():\n    gate('x')\n"
              "def g():\n    api_logging.warn_experimental_backend_once('a', 'b')\n"
              "def h():\n    '''require_experimental_auto_backends()'''\n    # require_experimental()\n"
              "require_experimental('x')\n")
    assert gate_calls(source) == [("f", 3), ("g", 5), ("", 9)]


def test_the_vocabulary_is_one_list():
    assert markers.IMPORT_FUNCTIONS == ("import_module", "__import__", "importorskip")
    assert set(markers.KINDS) == {markers.EXPERIMENTAL_API, markers.EXPERIMENTAL_BACKEND, markers.STABLE_API}
    assert all(markers.is_gate_name(name) for name in markers.GATE_FUNCTIONS)


def test_no_other_module_spells_the_vocabulary():
    """Checker, fixer, lifecycle commands and bot read the track's names from markers.py
    alone (a copy in remove.py once left importorskip out): no other module of the
    package holds one of them as a string, docstrings aside."""
    from policy_checks.model.facts import docstring_ids

    vocabulary = set()
    for name, value in vars(markers).items():
        if name.isupper():
            vocabulary |= {value} if isinstance(value, str) else {v for v in value if isinstance(v, str)} \
                if isinstance(value, (tuple, frozenset, set, list)) else set()
    assert {"importorskip", "flashinfer_experimental_api", "FEATURE.toml"} <= vocabulary
    root = Path(markers.__file__).parent
    # run inside the audited interpreter, standard library only: they name the loaders
    # (pkgutil, runpy, importlib) as the modules of the frames they meet, not as the track's words
    audited_side = {root / "audit" / name for name in ("tracer.py", "child_setup.py", "collector.py")}
    spelt = []
    for path in sorted(root.rglob("*.py")):
        if path == Path(markers.__file__) or path in audited_side:
            continue
        nodes = list(ast.walk(ast.parse(path.read_bytes())))
        prose = docstring_ids(nodes)
        spelt += [f"{path.relative_to(root)}:{node.lineno} {node.value!r}" for node in nodes
                  if id(node) not in prose and isinstance(node, ast.Constant) and node.value in vocabulary]
    assert spelt == []


# --- never raises; finds the marks whatever the spelling ------------------------------------------------

_ALIAS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(
    lambda s: not keyword.iskeyword(s) and not s.startswith("flashinfer") and s not in ("experimental_backend",))


@st.composite
def spelt(draw):
    """A parseable file that marks ``target`` experimental, in one of the spellings, with noise around."""
    alias = draw(_ALIAS)
    head = draw(st.sampled_from([
        ("", "flashinfer_experimental_api"),
        ("from . import api_logging\n", "api_logging.flashinfer_experimental_api"),
        (f"from .api_logging import flashinfer_experimental_api as {alias}\n", alias),
        (f"{alias} = flashinfer_experimental_api\n", alias),
        (f"import x.flashinfer_experimental_api as {alias}\n", alias),
    ]))
    name = head[1]
    wrapped = draw(st.sampled_from(["{}", "({})", " {}", "({})(feature='f')", "{}(trace=None)", "{}()()"]))
    blank = draw(st.sampled_from(["", " ", "\t"]))
    noise = draw(st.sampled_from(["", "# @flashinfer_api\n", "x = 1\n", "@flashinfer_api\ndef other(): pass\n"]))
    method = draw(st.booleans())
    decorator = "@" + blank + wrapped.format(name)
    if method:
        body = f"class K:\n    {decorator}\n    def target(self):\n        '''@flashinfer_api'''\n"
    else:
        body = f"{decorator}\ndef target():\n    '''@flashinfer_api'''\n"
    return head[0] + noise + body, "K.target" if method else "target"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spelt())
def test_a_parseable_file_s_mark_is_found_whatever_the_spelling(case):
    source, qualname = case
    found = {(m.qualname, m.kind) for m in marked_definitions(source)}
    assert (qualname, "experimental_api") in found
    assert (qualname, "stable_api") not in found  # the docstring line counts for nothing


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.binary(), st.text(alphabet="@()[]{}:=\n .,'\"#\\ abfx_", max_size=200)))
def test_any_text_is_read_without_raising(text):
    for read in (marked_definitions, gate_calls, markers.shim_home):
        read(text)
    shim_problem({"__init__.py": text if isinstance(text, str) else text.decode("utf-8", "replace")})


def _hostile_source(n: int) -> str:
    return ("a0 = flashinfer_experimental_api\n" + "".join(f"a{i} = a{i - 1}\n" for i in range(1, n))
            + "".join(f"@a{i}\ndef f{i}(): pass\n" for i in range(n - 1, 0, -97))
            + "x = " + "[" * 150 + "]" * 150 + "\n" + "y = f" + "()" * 500 + "\n"
            + "".join(f"b{i} = " + " = ".join(f"c{j}" for j in range(20)) + " = fx\n" for i in range(n // 40)))


def test_a_long_hostile_file_is_read_in_linear_work():
    """Long alias chains read by many decorators: resolving each decorator along the
    chain again would be quadratic. The work is counted in calls, not timed."""
    n = 10_000
    found = marked_definitions(_hostile_source(n))
    assert len(found) == len(range(n - 1, 0, -97))

    def work_at(size):
        source = _hostile_source(size)
        return python_calls(lambda: (marked_definitions(source), gate_calls(source)))

    assert grows_linearly(work_at, n)


# --- the pure re-export shim -------------------------------------------------------------------------

HOME = "flashinfer.gated_norm"
FEATURE = "gated_rmsnorm"
OLD = f"flashinfer.experimental.{FEATURE}"
INIT = _shim(FEATURE, OLD, HOME, True, HOME).decode()
KERNEL = _shim(FEATURE, f"{OLD}.kernel", f"{HOME}.kernel", False, HOME).decode()
SUB = _shim(FEATURE, f"{OLD}.sub", f"{HOME}.sub", False, HOME).decode()
LAZY = _shim(FEATURE, f"{OLD}.lazy", f"{HOME}.lazy", False, HOME, ["Plan", "run"]).decode()
WRITTEN = {"__init__.py": INIT, "kernel.py": KERNEL, "sub/__init__.py": SUB, "lazy.py": LAZY,
           "__pycache__/kernel.cpython-311.pyc": None}


def test_what_graduate_writes_is_a_pure_shim():
    assert is_pure_shim(WRITTEN) and shim_problem(WRITTEN) is None
    assert is_pure_shim(WRITTEN, "flashinfer.experimental")
    assert markers.shim_home(INIT) == HOME
    variations = {
        "__init__.py": '"""Moved."""\n# a comment\nfrom __future__ import annotations\nimport warnings\n'
                       f"from {HOME} import run, check as check  # re-exported\n"
                       f'__graduated_to__: str = "{HOME}"\n__all__ = ["run", "check"]\n'
                       'warnings.warn("moved", category=DeprecationWarning)\n',
    }
    assert shim_problem(variations) is None


@pytest.mark.parametrize("extra, why", [
    ({"FEATURE.toml": 'kind = "api"\n'}, "it holds FEATURE.toml, which is not a re-export module"),
    ({"README.md": "# x\n"}, "it holds README.md"),
    ({"fast.py": "from flashinfer.experimental import experimental_backend\n"}, "fast.py line 1: imports from"),
    ({"kernel.py": KERNEL + "\ndef run():\n    pass\n"}, "kernel.py line 22: holds code other than a re-export"),
    ({"kernel.py": KERNEL + "\nx = 1\n"}, "holds code other than a re-export (Assign)"),
    ({"kernel.py": KERNEL.replace("DeprecationWarning", "UserWarning")}, "holds code other than a re-export (Expr)"),
    ({"kernel.py": KERNEL.replace(f'"{HOME}.kernel"), name)', '"flashinfer.experimental.x"), name)')},
     "holds code other than a re-export (FunctionDef)"),
    ({"kernel.py": "from . import secret\n"}, "imports from ., not from the new home"),
    ({"kernel.py": "import os\n"}, "imports os"),
    ({"lazy.py": LAZY.replace(f"import {HOME}.lazy as", "import flashinfer.experimental.x as")},
     "lazy.py line 9: imports flashinfer.experimental.x"),
    ({"kernel.py": "exec('import os')\n"}, "holds code other than a re-export (Expr)"),
    ({"kernel.py": "def (\n"}, "kernel.py is not Python"),
    ({"kernel.py": None}, "kernel.py could not be read as a file"),
    ({"__init__.py": INIT.replace(f'__graduated_to__ = "{HOME}"', "")}, "binds no __graduated_to__"),
    ({"__init__.py": INIT + '\n__graduated_to__ = "flashinfer.other"\n'}, "names another home"),
    ({"__init__.py": None}, "it has no readable __init__.py"),
    ({"__init__.py": INIT.replace("stacklevel=2", "stacklevel=level")}, "holds code other than a re-export (Expr)"),
    ({"__init__.py": INIT + "\nif True:\n    pass\n"}, "holds code other than a re-export (If)"),
    ({"__init__.py": INIT.replace("def __getattr__(name):", "@cache\ndef __getattr__(name):")},
     "holds code other than a re-export (FunctionDef)"),
])
def test_anything_more_is_not_a_pure_shim(extra, why):
    sources = {**WRITTEN, **extra}
    assert not is_pure_shim(sources)
    assert why in shim_problem(sources)


def test_a_home_inside_the_experimental_package_is_no_graduation():
    init = INIT.replace(HOME, "flashinfer.experimental.other")
    assert is_pure_shim({"__init__.py": init})
    assert shim_problem({"__init__.py": init}, "flashinfer.experimental") == (
        "its __graduated_to__ names flashinfer.experimental.other, inside flashinfer.experimental")
    assert shim_problem({"kernel.py": KERNEL}) == "it has no __init__.py"
