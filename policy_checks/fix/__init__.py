"""``policy-check fix``: libcst rewrites for the containment findings that have a safe fix.

The checker says what is wrong: findings with a rule id and a position. Each module
here turns the findings of one rule in one file into new file contents. It keeps
every byte it does not have to touch. `apply` runs them and writes the results.
They see the checker only through `findings`: its findings and a
`findings.FixTarget`.

========  ==============================  ==========================================
rule      module                          rewrite
========  ==============================  ==========================================
EXP001    `deferred_imports`              module-level import -> function-local ones
EXP002    `lazy_exports`                  eager re-export -> module ``__getattr__``
EXP004    `checker_marker`                add ``@experimental_backend``
EXP006    `docs_pages`                    drop the entries from ``docs/api/*.rst``
========  ==============================  ==========================================

`remove` (``policy-check remove FEATURE``) uses the same machinery to remove a
whole feature. That covers its directory, tests, examples and the core entry points
reaching it. `graduate` (``policy-check graduate FEATURE --to MODULE``) uses it to
move a feature to the stable tree. Both also read the checker's own project model
and facts (see `findings`).
"""
