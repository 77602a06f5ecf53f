"""A finding's rule id and message are the same on every run, whichever request reaches
a line first: the tree is audited by one worker (every request in one interpreter, in
order, so a module's top level runs in whichever request imports it first, beside what
earlier lines of that request loaded) and by one worker per request (each in a fresh
interpreter), and both audits must read the same."""

from __future__ import annotations

import textwrap

from policy_checks.audit.tree import audit_tree
from policy_checks.model.config import Settings
from policy_checks.engine.context import Context

from ..conftest import write_tree

KERNEL = "flashinfer.experimental.feat.kernel"

TREE = {
    "flashinfer/__init__.py": "",
    "flashinfer/experimental/__init__.py": "",
    "flashinfer/experimental/feat/__init__.py": "",
    "flashinfer/experimental/feat/kernel.py": "from . import other\n",
    "flashinfer/experimental/feat/other.py": "X = 1\n",
    # a core module the AOT listing imports lazily, whose top level loads experimental code:
    # its import's finding (AUD001), whether its own request or the listing runs it first
    "flashinfer/lazy_core.py": f"import {KERNEL}\n",
    # the twin: the listing calling into experimental code at call time is the listing's (AUD002)
    "flashinfer/entry.py": f"def run():\n    import {KERNEL}\n",
    "flashinfer/aot.py": textwrap.dedent("""\
        def registered_specs():
            from . import lazy_core
            from .entry import run

            run()
            return []
        """),
    # a line whose module an earlier line of the same request may have half loaded
    # (its parent packages, what it imports): the subject is what the line asks for
    "flashinfer/a_first.py": "import flashinfer.experimental.feat.other\nfrom . import z_user\n",
    "flashinfer/z_user.py": f"import {KERNEL}\n",
    # a refused connection, reached by its own request or by an importer's
    "flashinfer/net_core.py": (
        "import socket\ns = socket.socket()\ntry:\n    s.connect(('192.0.2.1', 80))\nexcept OSError:\n    pass\n"
    ),
    "flashinfer/net_user.py": "from . import net_core\n",
    # an error naming its own file: the tree runs from a new private copy each time
    "flashinfer/fails_with_path.py": "raise RuntimeError(f'cannot load {__file__}')\n",
}


def _verdict(root, jobs: int) -> list:
    found = audit_tree(Context(root, Settings()), jobs=jobs, timeout=20, collection=False)
    return sorted((f.rule, f.path, f.line, f.subject, f.message) for f in found.findings)


def test_one_worker_and_a_worker_per_request_give_the_same_verdict(tmp_path):
    root = write_tree(tmp_path / "tree", TREE).resolve()
    alone = _verdict(root, 1)
    spread = _verdict(root, 16)  # more workers than requests: each request in a fresh interpreter
    assert alone == spread
    at = {(rule, path, line) for rule, path, line, _, _ in alone}
    assert ("AUD001", "flashinfer/lazy_core.py", 1) in at and ("AUD002", "flashinfer/lazy_core.py", 1) not in at
    assert ("AUD002", "flashinfer/entry.py", 2) in at  # the twin: a load at call time stays the listing's
    assert [s for r, p, _, s, _ in alone if p == "flashinfer/z_user.py"] == [KERNEL]
    assert [(r, p, n) for r, p, n, _, _ in alone if r == "AUD000"] == [
        ("AUD000", "flashinfer/fails_with_path.py", 1), ("AUD000", "flashinfer/net_core.py", 4)]
    assert "cannot load flashinfer/fails_with_path.py" in alone[0][4]
