"""The JSON report: one object, the stable output contract that CI scripts read.

Its fields are documented in docs/policy_check.rst, "Output formats". ``version`` changes
only when a field changes meaning or disappears."""

from __future__ import annotations

import json

from .options import Options


def json_report(result, rule_names: dict, options: Options = Options()) -> str:
    findings = [
        {
            "rule": f.rule,
            "name": rule_names.get(f.rule, ""),
            "path": f.path,
            "line": f.line,
            "column": f.column,
            "message": f.message,
            "severity": "error",
        }
        for f in result.findings
    ]
    if result.baseline is not None and result.fingerprints is not None:  # a baseline run: say how a finding is known
        for item, fp in zip(findings, result.fingerprints):
            item.update(module=fp.module, scope=fp.scope, subject=fp.subject)
    document = {"version": 1, "findings": findings, "files_checked": result.files_checked}
    if result.baseline is not None:
        from ..engine.baseline import entry  # only a baseline run pays for it

        document["baseline"] = result.baseline
        document["baselined"] = len(result.baselined)
        document["baseline_fixed"] = sum(n for _, n in result.fixed)
        document["baseline_fixed_entries"] = [entry(fp, n) for fp, n in result.fixed]
    if result.policy_from is not None:  # --policy-from: what the policy change hides, and why
        given, commit = result.policy_from
        document["policy_from"] = {"revision": given, "commit": commit}
        document["policy_change_approved"] = result.approved
        hidden = []
        for h in result.hidden:
            f = h.finding
            item = {
                "rule": f.rule, "name": rule_names.get(f.rule, ""), "path": f.path, "line": f.line,
                "column": f.column, "message": f.message, "severity": "error",
                "reason": h.reason, "causes": list(h.causes),
            }
            if h.fingerprint is not None:
                item.update(module=h.fingerprint.module, scope=h.fingerprint.scope, subject=h.fingerprint.subject)
            hidden.append(item)
        document["hidden_by_policy_change"] = hidden
    if options.statistics:
        counts = {}
        for f in result.findings:
            counts[f.rule] = counts.get(f.rule, 0) + 1
        document["statistics"] = counts
    return json.dumps(document, indent=2) + "\n"
