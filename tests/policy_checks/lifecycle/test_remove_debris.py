"""``policy-check remove`` clears what its edits leave behind, in the same change:
imports only the removed code used, ``__all__`` names left unbound, the feature's
baseline entries; and it prints the note that closes the tracking issue.

The invariants (`invariants.run_checked`) check every case here too: ``from module
import *`` works wherever it worked, no import the run made unused is left, and the
baseline holds no entry of a deleted file."""

from __future__ import annotations

import json

from policy_checks.engine import baseline

from .test_remove_repository import checked

MODULE = '''\
"""Ops."""

from typing import Any, Optional

import json as _json
import os
from os import path as os_path

from .api_logging import flashinfer_api, flashinfer_experimental_api
from .utils import backend_requirement


@flashinfer_api
def stable(x: "Optional[int]"):
    return x


@flashinfer_experimental_api(feature="feat")
def fancy(x: Any) -> None:
    from .experimental.feat.kernels import run

    os.environ.get("X")
    return run(x)


__all__ = ["stable", "fancy", "backend_requirement"]
'''


def test_imports_only_the_removed_code_used_go_and_no_other(tree):
    tree.write({"fxpkg/ops.py": MODULE})
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    ops = tree.read("fxpkg/ops.py").decode()
    assert "from typing import Optional\n" in ops  # Any went; Optional stays: a string annotation uses it
    assert "\nimport os\n" not in ops  # used only by the removed function
    assert "from .api_logging import flashinfer_api\n" in ops  # the marker went, flashinfer_api is used
    assert "import json as _json\n" in ops and "from os import path as os_path\n" in ops  # unused before: left
    assert "from .utils import backend_requirement\n" in ops  # listed in __all__: a re-export
    assert "imports made unused: Any, flashinfer_experimental_api, os" in outcome.output


def test_an_import_a_kept_file_takes_from_the_module_stays(tree):
    tree.write({"fxpkg/ops.py": MODULE, "fxpkg/user.py": "from .ops import Any\n\nVALUE = Any\n"})
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    assert "from typing import Any, Optional\n" in tree.read("fxpkg/ops.py").decode()


PACKAGE = '''\
from ..experimental.feat.support import check_feat, check_feat_too as feat_check
from ..utils import backend_requirement

__all__ = ["backend_requirement", "check_feat", "feat_check", "sub"]
'''
SUPPORT = '''\
from ...utils import experimental_backend


@experimental_backend
def check_feat(x):
    return True


@experimental_backend
def check_feat_too(x):
    return True
'''


def test_all_names_the_removal_unbound_go_so_a_star_import_works(tree):
    tree.write({"fxpkg/pkg/__init__.py": PACKAGE, "fxpkg/pkg/sub.py": "X = 1\n", "fxpkg/experimental/feat/support.py": SUPPORT,
                "fxpkg/ops.py": MODULE, "fxpkg/star_user.py": "from .pkg import *\n"})
    outcome = checked(tree)  # asserts `from fxpkg.pkg import *` still works
    assert outcome.exit_code == 0, outcome.output
    init = tree.read("fxpkg/pkg/__init__.py").decode()
    assert '__all__ = ["backend_requirement", "sub"]\n' in init  # a submodule that stays is still a name
    assert "fxpkg.pkg.__all__: check_feat, feat_check" in outcome.output
    assert tree.imported("fxpkg.star_user") is not None


def test_the_features_baseline_entries_go_in_the_same_change_and_the_diff_shows_them(tree):
    tree.write({"fxpkg/ops.py": MODULE})
    entries = {
        baseline.Fingerprint("EXP004", "fxpkg.experimental.feat.kernels", "run", "x"): 2,
        baseline.Fingerprint("EXP002", "fxpkg.ops", "fancy", "fxpkg.experimental.feat.kernels"): 1,
        baseline.Fingerprint("EXP009", "fxpkg/experimental/feat", "", "record"): 1,
        baseline.Fingerprint("EXP002", "fxpkg.ops", "stable", "something else"): 1,
    }
    tree.write({"policy-check-baseline.json": baseline.dumps(entries)})
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    assert "--- a/policy-check-baseline.json\n+++ b/policy-check-baseline.json\n" in outcome.diff
    kept = json.loads(tree.read("policy-check-baseline.json"))["entries"]
    assert [(e["rule"], e["scope"]) for e in kept] == [("EXP002", "stable")]
    assert "policy-check-baseline.json: 3 entries of feat" in outcome.output


