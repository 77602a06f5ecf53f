"""The experimental-track bot: PR checks and the scheduled lifecycle review (SPEC §3.2).

Layout, one concern per module:

- ``parsers``      text in, facts out: PR body section, tracking-issue body, extension
                   commands, FEATURE.toml. No network.
- ``deadlines``    calendar arithmetic and the "N days left" wording.
- ``markdown``     escaping of user text quoted in comments.
- ``client``       PyGithub connection with a bounded retry budget, error wording.
- ``graphql``      the bulk reads (one request where REST needs one per issue or file),
                   answered as PyGithub objects.
- ``writes``       the single gate every write goes through (dry run, write budget,
                   read-only tokens).
- ``comments``     one bot comment per thread, found by marker and login.
- ``extensions``   `/experimental extend` comments, checked against permissions.
- ``pr_check``     ``policy-check bot pr``.
- ``review``       ``policy-check bot review``.
- ``cli``          the click commands.

PyGithub is imported only below this package, so ``policy-check run`` never loads it.
"""
