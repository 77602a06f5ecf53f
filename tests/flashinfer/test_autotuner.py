"""Autotuning and its cache (flashinfer/autotuner.py, flashinfer/tuning/), on CPU tensors.

The toy API has two stable backends ('slow', 'medium') and one experimental
backend ('fast', of the feature 'toy_fast'); its body counts the calls of each
backend, so tests assert which backend really ran, not only what was chosen.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
import warnings
from collections import Counter

import pytest
import torch

from flashinfer import api_logging, autotuner
from flashinfer.tuning import files, keys, tuner
from flashinfer.api_logging import EXPERIMENTAL_AUTO_ENV_VAR, ExperimentalWarning
from flashinfer.autotuner import (
    TuningConfigWarning,
    autotune,
    load_autotune_cache,
    register_api,
    save_autotune_cache,
)
from flashinfer.utils import (
    CPU_COMPUTE_CAPABILITY,
    backend_requirement,
    experimental_backend,
    supported_compute_capability,
)

from ..autotune_files import write_cache

API = "toy_models.toy_op"
# Seconds each backend takes on the tuner's clock: without tuning 'slow' runs (declaration order).
DELAYS = {"slow": 0.006, "medium": 0.002, "fast": 0.0}


class VirtualClock:
    """The tuner's clock in these tests: time passes only while a toy backend runs, by
    its `DELAYS` entry, so the winner never depends on how busy the machine is."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


CLOCK = VirtualClock()
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_toy_api(*, with_fast=True, fast_feature="toy_fast"):
    """Register and return (toy API, Counter of backend runs).

    'medium' rejects inputs holding a negative value (not visible in the problem
    key), so tests can make a tuned 'medium' misfit a call of the same key.
    """
    runs: Counter = Counter()

    @supported_compute_capability([CPU_COMPUTE_CAPABILITY])
    def slow_check(x, backend="auto"):
        return True

    @supported_compute_capability([CPU_COMPUTE_CAPABILITY])
    def medium_check(x, backend="auto"):
        return not bool((x < 0).any())

    def fast_check(x, backend="auto"):
        return True

    fast_check.__module__ = f"flashinfer.experimental.{fast_feature}.support"
    fast_check = experimental_backend(supported_compute_capability([CPU_COMPUTE_CAPABILITY])(fast_check))
    checks = {"slow": slow_check, "medium": medium_check}
    if with_fast:
        checks["fast"] = fast_check

    def toy_op(x, backend="auto"):
        if backend == "auto":
            backend = toy_op_api.suitable_auto_backends[0]
        runs[backend] += 1
        CLOCK.advance(DELAYS[backend])
        return x + 1

    toy_op.__module__, toy_op.__qualname__ = API.rsplit(".", 1)
    toy_op_api = backend_requirement(checks)(toy_op)
    register_api(toy_op_api)
    return toy_op_api, runs


@pytest.fixture(autouse=True)
def _fresh_tuner(monkeypatch):
    monkeypatch.setattr(tuner, "time", CLOCK)  # the tuner reads only time.perf_counter
    tuner._reset_for_tests()
    yield
    tuner._reset_for_tests()


def tuning_warnings(record) -> list:
    return [w for w in record if issubclass(w.category, TuningConfigWarning)]


def tune_fast_winner(path, monkeypatch):
    """With the gate set, tune the toy API to its experimental 'fast' and save the cache."""
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    api, runs = make_toy_api()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        with autotune():
            api(torch.ones(4, 8))
    assert runs["fast"] > 0
    assert save_autotune_cache(path) == 1
    monkeypatch.delenv(EXPERIMENTAL_AUTO_ENV_VAR)
    tuner._reset_for_tests()
    api_logging._reset_warnings_for_tests()
    return json.loads(path.read_text())


# -- tuning ------------------------------------------------------------------------


def test_tuning_times_only_stable_candidates_while_gate_is_unset():
    api, runs = make_toy_api()
    with autotune():
        api(torch.ones(4, 8))
    assert runs["fast"] == 0  # not even timed
    assert runs["slow"] == tuner.WARMUP_RUNS + tuner.TIMED_RUNS
    runs.clear()
    for _ in range(3):  # outside the block: the remembered winner
        api(torch.ones(4, 8))
    assert runs == Counter(medium=3)
    assert api.suitable_auto_backends == ["medium", "slow"]


