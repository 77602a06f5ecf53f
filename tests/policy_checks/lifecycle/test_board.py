"""``policy-check features``: the board of the experimental track, in each format."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt

from policy_checks.lifecycle import board
from policy_checks.cli import main
from policy_checks.model.records import parse

from ..conftest import write_tree

PYPROJECT = '[tool.policy-check]\npackage = "acme"\nexperimental-package = "acme.labs"\n'
TODAY = "2026-11-27"


def record(owner: str = "octocat", admitted: str = "2026-11-01", target: str = "2026-11-20", kind: str = "backend",
           extra: str = "") -> str:
    return (f'kind = "{kind}"\nowner = "{owner}"\ntracking_issue = 12\nadmitted = {admitted}\n'
            f'target_release = "0.8.0"\ntarget_date = {target}\napis = []\nbackends = ["mm_bf16:splitk"]\n'
            f"auto_routing = true\n{extra}")


README = "# x\n## What is experimental\n## Supported cases and limits\n## Gates\n## Automatic routing\n"
FIELDS = ["kind", "owner", "tracking_issue", "admitted", "target_release", "target_date", "apis", "backends",
          "auto_routing"]
README_PARTS = ["README.md: what is experimental", "README.md: supported cases and limits", "README.md: gates",
                "README.md: automatic routing"]


@pytest.fixture
def tree(tmp_path):
    return write_tree(tmp_path / "project", {
        "pyproject.toml": PYPROJECT,
        "acme/__init__.py": "",
        "acme/labs/__init__.py": "",
        "acme/labs/late/FEATURE.toml": record(admitted="2026-10-25", target="2026-11-20"),
        "acme/labs/late/README.md": README,
        "acme/labs/soon/FEATURE.toml": record(admitted="2026-11-10", target="2026-12-01"),
        "acme/labs/soon/README.md": README,
        "acme/labs/fine/FEATURE.toml": record(admitted="2026-11-25", target="2026-12-20"),
        "acme/labs/fine/README.md": README,
        "acme/labs/default_deadline/FEATURE.toml": record().replace("target_date = 2026-11-20\n", ""),
        "acme/labs/default_deadline/README.md": README,
        "acme/labs/bare/__init__.py": "",
        "acme/labs/bare/README.md": "# no record\n## Gates\n",
        "acme/labs/docs_only/README.md": README,  # no code, no record: not a feature
        "acme/labs/_private/FEATURE.toml": record(),  # not a feature directory
        "acme/labs/.hidden/FEATURE.toml": record(),
        "acme/labs/module.py": "",
    })


def invoke(*args: str) -> str:
    result = CliRunner().invoke(main, ["features", *args])
    assert result.exit_code == 0, result.output
    return result.output


def board_json(*args: str) -> list:
    """The features of ``features --format json``, after checking its version."""
    document = json.loads(invoke(*args, "--format", "json"))
    assert document["version"] == 1 and set(document) == {"version", "features"}
    return document["features"]


def test_json_lists_every_feature_directory_with_its_deadline(tree):
    rows = board_json("--root", str(tree), "--today", TODAY)
    by_name = {r["feature"]: r for r in rows}
    assert [r["feature"] for r in rows] == ["bare", "default_deadline", "fine", "late", "soon"]
    assert list(rows[0]) == ["feature", "kind", "owner", "tracking_issue", "admitted", "target_release", "target_date",
                             "deadline", "days_left", "status", "auto_routing", "apis", "backends", "lacks", "problems"]
    late = by_name["late"]
    assert late == {"feature": "late", "kind": "backend", "owner": "octocat", "tracking_issue": "#12",
                    "admitted": "2026-10-25", "target_release": "0.8.0", "target_date": "2026-11-20",
                    "deadline": "2026-11-20", "days_left": -7, "status": "overdue", "auto_routing": True, "apis": [],
                    "backends": ["mm_bf16:splitk"], "lacks": [], "problems": []}
    assert (by_name["soon"]["days_left"], by_name["soon"]["status"]) == (4, "due within 7 days")
    assert (by_name["fine"]["days_left"], by_name["fine"]["status"]) == (23, "on track")
    # Without a target date the deadline is the end of the admission window, and the record lacks it.
    default = by_name["default_deadline"]
    assert default["target_date"] is None and default["deadline"] == "2026-11-29" and default["days_left"] == 2
    assert default["lacks"] == ["target_date"]
    bare = by_name["bare"]
    # No record: the record and each of its fields; and the README parts no heading names.
    assert bare["lacks"] == ["FEATURE.toml", *FIELDS, *(p for p in README_PARTS if not p.endswith("gates"))]
    assert bare["status"] is None and bare["days_left"] is None
    assert "FEATURE.toml is missing: add acme/labs/bare/FEATURE.toml" in bare["problems"][0]


def test_days_are_counted_from_today(tree):
    rows = board_json("--root", str(tree), "--today", "2026-11-20")
    late = next(r for r in rows if r["feature"] == "late")
    assert (late["days_left"], late["status"]) == (0, "due within 7 days")


def test_text_is_an_aligned_table(tree):
    out = invoke("--root", str(tree), "--today", TODAY)
    lines = out.splitlines()
    assert lines[0].split() == list(board.TEXT_COLUMNS)
    assert lines[-1] == "5 features: 1 overdue, 2 due within 7 days, 1 on track, 2 with an incomplete record"
    table = lines[:6]
    # Every column starts at the same offset on every line.
    for column in ("KIND", "DEADLINE", "LEFT", "LACKS"):
        start = lines[0].index(column)
        assert all(line[start - 2:start] == "  " and line[start] != " " for line in table), column
    late = next(line for line in table if line.startswith("late "))
    assert late.split() == ["late", "backend", "octocat", "#12", "2026-10-25", "2026-11-20", "7", "days", "overdue",
                            "overdue", "yes", "none", "mm_bf16:splitk", "-"]
    bare = next(line for line in table if line.startswith("bare "))
    # a missing FEATURE.toml stands for its fields in the table
    assert bare[lines[0].index("LACKS"):] == ("FEATURE.toml,README.md: what is experimental,README.md: supported "
                                              "cases and limits,README.md: automatic routing")


def test_incomplete_and_invalid_records_say_what_they_lack(tmp_path):
    root = write_tree(tmp_path / "p", {
        "pyproject.toml": PYPROJECT,
        "acme/labs/partial/FEATURE.toml": 'kind = "api"\nowner = "not a login"\napis = []\n',
        "acme/labs/broken/FEATURE.toml": "kind = \n",
        "acme/labs/wide/FEATURE.toml": record(admitted="2026-10-01", target="2026-12-20"),
    })
    rows = {r["feature"]: r for r in board_json("--root", str(root), "--today", TODAY)}
    assert rows["partial"]["lacks"] == ["owner", "tracking_issue", "admitted", "target_release", "target_date",
                                        "apis", "backends", "auto_routing", "README.md", *README_PARTS]
    assert rows["broken"]["lacks"] == ["FEATURE.toml", *FIELDS, "README.md", *README_PARTS]
    assert "not valid TOML" in rows["broken"]["problems"][0]
    assert rows["wide"]["lacks"][0] == "target_date"  # set, but past the admission window


def test_no_experimental_package_is_an_empty_board(tmp_path):
    root = write_tree(tmp_path / "p", {"pyproject.toml": PYPROJECT})
    assert invoke("--root", str(root)) == "No experimental features: no experimental package (acme/labs) in this tree.\n"
    assert board_json("--root", str(root)) == []


def test_unreadable_settings_exit_2(tmp_path):
    root = write_tree(tmp_path / "p", {"pyproject.toml": '[tool.policy-check]\nbogus = 1\n'})
    result = CliRunner().invoke(main, ["features", "--root", str(root)])
    assert result.exit_code == 2 and "unknown key 'bogus'" in result.output


def test_the_installed_command_runs_without_the_bot(tree):
    """A subprocess, as users run it: exit 0, and neither PyGithub nor the bot's network code is loaded."""
    code = (
        "import sys\n"
        "from policy_checks.cli import main\n"
        "try:\n"
        f"    main(['features', '--root', {str(tree)!r}, '--today', {TODAY!r}])\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "loaded = [m for m in sys.modules if m == 'github' or m.startswith(('github.', 'policy_checks.bot.'))]\n"
        "assert loaded == [], loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "1 overdue" in done.stdout


# --- Markdown: a GitHub table that input cannot break -------------------------------------

_parser = MarkdownIt("commonmark").enable("table")
HOSTILE = "a|b `c`` @everyone <details><summary>x</summary>\n| d |\n\n# heading"


def table_cells(markdown: str) -> list[list[str]]:
    """The rows of the one table in ``markdown``, each a list of its cells' inline source."""
    tokens = _parser.parse(markdown)
    assert sum(t.type == "table_open" for t in tokens) == 1, markdown
    assert not any(t.type in ("html_block", "heading_open") for t in tokens), markdown
    found, cells = [], None
    for token in tokens:
        if token.type == "tr_open":
            cells = []
        elif token.type == "inline" and cells is not None:
            assert not any(c.type in ("html_inline", "link_open") for c in token.children or []), token.content
            cells.append(token)
        elif token.type == "tr_close":
            found.append(cells)
            cells = None
    return found


def test_markdown_is_one_table_with_a_row_per_feature(tree):
    out = invoke("--root", str(tree), "--format", "markdown", "--today", TODAY)
    rows = table_cells(out)
    assert len(rows) == 6 and all(len(r) == len(board.MARKDOWN_COLUMNS) for r in rows)
    assert [c.content for c in rows[0]] == list(board.MARKDOWN_COLUMNS)
    late = next(r for r in rows if r[0].content == "`late`")
    assert [c.content for c in late] == ["`late`", "`backend`", "`octocat`", "`#12`", "2026-10-25", "2026-11-20",
                                         "7 days overdue", "overdue", "yes", "none", "`mm_bf16:splitk`", "—"]


def hostile_record(value: str):
    text = record(extra="").replace('target_release = "0.8.0"', f"target_release = {json.dumps(value)}")
    return parse("feat|" + value, text)  # a directory name may hold a newline too


@pytest.mark.parametrize("value", [HOSTILE, "`", "``x``", "@octocat", "| | |", "<img src=x>", "line\nbreak", "\\|"])
def test_hostile_values_stay_inside_their_cells(value):
    rec = hostile_record(value)
    rows = board.rows([rec], dt.date(2026, 11, 27), issue_states={rec.name: value})
    out = board.render_markdown(rows)
    cells = table_cells(out)
    assert len(cells) == 2 and all(len(r) == len(board.MARKDOWN_COLUMNS) + 1 for r in cells)
    feature, issue_state = cells[1][0], cells[1][4]
    for cell in (feature, issue_state):
        # The whole cell is one code span: the input shows literally, nothing in it is live.
        assert [c.type for c in cell.children] == ["code_inline"], cell.children
    flat = " ".join(value.split())
    assert issue_state.children[0].content.replace("\u200d", "") == flat
    assert "feat|" in feature.children[0].content
    assert "@everyone" not in out and "@octocat" not in out  # mentions carry a zero-width joiner


def test_the_record_parser_is_reused_not_repeated(tree):
    """The board shows what `policy_checks.model.records` reads: the same record, the same problems."""
    path = tree / "acme/labs/default_deadline/FEATURE.toml"
    rec = parse("default_deadline", path.read_text())
    (row,) = board.rows([rec], dt.date(2026, 11, 27))
    assert row.problems == rec.problems and row.deadline == rec.deadline


SHIM = ('"""Moved to `acme.done` when done graduated."""\n\nimport importlib as _importlib\nimport warnings as _warnings\n\n'
        'from acme.done import *  # noqa: F401,F403\n\n__graduated_to__ = "acme.done"\n\n'
        '_warnings.warn("acme.labs.done moved to acme.done", DeprecationWarning, stacklevel=2)\n\n\n'
        'def __getattr__(name):\n    return getattr(_importlib.import_module("acme.done"), name)\n')


def test_only_a_pure_shim_leaves_the_board(tmp_path):
    """A graduated feature's pure re-export shim is no feature; a directory that binds
    ``__graduated_to__`` but holds anything else stays on the board, saying so."""
    root = write_tree(tmp_path / "p", {
        "pyproject.toml": PYPROJECT,
        "acme/labs/__init__.py": "",
        "acme/labs/done/__init__.py": SHIM,
        "acme/labs/faked/__init__.py": SHIM.replace("acme.done", "acme.faked"),
        "acme/labs/faked/FEATURE.toml": record(),
        "acme/labs/extra/__init__.py": SHIM.replace("acme.done", "acme.extra"),
        "acme/labs/extra/fast.py": "from acme.labs import experimental_backend\n",
    })
    rows = {r["feature"]: r for r in board_json("--root", str(root), "--today", TODAY)}
    assert sorted(rows) == ["extra", "faked"]
    assert rows["faked"]["problems"] == [
        "the directory binds __graduated_to__ but the shim holds other code (it holds FEATURE.toml, which is not a "
        "re-export module): it is still a feature"]
    assert rows["extra"]["lacks"] == ["FEATURE.toml", *FIELDS, "README.md", *README_PARTS]
    assert "the shim holds other code (fast.py line 1: imports from acme.labs" in rows["extra"]["problems"][1]


def test_output_format_and_output_file_spell_as_for_run(tree, tmp_path):
    out = tmp_path / "board.json"
    assert invoke("--root", str(tree), "--output-format", "json", "-o", str(out), "--today", TODAY) == ""
    assert json.loads(out.read_text()) == json.loads(invoke("--root", str(tree), "--format", "json", "--today", TODAY))
