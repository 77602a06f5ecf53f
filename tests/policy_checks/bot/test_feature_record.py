"""The feature record (``policy_checks/model/records.py``): one reading of FEATURE.toml for the checker and the bot.

EXP009 and the bot used to validate records with copies of the same patterns, and the
copies disagreed (``my_org/repo#3`` passed EXP009 and failed the bot, ``org/repo#0`` the
other way round). Each case here is run through both, which must agree, and the field
rules are pinned one by one.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_checks.model import records as features
from policy_checks.bot.markdown import ZWJ
from policy_checks.bot.parsers import parse_feature_toml, parse_pr_body, parse_tracking_ref
from policy_checks.model.records import LOGIN_RE, TrackingRef, parse, parse_cross_repo_ref
from policy_checks.model.window import ADMISSION_WINDOW, WINDOW_IN_WORDS

RECORD = (
    'kind = "backend"\nowner = "octocat"\ntracking_issue = 123\nadmitted = 2026-11-02\n'
    'target_release = "0.8.0"\ntarget_date = 2026-11-30\napis = []\nbackends = ["mm_bf16:splitk"]\n'
    "auto_routing = true\n"
)
README = "# x\n## What is experimental\n## Supported cases and limits\n## Gates\n## Automatic routing\n"
TOML_PATH = "flashinfer/experimental/feat/FEATURE.toml"


def with_line(key: str, line: str) -> str:
    """RECORD with the line of ``key`` replaced (or removed, for an empty ``line``)."""
    lines = [(line if text.split("=")[0].strip() == key else text) for text in RECORD.splitlines()]
    return "\n".join(part for part in lines if part) + "\n"


def exp009_messages(check, toml: str) -> list[str]:
    """What EXP009 reports about FEATURE.toml in a tree that is otherwise complete (an unpacked wheel)."""
    result = check({
        "flashinfer/__init__.py": "",
        "flashinfer/experimental/__init__.py": "",
        "flashinfer/experimental/feat/__init__.py": "",
        "flashinfer/experimental/feat/README.md": README,
        TOML_PATH: toml,
    }, {"select": ["EXP009"]})
    return [f.message for f in result.findings if f.path == TOML_PATH]


# ----- the cases the two copies disagreed on, and their neighbours --------------------------------

TRACKING_CASES = [
    # (tracking_issue value, the reference, or None when it is refused)
    ('"my_org/repo#3"', None),  # owners (logins) never hold "_": used to pass EXP009
    ('"org/repo#0"', None),  # no issue has the number 0: used to pass the bot
    ("0", None),
    ("-4", None),
    ("1000000000", None),  # ten digits: no issue reference of GitHub's has them
    ("true", None),
    ('"12"', None),
    ('"#12"', None),
    ('"org/repo#12 "', None),  # no stray blanks in a record
    ('"-org/repo#12"', None),
    ('"org-/repo#12"', None),
    ('"o--rg/repo#12"', None),
    ('"org/.#12"', None),
    ('"org/..#12"', None),
    ('"org/re po#12"', None),
    (f'"org/{"r" * 101}#12"', None),
    (f'"{"o" * 40}/repo#12"', None),
    ('"org/repo#1234567890"', None),
    ('"org/repo#١٢"', None),  # digits, but not ASCII ones
    ("12", TrackingRef(12)),
    ("999999999", TrackingRef(999999999)),
    ('"acme/gizmo#5"', TrackingRef(5, "acme/gizmo")),
    ('"acme/my_repo.v2#5"', TrackingRef(5, "acme/my_repo.v2")),  # names may hold "_" and "."
    (f'"{"o" * 39}/{"r" * 100}#5"', TrackingRef(5, f"{'o' * 39}/{'r' * 100}")),
    ('"Flashinfer-AI/flashinfer#2100"', TrackingRef(2100, "Flashinfer-AI/flashinfer")),
]


@pytest.mark.parametrize("value, ref", TRACKING_CASES, ids=[value for value, _ in TRACKING_CASES])
def test_tracking_issue_rule_is_the_same_for_the_bot_and_exp009(check, value, ref):
    toml = with_line("tracking_issue", f"tracking_issue = {value}")
    record = parse_feature_toml("feat", toml)
    assert record.tracking == ref
    reported = exp009_messages(check, toml)
    if ref is None:
        assert [p for p in record.problems if "tracking_issue" in p], record.problems
        assert [m for m in reported if "tracking_issue" in m], reported
    else:
        assert record.problems == [] and reported == []


@pytest.mark.parametrize(
    "text, why",
    [
        ("my_org/repo#3", "no `_`"),
        ("org/repo#0", "issue numbers start at 1"),
        ("org/.#3", "repository name"),
        ("org/repo#x", "not a number"),
        ("org/repo#1234567890", "at most nine digits"),
        ("org#3", 'not of the form "owner/repo#N"'),
    ],
)
def test_a_refused_reference_says_which_part_is_wrong(text, why):
    ref, problem = parse_cross_repo_ref(text)
    assert ref is None and why in problem
    assert text not in problem  # worded without echoing the input


@pytest.mark.parametrize(
    "text",
    ["#0", "GH-0", "acme/gizmo#0", "https://github.com/acme/gizmo/issues/0", "my_org/repo#3", "#000"],
)
def test_pr_bodies_refuse_the_same_references(text):
    assert parse_tracking_ref(text) == (None, None)
    body = f"## Experimental Track\n- [x] experimental\nTracking issue: {text}\n"
    assert parse_pr_body(body).tracking is None


def test_pr_bodies_and_records_agree_on_cross_repository_references():
    for text in ("acme/gizmo#5", "acme/my_repo.v2#5", "Flashinfer-AI/flashinfer#2100"):
        assert parse_tracking_ref(text)[0] == parse_cross_repo_ref(text)[0] is not None


# ----- every other field ------------------------------------------------------------------------

FIELD_CASES = [
    # (key, line, accepted)
    ("owner", 'owner = "@octocat"', True),
    ("owner", 'owner = "a"', True),
    ("owner", f'owner = "{"a" * 39}"', True),
    ("owner", 'owner = "octo-cat-9"', True),
    ("owner", f'owner = "{"a" * 40}"', False),
    ("owner", 'owner = "-octocat"', False),
    ("owner", 'owner = "octocat-"', False),
    ("owner", 'owner = "octo--cat"', False),
    ("owner", 'owner = "octo_cat"', False),
    ("owner", 'owner = "octo.cat"', False),
    ("owner", 'owner = " octocat"', False),
    ("owner", 'owner = "octocat\\n"', False),
    ("owner", 'owner = "@@octocat"', False),
    ("owner", 'owner = "ｏctocat"', False),  # a fullwidth letter
    ("owner", "owner = 7", False),
    ("kind", 'kind = "Backend"', False),
    ("kind", 'kind = "kernel"', False),
    ("kind", 'kind = ["backend"]', False),
    ("admitted", "admitted = 2026-11-02T10:00:00", False),
    ("admitted", 'admitted = "2026-11-02"', False),
    ("admitted", "admitted = 10:00:00", False),
    ("target_date", "target_date = 2026-11-30T00:00:00Z", False),
    ("target_release", 'target_release = "0.8.0rc1"', True),
    ("target_release", 'target_release = "0.8.0.post1"', True),
    ("target_release", 'target_release = "10.20.30+cu124"', True),
    ("target_release", 'target_release = "0.8"', False),
    ("target_release", 'target_release = "v0.8.0"', False),
    ("target_release", 'target_release = "0.8.0 beta"', False),
    ("target_release", 'target_release = "٠.٨.٠"', False),
    ("target_release", "target_release = 0.8", False),
    ("apis", 'apis = ["flashinfer.gemm.mm_bf16"]', True),
    ("apis", 'apis = ["flashinfer"]', False),
    ("apis", 'apis = ["flashinfer..x"]', False),
    ("apis", "apis = [1]", False),
    ("apis", 'apis = "flashinfer.x"', False),
    ("backends", 'backends = ["mm_bf16:splitk", "mm:a.b-c"]', True),
    ("backends", 'backends = ["splitk"]', False),
    ("backends", "backends = []", False),  # kind "backend" needs one
    ("auto_routing", "auto_routing = false", True),
    ("auto_routing", 'auto_routing = "yes"', False),
    ("auto_routing", "auto_routing = 1", False),
]


@pytest.mark.parametrize("key, line, accepted", FIELD_CASES, ids=[line for _, line, _ in FIELD_CASES])
def test_field_rules_are_the_same_for_the_bot_and_exp009(check, key, line, accepted):
    toml = with_line(key, line)
    record = parse_feature_toml("feat", toml)
    reported = exp009_messages(check, toml)
    if accepted:
        assert record.problems == [] and reported == []
    else:
        assert any(p.key == key for p in record.problems), record.problems
        assert len(reported) == len(record.problems) >= 1


@pytest.mark.parametrize("key", ["kind", "owner", "tracking_issue", "admitted", "target_release", "target_date",
                                 "apis", "backends", "auto_routing"])
def test_a_missing_field_says_what_to_write(key):
    record = parse("feat", with_line(key, ""))
    [problem] = record.problems
    assert problem.startswith(f"FEATURE.toml has no `{key}`: add `{key} = ")
    assert problem.key == key and problem.line == 1


@pytest.mark.parametrize(
    "days, problem",
    [(0, None), (ADMISSION_WINDOW.days, None), (ADMISSION_WINDOW.days + 1, f"more than {WINDOW_IN_WORDS} after"),
     (-1, "is before `admitted`")],
)
def test_target_date_lies_in_the_admission_window(check, days, problem):
    target = dt.date(2026, 11, 2) + dt.timedelta(days=days)
    toml = with_line("target_date", f"target_date = {target}")
    problems = parse("feat", toml).problems
    if problem is None:
        assert problems == [] and exp009_messages(check, toml) == []
    else:
        assert len(problems) == 1 and problem in problems[0] and problems[0].line == 6
        assert exp009_messages(check, toml) == problems


def test_each_kind_needs_its_entries():
    problems = parse("feat", with_line("kind", 'kind = "api"')).problems
    assert problems == ['FEATURE.toml: a feature of kind "api" needs at least one entry in `apis`']
    both = with_line("kind", 'kind = "both"')
    assert [p.key for p in parse("feat", both).problems] == ["apis"]
    assert parse("feat", both.replace("apis = []", 'apis = ["flashinfer.mm_bf16"]')).problems == []


def test_the_record_reads_every_field():
    record = parse("splitk", RECORD.replace('owner = "octocat"', 'owner = "@octocat"'))
    assert record == features.FeatureRecord(
        name="splitk", kind="backend", owner="octocat", tracking=TrackingRef(123), admitted=dt.date(2026, 11, 2),
        target_release="0.8.0", target_date=dt.date(2026, 11, 30), apis=(), backends=("mm_bf16:splitk",),
        auto_routing=True)
    assert record.deadline == dt.date(2026, 11, 30)
    undated = parse("splitk", with_line("target_date", ""))
    assert undated.target_date is None and undated.deadline == dt.date(2026, 11, 2) + ADMISSION_WINDOW


def test_exp009_points_at_the_line_of_the_field(check):
    toml = with_line("owner", 'owner = "not a login"')
    result = check({
        "flashinfer/__init__.py": "", "flashinfer/experimental/__init__.py": "",
        "flashinfer/experimental/feat/__init__.py": "", "flashinfer/experimental/feat/README.md": README,
        TOML_PATH: toml,
    }, {"select": ["EXP009"]})
    [finding] = result.findings
    assert (finding.path, finding.line) == (TOML_PATH, 2)
    assert finding.message == "FEATURE.toml `owner` is not a GitHub login: 'not a login' (" + features.LOGIN_RULE + ")"


def test_exp009_reports_toml_that_python_refuses_instead_of_crashing(check):
    assert exp009_messages(check, "tracking_issue = " + "1" * 5000 + "\n") == [
        "FEATURE.toml is not valid TOML: a number is too long"]
    assert exp009_messages(check, "a = " + "[" * 5000 + "\n") == [
        "FEATURE.toml is not valid TOML: values are nested too deeply"]


def test_a_file_that_is_not_utf8_is_a_problem(tmp_path):
    path = tmp_path / "feat" / "FEATURE.toml"
    path.parent.mkdir()
    path.write_bytes(b'owner = "\xff"\n')
    record = features.read(path)
    assert record.name == "feat" and record.problems == ["FEATURE.toml cannot be read: it is not UTF-8 text"]
    assert features.read(tmp_path / "gone" / "FEATURE.toml").problems[0].startswith("FEATURE.toml cannot be read: ")


def test_the_bot_quotes_record_text_inertly():
    record = parse_feature_toml("feat", with_line("owner", 'owner = "@everyone [x](https://evil.example)"'))
    [problem] = record.problems
    assert "`@" + ZWJ + "everyone [x](https://evil.example)`" in problem


# ----- no problem echoes the file's text except through the quote function ------------------------

MARK = "Zq9mark"
hostile_value = st.text(max_size=20).map(lambda text: MARK + text)


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(["kind", "owner", "tracking_issue", "target_release", "apis", "backends", "admitted"]),
       value=hostile_value, in_list=st.booleans())
def test_problems_show_the_files_text_only_through_quote(key, value, in_list):
    literal = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    literal = "".join(c if c.isprintable() or c == " " else f"\\u{ord(c):04x}" for c in literal)
    toml = with_line(key, f"{key} = [{literal}]" if in_list else f"{key} = {literal}")
    record = parse("feat", toml, quote=lambda text: "<quoted>")
    assert not any(MARK in problem for problem in record.problems), record.problems
    assert record.owner is None or LOGIN_RE.match(record.owner)


# ----- linear time: the bot reads records as untrusted text ----------------------------------------

N = 65_000  # GitHub's largest body; no regex of the record may be quadratic on it
VALID_TOML_AIMED_AT_EACH_PATTERN = {
    "version digits": f'target_release = "1.1.{"1" * N} x"',
    "version suffix": f'target_release = "1.1.1{"a1" * (N // 2)} x"',
    "dotted path": f'apis = ["a{".a" * (N // 2)}."]',
    "api:backend": f'backends = ["{"a." * (N // 2)}"]',
    "api:backend tail": f'backends = ["a:{"-." * (N // 2)} "]',
    "login": f'owner = "{"a-" * (N // 2)}"',
    "owner/repo": f'tracking_issue = "{"a" * (N // 2)}/{"b" * (N // 2)}#x"',
    "owner/repo slashes": f'tracking_issue = "{"a/" * (N // 2)}#1"',
}


@pytest.mark.parametrize("text", list(VALID_TOML_AIMED_AT_EACH_PATTERN.values()),
                         ids=list(VALID_TOML_AIMED_AT_EACH_PATTERN))
def test_field_patterns_take_linear_time(text):
    import time

    start = time.perf_counter()
    record = parse_feature_toml("x", text)
    assert time.perf_counter() - start < 0.5  # a quadratic pattern takes seconds here
    assert record.problems