def test_tuning_with_gate_set_can_pick_the_experimental_backend(gate_on):
    api, runs = make_toy_api()
    with pytest.warns(ExperimentalWarning, match="'fast' may be selected automatically"):
        with autotune():
            api(torch.ones(4, 8))
    runs.clear()
    api(torch.ones(4, 8))
    assert runs == Counter(fast=1)


def test_tuned_choice_is_per_problem_and_not_retuned():
    api, runs = make_toy_api()
    with autotune():
        api(torch.ones(4, 8))
        runs.clear()
        api(torch.ones(4, 8))  # remembered: no timing runs
        assert runs == Counter(medium=1)
    runs.clear()
    api(torch.ones(2, 8))  # another problem key, never tuned: heuristic order
    assert runs == Counter(slow=1)


def test_tune_mode_false_uses_winners_without_tuning():
    api, runs = make_toy_api()
    with autotune(False):
        api(torch.ones(4, 8))
    assert runs == Counter(slow=1)


def test_tuning_is_per_thread():
    import threading

    api, runs = make_toy_api()
    with autotune():
        thread = threading.Thread(target=api, args=(torch.ones(4, 8),))
        thread.start()
        thread.join()
    assert runs == Counter(slow=1)  # the other thread did not tune


def test_a_failing_candidate_is_left_out_of_tuning():
    api, runs = make_toy_api()
    original = DELAYS.pop("slow")  # the body raises KeyError for 'slow'
    try:
        with pytest.warns(TuningConfigWarning, match="slow: KeyError"):
            with autotune():
                api(torch.ones(4, 8))
    finally:
        DELAYS["slow"] = original
    runs.clear()
    api(torch.ones(4, 8))
    assert runs == Counter(medium=1)


def test_tuning_never_modifies_the_caller_tensors():
    calls = []

    @supported_compute_capability([CPU_COMPUTE_CAPABILITY])
    def ok(x, backend="auto"):
        return True

    def add_in_place(x, backend="auto"):
        calls.append(backend)
        x.add_(1)
        return x

    add_in_place.__module__ = "toy_models"
    api = backend_requirement({"a": ok, "b": ok})(add_in_place)
    x = torch.zeros(3)
    with autotune():
        api(x)
    assert len(calls) > 2  # timed runs happened, on copies
    assert x.tolist() == [1.0, 1.0, 1.0]  # only the call itself added 1


def test_a_broken_key_function_never_raises_in_the_call():
    api, runs = make_toy_api()
    autotuner.register_problem_key(api, lambda arguments: arguments["missing"])
    with pytest.warns(TuningConfigWarning, match="no tuned choice for toy_models.toy_op"):
        with autotune():
            api(torch.ones(4, 8))
    assert runs == Counter(slow=1)


def test_default_problem_key_and_problem_key_helper():
    api, _ = make_toy_api()
    key = autotuner.problem_key(api, torch.ones(4, 8, dtype=torch.bfloat16))
    assert key == ("cpu", ("x", (4, 8), "bfloat16"))
    assert json.loads(json.dumps(key)) == ["cpu", ["x", [4, 8], "bfloat16"]]
    autotuner.register_problem_key(API, lambda arguments: (arguments["x"].shape[0],))
    assert autotuner.problem_key(api, torch.ones(4, 8)) == (4,)


def test_default_problem_key_of_subclasses_other_devices_and_rare_dtypes():
    arguments = {
        "w": torch.nn.Parameter(torch.ones(2, 3)),  # a Tensor subclass counts as a tensor
        "scale": 2.0,
        "x": torch.empty(5, dtype=torch.float8_e4m3fn),
        "out": None,
        "backend": "auto",
    }
    assert autotuner.default_problem_key(arguments) == ("cpu", ("w", (2, 3), "float32"), ("x", (5,), "float8_e4m3fn"))
    meta = {"x": torch.empty(2, 2, device="meta", dtype=torch.float16)}
    assert autotuner.default_problem_key(meta) == ("meta", ("x", (2, 2), "float16"))
    assert autotuner.default_problem_key({"n": 3, "backend": "auto"}) == ()


# -- the cache: round trip, merge, atomic save ------------------------------------------


