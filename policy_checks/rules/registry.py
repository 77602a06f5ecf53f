"""The rule table: every rule by id, with its metadata, and rule selection.

A rule is one file: a module of this package defining a `Rule` subclass. The class holds
its id, what it reads, its message and its examples. The table is found by scanning the
package's modules for such subclasses, as Fixit finds its rules. So adding a rule changes
nothing else. These all read the table here: ``rules``, ``explain``, the docs table
(``rules --format rst``), the report formats, the runner and the example tests.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path
from typing import Optional

from ..model.config import ConfigError, SECTION, Settings
from .audit import AUDIT_RULES
from .base import Rule
from .consumer import CONSUMER_RULES
from .meta import META_RULES

RULE_ID = re.compile(r"^[A-Z]{3}\d{3}$")


class RuleTableError(RuntimeError):
    """The table cannot be built: two rules share an id, or a rule's id is malformed."""


def discover(package: str = __package__, directory: Path = Path(__file__).parent) -> dict:
    """id -> an instance of each `Rule` subclass defined in a module of `package`, in id order.

    Modules whose name starts with ``_`` are not read, and neither is this one."""
    found: dict = {}
    for info in sorted(pkgutil.iter_modules([str(directory)]), key=lambda i: i.name):
        if info.name.startswith("_") or info.name == __name__.rpartition(".")[2]:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for value in vars(module).values():
            if not (isinstance(value, type) and issubclass(value, Rule) and value is not Rule
                    and value.__module__ == module.__name__ and value.id):
                continue
            if not RULE_ID.match(value.id) or value.id in found:
                raise RuleTableError(f"{module.__name__}.{value.__name__}: rule id {value.id!r} is malformed or taken")
            found[value.id] = value()
    return dict(sorted(found.items()))


# the containment rules, in id order: id -> rule instance
RULES = discover()
# the ids other commands report: ``policy-check audit`` (AUDnnn) and ``policy-check
# consumer`` (CONnnn), command -> its ids. ``rules``, ``explain``, SARIF and suppression
# comments know them; a static run never checks them (`selected_ids`).
ELSEWHERE = {"audit": AUDIT_RULES, "consumer": CONSUMER_RULES}
# every id a finding can carry -> its rule (``id``, ``name``, ``summary``, doc)
ALL_IDS = {**RULES, **META_RULES, **AUDIT_RULES, **CONSUMER_RULES}


def matches(rule_id: str, patterns) -> bool:
    """Does `rule_id` start with one of `patterns`?

    Patterns are ids or prefixes such as ``EXP00``."""
    return any(rule_id.startswith(p) for p in patterns)


def unknown_rule(values) -> Optional[str]:
    """The first of `values` that is no rule id nor the prefix of one, else None.

    Without this, a typo in ``select`` would silently check nothing."""
    return next((v for v in values if not any(k.startswith(v) for k in ALL_IDS)), None)


def checked_elsewhere(value: str) -> Optional[str]:
    """The command that checks every id `value` names, when that is not `run`.

    `value` is an id or a prefix. ``--select AUD001`` on `run` would select nothing and say
    All clear."""
    named = [k for k in ALL_IDS if k.startswith(value)]
    for command, ids in ELSEWHERE.items():
        if named and all(k in ids for k in named):
            return command
    return None


def check_settings(settings: Settings) -> None:
    """Raise `ConfigError`, naming the key, if a setting names no rule."""
    named = [("select", settings.select), ("ignore", settings.ignore)]
    named += [(f"per-file-ignores.{glob}", ids) for glob, ids in settings.per_file_ignores]
    for key, values in named:
        unknown = unknown_rule(values)
        if unknown is not None:
            raise ConfigError(f"[{SECTION}] {key}: no rule id starts with {unknown!r} (see `policy-check rules`)")
        elsewhere = next((v for v in values if key == "select" and checked_elsewhere(v)), None)
        if elsewhere is not None:
            raise ConfigError(f"[{SECTION}] select: {elsewhere} is checked by `policy-check "
                              f"{checked_elsewhere(elsewhere)}`, not by `run`")


def selected_ids(settings: Settings, select=(), ignore=()) -> set:
    """The ids a run checks.

    They are `select` (else the settings' selection, else every rule), minus `ignore` and the
    settings' ``ignore``. They never include another command's id (`ELSEWHERE`). A static run
    does not check those. So a suppression naming one is not unused there, and a baseline
    entry of one is not fixed."""
    select = tuple(select) if select else settings.select
    ignore = tuple(ignore) + settings.ignore
    return {i for i in ALL_IDS
            if not any(i in ids for ids in ELSEWHERE.values()) and (not select or matches(i, select))
            and not matches(i, ignore)}
