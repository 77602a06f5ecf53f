"""The bot's GraphQL requests checked against GitHub's published schema, as GitHub would check them.

``github_schema/schema.graphql`` is GitHub's public schema, vendored unchanged (see the README
beside it). A request is checked in GitHub's order, each stage only when the one before passed
where it depends on it:

1. it parses, and passes graphql-core's standard validation rules (``specified_rules``: known
   fields, types, fragments and arguments, variables declared, used and of the right type…);
2. the variables sent coerce to the types the operation declares (a string for ``Int!``, a
   missing non-null variable), and no undeclared variable is sent;
3. every connection (a field whose type's name ends in ``Connection``) has ``first`` or
   ``last``, each within 1–100, given literally or through a variable that has a value.

Skipping: a field or fragment under ``@include(if: false)`` / ``@skip(if: true)`` is not
executed by GitHub, so its connections are not counted in stage 3, the directive's condition
resolved from a literal or from the variables sent. When the condition cannot be resolved (the
variable is missing or not a Boolean; stage 2 reports that) the part is counted. The tests
send every query with each value of its ``@include`` variables, so no part goes unchecked.

``validate_request`` lists every problem it finds, as text, for tests; ``check_request`` answers a
request body as GitHub would: the error objects of the first stage that failed, for an answer
of HTTP 200 with ``{"errors": [...]}`` and no ``data``.

The module is not importable by name under the suite's ``--import-mode=importlib`` (``tests/``
holds no packages): this directory's ``conftest.py`` loads it by path as ``bot_graphql_schema``
in ``sys.modules``, so that the schema is parsed once per test session.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from graphql import (
    BooleanValueNode,
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInt,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLSyntaxError,
    InlineFragmentNode,
    IntValueNode,
    NullValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    build_ast_schema,
    get_named_type,
    get_operation_ast,
    parse,
    specified_rules,
    validate,
    value_from_ast,
)
from graphql.execution.values import get_variable_values
from graphql.validation import NoDeprecatedCustomRule

SCHEMA_PATH = Path(__file__).with_name("github_schema") / "schema.graphql"
PAGE_LIMIT = 100  # GitHub: "Values of first and last must be within 1-100."

_lock = threading.Lock()
_cache: dict[str, object] = {}


# ----- the schema ---------------------------------------------------------------------------

def schema_document() -> DocumentNode:
    """The vendored SDL, parsed once (without source locations: nothing points into it)."""
    with _lock:
        if "document" not in _cache:
            _cache["document"] = parse(SCHEMA_PATH.read_text(encoding="utf-8"), no_location=True)
        return _cache["document"]


def schema() -> GraphQLSchema:
    """GitHub's schema, built once per process: 0.5-1 s, two thirds of it parsing 1.2 MB of SDL.

    Built with ``assume_valid_sdl`` and ``assume_valid``: GitHub's published SDL defines one
    type's field twice, and (graphql-core 3.3) has deprecated fields implementing interface
    fields that are not deprecated; without them building, or every ``validate`` call, would
    raise. Those defects are listed by :func:`schema_defects` and pinned by a test, so a refresh
    that brings new ones is noticed.
    """
    document = schema_document()
    with _lock:
        if "schema" not in _cache:
            _cache["schema"] = build_ast_schema(document, assume_valid=True, assume_valid_sdl=True)
        return _cache["schema"]


def schema_defects() -> list[str]:
    """What graphql-core's own checks find wrong with the vendored SDL (the checks ``schema()`` skips)."""
    from graphql import validate_schema
    from graphql.validation.validate import validate_sdl

    document = schema_document()
    found = [error.message for error in validate_sdl(document)]
    strict = build_ast_schema(document, assume_valid_sdl=True)  # type-system rules still run below
    found += [error.message for error in validate_schema(strict)]
    return found


# ----- problems -----------------------------------------------------------------------------

@dataclass
class Problem:
    """One reason GitHub would refuse a request, shaped as GitHub's error objects.

    The shape (``type``, ``path``, ``locations``, ``message``) and the pagination messages are
    GitHub's; the validation and variable messages are graphql-core's wording (GitHub's server,
    graphql-ruby, words them differently, e.g. "Field 'x' doesn't exist on type 'Issue'").
    """

    message: str
    stage: str  # "syntax", "validation", "variables" or "pagination"
    locations: list[dict] = field(default_factory=list)
    path: list[str] | None = None
    type: str | None = None  # GitHub's error ``type`` where it sets one (pagination errors)

    @classmethod
    def from_graphql(cls, error: GraphQLError, stage: str) -> Problem:
        return cls(error.message, stage, [{"line": loc.line, "column": loc.column} for loc in error.locations or ()])

    def text(self) -> str:
        where = ".".join(self.path) + ": " if self.path else ""
        at = ", ".join(f"{loc['line']}:{loc['column']}" for loc in self.locations)
        return f"[{self.stage}] {where}{self.message}" + (f" (at {at})" if at else "")

    def github_error(self) -> dict:
        error: dict = {}
        if self.type:
            error["type"] = self.type
        if self.path:
            error["path"] = list(self.path)
        if self.locations:
            error["locations"] = [dict(loc) for loc in self.locations]
        error["message"] = self.message
        return error


