"""The pure judgement of policy weakenings (``policy_checks/bot/policy_weakening.py``): no network."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from policy_checks.bot import policy_weakening as pw
from policy_checks.bot.baseline_diff import baseline_texts_change, read_baseline_text
from policy_checks.bot.parsers import parse_policy_approvals
from policy_checks.bot.revisions import FileAtRevisions
from policy_checks.rules.exp008 import CONFIG_FILES

SECTION = "[tool.policy-check]\n"


def f(path: str, base: str | None, head: str | None) -> FileAtRevisions:
    return FileAtRevisions(path, base, head)


def test_pytest_is_searched_in_the_checkers_order():
    assert pw.PYTEST_FILES == CONFIG_FILES


def test_the_checkers_own_reading_of_settings_decides():
    settings, why = pw.settings_at(SECTION + 'extend-exclude = ["a"]\nexclude = ["b"]\n')
    assert why is None and settings.exclude == ("b", "a")
    assert pw.settings_at(None)[0] is not None  # no pyproject: the defaults
    assert pw.settings_at("tool = 1\n")[1] == "[tool] is not a table"
    assert "experimental-package" in pw.settings_at(SECTION + 'experimental-package = "elsewhere.x"\n')[1]


def test_a_rule_ignored_that_no_rule_matches_changes_nothing_the_checker_does():
    base = SECTION + 'ignore = ["EXP00"]\n'
    assert pw.settings_weakenings(f("pyproject.toml", base, base + 'select = ["EXP", "SUP"]\n')) == []
    lost = pw.settings_weakenings(f("pyproject.toml", SECTION, SECTION + 'ignore = ["SUP002"]\n'))
    assert [w.text for w in lost] == ["`[tool.policy-check]` stops checking `SUP002` (`select`, `ignore`)"]


def test_a_base_the_checker_refused_is_judged_as_the_defaults():
    assert pw.settings_weakenings(f("pyproject.toml", SECTION + "ignore = [", SECTION)) == []


def test_keys_are_stable_and_name_what_changed():
    one = pw.settings_weakenings(f("pyproject.toml", SECTION, SECTION + 'ignore = ["EXP001"]\n'))
    again = pw.settings_weakenings(f("pyproject.toml", "# other\n" + SECTION, SECTION + 'ignore = ["EXP001"]\n'))
    more = pw.settings_weakenings(f("pyproject.toml", SECTION, SECTION + 'ignore = ["EXP001", "EXP002"]\n'))
    assert [w.key for w in one] == [w.key for w in again] != [w.key for w in more]


def test_the_pytest_configuration_pytest_uses():
    ini = "[pytest]\nnorecursedirs = a tests/experimental\n"
    assert pw.pytest_config({"pytest.ini": ini, "tox.ini": "[pytest]\nnorecursedirs = x\n"}).name == "pytest.ini"
    assert pw.pytest_config({"pytest.toml": "", "pytest.ini": ini}).name == "pytest.toml"  # pytest's even empty
    assert pw.pytest_config({"tox.ini": "[other]\n", "setup.cfg": "[tool:pytest]\naddopts = -q\n"}).settings == {
        "addopts": ("-q",)}
    toml = '[tool.pytest.ini_options]\nnorecursedirs = ["a", "tests/experimental"]\n'
    assert pw.pytest_config({"pyproject.toml": toml}).settings == pw.pytest_config({"pytest.ini": ini}).settings
    assert pw.pytest_config({"pyproject.toml": "[tool.ruff]\n"}).name is None


def test_the_same_settings_moved_to_another_file_are_no_weakening():
    files = {name: f(name, None, None) for name in (*pw.PYTEST_FILES, pw.ROOT_CONFTEST)}
    files["pytest.ini"] = f("pytest.ini", "[pytest]\nnorecursedirs = tests/experimental\n", None)
    files["tox.ini"] = f("tox.ini", None, "[pytest]\nnorecursedirs = tests/experimental\ntimeout = 5\n")
    assert pw.pytest_weakenings(files) == []


def test_suppressions_are_read_as_the_checker_reads_them():
    base = "x = 1\n"
    head = 'x = 1\ny = "# policy: ignore[EXP001] in a string"\nz = 2  # policy: ignore[EXP001] real\n' \
           "w = 3  # policy: ignore\n"  # names no rule: it suppresses nothing
    [found] = pw.suppression_weakenings([f("flashinfer/a.py", base, head)])
    assert found.text == "`flashinfer/a.py` adds the suppression `policy: ignore[EXP001] real`"
    assert pw.suppression_weakenings([f("docs/api/a.rst", "", ".. policy: ignore[EXP006] x\n")])
    assert pw.suppression_weakenings([f("README.txt", "", "# policy: ignore[EXP006] x\n")]) == []  # not read


def test_the_baseline_is_read_as_the_checker_reads_it():
    doc = '{\n  "policy-check-baseline": 1,\n  "entries": [\n    {"rule": "EXP001", "module": "m", "scope": "", ' \
          '"subject": "s", "count": 2}\n  ]\n}\n'
    assert read_baseline_text(doc).counts == {("EXP001", "m", "", "s"): 2}
    assert read_baseline_text(doc.replace('"count": 2', '"count": 2, "x": 1')).problem.startswith("entry 1")
    twice = doc.replace("2}\n", '2},\n    {"rule": "EXP001", "module": "m", "scope": "", "subject": "s", "count": 1}\n')
    assert read_baseline_text(twice).problem == "entry 2 repeats an earlier entry"
    change = baseline_texts_change(None, doc, lambda module: None)
    assert change.adopted and change.delta.added[0].count == 2


def test_approval_records_round_trip_and_only_hex_keys_count():
    keys = [pw.key_of("a"), pw.key_of("b")]
    lines = pw.record_lines(keys, {keys[0]: "maintainer"})
    record = pw.read_record("\n".join(["x", *lines, "<!-- experimental-track-bot:policy-approved evil ZZZ -->"]))
    assert record.approved == {keys[0]: "maintainer"} and record.shown == frozenset(keys)
    assert record.shown_digest == pw.set_digest(keys)


def level(login: str, association=None) -> str:
    return {"maintainer": "maintain", "reader": "read"}.get(login, "none")


def test_decide_counts_writers_who_are_not_the_author():
    items = [pw.Weakening(pw.SETTINGS, "x", pw.key_of("x"))]
    digest = pw.set_digest(pw.approval_keys(items))
    decision = pw.decide(items, pw.Record(), [pw.Command("reader", None, digest),
                                              pw.Command("maintainer", None, digest)], level, "mallory")
    assert decision.pending == [] and decision.approvers == ["maintainer"] and len(decision.notes) == 1
    assert pw.decide(items, pw.Record(), [pw.Command("maintainer", None, digest)], level, "maintainer").pending


def test_very_many_weakenings_are_approved_as_one_set():
    items = [pw.Weakening(pw.BASELINE, str(i), pw.key_of(i)) for i in range(pw.MAX_RECORDED_KEYS + 1)]
    assert len(pw.approval_keys(items)) == 1
    assert pw.approval_keys(items) != pw.approval_keys(items[:-1] + [pw.Weakening(pw.BASELINE, "y", pw.key_of("y"))])


def test_the_command_parser_is_linear():
    assert parse_policy_approvals("> /experimental-track approve-policy 0123456789abcdef") == []  # a quote
    for text in (" " * 65_000 + "x", "/experimental-track approve-policy " + "a" * 65_000,
                 "\n/experimental-track \t" * 3_000):
        start = time.perf_counter()
        parse_policy_approvals(text)
        assert time.perf_counter() - start < 0.5


policy_text = st.one_of(st.text(max_size=200), st.lists(st.sampled_from([
    "[tool.policy-check]\n", "[pytest]\n", "[tool.pytest.ini_options]\n", "ignore = ", "[", "]", '"EXP"', "\n",
    "norecursedirs = ", "{", "}", '"entries": ', "# policy: ignore[EXP001] x", '"', "=", "1", "\x00", "\r",
    "[" * 5000, "a = " + "{b=" * 3000, "def pytest_ignore_collect(p, config):\n    return False\n",
    "steps:\n  - run: pytest tests/ -o norecursedirs=.git -c x.ini\n", "PYTEST_ADDOPTS: ", "  - ", "'"]),
    max_size=30).map("".join))


@settings(max_examples=150, deadline=None)
@given(base=st.one_of(st.none(), policy_text), head=st.one_of(st.none(), policy_text))
def test_any_texts_are_judged_without_an_exception(base, head):
    paths = [*pw.PYTEST_PATHS, pw.ROOT_CONFTEST, "policy-check-baseline.json", ".github/CODEOWNERS", "a.py",
             "tests/conftest.py", ".github/workflows/tests.yml"]
    listed = [pw.Changed(path, "modified") for path in paths]
    files = {path: f(path, base, head) for path in paths}
    change = baseline_texts_change(base, head, lambda module: None)
    for weakening in pw.weakenings(listed, files, change, "0" * 40):
        assert len(weakening.key) == 16 and "\n" not in weakening.text


def test_a_recorded_approval_holds_only_while_its_comment_and_its_authors_access_do():
    items = [pw.Weakening(pw.SETTINGS, "x", pw.key_of("x"))]
    keys = pw.approval_keys(items)
    record = pw.read_record("\n".join(pw.record_lines(keys, {keys[0]: "maintainer"}, {keys[0]: 7})))
    assert record.sources == {keys[0]: 7}
    live = pw.Command("maintainer", None, "0" * 16, comment_id=7)
    assert pw.decide(items, record, [live], level, "mallory").pending == []
    assert pw.decide(items, record, [], level, "mallory").pending == keys  # the comment is gone
    edited = pw.Command("maintainer", None, "0" * 16, comment_id=7, edited=True)
    decision = pw.decide(items, record, [edited], level, "mallory")
    assert decision.pending == keys and any("was edited" in note for note in decision.notes)
    assert pw.decide(items, record, [live], lambda login, association=None: "read", "mallory").pending == keys
    unknown = pw.decide(items, record, [live], lambda login, association=None: "unknown", "mallory")
    assert unknown.pending == keys and any("could not read their permission" in note for note in unknown.notes)
