"""docs/add_experimental_backend.rst: its blocks, as the walk-through reads them, and the
features its diff builds on. The walk-through itself copies the whole repository, so it
is a round trip (``tests/round_trips/test_add_experimental_backend_page.py``)."""

from __future__ import annotations

import re
from pathlib import Path

from policy_checks.model.records import graduated_to

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "add_experimental_backend.rst"
CONTEXT_FEATURE = re.compile(r"^ .*\bexperimental\.(\w+)", re.M)  # a diff's context line naming a feature
BLOCK = re.compile(r"^\.\. code-block:: (\w+)\n((?:   :\w+: .*\n)*)\n((?:   .*\n|\n)+)", re.M)


def blocks():
    """``(language, caption or None, text)`` of each code block, in page order."""
    found = []
    for language, options, body in BLOCK.findall(PAGE.read_text()):
        caption = re.search(r":caption: (.*)", options)
        lines = [line[3:] for line in body.rstrip("\n").splitlines()]
        if language == "diff":  # a blank context line is " " in a diff; the page leaves it empty
            lines = [line or " " for line in lines]
        found.append((language, caption.group(1).strip() if caption else None, "\n".join(lines) + "\n"))
    return found


def features_built_on(diff: str) -> set:
    """The features the page's diff keeps as context (the page adds its backend beside
    ``splitk``): the diff applies only while each is still there, as it was."""
    return set(CONTEXT_FEATURE.findall(diff))


def absent(root: Path, features) -> set:
    """Those of `features` that are no longer experimental features at `root`:
    removed, or graduated (a shim is left)."""
    gone = set()
    for feature in features:
        directory = root / "flashinfer" / "experimental" / feature
        if not directory.is_dir() or graduated_to(directory, "flashinfer.experimental"):
            gone.add(feature)
    return gone


def test_the_page_is_in_the_docs_and_every_step_has_a_block():
    made = [caption for _, caption, _ in blocks() if caption]
    assert "flashinfer/experimental/chunked_gemm/support.py" in made
    assert "tests/experimental/chunked_gemm/test_chunked_gemm.py" in made
    assert [language for language, _, _ in blocks()].count("diff") == 1
    assert [language for language, _, _ in blocks()].count("console") == 1


def test_the_walkthrough_follows_the_features_it_builds_on(tmp_path):
    """After ``remove splitk_gemm`` (or its graduation) the page's diff cannot apply: the
    walk-through says so and skips, rather than failing a repository that did right."""
    diff = next(text for language, _, text in blocks() if language == "diff")
    assert features_built_on(diff) == {"splitk_gemm"}
    (tmp_path / "flashinfer/experimental/gated_rmsnorm").mkdir(parents=True)
    assert absent(tmp_path, {"splitk_gemm", "gated_rmsnorm"}) == {"splitk_gemm"}
