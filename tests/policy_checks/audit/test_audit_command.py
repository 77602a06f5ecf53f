"""``policy-check audit`` as a command: its ids in ``rules``/``explain``, its report
formats, its baseline beside ``run``'s, its suppressions. This repository's own audit
is a round trip (``tests/round_trips/test_audit_this_repository.py``)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from policy_checks.cli import main

from ..conftest import write_tree

SMALL = {
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/experimental/feat/__init__.py": "",
    "flashinfer/experimental/feat/kernel.py": "X = 1\n",
    "flashinfer/bad.py": "import importlib\nimportlib.import_module('flashinfer.experimental.feat.kernel')\n",
    "flashinfer/uses_missing.py": "import not_installed_anywhere_abc\n",
}


def _invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_rules_and_explain_know_the_audit_ids():
    listed = _invoke("rules", "--format", "json")
    assert {"AUD000", "AUD001", "AUD002", "AUD003"} <= {r["id"] for r in json.loads(listed.stdout)}
    explained = _invoke("explain", "AUD001")
    assert explained.exit_code == 0 and explained.output.startswith("AUD001 core-loads-experimental")


def test_an_audit_suppression_is_neither_invalid_nor_unused_in_a_static_run(check):
    result = check({
        "flashinfer/__init__.py": "",
        "flashinfer/x.py": "import os  # policy: ignore[AUD001] the audit's finding, not the static rules'\n",
    })
    assert not [f for f in result.findings if f.rule.startswith("SUP")], result.findings


def test_json_report_baseline_and_suppression(tmp_path):
    root = write_tree(tmp_path / "tree", SMALL)
    first = _invoke("audit", "--root", str(root), "--format", "json", "-j", "1", "--timeout", "20")
    assert first.exit_code == 1, first.stderr
    document = json.loads(first.stdout)
    assert [(f["rule"], f["path"], f["line"]) for f in document["findings"]] == [("AUD001", "flashinfer/bad.py", 2)]
    assert document["audit"]["stand_ins"] == ["not_installed_anywhere_abc"]
    assert "stand-ins" in _invoke("audit", "--root", str(root), "-j", "1").output

    # the baseline: run's file, the audit's entries only; run leaves them alone
    (root / "policy-check-baseline.json").write_text(
        '{"policy-check-baseline": 1, "entries": []}\n', encoding="utf-8")
    updated = _invoke("audit", "--root", str(root), "--update-baseline", "-j", "1")
    assert updated.exit_code == 0, updated.stderr
    again = _invoke("audit", "--root", str(root), "--format", "json", "-j", "1")
    assert again.exit_code == 0 and json.loads(again.stdout)["baselined"] == 1
    static = _invoke("run", "--root", str(root), "--format", "json")
    assert json.loads(static.stdout)["baseline_fixed"] == 0, static.output
    assert _invoke("baseline", "--root", str(root)).exit_code == 0  # rewrites run's entries, keeps the audit's
    assert '"AUD001"' in (root / "policy-check-baseline.json").read_text()

    # a suppression comment on the finding's line silences it
    (root / "policy-check-baseline.json").unlink()
    bad = root / "flashinfer" / "bad.py"
    bad.write_text(bad.read_text().replace(")\n", ")  # policy: ignore[AUD001] planted\n"), encoding="utf-8")
    quiet = _invoke("audit", "--root", str(root), "-j", "1")
    assert quiet.exit_code == 0, quiet.output


def test_policy_from_audits_with_the_base_revisions_settings(tmp_path):
    """A pull request that excludes the offending module in its own settings hides it
    from its own policy, not from the base's."""
    import subprocess

    root = write_tree(tmp_path / "repo", {**SMALL, "pyproject.toml": "[tool.policy-check]\n"})

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                       capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "base")
    (root / "pyproject.toml").write_text('[tool.policy-check]\nextend-exclude = ["flashinfer/bad.py"]\n',
                                         encoding="utf-8")
    own = _invoke("audit", "--root", str(root), "--format", "json", "-j", "1")
    assert own.exit_code == 0 and json.loads(own.stdout)["findings"] == []
    based = _invoke("audit", "--root", str(root), "--format", "json", "-j", "1", "--policy-from", "HEAD")
    document = json.loads(based.stdout)
    assert based.exit_code == 1 and [f["path"] for f in document["findings"]] == ["flashinfer/bad.py"]
    assert document["policy_from"]["revision"] == "HEAD"
