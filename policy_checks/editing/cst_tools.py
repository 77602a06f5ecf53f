"""libcst pieces the Python rewrites share: finding statements, reading imports, editing.

Every rewrite is a set of *edits*. An edit maps an original node to a function
from the updated node to its replacement. `apply_edits` runs them in one pass. So
nodes nobody edits are printed back byte for byte. libcst keeps all whitespace and
comments in the tree.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Dict, Iterator, List, Optional, Protocol, Sequence, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider, ScopeProvider

from ..model import markers
from ..model.entry_points import branch_backend
from .target import FixTarget

Edit = Callable[[cst.CSTNode], cst.CSTNode]
ImportStatement = Union[cst.Import, cst.ImportFrom]

# An edit that returns this removes the statement line; its comment lines stay.
REMOVE_LINE = cst.Pass()


class Unfixable(Exception):
    """This finding needs a person; the message says why."""


@dataclass
class PythonFile:
    """A parsed module with the metadata the rewrites ask for."""

    wrapper: MetadataWrapper
    module_name: str
    is_package: bool

    # Each kind of metadata is resolved when first asked for: every one walks the whole
    # tree, and scopes cost most, which a rewrite of imports alone never needs.
    @cached_property
    def positions(self):
        return self.wrapper.resolve(PositionProvider)

    @cached_property
    def parents(self):
        return self.wrapper.resolve(ParentNodeProvider)

    @cached_property
    def scopes(self):
        return self.wrapper.resolve(ScopeProvider)

    @property
    def tree(self) -> cst.Module:
        return self.wrapper.module

    def line_of(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    @property
    def names(self):
        """The file's names as `policy_checks.model.markers` reads them, built on first use."""
        names = self.__dict__.get("_names")
        if names is None:
            tree = markers.parse(self.tree.code)
            names = markers.file_names(tree if tree is not None else ast.Module(body=[], type_ignores=[]))
            self.__dict__["_names"] = names
        return names


def parse(source: bytes, module_name: str, is_package: bool) -> PythonFile:
    """Parse `source`. Raises `Unfixable` when libcst cannot, or cannot print it back unchanged."""
    try:
        tree = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        raise Unfixable(f"cannot parse: {error.message}") from error
    if tree.bytes != source:  # e.g. libcst 1.x drops a blank line before a final form feed
        raise Unfixable("libcst does not reproduce this file byte for byte; fix it by hand")
    return PythonFile(MetadataWrapper(tree, unsafe_skip_copy=True), module_name, is_package)


class Position(Protocol):
    """Where a finding points: its line and 1-based column."""

    line: int
    column: int


def import_at(file: PythonFile, finding: Position) -> ImportStatement:
    """The import statement a finding points at, by its first line and 1-based column."""
    on_line = [
        node
        for node, position in file.positions.items()
        if isinstance(node, (cst.Import, cst.ImportFrom)) and position.start.line == finding.line
    ]
    exact = [n for n in on_line if file.positions[n].start.column == finding.column - 1]
    if exact or len(on_line) == 1:
        return (exact or on_line)[0]
    raise Unfixable(
        f"no single import statement at line {finding.line} (importlib.import_module and "
        "__import__ calls are not rewritten)"
    )


def dotted_name(node: cst.CSTNode) -> str:
    """``a.b.c`` for a Name/Attribute chain, "" for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted_name(node.value)
        return f"{head}.{node.attr.value}" if head else ""
    return ""


def package_of(file: PythonFile) -> str:
    return file.module_name if file.is_package else file.module_name.rpartition(".")[0]


def resolve_from(module: str, is_package: bool, level: int, base: str) -> str:
    """Absolute name of the module that ``from <level dots><base> import`` reads in `module`."""
    if not level:
        return base
    package = (module if is_package else module.rpartition(".")[0]).split(".")
    anchor = package[: len(package) - level + 1]
    return ".".join(anchor + ([base] if base else []))


def imported_module(file: PythonFile, node: cst.ImportFrom) -> str:
    """Absolute name of the module a ``from ... import`` statement reads from."""
    base = dotted_name(node.module) if node.module else ""
    return resolve_from(file.module_name, file.is_package, len(node.relative), base)


def module_small_statements(file: PythonFile) -> Iterator[cst.BaseSmallStatement]:
    """Every small statement of the module's top level (``a = 1; b = 2`` gives two)."""
    for line in file.tree.body:
        if isinstance(line, cst.SimpleStatementLine):
            yield from line.body


