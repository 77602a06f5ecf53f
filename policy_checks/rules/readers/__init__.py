"""Readers the rules use for other languages: pytest command lines, conftest hooks, workflows and links (EXP008), reStructuredText listings and Sphinx settings (EXP006)."""
