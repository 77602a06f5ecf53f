"""tests/lanes.py, the README's test command: every lane runs and is reported, whatever
another lane says; the exit status is 0 only when every lane passed or was empty."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

LANES_SCRIPT = Path(__file__).resolve().parent / "lanes.py"


def _lanes_module():
    spec = importlib.util.spec_from_file_location("lanes_under_test", LANES_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _plant(root: Path) -> dict:
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n")
    for name, body in {
        "failing": "def test_fails():\n    assert 1 == 2\n",
        "passing": "import sys\n\n\ndef test_passes():\n    pass\n\n\ndef test_left_out():\n    assert False\n\n\n"
                   "def test_bytecode_is_written():\n    assert not sys.dont_write_bytecode\n",
    }.items():
        (root / name).mkdir()
        (root / name / f"test_{name}.py").write_text(body)
    (root / "empty").mkdir()
    return {"failing": "failing/", "passing": "passing/", "empty": "empty/"}


def test_a_failing_lane_hides_no_other_empty_lanes_pass_and_arguments_reach_pytest(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the planted lanes need no plugin (0.6 s each)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # the lanes write bytecode all the same
    lanes = _lanes_module()
    planted = _plant(tmp_path)
    argv = ["--only", "failing", "--only", "passing", "--only", "empty", "--", "-k", "not left_out"]
    status = lanes.main(argv, root=tmp_path, lanes=planted)
    out = capsys.readouterr().out
    assert status == 1
    summary = out[out.index("---- lanes ----"):].splitlines()[1:]
    verdicts = {line.split()[0]: line.split()[1] for line in summary}
    assert verdicts == {"failing": "FAILED", "passing": "ok", "empty": "ok"}
    assert "1 failed" in out and "assert 1 == 2" in out
    assert "2 passed, 1 deselected" in out  # -k reached the passing lane's pytest
