"""What rules declare they read, and the prefilter composed from the declarations."""

from __future__ import annotations

from policy_checks.model.config import Settings
from policy_checks.analysis.needs import (
    ALWAYS, BACKEND_REQUIREMENT, CORE_MODULE, EXPERIMENTAL_NAME, IMPORT_CALLS, MAY_LOAD, STABLE_TEST, Prefilter, Spelled,
    is_primary, names_experimental,
)
from policy_checks.rules import registry
from policy_checks.rules.base import Rule
from policy_checks.engine.runner import run

from ..conftest import located, write_tree


def test_names_experimental():
    assert names_experimental(b"from .experimental import f", "flashinfer")
    assert names_experimental(b"import flashinfer.experimental.f", "flashinfer")
    assert names_experimental(b"from flashinfer . experimental import f", "flashinfer")
    assert names_experimental(b"from cutlass import experimental", "flashinfer")
    assert names_experimental(b"import cutlass.experimental, flashinfer.experimental", "flashinfer")
    assert not names_experimental(b"from .api_logging import flashinfer_experimental_api", "flashinfer")
    assert not names_experimental(b"import cutlass.cute.experimental as ce", "flashinfer")
    assert not names_experimental(b"from cuda.core.experimental import Device", "flashinfer")
    assert not names_experimental(b"is_cute_dsl_experimental_available()", "flashinfer")
    assert names_experimental(b"from .incubator import f", "flashinfer", b"incubator")


def test_every_rule_declares_what_it_reads():
    for rule in registry.RULES.values():
        assert rule.reads, rule.id
        assert all(hasattr(t, "bound") for t in rule.triggers), rule.id
    # the prefilter of a run with every rule holds exactly the rules' triggers
    everything = Prefilter(registry.RULES.values(), registry.RULES.values(), Settings())
    declared = {t for rule in registry.RULES.values() for t in rule.triggers}
    assert everything.triggers == declared
    assert declared == {ALWAYS, EXPERIMENTAL_NAME, BACKEND_REQUIREMENT, *IMPORT_CALLS}
    # ALWAYS needs no scan; the import-time follow-ups ask whether a file may load (MAY_LOAD)
    assert set(everything.scanner.matchers) == {t.bound(Settings()) for t in declared - {ALWAYS}} | {MAY_LOAD}


def test_the_scan_covers_every_rule_whatever_is_selected():
    """A cached scan must serve a run with another selection."""
    rules = list(registry.RULES.values())
    alone = Prefilter([registry.RULES["EXP004"]], rules, Settings())
    assert alone.scanner == Prefilter(rules, rules, Settings()).scanner
    assert alone.triggers == {BACKEND_REQUIREMENT}
    found = alone.scanner.scan(b"from .experimental import x\nimportlib.import_module('y')\n")
    assert found and not alone.scanner.scan(b"x = 1\n")
    assert is_primary((True, 0), 0) and not is_primary((False, 0), found) and is_primary((False, found), found)


def test_a_file_is_scanned_only_for_what_its_kinds_are_asked(tmp_path):
    """A core module is searched for every rule's triggers and the follow-ups' scans; an
    experimental module for EXP004's ``backend_requirement`` alone. A matcher not looked
    for reads as found, so a mask that a run with other settings reads from the cache
    can only cost it work, never a finding."""
    from policy_checks.model.project import Project

    rules = list(registry.RULES.values())
    prefilter = Prefilter(rules, rules, Settings())
    scanner = prefilter.scanner
    everything = (1 << len(scanner.matchers)) - 1
    backend = 1 << scanner.matchers.index(BACKEND_REQUIREMENT.bound(Settings()))
    root = write_tree(tmp_path, {"flashinfer/__init__.py": "", "flashinfer/gemm.py": "",
                                 "flashinfer/experimental/__init__.py": "", "flashinfer/experimental/k.py": ""})
    project = Project(root, Settings(), load_facts=None)
    asked = {rel: prefilter.want(project, source)[2] for rel, source in project.files.items()}
    assert asked["flashinfer/gemm.py"] == everything and asked["flashinfer/experimental/k.py"] == backend
    data = b"import threading\nimportlib.import_module('flashinfer.experimental.k')\n"
    assert scanner.scan(data, backend) == everything & ~backend  # found: only what was not asked
    assert scanner.scan(data + b"backend_requirement\n", backend) == everything
    assert scanner.scan(b"x = 1\n", 0) == everything and scanner.scan(b"x = 1\n") == 0
    # a selection never wants what is not asked: only EXP004 selected, the same scan serves
    alone = Prefilter([registry.RULES["EXP004"]], rules, Settings())
    assert all(want[1] & ~want[2] == 0 for want in (alone.want(project, s) for s in project.files.values()))


