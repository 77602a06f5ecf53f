"""Facts by content hash, kept under the project root between runs.

One JSON file maps a key (hash of the facts version, the file's path and its
bytes) to that file's facts. JSON, not pickle: the cache lives in the checked tree,
where a pull request could plant one, and loading JSON runs no code. A key never outlives the bytes it was computed from,
so the cache cannot change a result, only skip work. Writes go to a temporary
file renamed into place, so two runs sharing the cache never see a half-written
file (the last writer wins, and both versions are valid). An unreadable or
corrupt cache is ignored with a warning.
"""

from __future__ import annotations

import hashlib
import os
import json
import tempfile
from pathlib import Path

from .facts import FACTS_VERSION, FileFacts, from_data, to_data

DIRECTORY = ".policy-check-cache"
_FILE = f"facts-v{FACTS_VERSION}.json"


def key(rel: str, data: bytes, variant: str = "") -> bytes:
    """`variant` tells apart facts of the same bytes computed differently (with
    another module's ``backend_requirement`` aliases)."""
    # SHA-256 runs on the CPU's SHA extensions where present: the fastest hashlib digest here
    digest = hashlib.sha256(f"{FACTS_VERSION}\0{rel}\0{variant}\0".encode())
    digest.update(data)
    return digest.digest()[:16]


class FactsCache:
    def __init__(self, root: Path, enabled: bool = True):
        self.path = root / DIRECTORY / _FILE
        self.enabled = enabled
        self.entries: dict = {}
        self.used: set = set()
        self.dirty = False
        self.warning = None
        if enabled:
            self._load()

    def _load(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                stored = json.load(handle)
            if not isinstance(stored, dict):
                raise ValueError("not a mapping")
            self.entries = {bytes.fromhex(k): v for k, v in stored.items()}
        except FileNotFoundError:
            pass
        except Exception as error:  # any corruption: start afresh
            self.warning = f"ignoring unreadable cache {self.path}: {type(error).__name__}: {error}"

    def get(self, k: bytes, complete: bool = False):
        """Facts stored under `k` (complete ones if `complete`), or None."""
        facts = self.entries.get(k)
        if facts is None:
            return None
        if not isinstance(facts, FileFacts):
            try:
                facts = self.entries[k] = from_data(facts)
            except (TypeError, ValueError, KeyError, IndexError):
                del self.entries[k]  # a damaged entry: recompute
                return None
        if complete and not facts.complete:
            return None
        self.used.add(k)
        return facts

    def put(self, k: bytes, facts) -> None:
        self.entries[k] = facts
        self.used.add(k)
        self.dirty = True

    def save(self) -> None:
        """Write the entries this run used (plus the rest while they are few)."""
        if not self.enabled or not self.dirty:
            return
        entries = self.entries
        if len(entries) > 2 * len(self.used):
            entries = {k: v for k, v in entries.items() if k in self.used}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            gitignore = self.path.parent / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("*\n")
            fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-")
            try:
                stored = {k.hex(): to_data(v) if isinstance(v, FileFacts) else v for k, v in entries.items()}
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(stored, handle, separators=(",", ":"))
                os.replace(temporary, self.path)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError as error:
            self.warning = f"cannot write cache {self.path}: {error}"
