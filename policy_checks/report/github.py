"""GitHub Actions workflow commands: one ``::error`` annotation per finding."""

from __future__ import annotations


def _escape(value: str, property_value: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property_value:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def github(result, rule_names: dict, statistics: bool = False) -> str:
    lines = []
    for f in result.findings:
        title = _escape(f"{f.rule} {rule_names.get(f.rule, '')}".strip(), True)
        lines.append(
            f"::error file={_escape(f.path, True)},line={f.line},col={f.column},title={title}::"
            f"{_escape(f'{f.rule} {f.message}')}"
        )
    return "\n".join(lines) + ("\n" if lines else "")
