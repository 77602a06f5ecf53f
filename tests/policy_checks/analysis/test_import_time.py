"""Deny by default at import time (EXP010) and the one import-time analysis
(`policy_checks.analysis.import_time`): each route a hostile pull request takes to run code at
import that no import statement shows, reported, beside a harmless twin that stays
clean; with and without the prefilter, and as CI runs the checker, on a real git
repository holding the base and the head (``run --policy-from BASE``)."""

from __future__ import annotations

import json

import pytest

from ..conftest import write_tree
from ..engine.test_policy_change import BASE, cli, commit, git
from .test_static_routes import INIT, found

# family -> (the hostile core module, its harmless twin); each hostile line is marked # X
ROUTES = {
    "a name built at run time": (
        "import importlib\nFEAT = importlib.import_module(f'{__package__}.experi' + 'mental.' + NAME)  # X\n",
        "import importlib\nNORM = importlib.import_module('flashinfer.norm')\n",
    ),
    "a name read from a file": (
        "import importlib\nfrom pathlib import Path\n"
        "importlib.import_module(Path('name.txt').read_text())  # X\n",
        "from pathlib import Path\nNAME = Path('name.txt').read_text()\n",
    ),
    "a load behind a check of the environment": (
        "import os, importlib\nif os.environ.get('FAST'):\n    importlib.__import__(os.environ['FAST'])  # X\n",
        "import os\nFAST = bool(os.environ.get('FAST'))\n",
    ),
    "a thread started at import": (
        "import threading, importlib\n"
        "threading.Thread(target=importlib.import_module, args=('x',)).start()  # X\n",
        "import threading\nLOCK = threading.Lock()\n",
    ),
    "an atexit handler": (
        "import atexit\nfrom . import norm\natexit.register(norm.load)  # X\n",
        "import atexit\ndef later():\n    atexit.register(print)\n",
    ),
    "a finder added to sys.meta_path": (
        "import sys\nclass Finder:\n    def find_spec(self, *a):\n        return None\n"
        "sys.meta_path.insert(0, Finder())  # X\n",
        "import sys\nPATHS = list(sys.meta_path)\n",
    ),
    "exec of text read on a pool thread": (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "POOL = ThreadPoolExecutor(1)  # X\n"
        "POOL.submit(exec, open('flashinfer/experimental/feat/kernels.py').read())\n",
        "from concurrent.futures import ThreadPoolExecutor\ndef pool():\n    return ThreadPoolExecutor(1)\n",
    ),
    "exec of text read from a file": (
        "exec(open('flashinfer/experimental/feat/kernels.py').read())  # X\n",
        "exec('import os')\n",
    ),
    "a lazy loader": (
        "import importlib.util as u\nLOADER = u.LazyLoader  # bound, not called\n"
        "spec = u.find_spec('flashinfer.norm')\nspec.loader = u.LazyLoader(spec.loader)  # X\n",
        "import importlib.util as u\nSPEC = u.find_spec('flashinfer.norm')\n",
    ),
    "a library under the experimental package": (
        "import ctypes\nctypes.CDLL('flashinfer/experimental/feat/libk.so')  # X\n",
        "import ctypes\nctypes.CDLL('libcuda.so.1')\n",
    ),
    "a library at a computed path": (
        "import ctypes, os\nctypes.cdll.LoadLibrary(os.path.join(os.path.dirname(__file__), 'k.so'))  # X\n",
        "import ctypes, os\ndef load():\n    return ctypes.CDLL(os.environ['LIB'])\n",
    ),
    "sys.path changed": (
        "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))  # X\n",
        "import sys\nHERE = sys.path[0]\n",
    ),
    "sys.path under another name": (
        "import sys\nP = sys.path\nP.insert(0, 'x')  # X\n",
        "import sys\nP = sys.path\nFIRST = P[0]\n",
    ),
    "os bound under another name": (
        "import os as o\no.system('true')  # X\n",
        "import os as o\nHOME = o.environ.get('HOME')\n",
    ),
    "sys.modules changed": (
        "import sys\nsys.modules['flashinfer.fast'] = sys  # X\n",
        "import sys\nME = sys.modules[__name__]\n",
    ),
    "a package's search path": (
        "__path__.append('flashinfer/experimental')  # X\n",
        "PATH = 'flashinfer/experimental'\n",
    ),
    "a helper two calls down": (
        "from .helpers import outer\nouter()  # X\n",
        "from .helpers import outer\ndef later():\n    outer()\n",
    ),
    "a decorator whose body loads": (
        "from .helpers import outer_decorator\n@outer_decorator  # X\ndef f():\n    pass\n",
        "from .helpers import plain_decorator\n@plain_decorator\ndef f():\n    pass\n",
    ),
    "a base class's __init_subclass__": (
        "from .helpers import Base\nclass Mine(Base):  # X\n    pass\n",
        "from .helpers import Plain\nclass Mine(Plain):\n    pass\n",
    ),
    "a function of its own called at import": (
        "import subprocess\ndef probe():\n    subprocess.run(['true'])\nprobe()  # X\n",
        "import subprocess\ndef probe():\n    subprocess.run(['true'])\ndef later():\n    probe()\n",
    ),
    "a method of a helper's class called at import": (
        "from .helpers import Tool\nTool.build()  # X\n",
        "from .helpers import Tool\nTOOL = Tool\n",
    ),
    "a method of its own class called at import": (
        "import os\nclass Tool:\n    @staticmethod\n    def build():\n        os.system('true')\nTool.build()  # X\n",
        "import os\nclass Tool:\n    @staticmethod\n    def build():\n        os.system('true')\nT = Tool\n",
    ),
    "a module bound under another name": (
        "import threading as th\nth.Thread(target=print).start()  # X\n",
        "import threading as th\nLOCK = th.Lock()\n",
    ),
    "a name imported under another name, in a helper": (
        "from .helpers import spawn\nspawn()  # X\n",
        "from .helpers import spawn\ndef later():\n    spawn()\n",
    ),
    "a script's main block rebinding __name__": (
        "import sys\n__name__ = '__main__'\nif __name__ == '__main__':\n    sys.path.append('x')  # X\n",
        "import sys\nif __name__ == '__main__':\n    sys.path.append('x')\n",
    ),
}
HELPERS = (
    "import importlib, threading\n"
    "def start():\n    threading.Thread(target=print).start()\n"
    "def outer():\n    start()\n"
    "def outer_decorator(f):\n    importlib.import_module(f.__module__ + '.fast')\n    return f\n"
    "def plain_decorator(f):\n    return f\n"
    "class Base:\n    def __init_subclass__(cls):\n        importlib.import_module(cls.__name__)\n"
    "class Plain:\n    pass\n"
    "class Tool:\n    @staticmethod\n    def build():\n        import os\n        os.system('true')\n"
    "from subprocess import run as go\n"
    "def spawn():\n    go(['true'])\n"
)
TREE = {**INIT, "flashinfer/norm.py": "def load():\n    pass\n", "flashinfer/helpers.py": HELPERS}


