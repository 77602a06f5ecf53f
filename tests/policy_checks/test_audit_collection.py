"""AUD003: the stable lane collected for real, in a planted tree (`policy_checks.audit.collection`).

Each route that lets the stable lane collect an experimental test is planted beside a
harmless twin; each collection is one pytest subprocess of a second or so, isolated as
the import audit's workers are (`policy_checks.audit.sandbox`): stand-ins, no network."""

from __future__ import annotations

import json
import os
import socket

import pytest
from click.testing import CliRunner

from policy_checks.audit.collection import audit_collection, stable_lane
from policy_checks.audit.sandbox import network_namespace
from policy_checks.cli import main
from policy_checks.model.config import Settings

from .conftest import write_tree

BASE = {
    "pytest.ini": "[pytest]\nnorecursedirs = .git tests/experimental\n",
    "tests/test_stable.py": "def test_stable():\n    pass\n",
    "tests/experimental/feat/test_feat.py": "def test_feat():\n    pass\n",
}


def audit(root, **kwargs):
    return [(f.rule, f.path, f.subject) for f in audit_collection(root, Settings(), **kwargs).findings]


def test_a_clean_lane_has_no_finding(tmp_path):
    write_tree(tmp_path, BASE)
    assert audit(tmp_path) == []


def test_a_link_to_the_experimental_folder_is_found_and_named(tmp_path):
    write_tree(tmp_path, BASE)
    os.symlink("experimental/feat", tmp_path / "tests" / "more")
    os.symlink("../examples", tmp_path / "tests" / "examples")  # harmless twin: a link elsewhere
    write_tree(tmp_path, {"examples/test_example.py": "def test_example():\n    pass\n"})
    (finding,) = audit_collection(tmp_path, Settings()).findings
    assert (finding.rule, finding.path, finding.subject) == (
        "AUD003", "tests/more/test_feat.py", "tests/more/test_feat.py::test_feat")
    assert "through the link tests/more -> tests/experimental/feat" in finding.message


@pytest.mark.parametrize("returned, found", [("False", True), ("True", False)])
def test_an_ignore_collect_hook_that_readmits(tmp_path, returned, found):
    write_tree(tmp_path, {**BASE, "tests/conftest.py": (
        "def pytest_ignore_collect(collection_path, config):\n"
        f"    if collection_path.name == 'experimental':\n        return {returned}\n"
    )})
    expected = [("AUD003", "tests/experimental/feat/test_feat.py", "tests/experimental/feat/test_feat.py::test_feat")]
    assert audit(tmp_path) == (expected if found else [])


def test_a_nested_configuration_in_the_lane_directory(tmp_path):
    write_tree(tmp_path, {**BASE, "tests/pytest.ini": "[pytest]\nnorecursedirs = .git\n"})
    (finding,) = audit_collection(tmp_path, Settings()).findings
    assert finding.rule == "AUD003" and "configuration tests/pytest.ini" in finding.message


def test_a_nested_configuration_that_keeps_the_exclusion_is_harmless(tmp_path):
    write_tree(tmp_path, {**BASE, "tests/pytest.ini": "[pytest]\nnorecursedirs = tests/experimental\n"})
    assert audit(tmp_path) == []


def test_a_configuration_below_the_lane_directory_is_never_read(tmp_path):
    # EXP008's harmless twin of tests/pytest.ini: pytest looks from tests/ up, never down
    write_tree(tmp_path, {**BASE, "tests/unit/pytest.ini": "[pytest]\nnorecursedirs = .git\n",
                          "tests/unit/test_unit.py": "def test_unit():\n    pass\n"})
    assert audit(tmp_path) == []


def test_a_tree_without_the_lane_has_nothing_to_collect(tmp_path):
    write_tree(tmp_path, {"flashinfer/__init__.py": ""})
    assert audit(tmp_path) == []


def test_the_callers_environment_does_not_leak_in(tmp_path, monkeypatch):
    monkeypatch.setenv("FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS", "1")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-o norecursedirs=.git")
    write_tree(tmp_path, {**BASE, "tests/conftest.py": (
        "import os\n"
        "def pytest_ignore_collect(collection_path, config):\n"
        "    if os.environ.get('FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS'):\n        return False\n"
    )})
    assert audit(tmp_path) == []


