"""Step 6: ``<experimental tests>/<feature>/`` moves to the stable lane.

Its imports are retargeted. Test functions that assert the experimental contract
are dropped and listed. The contract is the opt-in warning, the markers, the
JIT-only refusal and the record.
"""

from __future__ import annotations

import os
import stat
from typing import List, Tuple

import libcst as cst

from ...model import markers
from ...editing.cst_tools import PythonFile, add_edit, apply_edits, dotted_name
from ...editing.target import FixTarget
from ..plan import Plan
from .rewrite import parse_file, retarget_or_refuse

# What a test asserting the experimental contract mentions; such tests do not hold for a
# stable API and are dropped (and listed) when the tests move.
_MARKER_ATTRIBUTES = {markers.EXPERIMENTAL_FLAG, "experimental_feature", "experimental"}
# Names that only a test of the experimental contract reads: the AOT refusal, the gate.
_CONTRACT_NAMES = {"AotRefusedError", "EXPERIMENTAL_AUTO_ENV_VAR", "experimental_auto_backends_allowed",
                   "dropped_experimental_backends", "gate_on"}
_CONTRACT_STRINGS = (markers.RECORD, markers.AUTO_BACKENDS_ENV)


def stable_tests_dir(target: FixTarget, home: str) -> str:
    """Where the moved tests go.

    When the stable lane mirrors the package (``tests/flashinfer/...``), they go
    beside its tests. Otherwise they go to ``<stable tests>/<last part>``.
    """
    s = target.settings
    parts = home.split(".")
    mirrored = f"{s.stable_tests}/{s.package.replace('.', '/')}"
    if (target.root / mirrored).is_dir():
        return f"{s.stable_tests}/{'/'.join(parts)}"
    return f"{s.stable_tests}/{parts[-1]}"


def move_tests(graduation: Plan) -> None:
    """Plan the moved tests. The destination was checked free before planning."""
    target = graduation.target
    s = target.settings
    tests_rel = f"{s.experimental_tests}/{graduation.feature}"
    if not os.path.lexists(target.root / tests_rel):
        graduation.ask(6, f"write stable tests: {tests_rel}/ does not exist")
        return
    new_dir = stable_tests_dir(target, graduation.home)
    dropped: List[str] = []
    trimmed: List[str] = []
    files = [rel for rel in graduation.changes.files_under(tests_rel) if "__pycache__" not in rel.split("/")]
    for rel in files:
        new_rel = f"{new_dir}/{rel[len(tests_rel) + 1:]}"
        data = graduation.changes.read(rel)
        graduation.modes[new_rel] = stat.S_IMODE(os.lstat(target.root / rel).st_mode)
        if rel.endswith(".py"):
            data, gone, pruned = _moved_test(graduation, rel, new_rel, data)
            dropped += [f"{new_rel}::{name}" for name in gone]
            trimmed += [f"{new_rel}::{name}" for name in pruned]
        graduation.creations[new_rel] = data
    graduation.deletions.append(tests_rel)
    graduation.did(6, f"moved {tests_rel}/ to {new_dir}/ ({len(files)} files)")
    for name in dropped:
        graduation.did(6, f"dropped a test of the experimental contract: {name}")
    for name in trimmed:
        graduation.did(6, f"dropped what expects experimental markers in {name}")
    if dropped or trimmed:
        graduation.ask(6, "check that what was dropped covered nothing else")


def _moved_test(graduation: Plan, rel: str, new_rel: str, data: bytes) -> Tuple[bytes, List[str], List[str]]:
    """One test module at its new path, imports retargeted and the contract's tests dropped."""
    file = parse_file(graduation.target, rel, data)
    edits: dict = {}
    retarget_or_refuse(file, graduation.old, graduation.home, graduation.target.module_of(new_rel)[0], edits)
    gone, pruned = _drop_contract_tests(file, edits, graduation.old)
    return (apply_edits(file, edits) if edits else data), gone, pruned