def marked(source: str) -> list:
    return [n for n, line in enumerate(source.splitlines(), 1) if line.endswith("# X")]


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "every file"])
@pytest.mark.parametrize("family", ROUTES)
def test_each_route_is_exp010_and_its_twin_is_clean(check, family, prefilter):
    hostile, harmless = ROUTES[family]
    result = check({**TREE, "flashinfer/gemm.py": hostile}, prefilter=prefilter)
    assert [line for path, line, rule in found(result, "EXP010") if path == "flashinfer/gemm.py"] == marked(hostile)
    twin = check({**TREE, "flashinfer/gemm.py": harmless}, prefilter=prefilter)
    assert [f for f in found(twin) if f[0] == "flashinfer/gemm.py"] == []


def test_the_message_names_the_call_chain(check):
    result = check({**TREE, "flashinfer/gemm.py": ROUTES["a helper two calls down"][0]})
    [message] = [f.message for f in result.findings if f.rule == "EXP010" and f.path == "flashinfer/gemm.py"]
    assert "flashinfer.helpers.outer -> flashinfer.helpers.start" in message
    assert "threading.Thread() starts a thread or process" in message and "policy: ignore[EXP010]" in message


def test_a_support_module_whose_body_runs_code_is_exp010(check):
    support = ("from flashinfer.utils import experimental_backend, capability\nfrom flashinfer.norm import load\n"
               "@experimental_backend\n@capability([90])\ndef check_fast(x):\n    return True\n")
    files = {**TREE, "flashinfer/utils.py": "def experimental_backend(f):\n    return f\n"
                                            "def capability(c):\n    return lambda f: f\n",
             "flashinfer/gemm.py": "from .experimental.feat.support import check_fast\n"}
    clean = check({**files, "flashinfer/experimental/feat/support.py": support})
    assert found(clean, "EXP010") == []
    result = check({**files, "flashinfer/experimental/feat/support.py": support + "KERNEL = load()\n"})
    assert found(result, "EXP010") == [("flashinfer/experimental/feat/support.py", 7, "EXP010")]


