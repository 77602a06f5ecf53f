"""The ``policy-check`` command line.

Subcommands live in the modules named in `_SUBCOMMANDS`. They are imported only
when invoked. So ``policy-check run`` never pays for PyGithub, and
``policy-check bot`` never pays for the checker.
"""

from __future__ import annotations

import gc
import importlib

import click

from .. import __version__

# command name -> "module:attribute" of its click command
_SUBCOMMANDS = {
    "run": "policy_checks.cli.run:run",
    "rules": "policy_checks.cli.rules:rules",
    "explain": "policy_checks.cli.rules:explain",
    "baseline": "policy_checks.cli.baseline:baseline_command",
    "fix": "policy_checks.fix.cli:fix",
    "remove": "policy_checks.lifecycle.remove:remove",
    "graduate": "policy_checks.lifecycle.graduate:graduate",
    "bot": "policy_checks.bot.cli:bot",
    "features": "policy_checks.lifecycle.board:features",
    "audit": "policy_checks.audit.command:audit",
    "consumer": "policy_checks.consumer.cli:consumer",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list:
        return sorted(_SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str):
        target = _SUBCOMMANDS.get(name)
        if target is None:
            return None
        module, attribute = target.split(":")
        return getattr(importlib.import_module(module), attribute)


@click.group(cls=_LazyGroup)
@click.version_option(__version__, "-V", "--version", prog_name="policy-check")
def main() -> None:
    """Enforce FlashInfer's experimental-track containment rules (EXP000-EXP009)."""
    # Commands keep large trees alive (libcst's, ast's) while making millions of short-lived
    # nodes: at the default thresholds the cyclic collector's full passes took a third of
    # a lifecycle command's time on a release tree. Rarer young passes make full ones rare.
    gc.set_threshold(200_000, 30, 30)
