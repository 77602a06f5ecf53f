"""Output formats. Each formatter turns a `Result` into the text printed on stdout
(or written to ``--output-file``), called as ``formatter(result, rule_names,
options)`` with an `Options`.

All formats carry the same findings; `FORMATS` maps the ``--format`` name to it.
"""

from __future__ import annotations

from .github import github
from .json_report import json_report
from .options import Options
from .sarif import sarif
from .text import text

FORMATS = {"text": text, "json": json_report, "github": github, "sarif": sarif}
__all__ = ["FORMATS", "Options"]
