"""The markers and the gate of flashinfer/api_logging.py."""

from __future__ import annotations

import inspect
import logging
import threading
import warnings

import pytest
from docutils import nodes
from docutils.core import publish_doctree

from flashinfer import api_logging
from flashinfer.api_logging import (
    EXPERIMENTAL_AUTO_ENV_VAR,
    ExperimentalWarning,
    experimental_auto_backends_allowed,
    flashinfer_api,
    flashinfer_experimental_api,
    require_experimental_auto_backends,
    warn_experimental_backend_once,
)


def experimental_warnings(records) -> list:
    return [r for r in records if issubclass(r.category, ExperimentalWarning)]


# -- the gate ------------------------------------------------------------------------


def test_experimental_warning_is_a_user_warning():
    assert issubclass(ExperimentalWarning, UserWarning)


@pytest.mark.parametrize(
    "value, allowed",
    [("1", True), ("0", False), ("", False), ("true", False), (" 1", False), ("11", False)],
)
def test_gate_is_exactly_the_string_1(monkeypatch, value, allowed):
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, value)
    assert experimental_auto_backends_allowed() is allowed


def test_gate_is_read_on_every_call(monkeypatch):
    assert not experimental_auto_backends_allowed()
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    assert experimental_auto_backends_allowed()
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "0")
    assert not experimental_auto_backends_allowed()
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    monkeypatch.delenv(EXPERIMENTAL_AUTO_ENV_VAR)
    assert not experimental_auto_backends_allowed()


def test_require_experimental_auto_backends_raises_without_the_gate():
    with pytest.raises(RuntimeError) as excinfo:
        require_experimental_auto_backends("toy_mm -> fast")
    message = str(excinfo.value)
    assert "'toy_mm -> fast'" in message
    assert f"{EXPERIMENTAL_AUTO_ENV_VAR}=1" in message
    assert "backend=" in message


def test_require_experimental_auto_backends_passes_with_the_gate(gate_on):
    assert require_experimental_auto_backends("toy_mm -> fast") is None


# -- once-only warnings ------------------------------------------------------------


def test_backend_warning_once_per_api_backend_pair():
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        for _ in range(3):
            warn_experimental_backend_once("mm", "fast")
            warn_experimental_backend_once("mm", "other")
            warn_experimental_backend_once("bmm", "fast")
    messages = sorted(str(r.message) for r in experimental_warnings(records))
    assert len(messages) == 3
    assert any("'fast' selected for 'mm'" in m for m in messages)
    assert any("'other' selected for 'mm'" in m for m in messages)
    assert any("'fast' selected for 'bmm'" in m for m in messages)


def test_automatic_backend_warning_says_so():
    with pytest.warns(ExperimentalWarning, match="may be selected automatically for 'mm'"):
        warn_experimental_backend_once("mm", "fast", automatic=True)


def test_backend_warning_points_at_the_caller_of_the_caller():
    def api():  # stands for the API that calls warn_experimental_backend_once
        warn_experimental_backend_once("mm", "fast")

    with pytest.warns(ExperimentalWarning) as records:
        api()
    assert records[0].filename == __file__


def test_reset_forgets_emitted_warnings():
    with pytest.warns(ExperimentalWarning):
        warn_experimental_backend_once("mm", "fast")
    api_logging._reset_warnings_for_tests()
    with pytest.warns(ExperimentalWarning):
        warn_experimental_backend_once("mm", "fast")


