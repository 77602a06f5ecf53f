"""The editing layer that ``fix`` and the lifecycle commands share.

- `target`: the tree and its settings, and the checker's project model. It also
  holds the two errors: `FixError` (exit 2) and `Refused` (exit 1).
- `cst_tools`: libcst parsing and byte-preserving edits.
- `docs_tree`: the docs files a command may edit.
- `changes`: a planned change set, with its ``--diff`` and its all-or-nothing apply.
"""