_VALIDATED: dict = {}  # query text -> (document or None, its syntax or validation problems)
_VALIDATED_MAX = 512


def validated(query: str) -> tuple:
    """``(document, problems)`` for a query text: the parsed document (None when it does not
    parse) and its syntax or validation problems. Both depend on the text and the schema
    alone, and the bot sends the same few queries run after run, so each text is parsed
    and validated once (a bounded memo; the fake executes the document it returns)."""
    known = _VALIDATED.get(query)
    if known is not None:
        return known
    try:
        document = parse(query)
    except GraphQLSyntaxError as error:
        known = (None, (Problem.from_graphql(error, "syntax"),))
    else:
        known = (document, tuple(Problem.from_graphql(e, "validation")
                                 for e in validate(schema(), document, specified_rules)))
    if len(_VALIDATED) >= _VALIDATED_MAX:
        _VALIDATED.clear()
    _VALIDATED[query] = known
    return known


def find_problems(query: str, variables: dict | None, operation_name: str | None = None,
                  *, all_stages: bool = True, strict_variables: bool = True) -> list[Problem]:
    """Every problem with sending ``query`` with ``variables``.

    ``all_stages=False`` stops after the first stage with problems, as GitHub does (it answers a
    request that fails validation without coercing its variables). ``strict_variables``: an
    undeclared variable is a problem (GitHub, like graphql-ruby, may simply ignore it; for the
    bot it is always a mistake).
    """
    if not isinstance(query, str) or not query.strip():
        return [Problem("A query attribute must be specified and must be a string.", "syntax")]
    if variables is None:
        variables = {}
    if not isinstance(variables, dict):
        return [Problem(f"Variables must be a JSON object, not {type(variables).__name__}.", "variables")]
    document, problems = validated(query)
    if document is None:
        return problems
    problems = list(problems)
    the_schema = schema()
    if problems and not all_stages:
        return problems

    operation = get_operation_ast(document, operation_name)
    if operation is None:
        which = f"No operation named {operation_name!r}." if operation_name else \
            "An operationName is required when the document has more than one operation."
        return problems + [Problem(which, "validation")]

    var_problems, coerced = _variable_problems(the_schema, operation, variables, strict_variables)
    problems += var_problems
    if problems and not all_stages:
        return problems

    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    root = {OperationType.QUERY: the_schema.query_type, OperationType.MUTATION: the_schema.mutation_type,
            OperationType.SUBSCRIPTION: the_schema.subscription_type}.get(operation.operation)
    if root is not None:
        walker = _PaginationWalk(the_schema, fragments, operation, variables, coerced)
        walker.walk(operation.selection_set, root, [], ())
        problems += walker.problems
    return problems


def validate_request(query: str, variables: dict | None, operation_name: str | None = None) -> list[str]:
    """Human-readable problems with sending ``query`` with ``variables`` to GitHub; empty when none."""
    return [p.text() for p in find_problems(query, variables, operation_name)]


def check_request(payload: dict) -> list[dict]:
    """The error objects GitHub would answer a GraphQL request body with; empty when it would run it.

    ``payload`` is the JSON body: ``query``, ``variables`` and optionally ``operationName``.
    When the list is not empty, answer as GitHub does: HTTP 200 with ``{"errors": errors}`` and no
    ``data`` key. Only the first failing stage is reported (syntax, then validation, then variables,
    then pagination), as GitHub stops at the first stage that fails.
    """
    if not isinstance(payload, dict):
        return [Problem("The request body must be a JSON object.", "syntax").github_error()]
    problems = find_problems(payload.get("query"), payload.get("variables"), payload.get("operationName"),
                             all_stages=False)
    return [p.github_error() for p in problems]


def deprecated_usages(query: str) -> list[str]:
    """Fields, arguments and enum values the query uses that the schema marks deprecated."""
    return [e.message for e in validate(schema(), parse(query), [NoDeprecatedCustomRule])]


# ----- variables ----------------------------------------------------------------------------

def _variable_problems(the_schema, operation: OperationDefinitionNode, variables: dict,
                       strict: bool) -> tuple[list[Problem], dict | None]:
    problems: list[Problem] = []
    definitions = operation.variable_definitions or ()
    declared = {d.variable.name.value for d in definitions}
    name = operation.name.value if operation.name else "(anonymous)"
    if strict:
        for extra in sorted(set(variables) - declared):
            problems.append(Problem(f"Variable '${extra}' was sent but operation '{name}' does not declare it.",
                                    "variables"))
    result = get_variable_values(the_schema, definitions, variables)
    if isinstance(result, list):  # the errors
        problems += [Problem.from_graphql(e, "variables") for e in result]
        return problems, None
    # graphql-core 3.2 answers the coerced dict; 3.3 a VariableValues with it as ``coerced``.
    return problems, dict(getattr(result, "coerced", result))