def hammer(target, threads: int = 16) -> list:
    """Call ``target`` from many threads released at once; return the warnings."""
    barrier = threading.Barrier(threads)
    errors = []

    def run():
        try:
            barrier.wait()
            target()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        workers = [threading.Thread(target=run) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    assert not errors
    return experimental_warnings(records)


@pytest.mark.parametrize("round_", range(10))
def test_backend_warning_once_under_threads(round_):
    assert len(hammer(lambda: warn_experimental_backend_once("mm", "fast"))) == 1


@pytest.mark.parametrize("round_", range(10))
def test_experimental_api_warning_once_under_threads(round_):
    @flashinfer_experimental_api
    def new_op(x):
        return x + 1

    found = hammer(lambda: new_op(1))
    assert len(found) == 1
    assert "is an experimental FlashInfer API" in str(found[0].message)


# -- flashinfer_api ------------------------------------------------------------------


def test_flashinfer_api_bare_returns_the_function_marked():
    def op(x):
        return x * 2

    assert flashinfer_api(op) is op
    assert op.is_flashinfer_api is True
    assert op(3) == 6
    assert not hasattr(op, "trace")


def test_flashinfer_api_with_trace_registers_it():
    template = object()

    @flashinfer_api(trace=template)
    def traced_op(x):
        return x

    assert traced_op.trace is template
    key = f"{traced_op.__module__}.{traced_op.__qualname__}"
    assert api_logging.trace_registry()[key] == (traced_op, template)
    api_logging.trace_registry().clear()  # a copy: the registry itself is unchanged
    assert key in api_logging.trace_registry()


def test_flashinfer_api_logs_calls_when_asked(monkeypatch, caplog):
    monkeypatch.setenv(api_logging.LOGLEVEL_ENV_VAR, "1")

    @flashinfer_api
    def logged_op(x):
        """Doubles."""
        return x * 2

    assert logged_op.__doc__ == "Doubles."
    with caplog.at_level(logging.INFO, logger="flashinfer.api"):
        assert logged_op(2) == 4
    assert "FlashInfer API Call: " in caplog.text and "logged_op" in caplog.text


def test_flashinfer_api_ignores_a_bad_log_level(monkeypatch):
    monkeypatch.setenv(api_logging.LOGLEVEL_ENV_VAR, "verbose")

    def op():
        return 1

    assert flashinfer_api(op) is op


# -- flashinfer_experimental_api -------------------------------------------------------


def test_experimental_api_flags_and_feature():
    def original(x):
        return x + 1

    wrapper = flashinfer_experimental_api(original)
    assert wrapper is not original
    assert original.is_experimental is True and wrapper.is_experimental is True
    assert wrapper.experimental_feature == original.__qualname__
    assert wrapper.__wrapped__ is original
    assert wrapper.__name__ == "original"
    assert inspect.signature(wrapper) == inspect.signature(original)


def test_experimental_api_with_arguments():
    template = object()

    @flashinfer_experimental_api(trace=template, feature="fused_thing")
    def fused(x):
        return x

    assert fused.experimental_feature == "fused_thing"
    assert fused.is_flashinfer_api is True
    assert fused.__wrapped__.trace is template
    with pytest.warns(ExperimentalWarning, match="'fused_thing' is an experimental"):
        assert fused(5) == 5


@pytest.mark.parametrize("feature", ["", 3, ["name"]])
def test_experimental_api_rejects_a_bad_feature_name(feature):
    with pytest.raises(TypeError, match="feature must be a non-empty string"):
        flashinfer_experimental_api(feature=feature)


def test_experimental_api_warns_once_per_api():
    @flashinfer_experimental_api
    def first(x):
        return x

    @flashinfer_experimental_api
    def second(x):
        return x

    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        for i in range(3):
            assert first(i) == i
            assert second(i) == i
    found = experimental_warnings(records)
    assert len(found) == 2
    assert all(r.filename == __file__ for r in found)  # points at the caller


def test_experimental_api_needs_no_gate():
    @flashinfer_experimental_api
    def op():
        return "ran"

    assert not experimental_auto_backends_allowed()
    with pytest.warns(ExperimentalWarning):
        assert op() == "ran"


def test_experimental_api_without_docstring_gets_the_banner():
    @flashinfer_experimental_api
    def bare():
        pass

    assert bare.__doc__.startswith(".. warning::")
    assert "``test_experimental_api_without_docstring_gets_the_banner.<locals>.bare``" in (
        bare.__doc__
    )


# -- the docstring banner --------------------------------------------------------------

NUMPYDOC = """Add two tensors.

        The body is indented, as in any docstring written inside a function.

        Parameters
        ----------
        x : torch.Tensor
            The first operand.
        y : torch.Tensor
            The second operand.

        Returns
        -------
        torch.Tensor
            The sum.
        """


def render(docstring: str) -> nodes.document:
    """Parse a docstring as autodoc would see it: dedented, then reStructuredText."""
    return publish_doctree(
        inspect.cleandoc(docstring),
        settings_overrides={"report_level": 5, "halt_level": 5},
    )


def section_titles(tree: nodes.document) -> list:
    return [s[0].astext() for s in tree.findall(nodes.section)]


def parameters_list(tree: nodes.document):
    for section in tree.findall(nodes.section):
        if section[0].astext() == "Parameters":
            return next(section.findall(nodes.definition_list), None)
    return None


def make_experimental_op():
    def op(x, y):
        return x + y

    op.__doc__ = NUMPYDOC
    return flashinfer_experimental_api(op, feature="add_op")


def test_banner_renders_with_docutils_and_keeps_the_sections():
    tree = render(make_experimental_op().__doc__)
    warnings_ = list(tree.findall(nodes.warning))
    assert len(warnings_) == 1
    assert "add_op" in warnings_[0].astext() and "is experimental" in warnings_[0].astext()
    assert section_titles(tree) == ["Parameters", "Returns"]
    params = parameters_list(tree)
    assert params is not None
    terms = [item[0].astext() for item in params.findall(nodes.definition_list_item)]
    assert terms == ["x", "y"]
    assert not list(tree.findall(nodes.block_quote))
    assert not list(tree.findall(nodes.system_message))


def test_the_naive_unindented_prepend_breaks_the_same_docstring():
    """Contrast: prepending the banner to the raw, indented docstring loses the sections."""
    naive = (
        ".. warning::\n"
        "    ``add_op`` is experimental: it provides no compatibility guarantees.\n\n"
        + NUMPYDOC
    )
    tree = render(naive)
    assert section_titles(tree) == []  # Parameters/Returns are no longer sections
    assert list(tree.findall(nodes.block_quote))  # the body became a block quote
    assert parameters_list(tree) is None


def test_banner_keeps_numpydoc_sections():
    from numpydoc.docscrape import NumpyDocString

    parsed = NumpyDocString(make_experimental_op().__doc__)
    assert [p.name for p in parsed["Parameters"]] == ["x", "y"]
    assert [p.type for p in parsed["Returns"]] == ["torch.Tensor"]
    # numpydoc's own rendering is still valid reStructuredText with the banner
    tree = publish_doctree(str(parsed), settings_overrides={"report_level": 5})
    assert len(list(tree.findall(nodes.warning))) == 1
    assert not list(tree.findall(nodes.system_message))


def test_banner_on_a_method_docstring():
    class Holder:
        @flashinfer_experimental_api
        def op(self, x):
            """Do it.

            Parameters
            ----------
            x : int
                The input.
            """
            return x

    tree = render(Holder.op.__doc__)
    assert len(list(tree.findall(nodes.warning))) == 1
    assert section_titles(tree) == ["Parameters"]
    with pytest.warns(ExperimentalWarning):
        assert Holder().op(4) == 4
