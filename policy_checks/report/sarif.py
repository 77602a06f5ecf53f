"""SARIF 2.1.0, for code-scanning uploads.

With a baseline, every result carries its ``baselineState`` (SARIF 2.1.0's ``result``):
``new`` for a finding the baseline does not accept; ``unchanged`` for one it
accepts, which also carries an ``external`` suppression (``result.suppressions``) whose justification
names the baseline file, so that viewers show it as suppressed; ``absent`` for what
the baseline accepts beyond today's findings (fixed debt), located at the baseline
file. Without a baseline, results carry neither. With ``--policy-from``, a finding
the pull request's policy change hides is a result too (level ``error``; its
message and ``properties.hiddenByPolicyChange`` say what hid it), of level
``warning`` with an ``external`` accepted suppression once a maintainer approved."""

from __future__ import annotations

import json
from urllib.parse import quote

from .. import __version__
from ..rules.registry import ALL_IDS

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _location(path: str, line=None, column=None) -> dict:
    if path.startswith("/"):  # a baseline outside the project
        artifact = {"uri": "file://" + quote(path)}
    else:
        artifact = {"uri": quote(path), "uriBaseId": "%SRCROOT%"}
    physical = {"artifactLocation": artifact}
    if line is not None:
        physical["region"] = {"startLine": line, "startColumn": column}
    return {"physicalLocation": physical}


def sarif(result, rule_names: dict, statistics: bool = False) -> str:
    summaries = {i: r.summary for i, r in ALL_IDS.items()}
    ids = sorted(rule_names)
    index = {rule: n for n, rule in enumerate(ids)}

    def found(f, state=None) -> dict:
        item = {
            "ruleId": f.rule,
            "ruleIndex": index.get(f.rule, 0),
            "level": "error",
            "message": {"text": f.message},
            "locations": [_location(f.path, f.line, f.column)],
        }
        if state is not None:
            item["baselineState"] = state
        return item

    with_baseline = result.baseline is not None
    results = [found(f, "new" if with_baseline else None) for f in result.findings]
    for h in result.hidden:  # --policy-from: what the policy change hides, and why
        item = found(h.finding, "new" if with_baseline else None)
        item["message"]["text"] = f"{h.finding.message} (hidden by this pull request's policy change: {h.reason})"
        item["properties"] = {"hiddenByPolicyChange": h.reason, "causes": list(h.causes)}
        if result.approved:
            item["level"] = "warning"
            item["suppressions"] = [{
                "kind": "external",
                "status": "accepted",
                "justification": "a maintainer approved this pull request's policy change",
            }]
        results.append(item)
    if with_baseline:
        for f in result.baselined:
            item = found(f, "unchanged")
            item["suppressions"] = [{
                "kind": "external",
                "status": "accepted",
                "justification": f"accepted as existing debt by the baseline {result.baseline}",
            }]
            results.append(item)
        for fp, count in result.fixed:
            item = {"ruleId": fp.rule}
            if fp.rule in index:
                item["ruleIndex"] = index[fp.rule]
            item.update({
                "level": "note",
                "message": {"text": (
                    f"fixed: the baseline {result.baseline} accepts {fp.rule} in {fp.module} "
                    f"({fp.scope or 'file'}: {fp.subject}) but no such finding remains; run "
                    "\"policy-check baseline --prune\" to remove it"
                )},
                "locations": [_location(result.baseline)],
                "baselineState": "absent",
            })
            results.extend(dict(item) for _ in range(count))
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
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"