def relative_form(file: PythonFile, target: str) -> str:
    """`target` written relative to `file` (``...utils``), for files that import that way."""
    return relative_import(package_of(file), target)


def relative_import(package: str, target: str) -> str:
    """`target` as a relative import from a module of `package`."""
    here, parts = package.split("."), target.split(".")
    common = 0
    while common < min(len(here), len(parts)) and here[common] == parts[common]:
        common += 1
    return "." * (len(here) - common + 1) + ".".join(parts[common:])


def bound_name(alias: cst.ImportAlias, statement: ImportStatement) -> str:
    """The name an alias binds: ``c`` for ``a.b as c``, ``a`` for ``import a.b``."""
    if alias.asname is not None:
        return alias.asname.name.value
    name = dotted_name(alias.name)
    return name.split(".")[0] if isinstance(statement, cst.Import) else name


def experimental_aliases(file: PythonFile, statement: ImportStatement, target: FixTarget) -> List[cst.ImportAlias]:
    """The aliases of `statement` that bring in code from the experimental package."""
    if isinstance(statement, cst.Import):
        return [a for a in statement.names if target.settings.is_experimental_module(dotted_name(a.name))]
    if isinstance(statement.names, cst.ImportStar):
        raise Unfixable("a star import cannot be moved; list the names")
    source = imported_module(file, statement)
    if target.settings.is_experimental_module(source):
        return list(statement.names)
    return [a for a in statement.names if target.settings.is_experimental_module(f"{source}.{dotted_name(a.name)}")]


def with_aliases(statement: ImportStatement, aliases: Sequence[cst.ImportAlias]) -> ImportStatement:
    """`statement` importing `aliases`: a subset of its own, or its own plus new ones.

    Aliases keep their own commas, and so the comments and line breaks after them.
    The last one takes the old last one's comma, or none. A former last one gets a
    separator like its neighbours'.
    """
    old = list(statement.names)
    separator = next(
        (a.comma for a in old[:-1] if isinstance(a.comma, cst.Comma)),
        cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
    )
    if isinstance(separator.whitespace_after, cst.ParenthesizedWhitespace):  # not its comment
        separator = separator.with_changes(
            whitespace_after=separator.whitespace_after.with_changes(first_line=cst.TrailingWhitespace())
        )
    fixed = []
    for index, alias in enumerate(aliases):
        if index == len(aliases) - 1:
            fixed.append(alias.with_changes(comma=_last_comma(alias.comma, old[-1].comma)))
        elif alias is old[-1] or not isinstance(alias.comma, cst.Comma):
            fixed.append(alias.with_changes(comma=separator))
        else:
            fixed.append(alias)
    return statement.with_changes(names=fixed)


def _last_comma(own, last):
    """The old last alias's comma, keeping the comment that followed `own` on its line."""
    own_space = getattr(own, "whitespace_after", None)
    last_space = getattr(last, "whitespace_after", None)
    if isinstance(own_space, cst.ParenthesizedWhitespace) and isinstance(last_space, cst.ParenthesizedWhitespace):
        return last.with_changes(whitespace_after=last_space.with_changes(first_line=own_space.first_line))
    return last


def fresh_import(statement: ImportStatement, aliases: Sequence[cst.ImportAlias]) -> cst.SimpleStatementLine:
    """A one-line statement importing `aliases` the way `statement` does."""
    names = [cst.ImportAlias(name=a.name, asname=a.asname) for a in aliases]
    if isinstance(statement, cst.Import):
        small = cst.Import(names=names)
    else:
        small = cst.ImportFrom(module=statement.module, relative=statement.relative, names=names)
    return cst.SimpleStatementLine(body=[small])


