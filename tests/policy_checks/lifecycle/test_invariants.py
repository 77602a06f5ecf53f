"""The lifecycle commands' invariants (`invariants.run_checked`) on each shape of
feature a real tree holds: an experimental API with its lazy export, docs and tests;
a backend behind a stable API; empty, non-Python, binary and executable files; and
links and FIFOs, which refuse."""

from __future__ import annotations

import os

import pytest

from .invariants import run_checked, snapshot

API = {
    "fxpkg/__init__.py": """\
        import importlib

        _LAZY_EXPORTS = {"stable": "ops", "fancy": "ops"}


        def __getattr__(name):
            return getattr(importlib.import_module(f"fxpkg.{_LAZY_EXPORTS[name]}"), name)
        """,
    "fxpkg/ops.py": """\
        from .api_logging import flashinfer_api, flashinfer_experimental_api


        @flashinfer_api
        def stable(x):
            return x


        @flashinfer_experimental_api(feature="feat")
        def fancy(x):
            from .experimental.feat.kernels import run

            return run(x)
        """,
    "fxpkg/experimental/feat/build.json": '{"arch": [90]}\n',
    "fxpkg/experimental/feat/empty.py": "",
    "fxpkg/experimental/feat/kernel.cubin": b"\x7fELF\x00\x01\xff\xfe binary",
    "fxpkg/experimental/feat/run.sh": "#!/bin/sh\necho feat\n",
    "tests/experimental/feat/test_feat.py": "from fxpkg.experimental.feat.kernels import run\n\n\ndef test_run():\n    assert run(1) == 2\n",
    "tests/experimental/feat/data.txt": "",
    "examples/feat_demo.py": "from fxpkg import fancy\n\nprint(fancy(1))\n",
    "examples/feature_tour.py": "print('a neighbour whose name starts like the feature')\n",
}

BACKEND = {
    "fxpkg/experimental/feat/support.py": """\
        from ...utils import experimental_backend


        @experimental_backend
        def check_feat(x, backend="auto"):
            return True
        """,
    "fxpkg/ops.py": """\
        from .experimental.feat.support import check_feat
        from .utils import backend_requirement


        def _check_plain(x, backend="auto"):
            return True


        @backend_requirement({"plain": _check_plain, "feat": check_feat})
        def op(x, backend="auto"):
            if backend == "feat":
                from .experimental.feat.kernels import run

                return run(x)
            return x
        """,
}

SHAPES = {"api": API, "backend": BACKEND}
COMMANDS = {
    "remove": (["remove", "feat"], None),
    "graduate": (["graduate", "feat", "--to", "fxpkg.feat_ops"], {"fxpkg.experimental.feat": "fxpkg.feat_ops"}),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_keeps_every_invariant(tree, shape, command):
    tree.write(SHAPES[shape])
    os.chmod(tree.root / "fxpkg/experimental/feat/run.sh", 0o755) if shape == "api" else None
    argv, moved = COMMANDS[command]
    outcome = run_checked(tree.root, argv, moved)
    assert outcome.exit_code == 0, outcome.output
    assert outcome.lost_imports == [] and outcome.new_findings == set(), outcome
    if command == "remove":
        assert not (tree.root / "fxpkg/experimental/feat").exists()
        assert "+++ /dev/null" in outcome.diff and "deleted file mode 100644" in outcome.diff
    if shape == "api":
        assert (tree.root / "examples/feature_tour.py").exists()
        if command == "graduate":
            assert os.stat(tree.root / "fxpkg/feat_ops/run.sh").st_mode & 0o111
            assert (tree.root / "fxpkg/feat_ops/kernel.cubin").read_bytes().startswith(b"\x7fELF\x00")
            assert (tree.root / "fxpkg/feat_ops/empty.py").read_bytes() == b""


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("hazard", ["linked feature", "linked file", "fifo", "linked tests"])
def test_links_and_special_files_refuse_with_the_tree_untouched(tree, tmp_path_factory, hazard, command):
    tree.write(API)
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.py").write_text("SECRET = 1\n")
    feature = tree.root / "fxpkg/experimental/feat"
    if hazard == "linked feature":
        os.rename(feature, outside / "feat")
        os.symlink(outside / "feat", feature)
    elif hazard == "linked file":
        os.symlink(outside / "secret.py", feature / "secret.py")
    elif hazard == "linked tests":
        os.symlink(outside / "secret.py", tree.root / "tests/experimental/feat/secret.py")
    else:
        os.mkfifo(feature / "pipe")
    outside_before = snapshot(outside)
    outcome = run_checked(tree.root, COMMANDS[command][0], COMMANDS[command][1])
    assert outcome.exit_code == 1 and "refused, nothing written" in outcome.output
    assert snapshot(outside) == outside_before


def test_the_unused_import_check_reads_function_bodies():
    """A function-local import whose last use the run deleted is reported; one still
    used by a nested function, one alone in an ``if`` block and one unused before are
    not."""
    from .invariants import imports_made_unused

    before = (b"def f(x):\n    import os\n    import json\n    import re\n    if x:\n        import math\n"
              b"    def g():\n        return json\n    return os.sep, math.pi, g\n\n\ndef h():\n    import sys\n")
    after = (b"def f(x):\n    import os\n    import json\n    import re\n    if x:\n        import math\n"
             b"    def g():\n        return json\n    return g\n\n\ndef h():\n    import sys\n")
    assert imports_made_unused({"m.py": before}, {"m.py": after}) == ["m.py: f: os"]
    assert imports_made_unused({"p/__init__.py": before}, {"p/__init__.py": after}) == ["p/__init__.py: f: os"]
