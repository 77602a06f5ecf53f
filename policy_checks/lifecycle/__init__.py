"""The lifecycle of an experimental feature, from admission to graduation or removal.

==============  ===========================================================
`records`       ``FEATURE.toml``: read, validate, explain (checker, bot, board)
`window`        the admission window, a deadline's status, the graduation steps
`board`         ``policy-check features``: the board of the track
`drafting`      ``policy-check features init``: records drafted from the tree
`remove`        ``policy-check remove FEATURE``
`graduate`      ``policy-check graduate FEATURE --to MODULE``
==============  ===========================================================

`records` and `window` are pure data and stdlib. The checker's rules (EXP009) and
the bot read them too. The commands edit the tree through `policy_checks.editing`.
They share that layer with ``policy-check fix``.
"""
