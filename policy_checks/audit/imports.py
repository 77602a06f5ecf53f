"""AUD001 and AUD000: import ``flashinfer`` and every core module in the workers.

Then judge what each import loaded of the experimental package.
"""

from __future__ import annotations

from typing import NamedTuple

from ..rules.base import Finding
from .chains import loaded_findings
from .rules import CORE_LOADS_EXPERIMENTAL, NOT_AUDITED
from .sandbox import Request


class Verdict(NamedTuple):
    findings: list
    stand_ins: set
    processes: list  # "command (at path:line)" of each new process an import started
    audited: int  # modules whose import completed
    not_audited: int


def module_file(project, module: str) -> tuple:
    """``(path, 1)`` of a module's file, for findings about the module as a whole."""
    return (project.rel_of(module) or module.replace(".", "/") + ".py"), 1


def not_audited(path_line: tuple, subject: str, message: str) -> Finding:
    return Finding(path_line[0], path_line[1], 1, NOT_AUDITED.id, message, subject)


def judge_imports(outcomes: list, project, support: dict) -> Verdict:
    """The findings of the import requests' outcomes."""
    settings = project.settings
    findings, stand_ins, processes, audited, failed = [], set(), [], 0, 0
    for outcome in outcomes:
        module = outcome.request.module
        place = module_file(project, module)
        answer = outcome.answer
        if answer is None:
            failed += 1
            findings.append(not_audited(place, module, f"{module} not audited: {outcome.problem}"))
            continue
        stand_ins.update(answer.get("stand_ins", ()))
        for started in answer.get("processes", ()):
            at = f" at {started['core'][0]}:{started['core'][1]}" if started.get("core") else ""
            processes.append(f"{started['args']}{at}")
        if answer.get("ok"):
            audited += 1
        else:
            failed += 1
            error = answer["error"]
            where = f" (at {error['at'][0]}:{error['at'][1]})" if error.get("at") else ""
            findings.append(not_audited(place, module, f"{module} not audited: importing it raised "
                                                       f"{error['type']}: {error['message']}{where}"))
        findings += loaded_findings(answer, place, support, settings, CORE_LOADS_EXPERIMENTAL.id,
                                    f"importing {module}", "core code")
    return Verdict(findings, stand_ins, sorted(set(processes)), audited, failed)


def import_requests(modules: list, first_id: int = 0) -> list:
    return [Request(first_id + i, "import", module) for i, module in enumerate(modules)]

