"""Backend dispatch (flashinfer/utils.py, flashinfer/dispatch/), on CPU tensors (capability 0)."""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import sys
import textwrap
import warnings

import pytest
import torch

from flashinfer.dispatch.hooks import hooks
from flashinfer.api_logging import EXPERIMENTAL_AUTO_ENV_VAR, ExperimentalWarning
from flashinfer.utils import (
    CPU_COMPUTE_CAPABILITY,
    BackendSupportedError,
    backend_requirement,
    compute_capability,
    experimental_backend,
    supported_compute_capability,
)

CPU = CPU_COMPUTE_CAPABILITY


def make_api(*, common=None, heuristic=None, stable_ok=True, exp_ok=True, exp_ccs=(CPU,)):
    """A toy API with a stable backend 'ref' and an experimental backend 'fast'.

    Each call records (backend, suitable_auto_backends, dropped) as seen by the body.
    """
    seen = []

    @supported_compute_capability([CPU, 80, 90])
    def _ref_check(x, scale=1.0, backend="auto"):
        return stable_ok

    @experimental_backend
    @supported_compute_capability(exp_ccs)
    def _fast_check(x, scale=1.0, backend="auto"):
        return exp_ok

    @backend_requirement(
        {"ref": _ref_check, "fast": _fast_check},
        common_check=common,
        heuristic_func=heuristic,
    )
    def scale_op(x, scale=1.0, backend="auto"):
        """Scale a tensor."""
        seen.append(
            (backend, scale_op.suitable_auto_backends, scale_op.dropped_experimental_backends)
        )
        return x * scale

    return scale_op, seen


