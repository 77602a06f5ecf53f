"""graduate points the moved code's literal module paths at the new home: only plain
literals that are exactly a module path under the old package; everything else is
left as it was (and listed for a person by the step-2 scan of strings)."""

from __future__ import annotations

import ast

from policy_checks.lifecycle.graduate.module_strings import retarget_module_strings

OLD, HOME = "pkg.experimental.feat", "pkg.fancy"


def test_plain_module_paths_move_with_the_code():
    source = (
        "import importlib\n"
        "M = 'pkg.experimental.feat.kernels'\n"
        "N = \"pkg.experimental.feat\"\n"
        "LOG = ('pkg.experimental.feat.a.b', 'analyze')\n"
        "def load():\n"
        "    return importlib.import_module(\"pkg.experimental.feat.kernels\")\n"
    ).encode()
    after = retarget_module_strings(source, OLD, HOME).decode()
    assert after == (
        "import importlib\n"
        "M = 'pkg.fancy.kernels'\n"
        "N = \"pkg.fancy\"\n"
        "LOG = ('pkg.fancy.a.b', 'analyze')\n"
        "def load():\n"
        "    return importlib.import_module(\"pkg.fancy.kernels\")\n"
    )


def test_what_is_not_exactly_a_plain_module_path_is_left():
    source = (
        "A = 'pkg.experimental.feature_other.x'\n"  # another feature sharing a prefix
        "B = f'pkg.experimental.feat.{1}'\n"  # an f-string
        "C = 'see pkg.experimental.feat.kernels'\n"  # prose holding the path
        "D = 'pkg.experimental.feat.k\\x65rnels'\n"  # an escape: its bytes are not its value
        "E = r'pkg.experimental.feat.kernels'\n"  # a prefix
        "F = 'pkg.experimental.feat.' 'kernels'\n"  # implicit concatenation
        "G = 'pkg.experimental.feat/kernels.py'\n"  # a path, not a module
    ).encode()
    assert retarget_module_strings(source, OLD, HOME) == source


def test_a_file_that_does_not_parse_or_never_spells_the_path_is_returned_as_is():
    assert retarget_module_strings(b"def (:\n 'pkg.experimental.feat'\n", OLD, HOME).startswith(b"def (:")
    untouched = b"X = 'pkg.other'\n"
    assert retarget_module_strings(untouched, OLD, HOME) is untouched


def test_every_other_node_is_unchanged():
    source = ("'''Docs name pkg.experimental.feat.kernels in prose.'''\n"
              "X = {'pkg.experimental.feat.k': 1, 'k': 'pkg.experimental.feat.k'}\n").encode()
    after = retarget_module_strings(source, OLD, HOME)
    assert after.decode().splitlines()[1] == "X = {'pkg.fancy.k': 1, 'k': 'pkg.fancy.k'}"
    assert ast.dump(ast.parse(after).body[0]) == ast.dump(ast.parse(source).body[0])
