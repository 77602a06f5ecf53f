"""This repository, clean under ``policy-check audit``: every module imported in the
sandbox, every lane's collection audited. A round trip for its minutes of CPU: it imports
the whole repository, torch and all."""

from __future__ import annotations

import json

from click.testing import CliRunner

from policy_checks.cli import main

from .conftest import REPO


def test_this_repository_is_clean_under_the_audit():
    result = CliRunner().invoke(main, ["audit", "--root", str(REPO), "--format", "json", "-j", "2"])
    document = json.loads(result.stdout)
    assert result.exit_code == 0, document["findings"]
    assert document["audit"]["not_audited"] == 0 and document["audit"]["audited"] == document["audit"]["modules"]
    # every feature's support module present in the tree is audited as one
    supports = {f"flashinfer.experimental.{path.parent.name}.support"
                for path in (REPO / "flashinfer" / "experimental").glob("*/support.py")}
    assert supports <= set(document["audit"]["support_modules"])