def test_the_closing_note_names_the_tracking_issue(tree):
    tree.write({"fxpkg/ops.py": MODULE, "fxpkg/experimental/feat/FEATURE.toml": 'kind = "api"\ntracking_issue = 12\n'})
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    assert "Close #12: feature feat removed in <commit or PR>." in outcome.output
    assert "- fxpkg.ops.fancy" in outcome.output
    assert "policy-check bot note --repo OWNER/NAME --issue 12 --body-file NOTE" in outcome.output


def test_without_a_tracking_issue_the_note_says_what_to_do(tree):
    tree.write({"fxpkg/ops.py": MODULE})
    outcome = checked(tree)
    assert "names no tracking issue: close the issue that tracked feat by hand" in outcome.output


def test_a_statement_that_goes_whole_takes_its_gap_so_none_grows(tree):
    tree.write({"fxpkg/ops.py": '''\
from dataclasses import dataclass
from typing import Any

import os

from .api_logging import flashinfer_experimental_api


@dataclass
class Weights:
    size: int


@flashinfer_experimental_api(feature="feat")
def fancy(x: Any):
    from .experimental.feat.kernels import run

    return run(os.sep)
'''})
    outcome = checked(tree)
    assert outcome.exit_code == 0, outcome.output
    assert tree.read("fxpkg/ops.py").decode() == '''\
from dataclasses import dataclass


@dataclass
class Weights:
    size: int
'''


LOCAL_IMPORTS = '''\
"""Ops."""

from .api_logging import flashinfer_api


@flashinfer_api
def op(x, backend="auto"):
    import json
    import os, sys
    from .utils import experimental_backend, supported_compute_capability as scc
    import typing

    def inner() -> "typing.Any":
        return json.dumps(x)

    if x:
        import math
    if not x:
        import re
        y = 1
    if backend == "feat":
        from .experimental.feat.kernels import run

        experimental_backend(run)
        return run(os.sep + str(math.pi) + str(sys.maxsize) + re.escape("."))
    return inner(), (lambda: scc)()


class Runner:
    @flashinfer_api
    def only(self, backend="feat"):
        from .utils import backend_requirement

        if backend == "feat":
            from .experimental.feat.kernels import scale

            return scale(backend_requirement)


def untouched():
    import os
'''


def test_imports_made_unused_in_a_kept_function_go_and_no_other(tree):
    tree.write({"fxpkg/ops.py": LOCAL_IMPORTS})
    outcome = checked(tree)  # the invariants check function-local imports too
    assert outcome.exit_code == 0, outcome.output
    ops = tree.read("fxpkg/ops.py").decode()
    assert "    import json\n" in ops and "    import typing\n" in ops  # a nested function, a string annotation
    assert "    import os, sys\n" not in ops and "import sys" not in ops
    assert "    from .utils import supported_compute_capability as scc\n" in ops  # a lambda uses it
    assert "    if x:\n        import math\n" in ops  # the if body would be empty: it stays
    assert "    if not x:\n        y = 1\n" in ops  # not here
    assert "    def only(self, backend=\"feat\"):\n        pass\n" in ops  # a body left empty gets pass
    assert "def untouched():\n    import os\n" in ops  # unused before the edit: not its debris
    assert "fxpkg.ops.op: imports made unused: experimental_backend, os, re, sys" in outcome.output
    assert "fxpkg.ops.Runner.only: imports made unused: backend_requirement" in outcome.output
    module = tree.imported("fxpkg.ops")
    assert module.op(0)[0] == "0" and module.op(0)[1].__name__ == "supported_compute_capability"
    assert module.Runner().only() is None