@contextlib.contextmanager
def no_warnings():
    """Fail the test on any ExperimentalWarning inside the block."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExperimentalWarning)
        yield


@pytest.fixture
def x():
    return torch.ones(4)


# -- capability ------------------------------------------------------------------------


def test_cpu_tensors_have_capability_zero(x):
    assert CPU_COMPUTE_CAPABILITY == 0
    assert compute_capability(x) == 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_have_their_device_capability():  # pragma: no cover - GPU only
    major, minor = torch.cuda.get_device_capability(0)
    assert compute_capability(torch.ones(1, device="cuda")) == major * 10 + minor


def test_supported_compute_capability_attaches_the_predicate():
    @supported_compute_capability([80, 90])
    def check():
        return True

    assert check.is_compute_capability_supported(80)
    assert not check.is_compute_capability_supported(CPU)
    assert check._supported_ccs == {80, 90}


@pytest.mark.parametrize(
    "bad, message",
    [
        (80, "supported_ccs must be an iterable, got int"),
        ([80, "90"], "supported_ccs[1] must be an integer, got str: '90'"),
        ([True], "supported_ccs[0] must be an integer, got bool: True"),
        ([8.0], "supported_ccs[0] must be an integer, got float: 8.0"),
    ],
)
def test_supported_compute_capability_rejects_bad_input(bad, message):
    with pytest.raises(TypeError) as excinfo:
        supported_compute_capability(bad)
    assert str(excinfo.value) == message


def test_experimental_backend_marks_and_stacks():
    @experimental_backend
    @supported_compute_capability([CPU])
    def check():
        return True

    assert check.is_experimental is True
    assert check.is_compute_capability_supported(CPU)


# -- introspection ---------------------------------------------------------------------


def test_introspection_attributes():
    api, _ = make_api(exp_ccs=(90,))
    assert api.has_backend_choices()
    assert api.has_backend("ref") and api.has_backend("fast")
    assert not api.has_backend("auto") and not api.has_backend("nope")
    assert api.experimental_backends == frozenset({"fast"})
    assert isinstance(api.experimental_backends, frozenset)
    assert api.is_backend_supported("fast")
    assert api.is_backend_supported("fast", 90)
    assert not api.is_backend_supported("fast", CPU)
    assert not api.is_backend_supported("nope")
    assert api.is_compute_capability_supported(80)
    assert not api.is_compute_capability_supported(70)
    assert api.suitable_auto_backends == [] and api.dropped_experimental_backends == []
    assert api.__name__ == "scale_op" and api.__doc__ == "Scale a tensor."
    assert list(inspect.signature(api).parameters) == ["x", "scale", "backend"]
    assert "scale_op" in repr(api)


def test_introspection_without_backend_choices():
    @supported_compute_capability([CPU])
    def common(x):
        return True

    @backend_requirement({}, common_check=common)
    def op(x):
        return x

    assert not op.has_backend_choices()
    assert op.is_compute_capability_supported(CPU)
    assert not op.is_compute_capability_supported(90)
    with pytest.raises(ValueError, match="no backend choices for op"):
        op.is_backend_supported("any")


def test_is_compute_capability_supported_needs_a_decorated_common_check():
    @backend_requirement({}, common_check=lambda x: True)
    def op(x):
        return x

    with pytest.raises(ValueError, match="does not have is_compute_capability_supported"):
        op.is_compute_capability_supported(CPU)


# -- explicit backends -----------------------------------------------------------------


def test_explicit_stable_backend_runs_without_warning(x):
    api, seen = make_api()
    with no_warnings():
        assert torch.equal(api(x, 2.0, backend="ref"), x * 2)
    assert seen == [("ref", [], [])]


def test_explicit_experimental_backend_needs_no_gate_and_warns_once(x):
    api, seen = make_api()
    with pytest.warns(ExperimentalWarning, match="'fast' selected for 'scale_op'") as rec:
        api(x, backend="fast")
    assert rec[0].filename == __file__  # points at the caller
    with no_warnings():
        api(x, backend="fast")
    assert [s[0] for s in seen] == ["fast", "fast"]


def test_explicit_backend_with_unsupported_capability(x):
    api, seen = make_api(exp_ccs=(90, 100))
    with pytest.raises(BackendSupportedError) as excinfo:
        api(x, backend="fast")
    assert str(excinfo.value) == (
        "scale_op does not support backend 'fast' with capability 0 (CPU); "
        "it supports [90, 100]"
    )
    assert seen == []


def test_explicit_backend_with_unsupported_problem(x):
    api, seen = make_api(stable_ok=False)
    with pytest.raises(ValueError, match="^Problem size is not supported for scale_op$"):
        api(x, backend="ref")
    api_common, _ = make_api(common=lambda x, scale, backend: scale > 0)
    with pytest.raises(ValueError, match="Problem size is not supported"):
        api_common(x, -1.0, backend="ref")
    assert api_common(x, 1.0, backend="ref") is not None
    assert seen == []


def test_unknown_backend_lists_the_existing_ones(x):
    api, seen = make_api()
    with pytest.raises(BackendSupportedError) as excinfo:
        api(x, backend="cudnn")
    assert str(excinfo.value) == (
        "Backend 'cudnn' is not supported for scale_op; available backends: "
        "fast, ref (or 'auto')"
    )
    assert seen == []


def test_calls_without_tensors_skip_the_capability_check():
    api, seen = make_api(exp_ccs=(90,))
    with pytest.warns(ExperimentalWarning):
        assert api(3, backend="fast") == 3
    assert api(3) == 3
    assert seen[-1] == ("auto", ["ref"], ["fast"])


# -- auto and the gate -----------------------------------------------------------------


def test_auto_without_gate_keeps_experimental_backends_out(x):
    api, seen = make_api()
    with no_warnings():
        api(x)
    assert seen == [("auto", ["ref"], ["fast"])]
    assert api.suitable_auto_backends == ["ref"]
    assert api.dropped_experimental_backends == ["fast"]


def test_auto_with_gate_includes_them_and_warns_once(x, gate_on):
    api, seen = make_api()
    with pytest.warns(ExperimentalWarning, match="may be selected automatically") as rec:
        api(x)
    assert rec[0].filename == __file__
    with no_warnings():
        api(x)
    assert seen == [("auto", ["ref", "fast"], [])] * 2


def test_auto_gate_is_read_on_every_call(x, monkeypatch):
    api, seen = make_api(heuristic=lambda cands, x, scale, backend: sorted(cands))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        api(x)
        monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
        api(x)
        monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "0")
        api(x)
        monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
        api(x)
    assert [s[1] for s in seen] == [["ref"], ["fast", "ref"], ["ref"], ["fast", "ref"]]


def test_only_experimental_candidates_without_gate_is_an_error(x):
    api, seen = make_api(stable_ok=False)
    with pytest.raises(BackendSupportedError) as excinfo:
        api(x)
    message = str(excinfo.value)
    assert message.startswith("No suitable auto backends found for scale_op")
    assert EXPERIMENTAL_AUTO_ENV_VAR + "=1" in message
    assert "['fast']" in message
    assert "backend=" in message
    assert seen == []
    # the failed call's state is readable afterwards
    assert api.suitable_auto_backends == []
    assert api.dropped_experimental_backends == ["fast"]


def test_only_experimental_candidates_with_gate_runs_them(x, gate_on):
    api, seen = make_api(stable_ok=False)
    with pytest.warns(ExperimentalWarning):
        api(x)
    assert seen == [("auto", ["fast"], [])]


def test_no_candidate_at_all_has_no_gate_hint(x):
    api, _ = make_api(stable_ok=False, exp_ok=False)
    with pytest.raises(BackendSupportedError) as excinfo:
        api(x)
    assert str(excinfo.value) == "No suitable auto backends found for scale_op"


def test_failed_common_check_in_auto_is_not_blamed_on_the_gate(x):
    api, _ = make_api(common=lambda x, scale, backend: scale > 0)
    api(x)  # a call that drops 'fast'
    assert api.dropped_experimental_backends == ["fast"]
    with pytest.raises(BackendSupportedError) as excinfo:
        api(x, -1.0)
    assert "excluded" not in str(excinfo.value)
    assert api.dropped_experimental_backends == []


def test_heuristic_orders_but_cannot_add_backends(x):
    api, seen = make_api(heuristic=lambda cands, x, scale, backend: ["fast", "ghost", "ref"])
    api(x)
    assert seen[-1][1] == ["ref"]  # 'fast' was dropped by the gate, 'ghost' never existed


def test_heuristic_gets_the_arguments(x, gate_on):
    calls = []

    def heuristic(cands, x, scale, backend):
        calls.append((list(cands), scale, backend))
        return list(reversed(cands))

    api, seen = make_api(heuristic=heuristic)
    with pytest.warns(ExperimentalWarning):
        api(x, 3.0)
    assert calls == [(["ref", "fast"], 3.0, "auto")]
    assert seen[-1][1] == ["fast", "ref"]


def test_checker_raising_value_error_is_not_viable(x):
    @supported_compute_capability([CPU])
    def picky(x, backend="auto"):
        raise ValueError("no")

    @supported_compute_capability([CPU])
    def easy(x, backend="auto"):
        return True

    @backend_requirement({"picky": picky, "easy": easy})
    def op(x, backend="auto"):
        return op.suitable_auto_backends

    assert op(x) == ["easy"]


def test_checker_without_capability_is_skipped_by_auto_and_refused_explicitly(x):
    def undeclared(x, backend="auto"):
        return True

    @supported_compute_capability([CPU])
    def declared(x, backend="auto"):
        return True

    @backend_requirement({"undeclared": undeclared, "declared": declared})
    def op(x, backend="auto"):
        return op.suitable_auto_backends

    assert op(x) == ["declared"]
    with pytest.raises(BackendSupportedError, match="backend 'undeclared' with capability 0"):
        op(x, backend="undeclared")


# -- no backend choices ---------------------------------------------------------------


def test_common_check_only_api(x):
    @supported_compute_capability([CPU])
    def common(x, n=1):
        return n > 0

    @backend_requirement({}, common_check=common)
    def op(x, n=1):
        return x * n

    assert torch.equal(op(x, 2), x * 2)
    with pytest.raises(ValueError, match="Problem size is not supported for op"):
        op(x, 0)


def test_common_check_only_api_with_wrong_capability(x):
    @supported_compute_capability([80, 90])
    def common(x):
        return True

    @backend_requirement({}, common_check=common)
    def op(x):
        return x

    with pytest.raises(BackendSupportedError) as excinfo:
        op(x)
    assert str(excinfo.value) == (
        "op does not support compute capability 0; supported compute capabilities: [80, 90]"
    )


def test_no_backends_and_no_common_check_is_a_usage_error(x):
    @backend_requirement({})
    def op(x):
        return x

    with pytest.raises(ValueError, match="no backend choices and no common_check for op"):
        op(x)


# -- skip_check -------------------------------------------------------------------------


def test_skip_check_bypasses_validation(x):
    api, seen = make_api(stable_ok=False, exp_ccs=(90,))
    assert torch.equal(api(x, backend="ref", skip_check=True), x)
    assert api(x, backend="anything", skip_check=True) is not None
    assert [s[0] for s in seen] == ["ref", "anything"]


def test_skip_check_still_warns_for_experimental_backends(x):
    api, _ = make_api()
    with pytest.warns(ExperimentalWarning, match="'fast' selected"):
        api(x, backend="fast", skip_check=True)


def test_skip_check_with_auto_still_fills_the_candidates(x, gate_on):
    api, seen = make_api(stable_ok=False)
    with pytest.warns(ExperimentalWarning):
        api(x, skip_check=True)
    assert seen == [("auto", ["fast"], [])]


def test_skip_check_with_auto_and_no_candidates_does_not_raise(x):
    api, seen = make_api(stable_ok=False)
    api(x, skip_check=True)
    assert seen == [("auto", [], ["fast"])]


def test_skip_check_false_is_a_normal_call(x):
    api, _ = make_api(stable_ok=False)
    with pytest.raises(ValueError):
        api(x, backend="ref", skip_check=False)


# -- decoration-time checks ----------------------------------------------------------


def unmarked_checker(module: str):
    @supported_compute_capability([CPU])
    def check(x, backend="auto"):
        return True

    check.__module__ = module
    return check


@pytest.mark.parametrize(
    "module", ["flashinfer.experimental", "flashinfer.experimental.toy_feature.support"]
)
def test_unmarked_checker_under_experimental_is_refused(module):
    with pytest.raises(ValueError) as excinfo:

        @backend_requirement({"fast": unmarked_checker(module)})
        def mm(x, backend="auto"):
            return x

    assert str(excinfo.value) == (
        "@backend_requirement on mm: checker for backend 'fast' is defined under "
        "flashinfer.experimental but is not marked @experimental_backend"
    )


@pytest.mark.parametrize(
    "module", ["flashinfer.experimental_foo", "flashinfer.gemm", "tests.experimental.x"]
)
def test_checkers_elsewhere_are_accepted(module):
    @backend_requirement({"b": unmarked_checker(module)})
    def mm(x, backend="auto"):
        return x

    assert mm.experimental_backends == frozenset()


def test_marked_checker_under_experimental_is_accepted():
    @backend_requirement({"fast": experimental_backend(unmarked_checker("flashinfer.experimental.s"))})
    def mm(x, backend="auto"):
        return x

    assert mm.experimental_backends == frozenset({"fast"})


def test_unmarked_checker_from_a_real_module_under_experimental(tmp_path, monkeypatch):
    """A checker defined in a module file loaded as flashinfer.experimental.<name>."""
    source = tmp_path / "probe_support.py"
    source.write_text(
        textwrap.dedent(
            """
            from flashinfer.utils import supported_compute_capability, experimental_backend

            @supported_compute_capability([0])
            def unmarked(x, backend="auto"):
                return True

            @experimental_backend
            @supported_compute_capability([0])
            def marked(x, backend="auto"):
                return True
            """
        )
    )
    name = "flashinfer.experimental._probe_support_for_tests"
    spec = importlib.util.spec_from_file_location(name, source)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    assert module.unmarked.__module__ == name

    with pytest.raises(ValueError, match="checker for backend 'probe'"):
        backend_requirement({"probe": module.unmarked})(lambda x, backend="auto": x)
    api = backend_requirement({"probe": module.marked})(lambda x, backend="auto": x)
    assert api.experimental_backends == frozenset({"probe"})


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"backend_checks": ["ref"]}, TypeError, "backend_checks must be a mapping"),
        ({"backend_checks": {"ref": 3}}, TypeError, "got 'ref': 3"),
        ({"backend_checks": {1: len}}, TypeError, "got 1: "),
        ({"backend_checks": {}, "common_check": 3}, TypeError, "common_check must be callable"),
        ({"backend_checks": {}, "heuristic_func": "x"}, TypeError, "heuristic_func must be"),
        ({"backend_checks": {"auto": len}}, ValueError, "'auto' is reserved"),
    ],
)
def test_bad_decorator_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):

        @backend_requirement(**kwargs)
        def op(x, backend="auto"):
            return x


def test_skip_check_parameter_is_reserved():
    with pytest.raises(ValueError, match="'skip_check' is reserved"):

        @backend_requirement({})
        def op(x, skip_check=False):
            return x


# -- signature shapes --------------------------------------------------------------------


@supported_compute_capability([CPU])
def accept_all(*args, **kwargs):
    return True


def test_keyword_only_and_positional_only_parameters(x):
    checked = []

    @supported_compute_capability([CPU])
    def check(a, b, *, scale, backend="auto"):
        checked.append((a, b, scale, backend))
        return True

    @backend_requirement({"ref": check})
    def op(a, /, b=2, *, scale, backend="auto"):
        return (a, b, scale, backend, op.suitable_auto_backends)

    assert op(1, scale=3) == (1, 2, 3, "auto", ["ref"])
    assert op(1, 5, scale=3, backend="ref") == (1, 5, 3, "ref", [])
    assert checked == [(1, 2, 3, "auto"), (1, 5, 3, "ref")]
    with pytest.raises(TypeError, match="op"):
        op(a=1, scale=3)  # positional-only passed by keyword


def test_binding_errors_name_the_api():
    api, _ = make_api()
    with pytest.raises(TypeError, match=r"scale_op\(\) missing 1 required positional argument: 'x'"):
        api()
    with pytest.raises(TypeError, match=r"scale_op\(\) got an unexpected keyword argument 'bogus'"):
        api(1, bogus=2)


def test_var_args_signature_uses_inspect_binding(x):
    seen = []

    @supported_compute_capability([CPU])
    def check(x, *rest, backend="auto", **extra):
        seen.append((rest, extra))
        return True

    @backend_requirement({"ref": check})
    def op(x, *rest, backend="auto", **extra):
        return rest, extra, op.suitable_auto_backends

    assert op(x, 1, 2, flag=True) == ((1, 2), {"flag": True}, ["ref"])
    assert op(x, backend="ref") == ((), {}, [])
    # checkers are called the way the API was
    assert seen == [((1, 2), {"flag": True}), ((), {})]
    with pytest.raises(BackendSupportedError, match="available backends: ref"):
        op(x, backend="nope")


def test_parameter_names_like_the_generated_code_still_work(x):
    @supported_compute_capability([CPU])
    def check(_fi_self, _fi_cc=0, backend="auto"):
        return _fi_cc >= 0

    @backend_requirement({"ref": check})
    def op(_fi_self, _fi_cc=0, backend="auto"):
        return _fi_self, _fi_cc, op.suitable_auto_backends

    assert op(x, 1)[1:] == (1, ["ref"])
    with pytest.raises(ValueError):
        op(x, -1, backend="ref")


def test_api_without_backend_parameter_is_refused_when_it_has_backends(x):
    @backend_requirement({"ref": accept_all})
    def op(x):
        return x

    with pytest.raises(BackendSupportedError, match="Backend 'None' is not supported for op"):
        op(x)


def test_method_api(x):
    class Runner:
        def __init__(self, factor):
            self.factor = factor

        @backend_requirement({"ref": accept_all})
        def run(self, t, backend="auto"):
            return t * self.factor, Runner.run.suitable_auto_backends

    out, candidates = Runner(3).run(x)
    assert torch.equal(out, x * 3) and candidates == ["ref"]
    assert Runner.run.has_backend("ref")


def test_first_tensor_decides_the_capability_even_as_keyword(x):
    @supported_compute_capability([90])
    def gpu_only(a, b=None, backend="auto"):
        return True

    @backend_requirement({"gpu": gpu_only})
    def op(a, b=None, backend="auto"):
        return "ran"

    with pytest.raises(BackendSupportedError, match="capability 0"):
        op(None, b=x, backend="gpu")
    assert op(None, b=None, backend="gpu") == "ran"  # no tensor: no capability check


# -- hooks (registered by flashinfer.tuning.tuner; the contract seen from dispatch) ------


def test_tuned_choice_can_only_reorder_the_candidates(x, monkeypatch, gate_on):
    answers = iter(["fast", "ghost"])
    calls = []

    def hook(dispatch, candidates, bound):
        calls.append((dispatch, candidates, bound["backend"]))
        return next(answers)

    monkeypatch.setattr(hooks, "tuned_choice", hook)
    api, seen = make_api()
    with pytest.warns(ExperimentalWarning):
        api(x)
    api(x)
    assert [s[1] for s in seen] == [["fast", "ref"], ["ref", "fast"]]
    assert calls[0] == (api, ("ref", "fast"), "auto")


def test_tuned_choice_never_sees_gate_dropped_backends(x, monkeypatch):
    offered = []
    monkeypatch.setattr(hooks, "tuned_choice", lambda d, c, b: offered.append(c) or "fast")
    api, seen = make_api()
    api(x)
    assert seen[-1][1] == ["ref"]
    assert offered == []  # a single candidate needs no tuning
