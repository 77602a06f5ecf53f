"""policy-check: the experimental track's containment checker suite and bot."""

__version__ = "0.1.0"