def test_saving_a_key_that_is_not_json_names_the_problem(tmp_path):
    api, _ = make_toy_api()
    autotuner.register_problem_key(api, lambda arguments: (arguments["x"].dtype,))
    with autotune():
        api(torch.ones(4, 8))
    with pytest.raises(TypeError, match="problem key is not made of JSON values"):
        save_autotune_cache(tmp_path / "cache.json")
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_save_and_load_round_trip(tmp_path):
    api, runs = make_toy_api()
    with autotune(cache=tmp_path / "cache.json"):
        api(torch.ones(4, 8))
    document = json.loads((tmp_path / "cache.json").read_text())
    assert document["format"] == "flashinfer-autotune-cache"
    assert document["schema_version"] == 1
    assert document["flashinfer_version"]
    (entry,) = document["entries"]
    assert entry["api"] == API
    assert entry["key"] == ["cpu", ["x", [4, 8], "float32"]]
    assert (entry["backend"], entry["tactic"], entry["experimental"], entry["feature"]) == (
        "medium",
        None,
        False,
        None,
    )
    assert entry["tuned_at"].endswith("+00:00")
    assert (tmp_path / "cache.json").stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600

    tuner._reset_for_tests()
    api, runs = make_toy_api()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean load warns nothing
        summary = load_autotune_cache(tmp_path / "cache.json")
    assert (summary.loaded, summary.skipped, summary.error) == (1, {}, None)
    api(torch.ones(4, 8))
    assert runs == Counter(medium=1)


def test_keys_in_memory_and_in_the_saved_file_agree_after_a_round_trip(tmp_path):
    api, runs = make_toy_api()
    x = torch.ones(4, 8, dtype=torch.bfloat16)
    with autotune(cache=tmp_path / "cache.json"):
        api(x)
    in_memory = autotuner.problem_key(api, x)
    assert type(in_memory[1][1]) is torch.Size  # kept as read from the tensor
    (saved,) = json.loads((tmp_path / "cache.json").read_text())["entries"]
    assert saved["key"] == ["cpu", ["x", [4, 8], "bfloat16"]]

    tuner._reset_for_tests()
    api, runs = make_toy_api()
    assert load_autotune_cache(tmp_path / "cache.json").loaded == 1
    (loaded,) = tuner._tables[api].entries
    assert type(loaded[1][1]) is tuple  # read back from JSON
    assert loaded == in_memory and hash(loaded) == hash(in_memory)
    api(x)  # so the lookup finds the loaded winner
    assert runs == Counter(medium=1)
    save_autotune_cache(tmp_path / "again.json")
    (saved_again,) = json.loads((tmp_path / "again.json").read_text())["entries"]
    assert saved_again["key"] == saved["key"] and saved_again["backend"] == "medium"


def test_experimental_winner_records_its_feature(tmp_path, monkeypatch):
    document = tune_fast_winner(tmp_path / "cache.json", monkeypatch)
    (entry,) = document["entries"]
    assert (entry["backend"], entry["experimental"], entry["feature"]) == ("fast", True, "toy_fast")


def test_load_merges_and_the_newer_entry_wins(tmp_path):
    api, runs = make_toy_api()

    def write(name, rows, backend, tuned_at):
        entry = {
            "api": API,
            "key": ["cpu", ["x", [rows, 8], "float32"]],
            "backend": backend,
            "tactic": None,
            "experimental": False,
            "feature": None,
            "tuned_at": tuned_at,
        }
        document = {"format": "flashinfer-autotune-cache", "schema_version": 1, "flashinfer_version": "0", "entries": [entry]}
        (tmp_path / name).write_text(json.dumps(document))
        return tmp_path / name

    load_autotune_cache(write("a.json", 4, "medium", "2026-01-01T00:00:00+00:00"))
    load_autotune_cache(write("b.json", 2, "medium", "2026-01-01T00:00:00+00:00"))
    load_autotune_cache(write("old.json", 4, "slow", "2025-01-01T00:00:00+00:00"))
    api(torch.ones(4, 8))
    api(torch.ones(2, 8))
    assert runs == Counter(medium=2)
    load_autotune_cache(write("new.json", 4, "slow", "2027-01-01T00:00:00+00:00"))
    runs.clear()
    api(torch.ones(4, 8))
    assert runs == Counter(slow=1)


def _save_repeatedly(path: str, rows: int, rounds: int) -> None:
    """Child process: tune one problem of its own, then save to the shared path."""
    tuner._reset_for_tests()
    api, _ = make_toy_api()
    with autotune():
        api(torch.ones(rows, 8))
    for _ in range(rounds):
        save_autotune_cache(path)


