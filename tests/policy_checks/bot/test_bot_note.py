"""``policy-check bot note``: the closing note ``policy-check remove`` prints is posted on
the tracking issue as one comment through the bot's client (the fake GitHub of
conftest.py), never with the change left unnamed, and the issue stays open."""

from __future__ import annotations

NOTE = "Close #7: feature feat removed in abc1234.\nRemoved: fxpkg/experimental/feat/\n- fxpkg.ops.fancy\n"


def test_the_note_is_posted_once_on_the_tracking_issue(bot_cli, github_api, tmp_path):
    number = github_api.add_issue("acme/widgets", "tracks feat", number=7)
    note = tmp_path / "note.md"
    note.write_text(NOTE)
    result = bot_cli("note", "--repo", "acme/widgets", "--issue", "7", "--body-file", str(note))
    assert result.exit_code == 0, result.output
    assert "posted: " in result.output
    comments = github_api.comments_by("acme/widgets", number)
    assert [c["body"] for c in comments] == [NOTE.strip()]
    assert github_api.repo("acme/widgets").issues[7]["state"] == "open"


def test_a_note_that_does_not_name_the_change_is_refused_before_any_request(bot_cli, github_api, tmp_path):
    github_api.add_issue("acme/widgets", "tracks feat", number=7)
    note = tmp_path / "note.md"
    note.write_text(NOTE.replace("abc1234", "<commit or PR>"))
    before = len(github_api.requests)
    result = bot_cli("note", "--repo", "acme/widgets", "--issue", "7", "--body-file", str(note))
    assert result.exit_code == 2 and "name the change" in result.output
    assert len(github_api.requests) == before


def test_a_missing_issue_is_an_api_error_worded_for_the_log(bot_cli, github_api, tmp_path):
    github_api.repo("acme/widgets")
    note = tmp_path / "note.md"
    note.write_text(NOTE)
    result = bot_cli("note", "--repo", "acme/widgets", "--issue", "99", "--body-file", str(note))
    assert result.exit_code == 2
    assert "issue #99" in result.output and 99 not in github_api.repo("acme/widgets").comments
