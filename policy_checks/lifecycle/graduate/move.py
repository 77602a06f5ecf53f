"""Step 2: the feature's files move to the new home.

Imports inside them are retargeted. The track's marks in them are swapped or
dropped; that is step 3's part in the moved code. At each old module path, a shim
re-exports the new one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import List, Optional

from ...model import exports, markers
from ...model.facts import extract
from ...editing.cst_tools import apply_edits
from .marks import drop_experimental_marks, swap_decorators
from .module_strings import retarget_module_strings
from ..plan import Plan
from .rewrite import parse_file, retarget_or_refuse
from .text_retarget import retargeted_text
from .wrapped import unwrap_swapped
from .untouched import keeps_its_bytes


def move_feature(graduation: Plan, feature_dir: Path) -> None:
    """Plan the new files, the shims at the old paths, and the record's deletion."""
    target, changes = graduation.target, graduation.changes
    home_dir = graduation.home.replace(".", "/")
    old_dir = feature_dir.relative_to(target.root).as_posix()
    files = [rel for rel in changes.files_under(old_dir) if "__pycache__" not in rel.split("/")]
    for rel in files:
        new_rel = f"{home_dir}/{rel[len(old_dir) + 1:]}"
        if rel == f"{old_dir}/{markers.RECORD}":
            graduation.deletions.append(rel)
            continue
        data = changes.read(rel)
        graduation.modes[new_rel] = stat.S_IMODE(os.lstat(target.root / rel).st_mode)
        if not rel.endswith(".py"):
            graduation.creations[new_rel] = data
            graduation.deletions.append(rel)
            continue
        moved = _moved_module(graduation, rel, new_rel, data)
        graduation.creations[new_rel] = retarget_module_strings(moved, graduation.old, graduation.home)
        module, is_package = target.module_of(rel)
        marks_package = rel == f"{old_dir}/__init__.py"
        graduation.rewrite(rel, shim(graduation.feature, module, target.module_of(new_rel)[0], marks_package,
                                     graduation.home, lazy_exports(moved, module, is_package)))
    graduation.did(2, f"moved {old_dir}/ to {home_dir}/ ({len(files)} files), shims left at the old module paths")
    if (feature_dir / markers.RECORD).is_file():
        graduation.did(2, f"deleted {old_dir}/{markers.RECORD}")


def _moved_module(graduation: Plan, rel: str, new_rel: str, data: bytes) -> bytes:
    """A module's bytes at its new path, with imports of the feature retargeted and marks dropped."""
    target = graduation.target
    module, is_package = target.module_of(rel)
    if keeps_its_bytes(data, graduation.old, graduation.home, module, target.module_of(new_rel)[0], is_package):
        return data  # nothing to retarget or swap: never handed to libcst
    text = retargeted_text(data, graduation.old, graduation.home, module, target.module_of(new_rel)[0], is_package)
    if text is not None:
        return text  # only imports of the feature change: edited as text, checked with ast
    file = parse_file(graduation.target, rel, data)
    edits: dict = {}
    retarget_or_refuse(file, graduation.old, graduation.home, graduation.target.module_of(new_rel)[0], edits)
    swapped = swap_decorators(file, lambda qualname, decorator: True, edits)
    if swapped:
        graduation.did(3, f"{new_rel}: @{markers.STABLE_API} on {', '.join(swapped)}")
    drop_experimental_marks(file, edits)
    return unwrap_swapped(graduation, new_rel, apply_edits(file, edits) if edits else data, swapped)


def lazy_exports(data: bytes, module: str, is_package: bool) -> Optional[List[str]]:
    """The names of the ``__all__`` of a module that serves names lazily (`exports.lazy_shim_names`).

    Such a module has a ``__getattr__`` beside an ``__all__``. Any other module gives
    None. ``from <it> import *`` would load every lazy name at once. Among them are
    modules the original never loads on import.
    """
    return exports.lazy_shim_names(extract(data, module, is_package))


def shim(feature: str, module: str, new_module: str, marks_package: bool, home: str,
         lazy: Optional[List[str]] = None) -> bytes:
    """A module at the old path that re-exports the new one and says where it went.

    Module names are dotted identifiers, so they need no escaping in a string. The
    new module's names come through a star import. Where it serves names lazily,
    they come only through the forwarding ``__getattr__``, as lazily as there.
    `lazy` is then its ``__all__``. The new module is still imported with the shim,
    as its original was.
    """
    marker = f'{markers.SHIM_MARKER} = "{home}"\n\n' if marks_package else ""
    if lazy is None:
        exports = f"from {new_module} import *  # noqa: F401,F403\n\n"
    else:
        exports = f"import {new_module} as _module  # noqa: F401\n\n" + (f"__all__ = {lazy!r}\n\n" if lazy else "")
    return (
        f'"""Moved to `{new_module}` when {feature} graduated from the experimental track.\n\n'
        f"This re-export stays for one release; import `{new_module}` instead.\n"
        f'"""\n\n'
        f"import importlib as _importlib\n"
        f"import warnings as _warnings\n\n"
        f"{exports}"
        f"{marker}"
        f"_warnings.warn(\n"
        f'    "{module} moved to {new_module} when "\n'
        f'    "{feature} graduated; the old path goes in the next release",\n'
        f"    DeprecationWarning,\n"
        f"    stacklevel=2,\n"
        f")\n\n\n"
        f"def __getattr__(name):\n"
        f'    return getattr(_importlib.import_module("{new_module}"), name)\n'
    ).encode("utf-8")
