"""EXP006 experimental-api-in-docs."""

from __future__ import annotations

import re

from ..facts import NamesBinding
from ..needs import DOCS_PAGE
from ..project import DefTarget, External, ModuleTarget
from .base import EXPERIMENTAL_API, Example, Rule

_CURRENT = re.compile(r"^\s*\.\.\s+(?:py:)?(?:currentmodule|module)::\s*(\S*)")
_DIRECTIVE = re.compile(r"^(?P<indent>\s*)\.\.\s+(?:py:)?(?P<name>auto\w+)::[ \t]*(?P<arg>.*)$")
_ENTRY = re.compile(r"[~!]?(?P<name>[A-Za-z_][\w.]*)")


_OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):\s*(?P<value>.*)$")
# ".." that starts no directive, target, footnote or substitution: a comment,
# whose indented body Sphinx ignores
_COMMENT = re.compile(r"^(?P<indent>\s*)\.\.(?:\s*$|\s+(?=\S)(?![\w:.+-]+::)(?![_\[|]))")


def listed_names(text: str, directives: bool = False):
    """Yield ``(line, column, name, current module, options)`` for every object an
    ``.rst`` page lists: ``auto*`` directive arguments (with the directive's options,
    such as ``members``) and ``autosummary`` entries (options empty); not those
    inside comments. With `directives`, each tuple ends with the directive's name
    (``autofunction``, ``autosummary``)."""
    for item in _listed(text):
        yield item if directives else item[:5]


def _listed(text: str):
    current = None
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        match = _COMMENT.match(line)
        if match:
            number = _skip_comment(lines, number, len(match.group("indent").expandtabs()))
            continue
        match = _CURRENT.match(line)
        if match:
            current = None if match.group(1) in ("", "None") else match.group(1)
            continue
        match = _DIRECTIVE.match(line)
        if not match:
            continue
        indent = len(match.group("indent").expandtabs())
        if match.group("name") != "autosummary":
            entry = _ENTRY.match(match.group("arg"))
            if entry:
                options = _options(lines, number, indent)
                column = match.start("arg") + entry.start("name") + 1
                yield number, column, entry.group("name"), current, options, match.group("name")
            continue
        while number < len(lines):
            body = lines[number]
            if body.strip() and len(body) - len(body.lstrip()) <= indent:
                break  # end of the block
            number += 1
            stripped = body.strip()
            if not stripped or stripped.startswith(":") or stripped.startswith(".."):
                continue  # blank line, option, comment
            entry = _ENTRY.match(stripped)
            if entry:
                offset = len(body) - len(body.lstrip())
                yield number, offset + entry.start("name") + 1, entry.group("name"), current, {}, "autosummary"


def _skip_comment(lines: list, start: int, indent: int) -> int:
    """The index of the first line after the comment whose ``..`` line is just
    before `start` (a bare ``..`` followed by a blank line is an empty comment)."""
    if lines[start - 1].strip() == ".." and (start == len(lines) or not lines[start].strip()):
        return start
    number = start
    while number < len(lines):
        body = lines[number]
        if body.strip() and len(body) - len(body.lstrip()) <= indent:
            break
        number += 1
    return number


def _options(lines: list, start: int, indent: int) -> dict:
    """The ``:key: value`` options right below a directive."""
    options = {}
    for body in lines[start:]:
        match = _OPTION.match(body)
        if not body.strip() or len(body) - len(body.lstrip()) <= indent or not match:
            break
        options[match.group("key")] = match.group("value").strip()
    return options


def _names(value: str) -> list:
    return [n.strip() for n in value.split(",") if n.strip()]