@pytest.mark.parametrize("text", [
    "raise RuntimeError('needs a GPU')\n",
    "from tests.helpers_gone import helper\n",  # the tree's own module is missing: never a stand-in
])
def test_a_stable_file_that_fails_to_collect_is_not_audited(tmp_path, text):
    write_tree(tmp_path, {**BASE, "tests/__init__.py": "", "tests/test_broken.py": text})
    ((rule, path, _),) = audit(tmp_path)
    assert (rule, path) == ("AUD000", "tests/test_broken.py")


def test_a_lane_that_never_ends_is_not_audited(tmp_path):
    write_tree(tmp_path, {**BASE, "tests/conftest.py": "import time\ntime.sleep(60)\n"})
    (finding,) = audit_collection(tmp_path, Settings(), timeout=3).findings
    assert finding.rule == "AUD000" and "longer than 3 s" in finding.message


def test_the_lane_is_read_from_the_lanes_file(tmp_path):
    assert stable_lane(tmp_path, Settings()) == "tests/"
    write_tree(tmp_path, {"tests/lanes.py": "LANES = {'stable': 'tests/unit/', 'experimental': 'tests/experimental/'}\n"})
    assert stable_lane(tmp_path, Settings()) == "tests/unit/"


def test_the_collection_has_no_network(tmp_path):
    write_tree(tmp_path, {**BASE, "tests/conftest.py": (
        "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)\n"
    )})
    (finding,) = audit_collection(tmp_path, Settings()).findings
    assert finding.rule == "AUD000" and "PermissionError: the policy-check audit refuses socket." in finding.message


