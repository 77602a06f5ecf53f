"""Property: the EXP001 fix changes exactly the moved import's line and the inserted
lines; every other byte (comments, blank lines, quoting, indentation, LF/CRLF) stays."""

from __future__ import annotations

import ast

import libcst as cst
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_checks.model.config import Settings
from policy_checks.fix.apply import plan
from policy_checks.fix.findings import Finding, FixTarget

NOISE = st.sampled_from(
    [
        "",
        "# a comment with 'quotes' and \"more\"",
        "X = 'single'",
        'Y = "double"  # trailing',
        "Z = '''tri\nple'''",
        "W = (\n    1,  # inside\n)",
        "if True:\n    pass  # nested",
        "\f",
    ]
)
IMPORT = "from .experimental.feat.kernels import run"


def _fxpkg(root) -> FixTarget:
    return FixTarget(root, Settings(package="fxpkg", experimental_package="fxpkg.experimental"))


def _block(lines, newline):
    return "".join(line.replace("\n", newline) + newline for line in lines)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.lists(NOISE, max_size=4),
    between=st.lists(NOISE, max_size=4),
    after=st.lists(NOISE, max_size=4),
    newline=st.sampled_from(["\n", "\r\n"]),
    indent=st.sampled_from(["    ", "  ", "\t"]),
    body_comment=st.booleans(),
    import_comment=st.sampled_from(["", "  # experimental"]),
)
def test_only_the_moved_import_and_the_inserted_lines_change(tmp_path, before, between, after, newline, indent, body_comment, import_comment):
    head = _block(["from .api_logging import flashinfer_api", *before], newline)
    middle = _block(["", *between, "", "@flashinfer_api", "def api(x):"], newline)
    body = (f"{indent}# body comment{newline}" if body_comment else "") + f"{indent}return run(x){newline}"
    tail = _block(["", *after], newline)
    source = head + IMPORT + import_comment + newline + middle + body + tail
    (tmp_path / "fxpkg").mkdir(exist_ok=True)
    (tmp_path / "fxpkg/core.py").write_bytes(source.encode())

    line = head.count(newline) + 1
    (result,) = plan(_fxpkg(tmp_path), [Finding(rule="EXP001", path="fxpkg/core.py", line=line, column=1, message="")])

    if cst.parse_module(source).code != source:  # a libcst round-trip gap: hands off
        assert not result.changed and result.left[0][1].startswith("libcst does not reproduce this file")
        return
    assert result.left == []
    moved = f"{indent}{IMPORT}{newline}{newline}"
    assert result.after.decode() == head + middle + moved + body + tail
    ast.parse(result.after)


def test_a_file_libcst_cannot_print_back_unchanged_is_not_touched(tmp_path):
    source = IMPORT + "\n\n\n@flashinfer_api\ndef api(x):\n    return run(x)\n\n\f\n"
    (tmp_path / "fxpkg").mkdir()
    (tmp_path / "fxpkg/core.py").write_text(source)
    (result,) = plan(_fxpkg(tmp_path), [Finding(rule="EXP001", path="fxpkg/core.py", line=1, column=1, message="")])
    assert not result.changed
    assert [r for _, r in result.left] == ["libcst does not reproduce this file byte for byte; fix it by hand"]
