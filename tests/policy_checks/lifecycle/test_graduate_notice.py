"""``policy-check graduate`` drops an API's ``@experimental_notice(...)`` (what type checkers
report) with its experimental marker, and the notice's import once nothing else uses it."""

from __future__ import annotations

import textwrap

from .test_graduate import API_FEATURE, graduate

NOTICE = "\n\ndef experimental_notice(message, /):\n    return lambda func: func\n"


def _with_notice(ops: str, imports: str) -> str:
    return textwrap.dedent(ops).replace(
        "from .api_logging import flashinfer_api, flashinfer_experimental_api\n", imports
    ).replace(
        '@flashinfer_experimental_api(feature="feat", trace=None)\n',
        '@experimental_notice("fancy is experimental")\n@flashinfer_experimental_api(feature="feat", trace=None)\n',
    )


def _graduated_ops(tree, imports: str, extra: str = "") -> str:
    files = dict(API_FEATURE)
    files["fxpkg/ops.py"] = _with_notice(files["fxpkg/ops.py"], imports) + extra
    tree.write(files)
    logging = tree.read("fxpkg/api_logging.py").decode()
    (tree.root / "fxpkg/api_logging.py").write_text(logging + NOTICE)
    result = graduate(tree, "feat", "--to", "fxpkg.fancy_ops")
    assert result.exit_code == 0, result.output
    return tree.read("fxpkg/ops.py").decode()


def test_the_notice_goes_with_the_marker(tree):
    ops = _graduated_ops(tree, "from .api_logging import experimental_notice, flashinfer_api, flashinfer_experimental_api\n")
    assert "experimental_notice" not in ops
    assert "from .api_logging import flashinfer_api\n" in ops
    assert "@flashinfer_api(trace=None)\ndef fancy(x):" in ops
    assert tree.imported("fxpkg").fancy(1) == 2


def test_a_notice_imported_apart_and_still_used_elsewhere_stays(tree):
    extra = '\n\n@experimental_notice("other is experimental")\ndef other(x):\n    return x\n'
    ops = _graduated_ops(tree, "from .api_logging import flashinfer_api, flashinfer_experimental_api\n"
                               "from .api_logging import experimental_notice\n", extra)
    assert "from .api_logging import experimental_notice\n" in ops
    assert "@experimental_notice(\"fancy" not in ops and '@experimental_notice("other is experimental")' in ops