def test_concurrent_saves_from_two_processes_leave_a_valid_file(tmp_path):
    path = tmp_path / "cache.json"
    context = multiprocessing.get_context("fork")
    children = [context.Process(target=_save_repeatedly, args=(str(path), rows, 40)) for rows in (1, 2)]
    for child in children:
        child.start()
    reads = 0
    while any(child.is_alive() for child in children):
        if path.exists():
            json.loads(path.read_text())  # never a torn file, also while writing
            reads += 1
    for child in children:
        child.join()
        assert child.exitcode == 0
    make_toy_api()
    document = json.loads(path.read_text())
    (entry,) = document["entries"]
    assert entry["key"] in (["cpu", ["x", [1, 8], "float32"]], ["cpu", ["x", [2, 8], "float32"]])
    assert [p.name for p in tmp_path.iterdir()] == ["cache.json"]  # no temporary left
    summary = load_autotune_cache(path)
    assert summary.loaded == 1 and summary.error is None


# -- safe loading --------------------------------------------------------------------


def test_experimental_winner_loaded_with_gate_unset_never_runs(tmp_path, monkeypatch):
    tune_fast_winner(tmp_path / "cache.json", monkeypatch)
    api, runs = make_toy_api()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        summary = load_autotune_cache(tmp_path / "cache.json")
        for _ in range(3):
            api(torch.ones(4, 8))
    (warning,) = tuning_warnings(record)
    assert "skipped 1" in str(warning.message)
    assert f"experimental, while {EXPERIMENTAL_AUTO_ENV_VAR} is unset" in str(warning.message)
    assert summary.loaded == 0
    assert runs == Counter(slow=3)  # the stable default, never 'fast'
    assert not [w for w in record if issubclass(w.category, ExperimentalWarning)]


def test_gate_skipped_entries_survive_a_save(tmp_path, monkeypatch):
    tune_fast_winner(tmp_path / "cache.json", monkeypatch)
    make_toy_api()
    with pytest.warns(TuningConfigWarning):
        load_autotune_cache(tmp_path / "cache.json")
    save_autotune_cache(tmp_path / "again.json")
    (entry,) = json.loads((tmp_path / "again.json").read_text())["entries"]
    assert entry["backend"] == "fast"


def test_experimental_winner_of_a_removed_backend_is_skipped(tmp_path, monkeypatch):
    tune_fast_winner(tmp_path / "cache.json", monkeypatch)
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")  # even with the gate set
    api, runs = make_toy_api(with_fast=False)
    with pytest.warns(TuningConfigWarning, match="backend that no longer exists") as record:
        summary = load_autotune_cache(tmp_path / "cache.json")
    assert len(tuning_warnings(record)) == 1
    assert summary.skipped == {"of a backend that no longer exists": [f"{API}:fast"]}
    api(torch.ones(4, 8))
    assert runs == Counter(slow=1)


def test_backend_now_of_another_feature_is_skipped(tmp_path, monkeypatch):
    tune_fast_winner(tmp_path / "cache.json", monkeypatch)
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    api, runs = make_toy_api(fast_feature="toy_rewrite")
    with pytest.warns(TuningConfigWarning, match="experimental feature that no longer exists"):
        load_autotune_cache(tmp_path / "cache.json")
    with pytest.warns(ExperimentalWarning):  # 'fast' is a candidate, not the tuned choice
        api(torch.ones(4, 8))
    assert runs == Counter(slow=1)


