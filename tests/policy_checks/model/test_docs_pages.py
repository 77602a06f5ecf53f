"""How EXP006 reads an .rst page."""

from __future__ import annotations

from policy_checks.rules.exp006 import listed_names


def test_autosummary_blocks_directives_and_currentmodule():
    page = (
        "Title\n=====\n\n"
        ".. currentmodule:: flashinfer.norm\n\n"
        ".. autosummary::\n"
        "    :toctree: generated\n"
        "    :nosignatures:\n\n"
        "    rmsnorm\n\n"
        "    ~flashinfer.gemm.mm\n"
        "    .. a comment\n"
        "Paragraph text mentioning fast_norm.\n\n"
        "  .. autosummary::\n\n"
        "     nested\n"
        "  end of nested block\n"
        ".. autoclass:: Wrapper\n   :members:\n"
        ".. py:currentmodule:: None\n"
        ".. autofunction:: flashinfer.fast(x, y)\n"
        ".. automodule:: flashinfer.experimental\n"
    )
    assert [entry[:4] for entry in listed_names(page)] == [
        (10, 5, "rmsnorm", "flashinfer.norm"),
        (12, 6, "flashinfer.gemm.mm", "flashinfer.norm"),
        (18, 6, "nested", "flashinfer.norm"),
        (20, 16, "Wrapper", "flashinfer.norm"),
        (23, 19, "flashinfer.fast", None),
        (24, 17, "flashinfer.experimental", None),
    ]


def test_directive_options_are_read():
    page = ".. automodule:: flashinfer.norm\n   :members: a, b\n   :exclude-members: c\n\n   text\n"
    ((line, column, name, current, options),) = listed_names(page)
    assert options == {"members": "a, b", "exclude-members": "c"}
