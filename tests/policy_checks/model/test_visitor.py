"""QuickVisitor visits as `ast.NodeVisitor` does, and each class keeps its own methods."""

from __future__ import annotations

import ast

from policy_checks.model.visitor import QuickVisitor

SOURCE = "def f(a, b=1):\n    return [x + a for x in b]\n\nclass C(f(2)):\n    y: int = 3\n"


class _Order(ast.NodeVisitor):
    def __init__(self):
        self.seen = []

    def visit(self, node):
        self.seen.append(type(node).__name__)
        return super().visit(node)


class _QuickOrder(QuickVisitor):
    def __init__(self):
        self.seen = []

    def visit(self, node):
        self.seen.append(type(node).__name__)
        return self.dispatch(node)


def test_every_node_is_visited_in_ast_order():
    tree = ast.parse(SOURCE)
    slow, quick = _Order(), _QuickOrder()
    slow.visit(tree)
    quick.visit(tree)
    assert quick.seen == slow.seen and "ListComp" in quick.seen


def test_each_class_finds_its_own_method_for_a_node_type():
    class Names(QuickVisitor):
        def __init__(self):
            self.found = []

        def visit_Name(self, node):
            self.found.append(node.id)

    class Constants(QuickVisitor):
        def __init__(self):
            self.found = []

        def visit_Constant(self, node):
            self.found.append(node.value)

    tree = ast.parse(SOURCE)
    names, constants = Names(), Constants()
    names.visit(tree)
    constants.visit(tree)  # after Names cached its methods: none of them is used here
    assert names.found == ["x", "a", "x", "b", "f", "y", "int"]
    assert constants.found == [1, 2, 3]