def test_entries_of_unknown_apis_and_malformed_entries_are_skipped_in_one_warning(tmp_path):
    make_toy_api()
    good = {"api": API, "key": [], "backend": "medium", "tactic": None, "experimental": False, "feature": None, "tuned_at": "2026-01-01"}
    entries = [
        good,
        {**good, "api": "toy_models.gone"},
        {**good, "api": "flashinfer.no_such_module.op"},
        {**good, "api": "flashinfer.experimental.toy_fast.op"},  # never imported
        {**good, "tactic": {"tile": 128}},
        {**good, "key": [{"not": "hashable"}]},
        {"api": API},
        "not an entry",
    ]
    path = tmp_path / "cache.json"
    path.write_text(json.dumps({"format": "flashinfer-autotune-cache", "schema_version": 1, "entries": entries}))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        summary = load_autotune_cache(path)
    (warning,) = tuning_warnings(record)
    assert "loaded 1 entries, skipped 7" in str(warning.message)
    assert len(summary.skipped["of an unknown API"]) == 3
    assert len(summary.skipped["malformed entries"]) == 3
    assert summary.skipped["with a tactic the backend does not take"] == [f"{API}:medium"]
    assert "flashinfer.experimental.toy_fast" not in sys.modules


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"", "not valid JSON"),
        (b"\x00\xffgarbage", "not valid JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (json.dumps({"format": "flashinfer-autotune-cache", "schema_version": 2, "entries": []}).encode(), "schema version 2 is not supported"),
        (json.dumps({"format": "something-else", "schema_version": 1}).encode(), "not a FlashInfer autotune cache"),
        (json.dumps({"format": "flashinfer-autotune-cache", "schema_version": 1, "entries": {}}).encode(), "'entries' is not a list"),
    ],
    ids=["empty", "binary", "array", "future-schema", "other-format", "bad-entries"],
)
def test_unreadable_files_are_reported_and_ignored(tmp_path, content, problem):
    api, runs = make_toy_api()
    with autotune():
        api(torch.ones(4, 8))  # a winner already in memory survives the bad load
    path = tmp_path / "cache.json"
    path.write_bytes(content)
    with pytest.warns(TuningConfigWarning, match=problem) as record:
        summary = load_autotune_cache(path)
    assert len(tuning_warnings(record)) == 1
    assert summary.error is not None and summary.loaded == 0
    runs.clear()
    api(torch.ones(4, 8))
    assert runs == Counter(medium=1)


def test_truncated_and_missing_files_are_reported_and_ignored(tmp_path, monkeypatch):
    tune_fast_winner(tmp_path / "cache.json", monkeypatch)
    text = (tmp_path / "cache.json").read_text()
    (tmp_path / "cut.json").write_text(text[: len(text) // 2])
    with pytest.warns(TuningConfigWarning, match="truncated or corrupt"):
        assert load_autotune_cache(tmp_path / "cut.json").loaded == 0
    with pytest.warns(TuningConfigWarning, match="cannot be read"):
        load_autotune_cache(tmp_path / "absent.json")


# -- untrusted files ------------------------------------------------------------------
# A cache file is untrusted input: nested past the recursion limit, a FIFO, a symlink
# to /dev/zero or too large, it is ignored with the load's one warning. The timeout
# marks only turn a hang (a FIFO opened for a blocking read) into a failure.


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "kind, problem",
    [("deep", "nested too deeply"), ("fifo", "not a regular file"), ("dev-zero", "not a regular file")],
)
def test_hostile_files_are_reported_and_ignored(tmp_path, untrusted_file, kind, problem):
    api, runs = make_toy_api()
    with autotune():
        api(torch.ones(4, 8))  # a winner already in memory survives the bad load
    path = untrusted_file(kind, tmp_path / "cache.json")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        summary = load_autotune_cache(path)
    (warning,) = tuning_warnings(record)
    assert problem in str(warning.message) and "ignored" in str(warning.message)
    assert summary.error is not None and summary.loaded == 0
    runs.clear()
    api(torch.ones(4, 8))
    assert runs == Counter(medium=1)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["deep", "fifo", "dev-zero"])
def test_autotune_with_a_hostile_cache_file_tunes_and_saves_over_it(tmp_path, untrusted_file, kind):
    api, runs = make_toy_api()
    path = untrusted_file(kind, tmp_path / "cache.json")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with autotune(cache=path):
            api(torch.ones(4, 8))
    assert len(tuning_warnings(record)) == 1
    assert runs["slow"] > 0 and runs["medium"] > 0  # tuned: the file gave nothing
    assert path.is_file() and not path.is_symlink()  # the link itself was replaced
    assert path.stat().st_mode & 0o777 == 0o644  # not the mode of /dev/zero
    assert [e["backend"] for e in json.loads(path.read_text())["entries"]] == ["medium"]


def test_a_cache_longer_than_the_cap_is_ignored(tmp_path, monkeypatch):
    tune_fast_winner(tmp_path / "cache.json", monkeypatch)
    size = (tmp_path / "cache.json").stat().st_size
    monkeypatch.setattr(files, "MAX_CONFIG_BYTES", size - 1)
    with pytest.warns(TuningConfigWarning, match=f"larger than {size - 1} bytes"):
        assert load_autotune_cache(tmp_path / "cache.json").error is not None
    monkeypatch.setattr(files, "MAX_CONFIG_BYTES", size)
    with pytest.warns(TuningConfigWarning, match="skipped 1"):  # read; the entry is gated
        assert load_autotune_cache(tmp_path / "cache.json").error is None


