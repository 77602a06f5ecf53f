"""What an entry point is: the one definition EXP007 checks and the lifecycle commands
act on (docs/policy_check.rst, EXP007; docs/lifecycle.rst).

Core may hand off to experimental code only in an entry point:

- a *function* marked ``@flashinfer_experimental_api`` (kind ``experimental``), or a
  public API, ``@flashinfer_api`` / ``@backend_requirement``, selecting an experimental
  backend (kind ``public``: only its *backend branch* belongs to the feature: an arm
  of an ``if``/``elif`` chain whose test selects that one backend (`branch_backend`)
  and that can go alone (`arm_goes_alone`));
- a *class* that is an experimental API (kind ``class``): one decorated with one of
  those markers, one with an ``@flashinfer_experimental_api`` method, or one whose body
  sets ``is_experimental = True``. Its methods, ``__init__`` included, are inside it,
  and the class goes, or graduates, whole;
- the module ``__getattr__`` of a package ``__init__.py`` (kind ``lazy``).

A nested function counts as inside its enclosing definition. Anything else that
imports experimental code is a helper, which EXP007 reports; the lifecycle commands
follow it to the entry points that call it (`policy_checks/lifecycle/helpers.py`).
"""

from __future__ import annotations

import ast
from typing import NamedTuple, Optional, Sequence

from . import markers

EXPERIMENTAL = "experimental"
PUBLIC = "public"
CLASS = "class"
LAZY = "lazy"

_PUBLIC_MARKERS = (markers.STABLE_API, markers.BACKEND_REQUIREMENT)
_ALL_MARKERS = (markers.EXPERIMENTAL_API, *_PUBLIC_MARKERS)


class EntryPoint(NamedTuple):
    """The entry point around an import: its qualname in its module and its kind."""

    qualname: str
    kind: str


def entry_point(project, facts, functions: Sequence[str]) -> Optional[EntryPoint]:
    """The outermost entry point among `functions` (qualnames of the defs around an
    import, outermost first) and the classes holding them; None when there is none."""
    for qualname in functions:
        owner = experimental_class(project, facts, qualname.rpartition(".")[0])
        if owner is not None:
            return EntryPoint(owner, CLASS)
        if qualname == "__getattr__" and facts.is_package:
            return EntryPoint(qualname, LAZY)
        definition = facts.definitions.get(qualname)
        if definition is None or definition.kind != "function":
            continue
        if _marked(project, facts, definition, (markers.EXPERIMENTAL_API,)):
            return EntryPoint(qualname, EXPERIMENTAL)
        if _marked(project, facts, definition, _PUBLIC_MARKERS):
            return EntryPoint(qualname, PUBLIC)
    return None


def experimental_class(project, facts, qualname: str) -> Optional[str]:
    """`qualname` when it names a class that is an experimental API, else None."""
    cls = facts.definitions.get(qualname) if qualname else None
    if cls is None or cls.kind != "class":
        return None
    if getattr(cls, "flagged", False) or _marked(project, facts, cls, _ALL_MARKERS):
        return qualname
    prefix = qualname + "."
    for name, method in facts.definitions.items():
        if (name.startswith(prefix) and "." not in name[len(prefix):] and method.kind == "function"
                and _marked(project, facts, method, (markers.EXPERIMENTAL_API,))):
            return qualname
    return None


def _marked(project, facts, definition, wanted) -> bool:
    return any(project.decorated_with(facts.module, definition, m) for m in wanted)


def branch_backend(test: ast.AST) -> Optional[str]:
    """``"x"`` when the ``if`` test `test` selects the one backend ``"x"`` (the branch
    that hands off to it), else None. A selection compares a name with ``"x"``
    (``backend == "x"``, ``"x" == backend``), or a name, ``list(name)`` or
    ``tuple(name)`` with a one-element list or tuple of ``"x"`` (``list(backends) ==
    ["x"]``, ``backends == ("x",)``); ``list(...)`` only equals a list, ``tuple(...)``
    a tuple. ``"x" in backends`` selects no branch: other backends may run too."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    for subject, value in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        if isinstance(subject, ast.Name):
            found = _string(value) or _one_string(value, (ast.List, ast.Tuple))
        elif _converted(subject) is not None:
            found = _one_string(value, _converted(subject))
        else:
            found = None
        if found is not None:
            return found
    return None


def _converted(node: ast.AST):
    """The display type ``list(name)`` / ``tuple(name)`` can equal, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple")
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Name)):
        return ast.List if node.func.id == "list" else ast.Tuple
    return None


def _string(node: ast.AST) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _one_string(node: ast.AST, displays) -> Optional[str]:
    """The string of a one-element display of one of the types `displays`."""
    if isinstance(node, displays) and len(node.elts) == 1:
        return _string(node.elts[0])
    return None


def arm_goes_alone(arm: ast.If, parent: Optional[ast.AST]) -> bool:
    """Can the ``if``/``elif`` arm `arm` (`parent`: the node holding it) be deleted
    leaving every other backend's path as it was? Yes when it has no else part, when
    an ``elif`` follows it (that becomes the ``if``), or when it is an ``elif`` itself
    (what follows it moves up); not for an ``if`` whose ``else:`` would have to take
    its place."""
    if not arm.orelse:
        return True
    if is_elif(arm, parent):
        return True
    return len(arm.orelse) == 1 and is_elif(arm.orelse[0], arm)


def is_elif(node: ast.AST, parent: Optional[ast.AST]) -> bool:
    """Is `node` written ``elif`` (not ``else:`` holding an ``if``)? ``ast`` places
    both in the parent's else part; an ``elif`` starts in the parent's column."""
    return (isinstance(node, ast.If) and isinstance(parent, ast.If) and parent.orelse == [node]
            and node.col_offset == parent.col_offset and node.lineno > parent.lineno)
