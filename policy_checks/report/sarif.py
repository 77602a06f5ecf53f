"""SARIF 2.1.0, for code-scanning uploads.

By default the log holds only what should be an alert:

- the findings the run reports; with a baseline, the new ones;
- with ``--policy-from``, the findings the pull request's policy change hides. Their level
  is ``error``. The message and ``properties.hiddenByPolicyChange`` say what hid it. Once a
  maintainer approved, the level is ``warning``, with an ``external`` accepted suppression.

GitHub code scanning does not honour SARIF suppressions: a suppressed result arrives as an
open alert. So baselined findings and fixed baseline entries are left out. They appear only
with ``--sarif-suppressed`` (`Options.sarif_suppressed`), for viewers that do honour
suppressions:

- a baselined finding has ``baselineState`` ``unchanged``, and an ``external`` suppression
  whose justification names the baseline file;
- a fixed entry has ``baselineState`` ``absent``, and is located at the baseline file.

With a baseline, every result carries its ``baselineState``: ``new`` for a new finding.

Every result carries ``partialFingerprints`` ``{"policyCheck/v1": "<hash>:<n>"}``. The hash
is of the finding's baseline fingerprint: rule, module, scope, subject, and no line. ``n``
numbers the results of one fingerprint in report order. So code scanning follows an alert
when lines move above it.

Every rule carries its ``help``: what ``policy-check explain`` prints, as text and Markdown.
It also carries a ``helpUri`` to its entry in the docs."""

from __future__ import annotations

import json
from collections import Counter
from urllib.parse import quote

from .. import __version__
from ..rules.registry import ALL_IDS
from .options import Options
from .rule_help import explanation, help_uri, markdown, page_uri

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT = "policyCheck/v1"  # the partialFingerprints key; bump when the hash changes meaning


def _location(path: str, line=None, column=None) -> dict:
    if path.startswith("/"):  # a baseline outside the project
        artifact = {"uri": "file://" + quote(path)}
    else:
        artifact = {"uri": quote(path), "uriBaseId": "%SRCROOT%"}
    physical = {"artifactLocation": artifact}
    if line is not None:
        physical["region"] = {"startLine": line, "startColumn": column}
    return {"physicalLocation": physical}


def _rule(rule_id: str, name: str) -> dict:
    rule = ALL_IDS.get(rule_id)
    described = {
        "id": rule_id,
        "name": name,
        "shortDescription": {"text": rule.summary if rule is not None else name},
        "helpUri": help_uri(rule_id),
        "defaultConfiguration": {"level": "error"},
    }
    if rule is not None:
        described["help"] = {"text": explanation(rule), "markdown": markdown(rule)}
    return described


def sarif(result, rule_names: dict, options: Options = Options()) -> str:
    from ..engine.baseline import digest  # only a run pays for it, not `policy-check rules`

    ids = sorted(rule_names)
    index = {rule: n for n, rule in enumerate(ids)}
    seen = Counter()

    def fingerprinted(item: dict, fp) -> dict:
        if fp is not None:
            seen[fp] += 1
            item["partialFingerprints"] = {FINGERPRINT: f"{digest(fp)}:{seen[fp]}"}
        return item

    def found(f, fp, state=None) -> dict:
        item = {
            "ruleId": f.rule,
            "ruleIndex": index.get(f.rule, 0),
            "level": "error",
            "message": {"text": f.message},
            "locations": [_location(f.path, f.line, f.column)],
        }
        if state is not None:
            item["baselineState"] = state
        return fingerprinted(item, fp)

    def prints(findings, fingerprints) -> list:
        return list(fingerprints) if fingerprints is not None else [None] * len(findings)

    with_baseline = result.baseline is not None
    results = [found(f, fp, "new" if with_baseline else None)
               for f, fp in zip(result.findings, prints(result.findings, result.fingerprints))]
    for h in result.hidden:  # --policy-from: what the policy change hides, and why
        item = found(h.finding, h.fingerprint, "new" if with_baseline else None)
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
    if with_baseline and options.sarif_suppressed:
        accepted = zip(result.baselined, prints(result.baselined, result.baselined_fingerprints or None))
        for f, fp in accepted:
            item = found(f, fp, "unchanged")
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
            results.extend(fingerprinted(dict(item), fp) for _ in range(count))
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "policy-check",
                        "version": __version__,
                        "informationUri": page_uri(),
                        "rules": [_rule(rule, rule_names[rule]) for rule in ids],
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"