def test_a_key_nested_past_the_recursion_limit_is_malformed_not_an_error():
    nested: list = ["cpu"]
    for _ in range(sys.getrecursionlimit() + 100):
        nested = [nested]
    with pytest.raises(TypeError, match="nested too deeply"):
        keys.freeze_key(nested)


def test_an_entry_that_breaks_the_loader_is_skipped_and_the_rest_load(tmp_path, monkeypatch):
    api, runs = make_toy_api()
    entry = {"api": API, "key": ["cpu", ["x", [4, 8], "float32"]], "backend": "medium", "tactic": None, "experimental": False, "feature": None, "tuned_at": "2026-01-01"}
    broken = dict(entry, api="toy_models.breaks_the_loader")
    (tmp_path / "cache.json").write_text(json.dumps({"format": "flashinfer-autotune-cache", "schema_version": 1, "entries": [broken, entry]}))
    real = tuner.resolve_entry

    def resolve(name, backend, summary):  # stands for a failure no check foresaw
        if name == broken["api"]:
            raise RecursionError("maximum recursion depth exceeded")
        return real(name, backend, summary)

    monkeypatch.setattr(tuner, "resolve_entry", resolve)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        summary = load_autotune_cache(tmp_path / "cache.json")
    (warning,) = tuning_warnings(record)
    assert "loaded 1 entries, skipped 1" in str(warning.message)
    assert "RecursionError" in summary.skipped["malformed entries"][0]
    api(torch.ones(4, 8))
    assert runs == Counter(medium=1)


# -- use-time re-validation ----------------------------------------------------------


def test_gate_flipping_after_load(tmp_path, monkeypatch):
    tune_fast_winner(tmp_path / "cache.json", monkeypatch)
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    api, runs = make_toy_api()
    assert load_autotune_cache(tmp_path / "cache.json").loaded == 1
    with pytest.warns(ExperimentalWarning):
        api(torch.ones(4, 8))
    assert runs == Counter(fast=1)

    monkeypatch.delenv(EXPERIMENTAL_AUTO_ENV_VAR)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        api(torch.ones(4, 8))
        api(torch.ones(4, 8))
    (warning,) = tuning_warnings(record)
    assert "'fast'" in str(warning.message) and "is not set" in str(warning.message)
    assert runs == Counter(fast=1, slow=2)

    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    api(torch.ones(4, 8))
    assert runs == Counter(fast=2, slow=2)