def _drop_contract_tests(file: PythonFile, edits: dict, old: str) -> Tuple[List[str], List[str]]:
    """Drop top-level ``test_*`` functions about the experimental contract.

    Such a test is named for the contract, or reads its gate, its AOT refusal, its
    record or its path. In the other tests, a
    ``with pytest.warns(ExperimentalWarning):`` block gives way to its body. The
    operands of an ``assert`` that read an experimental marker go. The whole
    statement goes when nothing is left. Returns the dropped tests and the trimmed
    ones.
    """
    dropped, trimmed = [], []
    for statement in file.tree.body:
        if not (isinstance(statement, cst.FunctionDef) and statement.name.value.startswith("test")):
            continue
        name = statement.name.value
        warns = _warns_blocks(statement)
        if "experimental" in name or _expects_contract(statement, old) or any(w is None for w in warns):
            dropped.append(name)
            add_edit(edits, statement, lambda updated: cst.RemovalSentinel.REMOVE)
            continue
        for block in warns:
            add_edit(edits, block, lambda updated: cst.FlattenSentinel(updated.body.body))
        if _prune_marker_asserts(statement, edits) or warns:
            trimmed.append(name)
    return dropped, trimmed


def _warns_blocks(function: cst.FunctionDef) -> list:
    """The ``with pytest.warns(ExperimentalWarning...):`` statements of one item in `function`.

    Returns None when one binds the record with ``as``, or has more items. Then the
    test goes.
    """
    found: list = []

    class Finder(cst.CSTVisitor):
        def visit_With(self, node: cst.With) -> None:
            expects = [item for item in node.items if _is_warns_experimental(item.item)]
            if expects:
                simple = len(node.items) == 1 and expects[0].asname is None and isinstance(node.body, cst.IndentedBlock)
                found.append(node if simple else None)

    function.visit(Finder())
    return found


def _is_warns_experimental(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Call)
        and dotted_name(node.func).rpartition(".")[2] == "warns"
        and any(dotted_name(a.value).rpartition(".")[2] == "ExperimentalWarning" for a in node.args)
    )


def _reads_marker(node: cst.CSTNode) -> bool:
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Attribute(self, attribute: cst.Attribute) -> None:
            nonlocal found
            found = found or attribute.attr.value in _MARKER_ATTRIBUTES

    node.visit(Finder())
    return found


def _prune_marker_asserts(function: cst.FunctionDef, edits: dict) -> bool:
    """Drop the operands of ``assert`` statements that read a marker. True when any did."""
    asserts: list = []

    class Finder(cst.CSTVisitor):
        def visit_Assert(self, node: cst.Assert) -> None:
            if _reads_marker(node.test):
                asserts.append(node)

    function.visit(Finder())
    for node in asserts:
        kept = [o for o in _and_operands(node.test) if not _reads_marker(o)]
        if not kept:
            add_edit(edits, node, lambda updated: cst.RemovalSentinel.REMOVE)
            continue
        test = kept[0]
        for operand in kept[1:]:
            test = cst.BooleanOperation(test, cst.And(), operand)
        add_edit(edits, node, lambda updated, test=test: updated.with_changes(test=test))
    return bool(asserts)


def _and_operands(node: cst.BaseExpression) -> list:
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And) and not node.lpar:
        return _and_operands(node.left) + _and_operands(node.right)
    return [node]


def _expects_contract(function: cst.FunctionDef, old: str) -> bool:
    """Does the test read the gate, the AOT refusal or the record?

    Spelling the experimental path in a string counts too. That is where the code
    lives while it is experimental.
    """
    strings = (*_CONTRACT_STRINGS, old, old.replace(".", "/"))
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:  # parameters (fixtures) included
            nonlocal found
            found = found or node.value in _CONTRACT_NAMES

        def visit_Attribute(self, node: cst.Attribute) -> None:
            nonlocal found
            found = found or node.attr.value in _CONTRACT_NAMES

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            nonlocal found
            found = found or any(s in node.value for s in strings)

    function.visit(Finder())
    return found