def test_non_ascii_is_read_as_python_reads_names():
    scanner = Prefilter(registry.RULES.values(), registry.RULES.values(), Settings()).scanner
    assert scanner.scan("from .\uff45xperimental import x\n".encode()) == scanner.scan(b"from .experimental import x\n")


class _SpellsMagic(Rule):
    """A rule from outside the table, to show that a declaration is all the runner
    needs: every stable test that spells ``magic`` gets complete facts, and the rule
    reports the imports it finds there."""

    id = "EXP099"
    name = "spells-magic"
    summary = "a stable test spells magic"
    reads = (STABLE_TEST,)
    triggers = (Spelled(b"magic"),)

    def check(self, project):
        for rel, facts in project.primary_facts(STABLE_TEST):
            for imp in facts.imports:
                yield self.finding(rel, imp.line, imp.column, f"imports {imp.module}")


def test_a_new_rule_needs_only_its_declaration(tmp_path, monkeypatch):
    rule = _SpellsMagic()
    monkeypatch.setitem(registry.RULES, rule.id, rule)
    monkeypatch.setitem(registry.ALL_IDS, rule.id, rule)
    root = write_tree(tmp_path, {
        "flashinfer/__init__.py": "",
        "tests/test_a.py": "import os  # magic\n",
        "tests/test_b.py": "import os\n",
        "flashinfer/core.py": "import os  # magic, but not a stable test\n",
    })
    result = run(root, Settings(), select=[rule.id], use_cache=False, jobs=1, progress=False)
    assert located(result) == [("tests/test_a.py", 1)]
    full = run(root, Settings(), select=[rule.id], use_cache=False, jobs=1, progress=False, prefilter=False)
    assert located(full) == [("tests/test_a.py", 1), ("tests/test_b.py", 1)]  # what the trigger leaves out


def test_kinds_classify_files(tmp_path):
    from policy_checks.analysis.needs import AOT_MODULE, EXPERIMENTAL_MODULE, EXPERIMENTAL_TEST, PACKAGE_INIT
    from policy_checks.model.project import Project

    root = write_tree(tmp_path, {
        "flashinfer/__init__.py": "", "flashinfer/aot.py": "", "flashinfer/gemm.py": "",
        "flashinfer/experimental/__init__.py": "", "tests/test_x.py": "", "tests/experimental/test_y.py": "",
    })
    project = Project(root, Settings(), None)
    kinds = (PACKAGE_INIT, AOT_MODULE, CORE_MODULE, EXPERIMENTAL_MODULE, STABLE_TEST, EXPERIMENTAL_TEST)
    got = {rel: [k.name for k in kinds if k.member(project, source)] for rel, source in project.files.items()}
    assert got == {
        "flashinfer/__init__.py": ["the package's __init__.py", "core modules"],
        "flashinfer/aot.py": ["AOT modules", "core modules"],
        "flashinfer/gemm.py": ["core modules"],
        "flashinfer/experimental/__init__.py": ["experimental modules"],
        "tests/test_x.py": ["stable tests"],
        "tests/experimental/test_y.py": ["experimental tests"],
    }


def _load_forms(dotted: str):
    """Each way a file may spell a call of `dotted` (``module.name``)."""
    module, _, name = dotted.rpartition(".")
    yield f"import {module}\n{dotted}(x)\n"
    yield f"from {module} import {name}\n{name}(x)\n"
    yield f"import {module} as m\nm.{name}(x)\n"
    yield f"from {module} import {name} as q\nq(x)\n"


def test_every_load_the_extractor_records_is_spelt_in_bytes_the_prefilter_finds():
    """The import-time follow-ups skip a file whose bytes `may_load` does not flag (nor a
    loader trigger): that is sound only if every `facts.Load` the extractor records comes
    with such bytes. One vocabulary is read twice (the byte scan and the facts); this
    ties them, in every spelling of every call and every change of the import state."""
    from policy_checks.model.facts import IMPORT_STATE, UNRESOLVED_CALLS, extract
    from policy_checks.analysis.needs import may_load

    cases = [src for dotted in sorted(UNRESOLVED_CALLS) for src in _load_forms(dotted)]
    for dotted in IMPORT_STATE:
        module, _, name = dotted.rpartition(".")
        cases += [f"import {module}\n{dotted}.append(x)\n", f"from {module} import {name}\n{name}.append(x)\n",
                  f"import {module} as m\nm.{name}.append(x)\n", f"import {module}\n{dotted} = x\n"]
    recorded = 0
    for source in cases:
        data = source.encode()
        if not extract(data, "flashinfer.gemm", False).loads:
            continue
        recorded += 1
        assert may_load(data) or any(trigger(data) for trigger in IMPORT_CALLS), source
    assert recorded >= len(UNRESOLVED_CALLS)  # the forms do make loads: the check is not empty