def test_an_excluded_module_core_imports_is_read_like_core(check):
    files = {**TREE, "flashinfer/data/__init__.py": ""}
    hostile = check({**files, "flashinfer/data/tables.py": "import sys\nsys.path.append('flashinfer/experimental')\n",
                     "flashinfer/gemm.py": "from .data import tables\n"})
    assert ("flashinfer/gemm.py", 1, "EXP010") in found(hostile)
    twin = check({**files, "flashinfer/data/tables.py": "TABLE = [1, 2]\n", "flashinfer/gemm.py": "from .data import tables\n"})
    assert found(twin, "EXP010") == []


def test_a_transitive_experimental_import_is_exp001(check):
    """A function two calls down that imports experimental code in its body, called at
    import: EXP001 follows the whole chain (it stopped after one call)."""
    helpers = ("def inner():\n    from .experimental.feat import kernels\n    return kernels\n"
               "def outer():\n    return inner()\n")
    result = check({**TREE, "flashinfer/helpers.py": helpers, "flashinfer/gemm.py": "from .helpers import outer\nX = outer()\n"})
    assert ("flashinfer/gemm.py", 2, "EXP001") in found(result)
    [message] = [f.message for f in result.findings if f.rule == "EXP001"]
    assert "flashinfer.helpers.outer -> flashinfer.helpers.inner" in message


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "every file"])
def test_a_caller_spelling_the_name_in_other_letters_is_followed(check, prefilter):
    """Python reads identifiers normalised (NFKC): ``ｏuter()`` calls ``outer``. The caller's
    bytes do not spell the name; read as Python reads names they do, so the follow-up finds
    the call; a caller that only names the function in a function body stays unparsed."""
    helpers = "def outer():\n    from .experimental.feat import kernels\n    return kernels\n"
    caller = "from .helpers import \uff4futer\nX = \uff4futer()\n"
    lazy = "from .helpers import outer\ndef later():\n    return outer()\n"
    result = check({**TREE, "flashinfer/helpers.py": helpers, "flashinfer/gemm.py": caller, "flashinfer/norm.py": lazy},
                   prefilter=prefilter)
    assert [(path, rule) for path, _, rule in found(result) if rule == "EXP001"] == [("flashinfer/gemm.py", "EXP001")]


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "every file"])
def test_names_with_non_ascii_letters_are_followed(check, prefilter):
    """A function and the module it lives in, both named with non-ASCII letters: the
    caller's bytes, read as Python reads names, spell each whole (a non-ASCII letter is a
    name's, not a boundary), so the follow-up finds the call at import."""
    helpers = "def f\u00e4st():\n    from .experimental.feat import kernels\n    return kernels\n"
    caller = "from .h\u00e9lpers import f\u00e4st\nX = f\u00e4st()\n"
    result = check({**TREE, "flashinfer/h\u00e9lpers.py": helpers, "flashinfer/gemm.py": caller}, prefilter=prefilter)
    assert [(path, rule) for path, _, rule in found(result) if rule == "EXP001"] == [("flashinfer/gemm.py", "EXP001")]


def test_a_non_ascii_module_naming_no_such_function_is_not_summarised(check, monkeypatch):
    """A module that is not ASCII (its comment) and names no function that reaches
    anything is read as bytes only: the follow-up builds no symbol table for it. One that
    names such a function with its module gets one, and is parsed."""
    from policy_checks.model import facts

    checked = []
    real = facts._checked

    def counting(source):
        checked.append(source)
        return real(source)

    monkeypatch.setattr(facts, "_checked", counting)
    idle = "# 2 \u00b5s \u2264 3 ms \u2014 timings\nX = 1\n"
    calling = "# \u00b5s\nfrom .helpers import outer\nX = outer()\n"
    result = check({**TREE, "flashinfer/idle.py": idle, "flashinfer/gemm.py": calling}, jobs=1)
    assert idle.encode() not in checked and calling.encode() in checked
    assert ("flashinfer/gemm.py", 3, "EXP010") in found(result)


