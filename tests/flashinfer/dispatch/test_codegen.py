"""The generated ``__call__`` of each API (flashinfer/dispatch/codegen.py) is readable code.

Tracebacks through an API show the generated lines under a file name of their
own (never ``<string>``), the source can be read back, and it is specialised to
what the API declared.
"""

from __future__ import annotations

import linecache
import traceback

import pytest
import torch

from flashinfer.api_logging import ExperimentalWarning
from flashinfer.capabilities import CPU_COMPUTE_CAPABILITY
from flashinfer.dispatch.codegen import capabilities_of, generated_source, heuristic_order
from flashinfer.utils import (
    BackendSupportedError,
    backend_requirement,
    experimental_backend,
    supported_compute_capability,
)

CPU = CPU_COMPUTE_CAPABILITY
PREFIX = "<flashinfer generated __call__ of "


def failing_api(where: str):
    """A toy API whose checker (``where="checker"``) or body (``"body"``) raises."""

    @supported_compute_capability([CPU])
    def check_ref(x, backend="auto"):
        if where == "checker":
            raise RuntimeError("the checker failed")
        return True

    @backend_requirement({"ref": check_ref})
    def broken_op(x, backend="auto"):
        raise RuntimeError("the body failed")

    return broken_op


def generated_frames(error: BaseException) -> list:
    return [f for f in traceback.extract_tb(error.__traceback__) if f.filename.startswith(PREFIX)]


@pytest.mark.parametrize(
    "where, backend, line",
    [
        ("checker", "ref", "if not _fi_check(x=x, backend=backend):"),
        ("checker", "auto", "if _fi_check0(x=x, backend=backend):  # backend 'ref'"),
        ("body", "ref", "return _fi_func(x, backend)"),
        ("body", "auto", "return _fi_func(x, backend)"),
    ],
)
def test_a_failing_call_shows_the_generated_source_line(where, backend, line):
    api = failing_api(where)
    with pytest.raises(RuntimeError, match=f"the {where} failed") as excinfo:
        api(torch.ones(2), backend=backend)
    text = "".join(traceback.format_exception(excinfo.value))
    assert "<string>" not in text
    (frame,) = generated_frames(excinfo.value)
    assert frame.name == "broken_op"
    assert frame.line == line  # a real line, read back through linecache
    qualname = "failing_api.<locals>.broken_op"
    assert frame.filename.startswith(f"{PREFIX}{__name__}.{qualname}")
    assert f'File "{frame.filename}", line {frame.lineno}, in broken_op\n    {line}\n' in text


def test_each_api_gets_its_own_file_name_and_keeps_it():
    first, second = failing_api("checker"), failing_api("body")
    files = {type(api).__call__.__code__.co_filename for api in (first, second)}
    assert len(files) == 2 and all(f.startswith(PREFIX) for f in files)
    linecache.checkcache()  # what traceback does: the entries (no file behind them) stay
    for api in (first, second):
        source = generated_source(api)
        assert source.startswith("def __call__(_fi_self, x, backend=_fi_default1, *, skip_check=False):")
        compile(source, "<check>", "exec")


@supported_compute_capability([CPU])
def accept(x, backend="auto"):
    return True


@experimental_backend
@supported_compute_capability([CPU])
def accept_experimental(x, backend="auto"):
    return True


def test_the_source_is_specialised_to_the_declaration():
    @backend_requirement({"ref": accept})
    def plain(x, backend="auto"):
        return x

    @backend_requirement(
        {"ref": accept, "fast": accept_experimental},
        common_check=lambda x, backend="auto": True,
        heuristic_func=lambda candidates, x, backend="auto": candidates,
    )
    def full(x, backend="auto"):
        return x

    simple, rich = generated_source(plain), generated_source(full)
    for needle in ("_fi_common(", "_fi_heuristic(", "_fi_gate()", "_fi_dropped"):
        assert needle not in simple and needle in rich, needle
    assert "# backend 'ref'\n" in rich and "# backend 'fast', experimental\n" in rich


def test_backend_names_are_spelled_as_literals():
    names = ["{brace}", "quote'\"", "new\nline"]

    @backend_requirement({name: accept for name in names})
    def odd(x, backend="auto"):
        return odd.suitable_auto_backends

    assert odd(torch.ones(1)) == names
    assert odd(torch.ones(1), backend="{brace}") == []


def test_capability_containers():
    @supported_compute_capability([80, 90])
    def declared():
        return True

    assert capabilities_of(declared.is_compute_capability_supported) == frozenset({80, 90})
    assert 80 not in capabilities_of(None)  # no predicate: no capability
    custom = capabilities_of(lambda cc: cc >= 90)
    assert 90 in custom and 80 not in custom


def test_a_checkers_own_capability_predicate_decides():
    def ok(x, backend="auto"):
        return True

    def never(x, backend="auto"):
        return True

    ok.is_compute_capability_supported = lambda cc: cc == CPU
    never.is_compute_capability_supported = lambda cc: False

    @backend_requirement({"ok": ok, "never": never})
    def op(x, backend="auto"):
        return op.suitable_auto_backends

    assert op(torch.ones(1)) == ["ok"]
    assert op(torch.ones(1), backend="ok") == []
    with pytest.raises(BackendSupportedError, match="backend 'never' with capability 0"):
        op(torch.ones(1), backend="never")


def test_heuristic_order_filters_and_deduplicates():
    assert heuristic_order(["a", "b"], ("b", "ghost", "b", "a")) == ["b", "a"]
    assert heuristic_order(["a", "b"], iter(["a"])) == ["a"]


def test_a_heuristic_returning_its_candidates_unchanged_keeps_them():
    seen = []

    def heuristic(candidates, x, backend="auto"):
        seen.append(candidates)
        return candidates

    @backend_requirement({"b": accept, "a": accept}, heuristic_func=heuristic)
    def op(x, backend="auto"):
        return op.suitable_auto_backends

    assert op(torch.ones(1)) == ["b", "a"]
    assert seen == [["b", "a"]]


def test_warnings_still_point_at_the_caller():
    @backend_requirement({"fast": accept_experimental})
    def op(x, backend="auto"):
        return x

    with pytest.warns(ExperimentalWarning) as record:
        op(torch.ones(1), backend="fast")
    assert record[0].filename == __file__
