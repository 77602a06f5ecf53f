"""Output formats.

Each formatter turns a `Result` into the text printed on stdout, or written to
``--output-file``. It is called as ``formatter(result, rule_names, options)`` with an
`Options`.

All formats carry the same findings. `FORMATS` maps the ``--format`` name to its formatter.
A format's module is imported only when that format is looked up. So a run pays for the one
report it prints: SARIF's rule help, say, only with ``--format sarif``.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module

from .options import Options

# --format name -> (module of this package, function)
_WHERE = {"text": ("text", "text"), "json": ("json_report", "json_report"), "github": ("github", "github"),
          "sarif": ("sarif", "sarif")}


class _Formats(Mapping):
    """name -> formatter, each imported on first use."""

    def __getitem__(self, name: str):
        module, function = _WHERE[name]
        return getattr(import_module(f"{__name__}.{module}"), function)

    def __iter__(self):
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)


FORMATS = _Formats()
__all__ = ["FORMATS", "Options"]
