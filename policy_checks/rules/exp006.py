"""EXP006 experimental-api-in-docs."""

from __future__ import annotations

import re

from .base import EXPERIMENTAL_API, Example, Rule

_CURRENT = re.compile(r"^\s*\.\.\s+(?:py:)?(?:currentmodule|module)::\s*(\S*)")
_DIRECTIVE = re.compile(r"^(?P<indent>\s*)\.\.\s+(?:py:)?(?P<name>auto\w+)::[ \t]*(?P<arg>.*)$")
_ENTRY = re.compile(r"[~!]?(?P<name>[A-Za-z_][\w.]*)")


def listed_names(text: str):
    """Yield ``(line, column, name, current module)`` for every object an ``.rst``
    page lists: ``auto*`` directive arguments and ``autosummary`` entries."""
    current = None
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        match = _CURRENT.match(line)
        if match:
            current = None if match.group(1) in ("", "None") else match.group(1)
            continue
        match = _DIRECTIVE.match(line)
        if not match:
            continue
        if match.group("name") != "autosummary":
            entry = _ENTRY.match(match.group("arg"))
            if entry:
                yield number, match.start("arg") + entry.start("name") + 1, entry.group("name"), current
            continue
        indent = len(match.group("indent").expandtabs())
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
                yield number, offset + entry.start("name") + 1, entry.group("name"), current


class ExperimentalApiInDocs(Rule):
    """A stable API page lists an experimental API or anything under ``flashinfer.experimental``.

    ``docs/api/*.rst`` is the stable API reference; listing an experimental function
    there presents it as covered by the compatibility promise. The page is read the
    way Sphinx reads it: ``.. currentmodule::`` sets the module bare names are
    relative to; ``.. autosummary::`` blocks (options, blank lines, ``~`` prefixes,
    the end of the block at the first line indented no deeper than the directive),
    ``.. autofunction::`` / ``.. autoclass::`` (and the other ``auto*`` directives)
    with dotted or bare names, and ``.. automodule::``. A name is resolved through
    re-exports (``from .x import f as g`` in a package ``__init__``) and lazy-export
    tables to the function that defines it, which is experimental when it carries
    ``@flashinfer_experimental_api`` or is defined under the experimental package.
    Reported at the ``.rst`` line (and column) that names it.
    """

    id = "EXP006"
    name = "experimental-api-in-docs"
    summary = "a docs/api page lists an experimental API"

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
                ),
            },
            expect=tuple(("docs/api/norm.rst", n) for n in (12, 14, 16, 17, 18)),
        )
    ]

    def check(self, project):
        for rel, text in project.docs_pages():
            for line, column, name, current in listed_names(text):
                reason = self._experimental(project, name, current)
                if reason:
                    yield self.finding(rel, line, column, f"stable API page lists {name}: {reason}")

    def _experimental(self, project, name: str, current):
        s = project.settings
        candidates = [f"{current}.{name}", name] if current else [name]
        for dotted in candidates:
            if s.is_experimental(dotted):
                return f"it is under {s.experimental_package}"
            parts = dotted.split(".")
            for cut in range(len(parts), 0, -1):
                module = ".".join(parts[:cut])
                if not project.is_module(module):
                    continue
                if cut == len(parts):
                    return None  # a stable module
                target = project.resolve(module, ".".join(parts[cut:]))
                if target is None or target[0] == "external" and not s.is_experimental(target[1]):
                    break  # not found here: try the next candidate
                if target[0] == "external":
                    return f"it is defined under {s.experimental_package}"
                if target[0] == "module":
                    return f"it is under {s.experimental_package}" if s.is_experimental(target[1]) else None
                if target[0] == "def":
                    if s.is_experimental(target[1]):
                        return f"{target[1]}.{target[2].qualname} is defined under {s.experimental_package}"
                    if project.decorated_with(target[1], target[2], EXPERIMENTAL_API):
                        return f"{target[1]}.{target[2].qualname} is @{EXPERIMENTAL_API}"
                return None
        return None