@pytest.mark.parametrize("family", ["a name built at run time", "a thread started at import", "a helper two calls down"])
def test_ci_fails_the_pull_request_and_passes_its_twin(tmp_path, family):
    """As the workflow runs it: the head judged with the base commit's policy."""
    hostile, harmless = ROUTES[family]
    root = write_tree(tmp_path / "repo", {**BASE, "flashinfer/helpers.py": HELPERS, "flashinfer/norm.py": ""})
    git(root, "init", "-q")
    base = commit(root, "base")
    commit(root, "a harmless change", {"flashinfer/fast.py": harmless})
    clean = cli(root, "--policy-from", base, "--format", "json")
    assert clean.exit_code == 0, clean.output
    commit(root, "the hostile change", {"flashinfer/fast.py": hostile})
    result = cli(root, "--policy-from", base, "--format", "json")
    assert result.exit_code == 1, result.output
    rules = {(f["path"], f["line"], f["rule"]) for f in json.loads(result.output)["findings"]}
    assert {("flashinfer/fast.py", line, "EXP010") for line in marked(hostile)} <= rules


@pytest.mark.parametrize("source", [
    "import sys\nfrom importlib import import_module\nsys.modules[__name__] = import_module('flashinfer.norm')\n",
    "import ctypes\nLIBC = ctypes.CDLL(None)\n",
    "import sys\nif __name__ == '__main__':\n    sys.path.insert(0, '.')\n    import threading\n"
    "    threading.Thread(target=print).start()\n",
    "import threading\nclass Worker(threading.Thread):\n    pass\n",  # a subclass, nothing started
    "def f():\n    f.__name__ = 'g'\nimport sys\nif __name__ == '__main__':\n    sys.path.append('x')\n",
], ids=["a module aliasing itself to a literal", "the program's own symbols", "a script's main block",
        "a Thread subclass", "an attribute __name__"])
def test_what_the_checker_resolves_is_clean(check, source):
    result = check({**TREE, "flashinfer/gemm.py": source})
    assert [f for f in found(result) if f[0] == "flashinfer/gemm.py"] == []


def test_a_computed_alias_of_itself_is_exp010(check):
    source = "import sys, os\nfrom importlib import import_module\nsys.modules[__name__] = import_module(os.environ['M'])\n"
    result = check({**TREE, "flashinfer/gemm.py": source})
    assert {f[1] for f in found(result, "EXP010")} == {3}


def test_a_loop_over_literal_names_is_resolved_and_a_parameter_is_not(check):
    loop = ("import importlib\ndef _load():\n    for name in ('flashinfer.norm', 'cutlass.cute'):\n"
            "        importlib.import_module(name)\nLOADED = _load()\n")
    assert [f for f in found(check({**TREE, "flashinfer/gemm.py": loop})) if f[0] == "flashinfer/gemm.py"] == []
    handed = ("import importlib\ndef _load(names):\n    for name in names:\n        importlib.import_module(name)\n"
              "LOADED = _load(['flashinfer.norm'])\n")
    assert {f[1] for f in found(check({**TREE, "flashinfer/gemm.py": handed}), "EXP010")} == {5}
    hidden = ("import importlib\ndef _load():\n    for name in ('flashinfer.experimental.feat',):\n"
              "        importlib.import_module(name)\nLOADED = _load()\n")
    assert ("flashinfer/gemm.py", 5, "EXP001") in found(check({**TREE, "flashinfer/gemm.py": hidden}))


def test_in_git_an_excluded_module_counts_by_its_object_id_edited_or_committed(check, tmp_path):
    """In a git work tree the replay's digest names an excluded module by git's object id
    where git vouches for its bytes (none of them read), and by its bytes where it does
    not (an edit git has not seen yet): either change computes the follow-ups again."""
    root, cache = tmp_path / "tree", tmp_path / "cache"
    files = {**TREE, "flashinfer/data/__init__.py": "", "flashinfer/data/tables.py": "TABLE = [1]\n",
             "flashinfer/gemm.py": "from .data import tables\n"}
    write_tree(root, files)
    git(root, "init", "-q")
    commit(root, "base")
    assert found(check({}, root=root, use_cache=True, cache_dir=cache), "EXP010") == []
    assert found(check({}, root=root, use_cache=True, cache_dir=cache), "EXP010") == []  # replayed
    edited = check({"flashinfer/data/tables.py": "import sys\nsys.path.append('x')\n"}, root=root,
                   use_cache=True, cache_dir=cache)
    assert ("flashinfer/gemm.py", 1, "EXP010") in found(edited)
    commit(root, "load")
    committed = check({}, root=root, use_cache=True, cache_dir=cache)
    assert ("flashinfer/gemm.py", 1, "EXP010") in found(committed)
    commit(root, "harmless again", {"flashinfer/data/tables.py": "TABLE = [2]\n"})
    assert found(check({}, root=root, use_cache=True, cache_dir=cache), "EXP010") == []


