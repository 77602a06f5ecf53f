"""The note that closes a removed feature's tracking issue (the guide's removal path
ends there): which issue, what went, and where the person fills in the change that
removed it. The command prints it; ``policy-check bot note`` posts it (the lifecycle
commands sit below the bot and never talk to GitHub)."""

from __future__ import annotations

from ...model import markers
from ...model import records as feature_records
from .model import Feature, Removal

CHANGE_PLACEHOLDER = "<commit or PR>"


def how_to_post(feature_dir) -> str:
    """The bot command that posts the note (the checker itself never talks to GitHub)."""
    record_path = feature_dir / markers.RECORD
    record = feature_records.read(record_path) if record_path.is_file() else None
    if record is None or record.tracking is None:
        return "post it when the change lands"
    repo = record.tracking.repo or "OWNER/NAME"
    return (f"fill in {CHANGE_PLACEHOLDER} once the change lands, then post it with `GITHUB_TOKEN=... "
            f"policy-check bot note --repo {repo} --issue {record.tracking.number} --body-file NOTE`")


def closing_note(removal: Removal, feature: Feature, feature_dir) -> str:
    """``Close #N: feature X removed in <commit or PR>.`` and what went; without a
    tracking issue in the record, what a person does instead."""
    record_path = feature_dir / markers.RECORD
    record = feature_records.read(record_path) if record_path.is_file() else None
    if record is None or record.tracking is None:
        where = f"{feature.directory}/{markers.RECORD}"
        return (f"{where} names no tracking issue: close the issue that tracked {feature.name} by hand, "
                f"naming {CHANGE_PLACEHOLDER} that removed it")
    went = [item for item in removal.removed if not item.startswith("backend ")]
    backends = [item for item in removal.removed if item.startswith("backend ")]
    lines = [f"Close {record.tracking.render('')}: feature {feature.name} removed in {CHANGE_PLACEHOLDER}."]
    lines.append(f"Removed: {feature.directory}/" + (f" and its tests {feature.tests}/" if feature.tests else ""))
    lines += [f"- {item}" for item in went]
    lines += [f"- {item}" for item in backends]
    return "\n".join(lines)