# ----- pagination ---------------------------------------------------------------------------

_UNKNOWN = object()


class _PaginationWalk:
    """Walks the operation as GitHub would execute it, with its variables, checking every connection."""

    def __init__(self, the_schema, fragments, operation, raw: dict, coerced: dict | None):
        self.schema, self.fragments = the_schema, fragments
        self.definitions = {d.variable.name.value: d for d in operation.variable_definitions or ()}
        self.raw, self.coerced = raw, coerced
        self.problems: list[Problem] = []

    def walk(self, selection_set: SelectionSetNode, parent, path: list[str], spreads: tuple[str, ...]) -> None:
        for selection in selection_set.selections:
            if self._skipped(selection):
                continue
            if isinstance(selection, FieldNode):
                self._field(selection, parent, path, spreads)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                target = self.schema.get_type(condition.name.value) if condition else parent
                if target is not None:
                    self.walk(selection.selection_set, target, path, spreads)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.fragments.get(name)
                if fragment is None or name in spreads:  # unknown or cyclic: standard validation says so
                    continue
                target = self.schema.get_type(fragment.type_condition.name.value)
                if target is not None:
                    self.walk(fragment.selection_set, target, path, spreads + (name,))

    def _field(self, node: FieldNode, parent, path: list[str], spreads) -> None:
        name = node.name.value
        if name.startswith("__") or not isinstance(parent, (GraphQLObjectType, GraphQLInterfaceType)):
            return
        definition = parent.fields.get(name)
        if definition is None:  # an unknown field: standard validation says so
            return
        here = path + [node.alias.value if node.alias else name]
        returns = get_named_type(definition.type)
        if returns.name.endswith("Connection"):
            self._connection(node, name, here)
        if node.selection_set is not None:
            self.walk(node.selection_set, returns, here, spreads)

    def _connection(self, node: FieldNode, name: str, path: list[str]) -> None:
        location = Problem.from_graphql(GraphQLError("", node), "pagination").locations
        arguments = {a.name.value: a.value for a in node.arguments or ()}
        given = False
        for bound in ("first", "last"):
            if bound not in arguments:
                continue
            value = self._int(arguments[bound])
            if value is None:  # null: as if not given
                continue
            given = True
            if value is _UNKNOWN:
                self.problems.append(Problem(
                    f"`{bound}` on the `{name}` connection has no value: its variable was not sent "
                    f"and has no default.", "pagination", location, path))
            elif not isinstance(value, int):
                self.problems.append(Problem(
                    f"`{bound}` on the `{name}` connection is not an integer: {value!r}.", "pagination", location, path))
            elif value > PAGE_LIMIT:
                self.problems.append(Problem(
                    f"Requesting {value} records on the `{name}` connection exceeds the `{bound}` limit of "
                    f"{PAGE_LIMIT} records.", "pagination", location, path, "EXCESSIVE_PAGINATION"))
            elif value < 1:
                self.problems.append(Problem(
                    f"`{bound}` on the `{name}` connection must be within 1-{PAGE_LIMIT}; got {value}.",
                    "pagination", location, path))
        if not given:
            self.problems.append(Problem(
                f"You must provide a `first` or `last` value to properly paginate the `{name}` connection.",
                "pagination", location, path, "MISSING_PAGINATION_BOUNDARIES"))

    def _variable(self, name: str):
        """A variable's value as GitHub would use it; ``_UNKNOWN`` when it has none."""
        if self.coerced is not None:
            return self.coerced.get(name, _UNKNOWN)
        if name in self.raw:
            return self.raw[name]
        definition = self.definitions.get(name)
        if definition is not None and definition.default_value is not None:
            return value_from_ast(definition.default_value, GraphQLInt)
        return _UNKNOWN

    def _int(self, value_node):
        if isinstance(value_node, IntValueNode):
            return int(value_node.value)
        if isinstance(value_node, NullValueNode):
            return None
        if isinstance(value_node, VariableNode):
            value = self._variable(value_node.name.value)
            if isinstance(value, bool):
                return repr(value)
            return value
        return getattr(value_node, "value", repr(value_node))  # a wrong literal: validation says so too

    def _skipped(self, selection) -> bool:
        """True when ``@skip(if: true)`` or ``@include(if: false)`` resolves; unresolvable counts as not skipped."""
        for directive in selection.directives or ():
            if directive.name.value not in ("skip", "include"):
                continue
            condition = next((a.value for a in directive.arguments or () if a.name.value == "if"), None)
            if isinstance(condition, BooleanValueNode):
                value = condition.value
            elif isinstance(condition, VariableNode):
                value = self._variable(condition.name.value)
            else:
                continue
            if not isinstance(value, bool):
                continue
            if (directive.name.value == "skip") == value:
                return True
        return False
