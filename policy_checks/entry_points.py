"""What an entry point is: the one definition EXP007 checks and the lifecycle commands
act on (docs/policy_check.rst, EXP007; docs/lifecycle.rst).

Core may hand off to experimental code only in an entry point:

- a *function* marked ``@flashinfer_experimental_api`` (kind ``experimental``), or a
  public API, ``@flashinfer_api`` / ``@backend_requirement``, selecting an experimental
  backend (kind ``public``: only its ``if backend == "<name>":`` branch belongs to the
  feature);
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
