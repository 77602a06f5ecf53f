"""The experimental-track bot: PR checks and the scheduled lifecycle review.

Experimental code is admitted for a bounded time, with a named owner and a tracking
issue. The containment checker sees only the tree. The bot holds each PR and each
feature to that contract where the rest of it lives: on GitHub, in issues, comments and
dates. The contract is docs/experimental.rst ("Contributor rules"). docs/bot.rst says what
the bot does, and gives its request budgets and its threat model.

Layout, one concern per module:

- ``parsers``      text in, facts out: PR body section, tracking-issue body, extension
                   commands. FEATURE.toml is read through ``policy_checks.model.records``,
                   the record module the checker's EXP009 uses too. No network.
- ``deadlines``    UTC dates, the weekly cycle and the "N days left" wording. The window
                   and the deadline status come from ``policy_checks.model.window``.
- ``markdown``     escaping of user text quoted in comments.
- ``client``       PyGithub connection with a bounded retry budget, error wording.
- ``graphql``      the bulk reads, answered as PyGithub objects. One request does what
                   REST needs one per issue or file for.
- ``writes``       the single gate every write goes through: dry run, write budget,
                   read-only tokens.
- ``comments``     one bot comment per thread, found by marker and login.
- ``extensions``   `/experimental extend` comments, checked against permissions.
- ``baseline_diff`` a PR's diff of ``policy-check-baseline.json``: debt added, paid
                   off, moved. No network.
- ``aliases``      markers aliased in one of a PR's modules and imported in another.
- ``pr_check``     ``policy-check bot pr``.
- ``review``       ``policy-check bot review``.
- ``cli``          the click commands.

PyGithub is an optional extra (``[bot]``). `policy_checks.report.install_forms` says how to
install it. It is imported only below this package. ``cli`` imports it only when a command
runs. So ``policy-check run`` never loads it, and installs without it.
"""
