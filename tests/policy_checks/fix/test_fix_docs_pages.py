"""EXP006 fix: experimental entries leave the API pages; the rest stays byte for byte."""

from __future__ import annotations

import pytest

from policy_checks.fix.docs_pages import rewrite
from policy_checks.fix.findings import Finding

PAGE = """\
.. _api-gemm:

GEMM
====

.. currentmodule:: flashinfer

.. autosummary::
   :toctree: ../generated
   :nosignatures:

   mm_bf16
   mm_experimental
   rmsnorm

Experimental
------------

.. autosummary::
   :toctree: ../generated

   only_experimental
   also_experimental

.. autofunction:: flashinfer.experimental.feat.run
   :noindex:

.. autoclass:: Stable
   :members:

Trailing paragraph.
"""


def _finding(line: int) -> Finding:
    return Finding(rule="EXP006", path="docs/api/gemm.rst", line=line, column=1, message="test")


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_entries_directives_and_emptied_blocks_go_and_nothing_else_changes(newline):
    page = PAGE.replace("\n", newline).encode()
    after, fixed, left = rewrite(page, [_finding(13), _finding(22), _finding(23), _finding(25)])
    assert left == [] and len(fixed) == 4
    expected = PAGE.replace("   mm_experimental\n", "").replace(
        ".. autosummary::\n   :toctree: ../generated\n\n   only_experimental\n   also_experimental\n\n", ""
    ).replace(".. autofunction:: flashinfer.experimental.feat.run\n   :noindex:\n\n", "")
    assert after == expected.replace("\n", newline).encode()


def test_a_block_keeps_its_remaining_entries_and_options():
    after, fixed, left = rewrite(PAGE.encode(), [_finding(22)])
    assert after == PAGE.replace("   only_experimental\n", "").encode()


def test_a_directive_at_the_end_of_the_page_takes_the_blank_line_before_it():
    page = b"Title\n=====\n\n.. autofunction:: gone\n   :noindex:\n"
    after, fixed, left = rewrite(page, [_finding(4)])
    assert after == b"Title\n=====\n"


def test_lines_that_are_not_entries_are_left_for_a_person():
    after, fixed, left = rewrite(PAGE.encode(), [_finding(3), _finding(99)])
    assert after == PAGE.encode() and fixed == []
    assert [r for _, r in left] == [
        "the line is neither an autosummary entry nor an auto* directive",
        "the page has no line 99",
    ]
