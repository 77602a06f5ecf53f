"""Readers the rules use for other languages.

EXP008 reads pytest command lines, conftest hooks, workflows and links. EXP006 reads
reStructuredText listings and Sphinx settings."""