def drop_small_statement(
    file: PythonFile,
    small: cst.BaseSmallStatement,
    replacement: Optional[cst.BaseSmallStatement],
    edits: Dict[cst.CSTNode, Edit],
) -> None:
    """Add the edit that replaces one small statement. A `replacement` of None removes it."""
    line = file.parents[small]

    def edit(updated: cst.CSTNode) -> cst.CSTNode:
        index = next(i for i, s in enumerate(line.body) if s is small)
        body = list(updated.body)
        if replacement is not None:
            body[index] = replacement.with_changes(semicolon=body[index].semicolon)
        else:
            del body[index]
            if not body:
                return REMOVE_LINE if isinstance(updated, cst.SimpleStatementLine) else updated.with_changes(body=[cst.Pass()])
            if index == len(body):  # the new last statement loses its ";"
                body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(body=body)

    add_edit(edits, line, edit)


def enclosing_function(file: PythonFile, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
    """The outermost function whose *body* holds `node`, or None when it runs at import time.

    Decorators, defaults and annotations run in the enclosing scope.
    """
    found = None
    child, parent = node, file.parents.get(node)
    while parent is not None:
        if isinstance(parent, cst.FunctionDef) and child is parent.body:
            found = parent
        child, parent = parent, file.parents.get(parent)
    return found


def backend_branch(file: PythonFile, node: cst.CSTNode):
    """The innermost ``if <name> == "<literal>":`` around `node`, with the literal."""
    parent = file.parents.get(node)
    while parent is not None and not isinstance(parent, cst.FunctionDef):
        if isinstance(parent, cst.If):
            name = backend_test(parent.test)
            if name is not None:
                return parent, name
        parent = file.parents.get(parent)
    return None


def backend_test(test: cst.BaseExpression) -> Optional[str]:
    """``"x"`` for a test selecting the one backend ``"x"``, else None.

    Such tests are ``backend == "x"`` and ``list(backends) == ["x"]``. That is how an
    entry point hands a backend off, as
    `policy_checks.model.entry_points.branch_backend` reads it.
    """
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return None
    try:
        expression = ast.parse(cst.Module([]).code_for_node(test).strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    return branch_backend(expression)


def in_module_scope(file: PythonFile, node: cst.CSTNode) -> bool:
    """Does `node` bind its names in the module's namespace, not a class's or function's?"""
    parent = file.parents.get(node)
    while parent is not None:
        if isinstance(parent, (cst.ClassDef, cst.FunctionDef)):
            return False
        parent = file.parents.get(parent)
    return True


def decorator_name(decorator: cst.Decorator) -> str:
    """Last component of a decorator's name, calls unwrapped.

    Parentheses are no nodes in libcst. ``@x.api(trace=1)`` and
    ``@(x.api)(trace=1)(f)`` both give ``api``. It reads as
    `policy_checks.model.markers.decorator_target` does, without following names.
    """
    expression = decorator.decorator
    while isinstance(expression, (cst.Call, cst.NamedExpr)):
        expression = expression.func if isinstance(expression, cst.Call) else expression.value
    return dotted_name(expression).rpartition(".")[2]


def decorator_kinds(file: PythonFile, decorator: cst.Decorator) -> frozenset:
    """The kinds of mark (`policy_checks.model.markers`) a decorator applies.

    Its spelling and the file's aliases are followed. ``@fx(feature="f")`` after
    ``from .api_logging import flashinfer_experimental_api as fx`` gives
    ``{"experimental_api"}``.
    """
    expression = markers.parse(file.tree.code_for_node(decorator.decorator).strip())
    if expression is None or len(expression.body) != 1 or not isinstance(expression.body[0], ast.Expr):
        return frozenset()
    return file.names.of_decorator(expression.body[0].value)


def decorator_names(function: cst.FunctionDef) -> List[str]:
    """`decorator_name` of each of `function`'s decorators."""
    return [decorator_name(d) for d in function.decorators]


def inside(file: PythonFile, node: cst.CSTNode, nodes: Sequence[cst.CSTNode]) -> bool:
    """Is `node` one of `nodes` or below one of them?"""
    ids = {id(n) for n in nodes}
    while node is not None:
        if id(node) in ids:
            return True
        node = file.parents.get(node)
    return False


def body_start(block: cst.IndentedBlock) -> int:
    """Index of the first statement after a docstring, or 0 when there is none."""
    if block.body and isinstance(block.body[0], cst.SimpleStatementLine):
        first = block.body[0].body
        if len(first) == 1 and isinstance(first[0], cst.Expr) and isinstance(
            first[0].value, (cst.SimpleString, cst.ConcatenatedString)
        ):
            return 1
    return 0


def prepend_statements(function: cst.FunctionDef, statements: Sequence[cst.SimpleStatementLine]) -> cst.FunctionDef:
    """`function` with `statements` at the top of its body, after the docstring."""
    body = function.body
    if isinstance(body, cst.SimpleStatementSuite):  # def f(): return x
        smalls = [s.body[0].with_changes(semicolon=cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" "))) for s in statements]
        return function.with_changes(body=body.with_changes(body=[*smalls, *body.body]))
    at = body_start(body)
    rest = list(body.body[at:])
    if rest and _is_import_line(statements[-1]) and not _is_import_line(rest[0]):
        first = rest[0]  # imports, then a blank line, then the code
        if not (first.leading_lines and first.leading_lines[0].comment is None):
            rest[0] = first.with_changes(leading_lines=[cst.EmptyLine(indent=False), *first.leading_lines])
    return function.with_changes(body=body.with_changes(body=[*body.body[:at], *statements, *rest]))


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    )


