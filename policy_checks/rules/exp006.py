"""EXP006 experimental-api-in-docs."""

from __future__ import annotations

import os
import posixpath

from ..model.config import under
from ..model.facts import NamesBinding
from ..analysis.needs import DOCS_PAGE
from ..model.project import DefTarget, External, ModuleTarget
from .readers import rst_listing
from .base import EXPERIMENTAL_API, Example, Rule
from .readers.sphinx_conf import autodoc_defaults

MAX_INCLUDED_BYTES = 2 * 1024 * 1024  # an included file larger than this is not read


def listed_names(text: str, directives: bool = False):
    """Yield ``(line, column, name, current module, options)`` for every object a page lists.

    The ``.rst`` page is read as Sphinx reads it (`policy_checks.rules.readers.rst_listing`).
    Includes and conf.py's defaults are not followed here. With `directives`, each tuple ends
    with the directive's name (``autofunction``, ``autosummary``, ``function``)."""
    for item in rst_listing.listed(text):
        entry = (item.line, item.column, item.name, item.current, item.options, item.directive)
        yield entry if directives else entry[:5]


def source_dir(project, page: str) -> str:
    """The Sphinx source directory of `page`.

    It is the nearest directory above it holding a ``conf.py``. Otherwise it is the page's top
    directory (``docs``)."""
    parts = page.split("/")[:-1]
    for end in range(len(parts), 0, -1):
        directory = "/".join(parts[:end])
        if (project.root / directory / "conf.py").is_file():
            return directory
    return parts[0] if parts else ""


def _includer(project, top: str, texts: dict):
    """`rst_listing.listed`'s include callback.

    A path is relative to the including file, or to the source directory when it starts with
    ``/``. It is kept inside the source directory, with links resolved. Each file is read once
    per run."""
    real_top = os.path.realpath(project.root / top)

    def include(origin: str, argument: str):
        if not argument or argument.startswith("<"):
            return None  # docutils' standard includes: no API listed there
        base = top if argument.startswith("/") else posixpath.dirname(origin)
        rel = posixpath.normpath(posixpath.join(base, argument.lstrip("/")))
        if rel.startswith("../") or rel == ".." or (top and not under(rel, top)):
            return None
        real = os.path.realpath(project.root / rel)
        if real != real_top and not real.startswith(real_top.rstrip(os.sep) + os.sep):
            return None
        if rel not in texts:
            path = project.root / rel
            try:
                texts[rel] = project.read_text(rel) if path.is_file() and path.stat().st_size <= MAX_INCLUDED_BYTES else None
            except OSError:
                texts[rel] = None
        return None if texts[rel] is None else (rel, texts[rel])

    return include


def _names(value: str) -> list:
    return [n.strip() for n in value.split(",") if n.strip()]