def test_a_warm_run_replays_the_follow_ups_and_a_changed_input_does_not(check, tmp_path):
    """The follow-ups' result is remembered under a digest of what they read: an
    unchanged tree replays it (same findings), and a change to any input, an excluded
    module included, computes it again (a replay never hides a finding)."""
    root = tmp_path / "tree"
    cache = tmp_path / "cache"
    files = {**TREE, "flashinfer/data/__init__.py": "", "flashinfer/data/tables.py": "TABLE = [1]\n",
             "flashinfer/gemm.py": "from .data import tables\n", "flashinfer/fast.py": ROUTES["a helper two calls down"][0]}
    first = check(files, root=root, use_cache=True, cache_dir=cache)
    again = check({}, root=root, use_cache=True, cache_dir=cache)
    assert found(first) == found(again) and ("flashinfer/fast.py", 2, "EXP010") in found(again)
    changed = check({"flashinfer/data/tables.py": "import sys\nsys.path.append('x')\n"}, root=root,
                    use_cache=True, cache_dir=cache)
    assert ("flashinfer/gemm.py", 1, "EXP010") in found(changed)


# ----- replaying the follow-ups after a change they have no use for -------------------------------

REPLAY_TREE = {
    **TREE,
    "flashinfer/jobs.py": "import threading\ndef worker():\n    threading.Thread(target=print).start()\n",
    "flashinfer/gemm.py": "from .helpers import outer\ndef later():\n    outer()\n",
    "flashinfer/quiet.py": "X = 1\n",
    "flashinfer/caller.py": "from .jobs import worker\nworker()\n",
    "flashinfer/reexport.py": "from .helpers import outer\n",
    "flashinfer/reader.py": "from . import helpers\nX = helpers.plain_decorator  # not helpers.outer\n",
    "tests/test_quiet.py": "def test_x():\n    pass\n",
}
# edit -> (file, its new text, may the follow-ups' last result be replayed?)
EDITS = {
    "a comment in a module no follow-up reads": ("flashinfer/quiet.py", "X = 1  # outer, worker\n", True),
    "a comment in a module that may load": ("flashinfer/jobs.py", REPLAY_TREE["flashinfer/jobs.py"] + "# later\n", True),
    "a test changed": ("tests/test_quiet.py", "def test_y():\n    pass\n", True),
    "a comment in a module parsed up front": ("flashinfer/helpers.py", HELPERS + "# later\n", True),
    "a function added to a module parsed up front": (
        "flashinfer/helpers.py", HELPERS + "def more():\n    import subprocess\n    subprocess.run(['x'])\n", False),
    "a caller added for the new function": (
        "flashinfer/quiet.py", "from .helpers import spawn\nspawn()\n", False),
    "a comment in a module whose text the follow-ups read": (
        "flashinfer/reader.py", REPLAY_TREE["flashinfer/reader.py"] + "# later\n", False),
    "a comment in a module importing a searched name for a function": (
        "flashinfer/gemm.py", REPLAY_TREE["flashinfer/gemm.py"] + "# later\n", True),
    "a call at import added": ("flashinfer/quiet.py", "from .helpers import outer\nouter()\n", False),
    "a thread started at import": ("flashinfer/jobs.py", "import threading\nthreading.Thread(target=print).start()\n", False),
    "a call at import removed": ("flashinfer/caller.py", "from .jobs import worker\n", False),
    "a comment in a module summarised for a name it binds": (
        "flashinfer/reexport.py", REPLAY_TREE["flashinfer/reexport.py"] + "# later\n", True),
    "a name it binds moved into a comment": ("flashinfer/reexport.py", "X = 1  # from .helpers import outer\n", False),
    "a load moved into a function no one calls": (
        "flashinfer/jobs.py", "import threading\ndef worker():\n    pass\ndef other():\n    threading.Thread().start()\n",
        False),
}


@pytest.fixture
def ran(monkeypatch) -> list:
    """The names of the follow-ups each run from now on runs, in order (a replay runs none)."""
    from policy_checks.rules.registry import RULES

    names = []

    def counted(follow):
        def run_and_count(project):
            names.append(follow.__name__)
            return follow(project)
        run_and_count.scans = follow.scans
        return run_and_count

    wrapped = {follow: counted(follow) for rule in RULES.values() for follow in rule.follow_ups}
    for rule in RULES.values():
        monkeypatch.setattr(rule, "follow_ups", tuple(wrapped[f] for f in rule.follow_ups))
    return names