class _Rewriter(cst.CSTTransformer):
    def __init__(self, edits: Dict[cst.CSTNode, Edit]) -> None:
        super().__init__()
        self.edits = edits

    def on_leave(self, original_node, updated_node):
        updated = super().on_leave(original_node, updated_node)
        if isinstance(updated, (cst.Module, cst.IndentedBlock)):
            updated = self._close_gaps(updated)
        edit = self.edits.get(original_node)
        if edit is None:
            return updated
        result = edit(updated)
        if result is REMOVE_LINE:
            # The line stays until its block closes the gap. It is marked by what it holds,
            # the REMOVE_LINE singleton, never by id(): the placeholder is freed once its
            # block is rebuilt, and a later statement may then get its address.
            result = updated.with_changes(body=[REMOVE_LINE])
        return result

    @staticmethod
    def _is_removed(statement) -> bool:
        return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and statement.body[0] is REMOVE_LINE

    def _close_gaps(self, block):
        """Drop removed lines.

        Their comment lines go to the next statement, or to the block's footer. A
        block left empty keeps one ``pass``.
        """
        body, carried = [], []
        for statement in block.body:
            if self._is_removed(statement):
                carried += statement.leading_lines
                continue
            if carried:
                statement = statement.with_changes(leading_lines=[*carried, *statement.leading_lines])
                carried = []
            body.append(statement)
        if not carried:
            return block.with_changes(body=body)
        if not body:
            return block.with_changes(body=[cst.SimpleStatementLine([cst.Pass()], leading_lines=carried)])
        return block.with_changes(body=body, footer=[*carried, *block.footer])


def add_edit(edits: Dict[cst.CSTNode, Edit], node: cst.CSTNode, edit: Edit) -> None:
    """Add `edit`. One already there for `node` runs after it, so earlier findings end up first."""
    earlier = edits.get(node)
    edits[node] = edit if earlier is None else (lambda updated: earlier(edit(updated)))


def apply_edits(file: PythonFile, edits: Dict[cst.CSTNode, Edit]) -> bytes:
    """The module's bytes after `edits`, with the same encoding, newlines and indentation."""
    return file.tree.visit(_Rewriter(edits)).bytes
