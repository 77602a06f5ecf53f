"""Where the checker comes from and how to install it: written once, here.

No package index serves ``flashinfer-policy-check``. So a bare ``pip install
flashinfer-policy-check[bot]`` fails. The forms that work install from one of:

- a checkout of this repository;
- its git URL pinned to a release tag or a commit;
- a wheel built from it.

The README, docs/policy_check.rst, docs/bot.rst and the CLI's messages quote these
strings. ``tests/packaging/test_install_forms.py`` keeps them equal. It also runs each form
offline in a fresh virtual environment.

This module imports nothing of the checker, so that any module may use it. Users include the
bot's "install the extra" message and the SARIF report's links.
"""

from __future__ import annotations

from .. import __version__

DISTRIBUTION = "flashinfer-policy-check"
# The one canonical repository (also [project.urls] in pyproject.toml, which a test keeps equal).
REPOSITORY = "https://github.com/flashinfer-ai/flashinfer-experimental-track"
ACTIONS = "flashinfer-ai/flashinfer-experimental-track/.github/actions"


def release_tag(version: str = __version__) -> str:
    """The git tag of a release (docs/releasing.rst): ``v`` and the version, as in ``v0.1.0``."""
    return f"v{version}"


def from_checkout(extra: str = "bot") -> str:
    """Run in a checkout of this repository."""
    return f'python3 -m pip install ".[{extra}]"' if extra else "python3 -m pip install ."


def pinned(extra: str = "bot", ref: str = "") -> str:
    """From the repository's git URL at `ref`: what a FlashInfer environment installs.

    `ref` is a release tag, by default this version's, or a full 40-character commit."""
    name = f"{DISTRIBUTION}[{extra}]" if extra else DISTRIBUTION
    return f'python3 -m pip install "{name} @ git+{REPOSITORY}@{ref or release_tag()}"'


def wheel_name(version: str = __version__) -> str:
    return f"{DISTRIBUTION.replace('-', '_')}-{version}-py3-none-any.whl"


BUILD_WHEEL = "python3 -m pip wheel --no-deps -w dist ."


def from_wheel(extra: str = "bot") -> str:
    """A wheel built by `BUILD_WHEEL` in a checkout, copied to where it is installed."""
    wheel = f"dist/{wheel_name()}"
    return f'python3 -m pip install "{wheel}[{extra}]"' if extra else f"python3 -m pip install {wheel}"


def needs_extra(what: str, extra: str = "bot") -> str:
    """The error a command prints when an optional extra is missing.

    It gives the forms that work."""
    return (f"policy-check: {what}: install the [{extra}] extra: `{from_checkout(extra)}` in a checkout of "
            f"{REPOSITORY}, or `{pinned(extra)}` (docs/policy_check.rst, \"Installing it beside FlashInfer\")")