@pytest.mark.parametrize("edit", EDITS)
def test_a_run_after_a_change_finds_what_a_cold_run_finds(check, tmp_path, ran, edit):
    """After a change the follow-ups could have no use for, their last result is replayed
    (they do not run); after any other, they run again. Either way the findings are a cold
    run's, finding for finding."""
    import shutil

    warm = tmp_path / "warm"
    check(REPLAY_TREE, root=tmp_path / "base", use_cache=True, cache_dir=warm)
    rel, text, replayed = EDITS[edit]
    cache = tmp_path / "cache"
    shutil.copytree(warm, cache)
    root = tmp_path / "edited"
    ran.clear()
    after = check({**REPLAY_TREE, rel: text}, root=root, use_cache=True, cache_dir=cache)
    assert (ran == []) == replayed, ran
    assert found(after) == found(check({}, root=root))


def test_replays_in_a_row_find_what_a_cold_run_finds_and_only_append_to_the_facts(check, tmp_path, ran):
    """Edits the follow-ups have no use for, one after another on one cache: each run
    replays them, judged against the record the run before left (each replay replaces
    it, in a file of its own), and finds what a cold run finds; the facts' file keeps its
    bytes and grows by what the run added, never written whole for a record. An edit
    the follow-ups have a use for, last, runs them again."""
    root, cache = tmp_path / "tree", tmp_path / "cache"
    files = dict(REPLAY_TREE)
    check(files, root=root, use_cache=True, cache_dir=cache)
    (store,) = cache.rglob("facts-v*.json")
    (records,) = cache.rglob("followed-v*.json")
    for edit in ("a comment in a module no follow-up reads", "a comment in a module that may load",
                 "a comment in a module parsed up front", "a call at import added"):
        rel, text, replayed = EDITS[edit]
        files[rel] = text
        before, records_before = store.read_bytes(), len(json.loads(records.read_bytes())["entries"])
        ran.clear()
        after = check(files, root=root, use_cache=True, cache_dir=cache)
        assert (ran == []) == replayed, (edit, ran)
        if replayed:
            assert store.read_bytes().startswith(before[:-2]), edit  # appended to: "...}}" -> "...,new}}"
            # beside it, the result for these inputs added and the record replaced
            assert len(json.loads(records.read_bytes())["entries"]) == records_before + 1, edit
        assert found(after) == found(check({}, root=root)), edit


# Pieces a hostile or ordinary edit puts in a module: calls at import and in bodies of the
# functions the follow-ups search for, loads, imports of their homes, and inert text.
PIECES = (
    "# a comment naming outer, worker and start\n",
    "from .helpers import outer\n", "from .helpers import outer\nouter()\n", "from .helpers import outer\ndef f():\n    outer()\n",
    "from .jobs import worker\nworker()\n", "from . import jobs\njobs.worker()\n", "from .helpers import Tool\nTool.build()\n",
    "import threading\nthreading.Thread(target=print).start()\n", "import threading\ndef g():\n    threading.Timer(1, print)\n",
    "def outer():\n    pass\n", "X = 'outer worker spawn'\n", "from .helpers import spawn as s\ns()\n",
    "import importlib\nimportlib.import_module('flashinfer.norm')\n", "class Tool:\n    pass\n",
)


def test_any_edit_of_one_module_finds_what_a_cold_run_finds(check, tmp_path):
    """Property: whatever one module becomes, a run on the warm cache (replaying the
    follow-ups or not) finds exactly what a cold run finds."""
    import shutil

    from hypothesis import HealthCheck, given, settings, strategies as st

    warm = tmp_path / "warm"
    check(REPLAY_TREE, root=tmp_path / "base", use_cache=True, cache_dir=warm)
    targets = sorted(rel for rel in REPLAY_TREE if rel.startswith("flashinfer/") and "experimental" not in rel)
    runs = []

    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(st.sampled_from(targets), st.lists(st.sampled_from(PIECES), min_size=1, max_size=3), st.booleans())
    def edited(rel, pieces, keep):
        n = len(runs)
        runs.append(rel)
        cache = tmp_path / f"cache{n}"
        shutil.copytree(warm, cache)
        root = tmp_path / f"edited{n}"
        text = (REPLAY_TREE[rel] if keep else "") + "".join(pieces)
        after = check({**REPLAY_TREE, rel: text}, root=root, use_cache=True, cache_dir=cache)
        assert found(after) == found(check({}, root=root)), (rel, text)

    edited()
    assert len(runs) == 40
