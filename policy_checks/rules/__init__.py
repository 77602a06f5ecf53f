"""The rules, one module each, in id order. `RULES` maps id -> rule instance."""

from __future__ import annotations

from .exp000 import ParseError
from .exp001 import CoreImportsExperimental
from .exp002 import InitImportsExperimental
from .exp003 import HeavySupportModule
from .exp004 import UnmarkedExperimentalChecker
from .exp005 import AotRegistersExperimental
from .exp006 import ExperimentalApiInDocs
from .exp007 import DeferredImportOutsideEntryPoint
from .exp008 import StableLaneNotIsolated
from .exp009 import FeatureRecordIncomplete

RULES = {
    rule.id: rule
    for rule in (
        ParseError(),
        CoreImportsExperimental(),
        InitImportsExperimental(),
        HeavySupportModule(),
        UnmarkedExperimentalChecker(),
        AotRegistersExperimental(),
        ExperimentalApiInDocs(),
        DeferredImportOutsideEntryPoint(),
        StableLaneNotIsolated(),
        FeatureRecordIncomplete(),
    )
}
