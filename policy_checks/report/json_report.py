"""The JSON report: one object, the stable output contract that CI scripts read
(its fields are documented in docs/policy_check.rst, "Output formats").
``version`` changes only when a field changes meaning or disappears."""

from __future__ import annotations

import json


def json_report(result, rule_names: dict, statistics: bool = False) -> str:
    document = {
        "version": 1,
        "findings": [
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
        ],
        "files_checked": result.files_checked,
    }
    if statistics:
        counts = {}
        for f in result.findings:
            counts[f.rule] = counts.get(f.rule, 0) + 1
        document["statistics"] = counts
    return json.dumps(document, indent=2) + "\n"
