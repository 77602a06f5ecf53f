"""`context.Context`: the project a command builds once (root, settings, file selection,
baseline, facts cache) and the runner reads instead of separate arguments."""

from __future__ import annotations

import pytest

from policy_checks.engine import baseline, runner
from policy_checks.model import gitfiles
from policy_checks.model.config import ConfigError, load
from policy_checks.engine.context import Context

from ..conftest import write_tree
from ..cli.test_commands import TREE


@pytest.fixture
def tree(tmp_path):
    return write_tree(tmp_path / "project", TREE)


def test_build_finds_the_root_reads_settings_and_the_default_baseline(tree):
    first = runner.run(tree, load(tree), use_cache=False, progress=False)
    assert [f.rule for f in first.findings] == ["EXP001"]
    baseline.write(baseline.default_path(tree), baseline.counted(first.fingerprints))

    context = Context.build(start=tree / "flashinfer", use_cache=False, staged=True)
    assert context.root == tree.resolve() and context.settings.exclude == ("build",)
    assert context.baseline_path == tree / baseline.FILE_NAME
    assert context.baseline.name == baseline.FILE_NAME and sum(context.baseline.counts.values()) == 1
    assert context.files == gitfiles.STAGED and not context.use_cache

    accepted = runner.check(context, progress=False)
    assert accepted.findings == [] and len(accepted.baselined) == 1  # the context's baseline applied
    unbaselined = runner.check(context.with_policy(context.settings, None), progress=False)
    assert unbaselined.findings == first.findings


def test_no_baseline_and_read_false_leave_the_file_unread(tree):
    (tree / baseline.FILE_NAME).write_text("not json", encoding="utf-8")
    with pytest.raises(baseline.BaselineError):
        Context.build(tree)
    assert Context.build(tree, no_baseline=True).baseline_path is None
    unread = Context.build(tree, read=False)
    assert unread.baseline is None and unread.baseline_path == tree.resolve() / baseline.FILE_NAME
    baseline.write(tree / baseline.FILE_NAME, {})
    assert unread.reading_baseline().baseline.counts == {}


def test_bad_settings_fail_the_build(tree):
    (tree / "pyproject.toml").write_text("[tool.policy-check]\nexclude = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        Context.build(tree)
