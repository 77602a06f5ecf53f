"""GitHub Actions workflow commands for a run's findings.

- One ``::error`` annotation per finding. With a baseline, it is one per new finding.
- With ``--policy-from``, also one per finding the policy change hides, with what hid it.
  Once approved, it is a ``::warning``.
- One ``::notice``, only when there is something to do beyond the findings. That is
  baseline entries that no finding uses: prune them."""

from __future__ import annotations

from .options import Options
from .text import fixed_line


def _escape(value: str, property_value: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property_value:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def github(result, rule_names: dict, options: Options = Options()) -> str:
    lines = []
    for f in result.findings:
        title = _escape(f"{f.rule} {rule_names.get(f.rule, '')}".strip(), True)
        lines.append(
            f"::error file={_escape(f.path, True)},line={f.line},col={f.column},title={title}::"
            f"{_escape(f'{f.rule} {f.message}')}"
        )
    for h in result.hidden:  # --policy-from: an error each, a warning once a maintainer approved
        f = h.finding
        level = "warning" if result.approved else "error"
        title = _escape(f"{f.rule} {rule_names.get(f.rule, '')} (hidden by a policy change)".replace("  ", " "), True)
        message = f"{f.rule} {f.message}; hidden by this pull request's policy change: {h.reason}"
        lines.append(
            f"::{level} file={_escape(f.path, True)},line={f.line},col={f.column},title={title}::{_escape(message)}"
        )
    fixed = fixed_line(result) if result.baseline is not None else ""
    if fixed:
        notice = f"policy-check: {len(result.findings)} new finding(s), {len(result.baselined)} baselined in {result.baseline}"
        lines.append(f"::notice title=policy-check baseline::{_escape(notice + '; ' + fixed)}")
    return "\n".join(lines) + ("\n" if lines else "")