class ExperimentalApiInDocs(Rule):
    """A stable API page lists an experimental API or anything under ``flashinfer.experimental``.

    ``docs/api/*.rst`` is the stable API reference. Listing an experimental function there
    presents it as covered by the compatibility promise.

    The page is read the way Sphinx reads it:

    - ``.. currentmodule::`` sets the module bare names are relative to.
    - ``.. autosummary::`` blocks are read with their options, blank lines and ``~`` prefixes.
      A block ends at the first line indented no deeper than the directive.
    - ``.. autofunction::`` / ``.. autoclass::`` and the other ``auto*`` directives are read
      with dotted or bare names, and so is ``.. automodule::``.
    - An ``automodule`` or ``autoclass`` with ``:members:`` lists what autodoc would document.
      That is the names given to the option, else a module's ``__all__``, else its public
      definitions. ``:exclude-members:`` is taken off.
    - conf.py's ``autodoc_default_options`` fill in ``members`` for a bare directive
      (`policy_checks.rules.readers.sphinx_conf`).
    - An ``autosummary`` entry with ``:toctree:`` lists its stub page's members too.
    - The Python domain's directives are read: ``.. py:function::``, ``.. function::``, and
      methods in a ``.. py:class::``.
    - Directives nested in others are read, and so are pages in subfolders.
    - ``.. include::`` is followed, bounded and inside the docs.

    Comments, literal blocks, code blocks and paragraph text are not read
    (`policy_checks.rules.readers.rst_listing`).

    A name is resolved to the function that defines it. Resolution goes through re-exports
    (``from .x import f as g`` in a package ``__init__``) and lazy-export tables. The function
    is experimental when it carries ``@flashinfer_experimental_api``. It also is when it is
    defined under the experimental package. The finding is reported at the ``.rst`` line and
    column that names it.
    """

    id = "EXP006"
    name = "experimental-api-in-docs"
    summary = "a docs/api page lists an experimental API"
    # the messages: an experimental API listed, members that include one ({through}: an include chain)
    LISTED = "stable API page lists {name}{through}: {reason}"
    MEMBERS = "stable API page lists the members of {name}{through}, which include {hidden}; exclude them"
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
        ),
        Example(
            {
                **_TREE,
                "docs/conf.py": "autodoc_default_options = {'members': False}\n",
                "docs/_shared/stable.rst": ".. autofunction:: flashinfer.rmsnorm\n",
                "docs/_shared/snippet.rst": "Use it so::\n\n   .. autofunction:: flashinfer.fused_norm\n",
                "docs/api/norm.rst": (
                    ".. automodule:: flashinfer.norm\n\n"  # members off in conf.py
                    ".. code-block:: rst\n\n   .. autofunction:: flashinfer.fused_norm\n\n"
                    "Written so::\n\n   .. autofunction:: flashinfer.fused_norm\n\n"
                    "Or quoted::\n\n.. autofunction:: flashinfer.fused_norm\n\n"
                    "A paragraph that goes on\n.. autofunction:: flashinfer.fused_norm\n\n"
                    ".. include:: ../_shared/stable.rst\n"
                    ".. include:: ../_shared/snippet.rst\n"
                    ".. include:: /_shared/snippet.rst\n   :literal:\n"
                    ".. include:: ../../flashinfer/norm.py\n"  # outside the docs: not followed
                    ".. py:function:: flashinfer.rmsnorm(x)\n"
                    ".. autosummary::\n\n   flashinfer.norm\n"  # no stub page: the module's summary only
                ),
            },
            note="code blocks, literal blocks (indented or quoted), paragraph text and comments are text; "
                 "included pages are read as Sphinx reads them",
        ),
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
        Example(
            {
                **_TREE,
                "docs/conf.py": "extensions = []\nautodoc_default_options = dict(members=True)\n",
                "docs/_shared/listing.rst": "Shared\n\n.. autofunction:: flashinfer.fused_norm\n",
                "docs/api/norm.rst": (
                    ".. automodule:: flashinfer.norm\n\n"  # 1: conf.py turns members on
                    ".. currentmodule:: flashinfer\n\n"  # 3
                    ".. autosummary::\n   :toctree: generated\n\n"  # 5-7
                    "   experimental.feat\n"  # 8: the module itself
                    "   norm\n\n"  # 9: its generated page lists fast_norm
                    ".. py:function:: fused_norm(x) -> None\n\n"  # 11: the domain directive
                    ".. include:: ../_shared/listing.rst\n\n"  # 13: through an include
                    ".. only:: html\n\n   .. function:: flashinfer.norm.fast_norm\n"  # 17: nested, bare domain
                ),
                "docs/api/more/extra.rst": "Extra\n=====\n.. autofunction:: flashinfer.fused_norm\n",  # 3
            },
            expect=(("docs/api/more/extra.rst", 3),) + tuple(("docs/api/norm.rst", n) for n in (1, 8, 9, 11, 13, 17)),
            note="as Sphinx reads docs: conf.py's autodoc defaults, autosummary stubs, domain directives, "
                 "includes, directives nested in others, pages in subfolders of docs/api",
        ),
    ]

    def check(self, project):
        texts: dict = {}
        for rel, text in project.docs_pages():
            top = source_dir(project, rel)
            conf = f"{top}/conf.py" if top else "conf.py"
            if conf not in texts:
                texts[conf] = project.read_text(conf) if (project.root / conf).is_file() else None
            defaults = autodoc_defaults(texts[conf])
            for item in rst_listing.listed(text, _includer(project, top, texts), rel, defaults):
                yield from self._judge(project, rel, item)

    def _judge(self, project, rel, item):
        name, current, options = item.name, item.current, item.options
        # the entry as written (and the module it is read in), not where it resolves to
        entry = f"{item.directive}:: {name}" + (f" in {current}" if current else "")
        through = ""
        if item.via:
            entry += " via " + " ".join(hop.rpartition(":")[0] for hop in item.via)
            through = " (through .. include:: " + " -> ".join(item.via) + ")"
        target = self._target(project, name, current)
        reason = self._experimental(project, target)
        if reason:
            yield self.finding(rel, item.line, item.column,
                               self.LISTED.format(name=name, through=through, reason=reason),
                               subject=entry)
        elif isinstance(target, (ModuleTarget, DefTarget)) and (
            "members" in options or (item.directive == "autosummary" and "toctree" in options)
        ):
            if item.directive == "autosummary":
                # the stub page autosummary generates for a module or class lists its public
                # members (Sphinx's templates; autosummary_ignore_module_all is on by default)
                options = {"ignore-module-all": ""}
            hidden = self._experimental_members(project, target, options)
            if hidden:
                yield self.finding(
                    rel, item.line, item.column,
                    self.MEMBERS.format(name=name, through=through,
                                        hidden="; ".join(f"{member} ({why})" for member, why in hidden)),
                    subject=entry,
                )

    def _target(self, project, name: str, current):
        """What a listed name resolves to, as `Project.resolve` returns it.

        Names are tried relative to the current module first, as Sphinx does."""
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
        """``(member, reason)`` for the experimental members an ``auto*`` directive documents.

        The members are those its ``:members:`` option documents, as autodoc picks them. That
        is the names listed in the option, re-exports included. Else it is a module's
        ``__all__``, re-exports included. Else it is the public defs of the module or class."""
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
        if not chosen and not prefix and isinstance(exported, NamesBinding) and "ignore-module-all" not in options:
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
