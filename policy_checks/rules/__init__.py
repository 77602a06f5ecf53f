"""The rules, one module each (``exp000``, ``exp001``, ...).

`registry` finds them by scanning this package for `base.Rule` subclasses. `base` holds
what every rule is made of (`Rule`, `Finding`, `Example`), and the helpers several rules
share. `meta` declares the suppressions' SUP001/SUP002, which
`policy_checks.engine.suppressions` reports.
"""
