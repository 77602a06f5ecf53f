"""benchmarks/audit_speed.py compares the audit's AUD001 findings with the static EXP001
findings as two sets of core lines, and says why each line found by one only is there."""

from __future__ import annotations

from ..benchmark_modules import load_benchmark


def _finding(rule: str, path: str, line: int, message: str) -> dict:
    return {"rule": rule, "path": path, "line": line, "message": message}


AUDIT = [
    _finding("AUD001", "flashinfer/a.py", 3, "core code loads experimental flashinfer.experimental.x.k: chain"),
    _finding("AUD001", "flashinfer/b.py", 5, "core code loads experimental flashinfer.experimental.y: chain"),
    _finding("AUD000", "flashinfer/c.py", 1, "flashinfer.c not audited: importing it raised NameError: name 'n'"),
]
STATIC = [
    _finding("EXP001", "flashinfer/a.py", 3, "core module imports flashinfer.experimental.x.k at module level"),
    _finding("EXP001", "flashinfer/c.py", 2, "core module imports flashinfer.experimental.z at module level"),
    _finding("EXP001", "flashinfer/d.py", 7, "core module imports flashinfer.experimental.w at module level"),
]


def test_two_sets_that_differ_are_explained_line_by_line(capsys):
    figures = load_benchmark("audit_speed")._compare(AUDIT, STATIC)
    out = capsys.readouterr().out
    assert figures["aud001_equals_exp001"] is False
    assert (figures["aud001_lines"], figures["exp001_lines"], figures["lines_in_both"]) == (2, 3, 1)
    assert "the sets differ (1 in both, 2 static only, 1 audit only)" in out
    assert "both flashinfer/a.py:3: flashinfer.experimental.x.k" in out
    assert ("static only flashinfer/c.py:2: flashinfer.experimental.z: its module was not audited "
            "(importing it raised NameError: name 'n')") in out
    assert "static only flashinfer/d.py:7: flashinfer.experimental.w: its module imported without loading" in out
    assert "audit only flashinfer/b.py:5: flashinfer.experimental.y: a route the static rule does not follow" in out


def test_equal_sets_are_said_to_be_equal(capsys):
    figures = load_benchmark("audit_speed")._compare(AUDIT[:1], STATIC[:1])
    assert figures["aud001_equals_exp001"] is True
    assert "AUD001 lines 1, static EXP001 lines 1: the sets are equal" in capsys.readouterr().out
