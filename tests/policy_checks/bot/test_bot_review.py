"""``policy-check bot review`` against the fake GitHub API: classification, comments, labels, budgets."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from policy_checks.bot.review import REVIEW_MARKER_PREFIX, review_marker

REPO = "acme/widgets"
TODAY = "2026-11-27"  # ISO week 2026-W48
CYCLE = "2026-W48"


def issue_body(owner: str, release: str, target: str) -> str:
    return (f"### Owner\n\n@{owner}\n\n### Use case\n\nServing.\n\n### Why experimental\n\nNew kernel.\n\n"
            f"### Graduation plan\n\nTarget release: {release}\nTarget date: {target}\n")


def add_feature(g, name: str, *, owner: str = "octocat", admitted: str = "2026-11-10", target: str = "2026-12-05",
                release: str = "0.8.0", issue_target: str | None = None, issue_owner: str | None = None,
                state: str = "open") -> int:
    number = g.add_issue(REPO, issue_body(issue_owner or owner, release, issue_target or target), state=state)
    g.repo(REPO).files[f"flashinfer/experimental/{name}/FEATURE.toml"] = (
        f'kind = "backend"\nowner = "{owner}"\ntracking_issue = {number}\nadmitted = {admitted}\n'
        f'target_release = "{release}"\ntarget_date = {target}\napis = []\nbackends = ["mm:{name}"]\n'
        "auto_routing = true\n")
    g.repo(REPO).files[f"flashinfer/experimental/{name}/README.md"] = "# x\n"
    return number


@pytest.fixture
def g(github_api):
    github_api.add_collaborator(REPO, "octocat", "write")
    github_api.add_collaborator(REPO, "maint", "admin")
    github_api.add_user("outsider", "gone-dev")
    github_api.repo(REPO).files["flashinfer/experimental/__init__.py"] = ""
    return github_api


def review(bot_cli, *extra: str, env=None):
    result = bot_cli("review", "--repo", REPO, "--today", TODAY, "--json", *extra, env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if "--dry-run" not in extra else result


def states(report) -> dict[str, list[str]]:
    return {f["feature"]: f["states"] for f in report["features"]}


def review_comments(g, number: int) -> list[dict]:
    return [c for c in g.comments_by(REPO, number) if c["body"].startswith(REVIEW_MARKER_PREFIX)]


def test_classification(g, bot_cli):
    on_track = add_feature(g, "on_track", admitted="2026-11-25", target="2026-12-20")
    soon = add_feature(g, "soon", target="2026-12-01")
    overdue = add_feature(g, "late", admitted="2026-10-25", target="2026-11-20")
    extended = add_feature(g, "extended", admitted="2026-10-25", target="2026-11-20")
    g.add_comment(REPO, extended, "/experimental extend 2 waiting for CUTLASS", "maint")
    add_feature(g, "orphan", owner="gone-dev")
    closed = add_feature(g, "closed", state="closed")
    add_feature(g, "disagree", issue_target="2026-12-06", issue_owner="maint")
    removed = g.add_issue(REPO, issue_body("octocat", "0.7.0", "2026-11-01"))
    g.add_comment(REPO, removed, review_marker("old_feature", "2026-W40") + "\nreview", g.bot_login)
    pending = g.add_issue(REPO, issue_body("octocat", "0.9.0", "2026-12-20"))  # admitted later: not reported
    g.repo(REPO).files["flashinfer/experimental/no_record/README.md"] = "# x\n"

    report = review(bot_cli)
    got = states(report)
    assert got["on_track"] == ["on track"]
    assert got["soon"] == ["due within 7 days"]
    assert got["late"] == ["overdue"]
    assert got["extended"] == ["due within 7 days", "extended"]
    assert got["orphan"][0] == "orphaned"
    assert got["closed"][0] == "tracking issue closed, code still there"
    assert "record and issue disagree" in got["disagree"]
    assert got["old_feature"] == ["code removed, tracking issue still open"]
    assert "record or issue incomplete" in got["no_record"]
    assert not any(f["tracking_issue"] == f"#{pending}" for f in report["features"])
    by_name = {f["feature"]: f for f in report["features"]}
    assert by_name["late"]["deadline"] == "2026-11-20" and by_name["late"]["days_left"] == -7
    assert by_name["extended"]["deadline"] == "2026-12-04"
    disagreement = " ".join(by_name["disagree"]["problems"])
    assert "owner `octocat` in the record, `maint` in the issue" in disagreement and "target date" in disagreement

    # One review comment per tracking issue, and the overdue label.
    for number in (soon, overdue, extended, closed, removed):
        assert len(review_comments(g, number)) == (2 if number == removed else 1)
    assert review_comments(g, on_track) == []  # nothing to say: the summary lists it
    late_comment = review_comments(g, overdue)[0]["body"]
    assert late_comment.startswith(review_marker("late", CYCLE))
    assert "**Graduation due:** 2026-11-20 (7 days overdue)" in late_comment
    assert "graduation-overdue" in g.labels_of(REPO, overdue)
    assert "graduation-overdue" not in g.labels_of(REPO, soon)
    assert "please close this issue (the bot never closes issues)" in review_comments(g, removed)[-1]["body"]
    # Never closes an issue.
    assert g.repo(REPO).issues[removed]["state"] == "open"
    assert g.count("PATCH", r"/issues/\d+$") == 0


def test_rerun_changes_nothing_and_a_new_cycle_posts_anew(g, bot_cli):
    number = add_feature(g, "late", admitted="2026-10-25", target="2026-11-20")
    review(bot_cli)
    g.requests.clear()
    review(bot_cli)
    assert g.writes() == []
    result = bot_cli("review", "--repo", REPO, "--today", "2026-11-28", "--json")  # same cycle, next day
    assert result.exit_code == 0
    assert g.count("PATCH", r"/issues/comments/") == 1 and len(review_comments(g, number)) == 1
    assert "(8 days overdue)" in review_comments(g, number)[0]["body"]
    assert bot_cli("review", "--repo", REPO, "--today", "2026-12-01").exit_code == 0  # next week
    assert len(review_comments(g, number)) == 2


def test_extensions_need_write_permission_and_repeats_are_flagged(g, bot_cli):
    number = add_feature(g, "late", admitted="2026-10-25", target="2026-11-20")
    g.add_comment(REPO, number, "/experimental extend 4 please", "outsider")
    g.add_comment(REPO, number, "/experimental extend 1 Waiting for CUTLASS.", "maint")
    g.add_comment(REPO, number, "/experimental extend 1 waiting for cutlass", "octocat")
    report = review(bot_cli)
    [feature] = report["features"]
    assert feature["deadline"] == "2026-12-04"  # 2 accepted weeks
    notes = [(e["author"], e["accepted"], e["note"]) for e in feature["extensions"]]
    assert notes[0][:2] == ("outsider", False) and "write permission" in notes[0][2]
    assert notes[1] == ("maint", True, "")
    assert notes[2][:2] == ("octocat", True) and "repeats the previous" in notes[2][2]
    assert "graduation-overdue" not in g.labels_of(REPO, number)


def test_extension_removes_the_overdue_label(g, bot_cli):
    number = add_feature(g, "late", admitted="2026-10-25", target="2026-11-20")
    review(bot_cli)
    assert "graduation-overdue" in g.labels_of(REPO, number)
    g.add_comment(REPO, number, "/experimental extend 3 blocked on driver release", "maint")
    review(bot_cli)
    assert "graduation-overdue" not in g.labels_of(REPO, number)


def test_dry_run_makes_no_writes(g, bot_cli):
    add_feature(g, "late", admitted="2026-10-25", target="2026-11-20")
    result = review(bot_cli, "--dry-run")
    assert g.writes() == []
    assert "[dry-run] would create a bot comment on #1" in result.output
    assert "[dry-run] would add the label `graduation-overdue` to #1" in result.output


def test_max_writes_leaves_the_rest_for_the_next_run(g, bot_cli, tmp_path):
    for i in range(3):
        add_feature(g, f"f{i}", admitted="2026-10-25", target="2026-11-20")
    summary = tmp_path / "summary.md"
    report = review(bot_cli, "--max-writes", "2", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert len(g.writes()) == 2
    left = [w["write"] for w in report["writes"] if w["outcome"] == "left"]
    assert len(left) == 4
    text = summary.read_text()
    assert "Left for the next run (write budget spent)" in text and "| `f2` | `#3` | `octocat` |" in text
    g.requests.clear()
    review(bot_cli)  # the next run finishes the job
    assert len(g.writes()) == 4


def test_markdown_output_and_user_text_escaping(g, bot_cli):
    number = add_feature(g, "x", release="0.8.0 @everyone")
    result = bot_cli("review", "--repo", REPO, "--today", TODAY)
    assert result.exit_code == 0
    assert "| `x` | `#1` | `octocat` | 2026-12-05 (8 days left) | record and issue disagree, on track |" in result.output
    assert "target release `0.8.0 @\u200deveryone` in the record" in result.output
    body = review_comments(g, number)[0]["body"]
    assert "@everyone" not in body and "@\u200deveryone" in body


def test_no_experimental_package(github_api, bot_cli):
    github_api.repo(REPO)
    report = review(bot_cli)
    assert report["features"] == []


def test_missing_tracking_issue_is_reported(g, bot_cli):
    add_feature(g, "x")
    g.repo(REPO).files["flashinfer/experimental/x/FEATURE.toml"] = g.repo(REPO).files[
        "flashinfer/experimental/x/FEATURE.toml"].replace("tracking_issue = 1", "tracking_issue = 99")
    report = review(bot_cli)
    assert "does not exist" in report["features"][0]["problems"][-1]


def test_review_of_50_features_stays_within_3_requests_each(g, bot_cli):
    today = dt.date.fromisoformat(TODAY)
    for i in range(50):
        target = today + dt.timedelta(days=i - 20)  # overdue, due soon and on track
        number = add_feature(g, f"feature{i:02d}", admitted=str(target - dt.timedelta(days=27)), target=str(target))
        if i % 3 == 0:
            g.add_comment(REPO, number, "Progress: numerics validated.", "octocat")
        if i % 10 == 0:
            g.add_comment(REPO, number, f"/experimental extend 1 reason {i}", "maint")
    g.requests.clear()
    review(bot_cli)
    first = len(g.requests)
    g.requests.clear()
    review(bot_cli)
    rerun = len(g.requests)
    assert g.writes() == []
    g.requests.clear()
    assert bot_cli("review", "--repo", REPO, "--today", "2026-12-01").exit_code == 0
    next_cycle = len(g.requests)
    print(f"review of 50 features: first run {first}, unchanged re-run {rerun}, next cycle {next_cycle} requests")
    assert first <= 150 and rerun <= 150 and next_cycle <= 150


def test_review_worst_case_stays_within_3_requests_per_feature(g, bot_cli):
    """50 features all overdue on the bot's first review: every thread busy, none labelled yet,
    half the tracking issues outside the `experimental` label and five in another repository."""
    for i in range(50):
        number = add_feature(g, f"feature{i:02d}", admitted="2026-10-20", target="2026-11-17")
        issue = g.repo(REPO).issues[number]
        if i % 2:
            issue["labels"] = []  # not found by the labelled listing
        if i < 5:  # tracked in another repository instead
            other = g.add_issue("acme/roadmap", issue["body"], number=100 + i)
            path = f"flashinfer/experimental/feature{i:02d}/FEATURE.toml"
            g.repo(REPO).files[path] = g.repo(REPO).files[path].replace(
                f"tracking_issue = {number}", f'tracking_issue = "acme/roadmap#{other}"')
            number, repo = other, "acme/roadmap"
        else:
            repo = REPO
        g.add_comment(repo, number, "Still working on it.", "octocat")
        g.add_comment(repo, number, "/experimental extend 4 please", "outsider")  # refused
    g.requests.clear()
    report = review(bot_cli, "--tracking-repo", "acme/roadmap")
    reads, writes = len(g.requests) - len(g.writes()), len(g.writes())
    print(f"review of 50 overdue features, first review: {reads} reads + {writes} writes")
    assert all(f["states"] == ["overdue"] for f in report["features"]), report["features"]
    assert writes == 100  # a review comment and the graduation-overdue label each
    assert reads + writes <= 3 * 50
    assert reads <= 3  # the bulk read, the issues outside the label, the bot's login

    g.requests.clear()
    assert bot_cli("review", "--repo", REPO, "--today", "2026-12-01",
                   env={"TRACKING_REPOS": "acme/roadmap"}).exit_code == 0  # next cycle
    reads, writes = len(g.requests) - len(g.writes()), len(g.writes())
    print(f"review of 50 overdue features, next cycle: {reads} reads + {writes} writes")
    assert writes == 50 and reads + writes <= 3 * 50  # one new review comment each; the label stays


def test_unreadable_permissions_do_not_stop_the_review(g, bot_cli):
    number = add_feature(g, "late", owner="gone-dev", admitted="2026-10-25", target="2026-11-20")
    g.add_comment(REPO, number, "/experimental extend 2 blocked", "maint")
    g.collaborators_forbidden = True  # the token lacks push access
    report = review(bot_cli)
    [feature] = report["features"]
    assert feature["states"] == ["overdue"]  # not called orphaned: it cannot be told
    assert feature["extensions"][0]["accepted"] is False
    assert "could not read permissions" in feature["extensions"][0]["note"]
    assert "orphan checks were skipped" in report["notes"][0]


def test_a_copied_review_marker_neither_forces_nor_suppresses_a_comment(g, bot_cli):
    """Only the bot's own comments carry its per-cycle marker: anyone else's copy is just text."""
    quiet = add_feature(g, "quiet", admitted="2026-11-25", target="2026-12-20")  # on track: no comment due
    late = add_feature(g, "late", admitted="2026-10-25", target="2026-11-20")  # overdue: a comment due
    for number, name in ((quiet, "quiet"), (late, "late")):
        g.add_comment(REPO, number, review_marker(name, CYCLE) + "\nforged", "outsider")
    report = review(bot_cli)
    assert states(report) == {"quiet": ["on track"], "late": ["overdue"]}
    assert review_comments(g, quiet) == [c for c in review_comments(g, quiet) if c["user"]["login"] == "outsider"]
    assert len(g.comments_by(REPO, quiet)) == 0  # not forced
    [ours] = g.comments_by(REPO, late)  # not suppressed
    assert "overdue" in ours["body"]


def test_step_summary_holds_the_feature_board_with_issue_states(g, bot_cli, tmp_path):
    """The board of `policy-check features`, built from the records the review read, with each
    tracking issue's state as a column, lands in $GITHUB_STEP_SUMMARY."""
    from markdown_it import MarkdownIt

    add_feature(g, "late", admitted="2026-10-25", target="2026-11-20")
    add_feature(g, "closed", state="closed")
    g.repo(REPO).files["flashinfer/experimental/no_record/README.md"] = "# x\n"
    summary = tmp_path / "summary.md"
    review(bot_cli, env={"GITHUB_STEP_SUMMARY": str(summary)})
    text = summary.read_text()
    board = text[text.index("### Feature records"):]
    assert "3 features: 1 overdue, 0 due within 7 days, 1 on track, 1 with an incomplete record" in board
    assert "| feature | kind | owner | tracking issue | issue state | admitted | deadline |" in board
    assert ("| `late` | `backend` | `octocat` | `#1` | `open` | 2026-10-25 | 2026-11-20 | 7 days overdue | overdue "
            "| yes | none | `mm:late` | — |") in board
    assert "| `closed` | `backend` | `octocat` | `#2` | `closed` |" in board
    assert "| `no_record` | — | — | — | `none` |" in board and board.rstrip().endswith("`FEATURE.toml` |")
    tokens = MarkdownIt("commonmark").enable("table").parse(board)
    assert sum(t.type == "table_open" for t in tokens) == 1
    assert sum(t.type == "tr_open" for t in tokens) == 4  # the header and three features


def test_a_record_tracked_in_an_unlisted_repository_is_not_read(g, bot_cli):
    """As in the PR check, another repository's issue counts only when the workflow lists it."""
    add_feature(g, "x")
    other = g.add_issue("evil/repo", issue_body("octocat", "0.8.0", "2026-12-05"), number=7)
    path = "flashinfer/experimental/x/FEATURE.toml"
    g.repo(REPO).files[path] = g.repo(REPO).files[path].replace("tracking_issue = 1", f'tracking_issue = "evil/repo#{other}"')
    [feature] = review(bot_cli)["features"]
    assert "`evil/repo#7` is in another repository" in feature["problems"][-1]
    assert "record or issue incomplete" in feature["states"]
    assert all(not any(k.startswith("o") and v == "evil" for k, v in variables.items())
               for _, variables in g.graphql_log)  # never asked for
    [feature] = review(bot_cli, "--tracking-repo", "evil/repo")["features"]
    assert not any("another repository" in p for p in feature["problems"])