def test_tuned_winner_that_fails_its_checks_now_falls_back(monkeypatch):
    api, runs = make_toy_api()
    with autotune():
        api(torch.ones(4, 8))
    runs.clear()
    # Same problem key, but 'medium' rejects negative inputs. (With the gate set,
    # so that two candidates remain and the tuned choice is consulted at all.)
    monkeypatch.setenv(EXPERIMENTAL_AUTO_ENV_VAR, "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        with pytest.warns(TuningConfigWarning, match="'medium' .* its checks reject this call"):
            api(-torch.ones(4, 8))
    assert runs == Counter(slow=1)


# -- the environment variable ----------------------------------------------------------

ENV_SCRIPT = textwrap.dedent(
    """
    import time, torch, warnings
    from flashinfer.utils import backend_requirement, supported_compute_capability
    warnings.simplefilter("error")

    @supported_compute_capability([0])
    def ok(x, backend="auto"):
        return True

    @backend_requirement({"slow": ok, "medium": ok})
    def toy(x, backend="auto"):
        if backend == "auto":
            backend = toy.suitable_auto_backends[0]
        print("ran", backend)

    toy(torch.ones(2))
    """
)


def test_cache_named_by_environment_variable_is_loaded_on_first_auto_call(tmp_path):
    entry = {"api": "__main__.toy", "key": ["cpu", ["x", [2], "float32"]], "backend": "medium", "tactic": None, "experimental": False, "feature": None, "tuned_at": "2026-01-01"}
    (tmp_path / "cache.json").write_text(json.dumps({"format": "flashinfer-autotune-cache", "schema_version": 1, "entries": [entry]}))
    environment = {**os.environ, "PYTHONPATH": REPO, autotuner.AUTOTUNE_CACHE_ENV_VAR: str(tmp_path / "cache.json")}
    environment.pop(EXPERIMENTAL_AUTO_ENV_VAR, None)
    result = subprocess.run([sys.executable, "-c", ENV_SCRIPT], env=environment, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ran", "medium"]


# -- the stable ops ----------------------------------------------------------------------

BF16 = torch.bfloat16
# An entry of a backend mm_bf16 no longer has: what a cache tuned with an experimental
# backend holds after that feature is removed (docs/experimental.rst, "Containment").
MM_REMOVED_ENTRY = {
    "api": "flashinfer.gemm.mm_bf16",
    "key": [4, 32, 64, "bfloat16", "cpu"],
    "backend": "retired_backend",
    "tactic": None,
    "experimental": True,
    "feature": "retired_feature",
    "tuned_at": "2026-11-01T00:00:00+00:00",
}


def test_stable_ops_problem_keys():
    from flashinfer.gemm import mm_bf16
    from flashinfer.norm import rmsnorm

    a, b = torch.zeros(4, 64, dtype=BF16), torch.zeros(64, 32, dtype=BF16)
    assert autotuner.problem_key(mm_bf16, a, b) == (4, 32, 64, "bfloat16", "cpu")
    x, weight = torch.zeros(2, 3, 16, dtype=BF16), torch.ones(16, dtype=BF16)
    assert autotuner.problem_key(rmsnorm, x, weight) == (6, 16, "bfloat16", "cpu")


MM_ENV_SCRIPT = textwrap.dedent(
    """
    import json, sys, warnings, torch
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        import flashinfer
        a, b = torch.ones(4, 64, dtype=torch.bfloat16), torch.ones(64, 32, dtype=torch.bfloat16)
        out = flashinfer.mm_bf16(a, b)
        flashinfer.mm_bf16(a, b)
    print(json.dumps({
        "candidates": flashinfer.mm_bf16.suitable_auto_backends,
        "correct": bool(torch.equal(out, torch.full((4, 32), 64.0, dtype=torch.bfloat16))),
        "experimental_modules": sorted(m for m in sys.modules if m.startswith("flashinfer.experimental.")),
        "experimental": sorted(flashinfer.mm_bf16.experimental_backends),
        "warnings": [f"{w.category.__name__}: {w.message}" for w in record],
    }))
    """
)


def test_mm_bf16_cache_with_a_removed_backend_loaded_in_a_fresh_process(tmp_path):
    """A cache naming a backend of a removed feature is skipped, with one warning, and the
    calls run a stable backend without importing any experimental implementation."""
    cache = write_cache(tmp_path / "cache.json", [MM_REMOVED_ENTRY])
    environment = {**os.environ, "PYTHONPATH": REPO, autotuner.AUTOTUNE_CACHE_ENV_VAR: str(cache)}
    environment.pop(EXPERIMENTAL_AUTO_ENV_VAR, None)
    result = subprocess.run([sys.executable, "-c", MM_ENV_SCRIPT], env=environment, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["candidates"][0] == "torch" and report["correct"] is True
    assert not set(report["candidates"]) & set(report["experimental"])  # the gate is unset
    # at most a feature's package and its light support module (a checker core registers)
    assert all(m.count(".") == 2 or m.endswith(".support") for m in report["experimental_modules"]), report
    (warning,) = report["warnings"]
    assert warning.startswith("TuningConfigWarning: autotune cache")
    assert "skipped 1" in warning and "flashinfer.gemm.mm_bf16:retired_backend" in warning
    assert "no longer exists" in warning


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_mm_bf16_tuning_on_cuda_times_with_events_and_respects_the_gate(tmp_path):
    from flashinfer.gemm import mm_bf16

    a = torch.randn(4, 4096, dtype=BF16, device="cuda")
    b = torch.randn(4096, 4096, dtype=BF16, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TuningConfigWarning)  # a candidate may fail to compile
        with autotune(cache=tmp_path / "cache.json"):
            out = mm_bf16(a, b)
    torch.testing.assert_close(out.float(), (a.float() @ b.float()), rtol=2e-2, atol=2e-1)
    (entry,) = json.loads((tmp_path / "cache.json").read_text())["entries"]
    assert entry["key"] == [4, 4096, 4096, "bfloat16", "cuda"]
    assert entry["backend"] in ("nvrtc", "torch")  # the gate kept experimental backends out of tuning
    mm_bf16(a, b)
    assert mm_bf16.suitable_auto_backends[0] == entry["backend"]
