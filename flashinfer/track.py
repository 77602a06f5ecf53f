"""Which code belongs to the experimental track: the one test the runtime uses.

Code under the ``flashinfer.experimental`` package is experimental (see
docs/experimental.rst, "What is experimental" and "Containment"). The runtime
asks in three places: dispatch refuses a checker defined there that is not
marked ``@experimental_backend``; a `flashinfer.jit.JitSpec` created there is
experimental, so never pre-built; caches and trace-apply configurations never
import modules there and record which feature a backend belongs to. A module
whose name only starts with the same letters (``flashinfer.experimental_foo``)
is not part of it.

Standard library only, and imports nothing: the JIT, support modules and
``flashinfer.experimental`` itself may import it.
"""

from __future__ import annotations

from typing import Optional

__all__ = ["EXPERIMENTAL_PACKAGE", "experimental_feature", "is_experimental_module"]

EXPERIMENTAL_PACKAGE = "flashinfer.experimental"
_PREFIX = EXPERIMENTAL_PACKAGE + "."


def is_experimental_module(module: str) -> bool:
    """Whether the module named ``module`` is ``flashinfer.experimental`` or below it."""
    return module == EXPERIMENTAL_PACKAGE or module.startswith(_PREFIX)


def experimental_feature(module: str) -> Optional[str]:
    """``<feature>`` for a module ``flashinfer.experimental.<feature>[...]``, else None.

    A feature is one directory under ``flashinfer/experimental/``; the package
    itself belongs to no feature.
    """
    if not module.startswith(_PREFIX):
        return None
    return module[len(_PREFIX):].split(".", 1)[0]