class ExperimentalApiInDocs(Rule):
    """A stable API page lists an experimental API or anything under ``flashinfer.experimental``.

    ``docs/api/*.rst`` is the stable API reference; listing an experimental function
    there presents it as covered by the compatibility promise. The page is read the
    way Sphinx reads it: ``.. currentmodule::`` sets the module bare names are
    relative to; ``.. autosummary::`` blocks (options, blank lines, ``~`` prefixes,
    the end of the block at the first line indented no deeper than the directive),
    ``.. autofunction::`` / ``.. autoclass::`` (and the other ``auto*`` directives)
    with dotted or bare names, and ``.. automodule::``; an ``automodule`` or
    ``autoclass`` with ``:members:`` lists what autodoc would document: the names
    given to the option, else a module's ``__all__``, else its public definitions
    (minus ``:exclude-members:``). Directives inside an rst comment are not read. A name is resolved through
    re-exports (``from .x import f as g`` in a package ``__init__``) and lazy-export
    tables to the function that defines it, which is experimental when it carries
    ``@flashinfer_experimental_api`` or is defined under the experimental package.
    Reported at the ``.rst`` line (and column) that names it.
    """

    id = "EXP006"
    name = "experimental-api-in-docs"
    summary = "a docs/api page lists an experimental API"
    # The pages are read whole; the names they list are followed into modules,
    # whose facts are loaded on demand.
    reads = (DOCS_PAGE,)
    triggers = ()

    _TREE = {
        "flashinfer/__init__.py": "from .norm import rmsnorm, fast_norm as fused_norm\n",
        "flashinfer/norm.py": (
            "from .api_logging import flashinfer_api, flashinfer_experimental_api\n"
            "@flashinfer_api\ndef rmsnorm(x):\n    pass\n"
            "@flashinfer_experimental_api\ndef fast_norm(x):\n    pass\n"
        ),
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/experimental/feat/__init__.py": "def run():\n    pass\n",
    }
    VALID = [
        Example(
            {
                **_TREE,
                "docs/api/norm.rst": (
                    "Norm\n====\n\n.. currentmodule:: flashinfer\n\n.. autosummary::\n"
                    "   :toctree: _generate\n\n   rmsnorm\n\nfused_norm is experimental, see elsewhere.\n"
                    ".. autofunction:: flashinfer.norm.rmsnorm\n"
                    ".. automodule:: flashinfer.norm\n   :members:\n   :exclude-members: fast_norm\n"
                    ".. automodule:: flashinfer.norm\n   :members: rmsnorm\n"
                    "..\n   .. autofunction:: flashinfer.fused_norm\n\n"
                    ".. commented out:\n   .. autosummary::\n\n      fused_norm\n\n"
                    ".. autofunction:: flashinfer.rmsnorm\n"
                ),
            }
        )
    ]
    INVALID = [
        Example(
            {
                **_TREE,
                "docs/api/norm.rst": (
                    "Norm\n====\n\n.. currentmodule:: flashinfer\n\n"  # 1-5
                    ".. autosummary::\n   :toctree: _generate\n   :nosignatures:\n\n"  # 6-9
                    "   rmsnorm\n\n   ~fused_norm\n\n"  # 10-13
                    ".. autofunction:: flashinfer.norm.fast_norm\n"  # 14
                    ".. currentmodule:: flashinfer.norm\n"  # 15
                    ".. autofunction:: fast_norm\n"  # 16
                    ".. automodule:: flashinfer.experimental.feat\n"  # 17
                    ".. autofunction:: flashinfer.experimental.feat.run\n"  # 18
                    ".. automodule:: flashinfer.norm\n   :members:\n"  # 19
                    ".. automodule:: flashinfer.norm\n   :members: rmsnorm, fast_norm\n"  # 21
                ),
            },
            expect=tuple(("docs/api/norm.rst", n) for n in (12, 14, 16, 17, 18, 19, 21)),
        ),
        Example(
            {
                **_TREE,
                "flashinfer/__init__.py": (
                    "from .norm import rmsnorm, fast_norm as fused_norm\n__all__ = ['rmsnorm', 'fused_norm']\n"
                ),
                "flashinfer/ops.py": "from .experimental.feat import run\n__all__ = ('run',)\n",
                "docs/api/norm.rst": (
                    ".. automodule:: flashinfer\n   :members: rmsnorm, fused_norm\n"  # 1
                    ".. automodule:: flashinfer\n   :members:\n"  # 3: __all__ names re-exports
                    ".. automodule:: flashinfer.ops\n   :members:\n"  # 5: under the experimental package
                    ".. automodule:: flashinfer\n   :members:\n   :exclude-members: fused_norm\n"
                    "..  autofunction:: flashinfer.fused_norm\n"  # 10: two spaces, still a directive
                ),
            },
            expect=tuple(("docs/api/norm.rst", n) for n in (1, 3, 5, 10)),
            note="members that are re-exports: named in :members: or in __all__",
        ),
    ]

    def check(self, project):
        for rel, text in project.docs_pages():
            for line, column, name, current, options, directive in listed_names(text, directives=True):
                # the entry as written (and the module it is read in), not where it resolves to
                entry = f"{directive}:: {name}" + (f" in {current}" if current else "")
                target = self._target(project, name, current)
                reason = self._experimental(project, target)
                if reason:
                    yield self.finding(rel, line, column, f"stable API page lists {name}: {reason}", subject=entry)
                elif "members" in options and isinstance(target, (ModuleTarget, DefTarget)):
                    hidden = self._experimental_members(project, target, options)
                    if hidden:
                        yield self.finding(
                            rel, line, column,
                            f"stable API page lists the members of {name}, which include "
                            + "; ".join(f"{member} ({why})" for member, why in hidden) + "; exclude them",
                            subject=entry,
                        )

    def _target(self, project, name: str, current):
        """What a listed name resolves to, as `Project.resolve` returns it; names
        are tried relative to the current module first, as Sphinx does."""
        s = project.settings
        candidates = [f"{current}.{name}", name] if current else [name]
        for dotted in candidates:
            if s.is_experimental_module(dotted):
                return External("external", dotted)
            target = project.resolve_absolute(dotted)
            if target is not None and (not isinstance(target, External) or s.is_experimental_module(target.name)):
                return target
        return None  # not found: try the next candidate

    def _experimental(self, project, target):
        s = project.settings
        if isinstance(target, (External, ModuleTarget)):
            return f"it is under {s.experimental_package}" if s.is_experimental_module(target.name) else None
        if isinstance(target, DefTarget):
            where = f"{target.module}.{target.definition.qualname}"
            if s.is_experimental_module(target.module):
                return f"{where} is defined under {s.experimental_package}"
            if project.decorated_with(target.module, target.definition, EXPERIMENTAL_API):
                return f"{where} is @{EXPERIMENTAL_API}"
        return None

    def _experimental_members(self, project, target, options) -> list:
        """``(member, reason)`` for the members an ``auto*`` directive's ``:members:``
        option documents that are experimental, as autodoc picks them: the names
        listed in the option (re-exports included), else a module's ``__all__``
        (re-exports included), else the public defs of the module or class."""
        if isinstance(target, ModuleTarget):
            module, prefix = target.name, ""
        elif target.definition.kind == "class":
            module, prefix = target.module, target.definition.qualname + "."
        else:
            return []
        facts = project.module_facts(module)
        if facts is None:
            return []
        chosen = _names(options.get("members", ""))
        exported = facts.bindings.get("__all__")
        if not chosen and not prefix and isinstance(exported, NamesBinding):
            chosen = list(exported.names)
        elif not chosen:
            chosen = [
                q[len(prefix):] for q in facts.definitions
                if q.startswith(prefix) and "." not in q[len(prefix):] and not q[len(prefix):].startswith("_")
            ]
        excluded = set(_names(options.get("exclude-members", "")))
        hidden = []
        for short in chosen:
            reason = None if short in excluded else self._experimental(project, project.resolve(module, prefix + short))
            if reason:
                hidden.append((short, reason))
        return hidden
