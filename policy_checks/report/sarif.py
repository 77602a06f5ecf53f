"""SARIF 2.1.0, for code-scanning uploads."""

from __future__ import annotations

import json
from urllib.parse import quote

from .. import __version__
from ..rules.registry import ALL_IDS

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def sarif(result, rule_names: dict, statistics: bool = False) -> str:
    summaries = {i: r.summary for i, r in ALL_IDS.items()}
    ids = sorted(rule_names)
    index = {rule: n for n, rule in enumerate(ids)}
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "policy-check",
                        "version": __version__,
                        "rules": [
                            {
                                "id": rule,
                                "name": rule_names[rule],
                                "shortDescription": {"text": summaries.get(rule, rule_names[rule])},
                                "defaultConfiguration": {"level": "error"},
                            }
                            for rule in ids
                        ],
                    }
                },
                "results": [
                    {
                        "ruleId": f.rule,
                        "ruleIndex": index.get(f.rule, 0),
                        "level": "error",
                        "message": {"text": f.message},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {"uri": quote(f.path), "uriBaseId": "%SRCROOT%"},
                                    "region": {"startLine": f.line, "startColumn": f.column},
                                }
                            }
                        ],
                    }
                    for f in result.findings
                ],
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"