@pytest.mark.skipif(not network_namespace(), reason="unshare -rn cannot make a network namespace here")
def test_the_collections_subprocesses_have_no_network_either(tmp_path):
    """A process the conftest starts runs without the audit hook: the network namespace
    the collection runs in (as the import audit's workers do) leaves it no interface."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        write_tree(tmp_path, {**BASE, "tests/conftest.py": (
            "import subprocess, sys\n"
            "subprocess.run([sys.executable, '-c', 'import socket; "
            f"socket.create_connection((\"127.0.0.1\", {port}), timeout=2)'], timeout=10)\n"
        )})
        assert audit(tmp_path) == []  # the child's failure is its own: the lane is collected
        server.settimeout(0)
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody connected


# a conftest importing a package CPU-only CI lacks; a stable test that is a link into
# the experimental folder
MISSING = {**BASE, "tests/conftest.py": "import some_missing_pkg\nfrom some_missing_pkg.cuda import stream\n"}


@pytest.mark.parametrize("linked", [True, False])
def test_a_conftest_importing_a_missing_package_is_collected_with_a_stand_in(tmp_path, linked):
    write_tree(tmp_path, MISSING)
    if linked:
        os.symlink("experimental/feat/test_feat.py", tmp_path / "tests" / "test_linked.py")
    findings, stand_ins = audit_collection(tmp_path, Settings())
    assert stand_ins == ["some_missing_pkg"]
    expected = [("AUD003", "tests/test_linked.py", "tests/test_linked.py::test_feat")] if linked else []
    assert [(f.rule, f.path, f.subject) for f in findings] == expected


def test_without_stand_ins_the_missing_package_leaves_the_lane_unaudited(tmp_path):
    write_tree(tmp_path, MISSING)
    ((rule, path, _),) = audit(tmp_path, stand_ins=False)
    assert (rule, path) == ("AUD000", "tests")


def test_an_installed_packages_optional_import_is_not_stood_in(tmp_path):
    """Stand-ins answer the tree's own code only: a package outside the tree that tries
    an optional import keeps its "not installed" branch."""
    write_tree(tmp_path / "site", {"optional_user.py": (
        "try:\n    import some_optional_extra\nexcept ImportError:\n    some_optional_extra = None\n"
    )})
    write_tree(tmp_path / "tree", {**BASE, "tests/conftest.py": (
        f"import sys\nsys.path.append({str(tmp_path / 'site')!r})\n"
        "import optional_user\nassert optional_user.some_optional_extra is None\n"
    )})
    assert audit_collection(tmp_path / "tree", Settings()) == ([], [])


def test_the_audit_report_names_the_collections_stand_ins(tmp_path):
    write_tree(tmp_path, {**MISSING, "flashinfer/__init__.py": ""})
    os.symlink("experimental/feat", tmp_path / "tests" / "more")
    result = CliRunner().invoke(main, ["audit", "--root", str(tmp_path), "--format", "json", "-j", "1"])
    document = json.loads(result.stdout)
    assert [(f["rule"], f["path"]) for f in document["findings"]] == [("AUD003", "tests/more/test_feat.py")]
    assert document["audit"]["collection_stand_ins"] == ["some_missing_pkg"]
    text = CliRunner().invoke(main, ["audit", "--root", str(tmp_path), "-j", "1"]).output
    assert "note: stand-ins in the stable lane's collection (asked for by its conftests and tests): some_missing_pkg" \
        in text


# ----- collected as CI runs the lane; a test counted where its function is defined; a whole record


@pytest.mark.parametrize("hides_when, found", [
    ("config.option.collectonly", True),  # hides only from a --collect-only run: CI would run it
    ("True", False),  # the twin: hides it from every run, so CI never runs it either
])
def test_a_conftest_that_collects_less_under_collect_only_does_not_hide_a_test(tmp_path, hides_when, found):
    write_tree(tmp_path, {**BASE, "tests/conftest.py": (
        "def pytest_collection_modifyitems(config, items):\n"
        f"    if {hides_when}:\n"
        "        items[:] = [i for i in items if 'experimental' not in str(i.path.resolve())]\n"),
        "tests/test_also.py": "def test_also():\n    pass\n"})
    os.symlink("experimental/feat/test_feat.py", tmp_path / "tests" / "test_linked.py")
    expected = [("AUD003", "tests/test_linked.py", "tests/test_linked.py::test_feat")] if found else []
    assert audit(tmp_path) == expected


REEXPORT = (
    "import importlib.util, pathlib\n"
    "_spec = importlib.util.spec_from_file_location('_{name}', pathlib.Path(__file__).parent / {where!r})\n"
    "_module = importlib.util.module_from_spec(_spec)\n"
    "_spec.loader.exec_module(_module)\n"
    "test_{name} = _module.test_{name}\n"
)


def test_a_stable_module_running_an_experimental_test_is_counted_where_the_test_is_defined(tmp_path):
    """The test is collected under the stable file that imports it, but its function is the
    experimental test's; the twin imports a stable helper's test the same way."""
    write_tree(tmp_path, {
        **BASE,
        "tests/helpers/shared.py": "def test_shared():\n    pass\n",
        "tests/test_runs_feat.py": REEXPORT.format(name="feat", where="experimental/feat/test_feat.py"),
        "tests/test_runs_shared.py": REEXPORT.format(name="shared", where="helpers/shared.py"),
    })
    [finding] = audit_collection(tmp_path, Settings()).findings
    assert (finding.rule, finding.path, finding.subject) == (
        "AUD003", "tests/test_runs_feat.py", "tests/test_runs_feat.py::test_feat")
    assert "defined in tests/experimental/feat/test_feat.py:1" in finding.message


def test_a_record_longer_than_the_limit_fails_closed(tmp_path, monkeypatch):
    """What a cut record lacks could be the finding: the lane is not audited (AUD000); with
    the real limit (the twin) the same lane is clean."""
    write_tree(tmp_path, {**BASE, **{f"tests/test_many_{n}.py": "def test_one():\n    pass\n" for n in range(20)}})
    assert audit(tmp_path) == []
    monkeypatch.setattr("policy_checks.audit.collection._RECORD_LIMIT", 400)
    ((rule, path, _),) = audit(tmp_path)
    assert (rule, path) == ("AUD000", "tests")
