"""The editing layer that ``fix`` and the lifecycle commands share.

`target` (the tree and its settings, the checker's project model, the two errors:
`FixError` exit 2, `Refused` exit 1), `cst_tools` (libcst parsing and byte-preserving
edits), `docs_tree` (the docs files a command may edit), `changes` (a planned change
set: its ``--diff`` and its all-or-nothing apply).
"""
