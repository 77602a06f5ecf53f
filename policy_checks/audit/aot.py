"""AUD002: call the AOT listing in a worker, under the same tracing as the imports.

Two shapes are known, and the tracer picks whichever the module has. One is this
repository's ``registered_specs()`` / ``_register_builtin()``. The other is
FlashInfer's ``gen_all_modules(...)``. It is called with its
``get_default_config()`` values and a capabilities mapping that claims every
capability. So every branch that can add a spec does.

Any experimental module loaded is a finding. So is a returned spec whose sources
lie under the experimental package. A spec created there, or one that says it is
experimental, is a finding too.
"""

from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from typing import Optional

from ..rules.base import Finding
from .chains import loaded_findings
from .imports import module_file, not_audited
from .rules import AOT_LISTS_EXPERIMENTAL
from .sandbox import Request


def aot_requests(aot_modules, project, first_id: int) -> list:
    """One request per AOT module the tree has."""
    return [Request(first_id + i, "aot", name) for i, name in enumerate(aot_modules) if project.rel_of(name)]


def missing_aot(aot_modules, project, declared: Optional[int]) -> tuple:
    """``(findings, notes)`` for the AOT modules the tree lacks.

    When the settings name them in pyproject.toml, each is an AUD000 at the
    ``aot-modules`` line (`declared`). A listing gone is not a listing audited
    clean. Otherwise each is a note. The default names ``flashinfer.aot``, which a
    small package need not have.
    """
    gone = [name for name in aot_modules if not project.rel_of(name)]
    if declared is not None:
        return [not_audited(("pyproject.toml", declared), f"aot {name}",
                            f"the AOT module {name} (aot-modules) is not in the tree: its listing is not audited")
                for name in gone], []
    return [], [f"no AOT listing audited: {name} (the default aot-modules) is not in the tree" for name in gone]


def declared_aot_line(pyproject_text: Optional[str]) -> Optional[int]:
    """The line of pyproject.toml's ``[tool.policy-check]`` table that sets ``aot-modules``.

    None when that table does not set it.
    """
    if pyproject_text is None:
        return None
    try:
        table = tomllib.loads(pyproject_text).get("tool", {}).get("policy-check", {})
    except (tomllib.TOMLDecodeError, AttributeError):
        return None
    if not isinstance(table, dict) or "aot-modules" not in table:
        return None
    lines = pyproject_text.splitlines()
    return next((number for number, line in enumerate(lines, 1) if line.lstrip().startswith("aot-modules")), 1)


def judge_aot(outcomes: list, project, support: dict) -> list:
    """The findings of the AOT requests' outcomes. Support modules are allowed, as for imports."""
    settings = project.settings
    findings = []
    for outcome in outcomes:
        module = outcome.request.module
        place = module_file(project, module)
        answer = outcome.answer
        if answer is None:
            findings.append(not_audited(place, f"aot {module}", f"the AOT listing of {module} not audited: "
                                                                f"{outcome.problem}"))
            continue
        if not answer.get("ok"):
            error = answer["error"]
            findings.append(not_audited(place, f"aot {module}", f"the AOT listing of {module} not audited: "
                                                                f"it raised {error['type']}: {error['message']}"))
        findings += loaded_findings(answer, place, support, settings, AOT_LISTS_EXPERIMENTAL.id,
                                    f"the AOT listing of {module}", "the AOT listing")
        value = answer.get("value") or {}
        at = tuple(value.get("at") or place)
        for spec in value.get("specs", ()):
            why = []
            if spec.get("experimental_sources"):
                why.append("sources under the experimental package (" + ", ".join(spec["experimental_sources"]) + ")")
            created = spec.get("created_in")
            if created and settings.is_experimental_module(created):
                why.append(f"created in {created}")
            if spec.get("experimental"):
                why.append("marked experimental")
            if why:
                findings.append(Finding(at[0], int(at[1]), 1, AOT_LISTS_EXPERIMENTAL.id,
                                        f"the AOT listing ({value.get('shape')}) returns the JIT spec "
                                        f"{spec.get('name')!r}: {'; '.join(why)}", f"spec {spec.get('name')}"))
    return findings
