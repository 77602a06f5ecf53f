"""The documentation builds with Sphinx, warnings as errors, every reference resolving
(nitpicky), and says what it must."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("numpydoc")
from sphinx.cmd.build import build_main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def build(source: Path, out: Path) -> None:
    status = build_main(
        ["-W", "--keep-going", "-n", "-q", "-b", "html", "-d", str(out / ".doctrees"), str(source), str(out)]
    )
    assert status == 0, "sphinx-build reported warnings, errors or unresolved references (see the captured output)"


@pytest.fixture(scope="module")
def built_docs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html")
    build(DOCS, out)
    return out


def test_docs_build_without_warnings(built_docs):
    assert (built_docs / "index.html").exists()
    assert (built_docs / "experimental.html").exists()


def test_every_api_page_is_in_the_build(built_docs):
    pages = sorted(p.stem for p in (DOCS / "api").glob("*.rst"))
    index = (built_docs / "index.html").read_text()
    for page in pages:
        assert (built_docs / "api" / f"{page}.html").exists()
        assert f'href="api/{page}.html"' in index


def test_experimental_page_covers_the_contract(built_docs):
    text = (DOCS / "experimental.rst").read_text()
    for needle in [
        "FLASHINFER_ALLOW_EXPERIMENTAL_AUTO_BACKENDS=1",
        "Calling an experimental API",
        "Naming an experimental backend",
        "Behaviour at a glance",
        "JIT only",
        "Admission",
        "Review",
        "Containment",
        "graduation",
        "Removal",
        "Dispatch, autotuning and trace-apply by gate state",
    ]:
        assert needle in text, needle
    assert re.findall(r"EXP00\d", text) and {f"EXP00{i}" for i in range(10)} <= set(
        re.findall(r"EXP00\d", text)
    )
    html = (built_docs / "experimental.html").read_text()
    assert "flashinfer.api_logging.flashinfer_experimental_api" in html  # autodoc ran
    assert html.count("<table") >= 3  # the kinds, the behaviour and the rule tables


def test_experimental_banner_renders_through_autodoc_and_numpydoc(tmp_path):
    """The banner of an experimental API keeps its numpydoc sections in real Sphinx."""
    pkg = tmp_path / "src"
    pkg.mkdir()
    (pkg / "banner_probe.py").write_text(
        textwrap.dedent(
            '''
            from flashinfer.api_logging import flashinfer_experimental_api

            @flashinfer_experimental_api(feature="probe_op")
            def probe_op(x, y):
                """Add two numbers.

                Parameters
                ----------
                x : int
                    The first number.
                y : int
                    The second number.

                Returns
                -------
                int
                    The sum.
                """
                return x + y
            '''
        )
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "conf.py").write_text(
        "import sys\n"
        f"sys.path[:0] = [{str(pkg)!r}, {str(ROOT)!r}]\n"
        "extensions = ['sphinx.ext.autodoc', 'numpydoc']\n"
        "numpydoc_show_class_members = False\n"
    )
    (docs / "index.rst").write_text("Probe\n=====\n\n.. autofunction:: banner_probe.probe_op\n")
    out = tmp_path / "html"
    build(docs, out)
    html = (out / "index.html").read_text()
    assert 'class="admonition warning"' in html
    assert "probe_op</span></code> is experimental" in html
    # numpydoc turned Parameters and Returns into field lists, not quoted text
    assert re.search(r'<dl class="field-list[^"]*">', html)
    assert re.search(r"<dt class=\"field-\w+\">Parameters", html)
    assert re.search(r"<dt class=\"field-\w+\">Returns", html)
    assert "<blockquote>" not in html
