"""``python -m policy_checks`` is ``policy-check``."""

from .cli import main

main()
