"""Facts by content hash, kept between runs outside the checked tree.

One JSON file maps a key (hash of the facts version, the file's path relative to
its project root, and its bytes, or, for a file whose bytes git vouches for, git's
object id of them: `blob_key`, `key_of`) to that file's facts, and a key derived from it
and the trigger vocabulary (`scan_key`: the triggers the settings and the rules
make) to which rule triggers occur in those bytes (`needs.Scanner.scan`), so that
a warm run decides which files are primary without scanning them. The import-time
follow-ups keep two more kinds of entry: what they made primary, under a digest of every
input they read (`followed`), and the record of their last run on a project's settings
and excluded folders (`last_followed`), which lets a run replay them after a change they
have no use for (`runner._replay_unchanged`). Those live in a file of their own beside
the facts (`FactsCache.records`): each replay replaces the record, and a replaced entry
makes a store write its file whole, which for the facts of a whole tree costs more than
the rest of a warm run. Nothing in a
key names the project: facts depend on nothing else, so every project of this user
shares one store, and a second clone or worktree of a repository starts warm
(`location`). Each entry records the day it was last used; a save keeps what the
run used and what another run used in the last `KEEP_DAYS` days, and merges what a
concurrent run saved meanwhile.

The key proves only which bytes an entry claims to describe, not that the facts
are true: whoever can write the cache decides what the checker believes. So the
cache never comes from the tree being checked (a pull request could plant one, and
CI and the pre-commit hook check a pull request's tree): it lives in the user's
cache directory, or under ``--cache-dir`` / ``$POLICY_CHECK_CACHE_DIR``. A location
inside the project is used only when git ignores it and tracks nothing in it; any
other is refused with a warning and the run goes on without a cache, so the result
is the one ``--no-cache`` gives.

Nor does it come from another local user: the directory chosen for caches and the
store's subdirectory, where they exist, must be owned by this user or root and
writable by nobody else (the rule of ``flashinfer.jit.cache``, which this package
may not import), else the location is refused the same way; directories the
checker creates are mode 0o700. So a shared ``$POLICY_CHECK_CACHE_DIR``, or a
subdirectory someone else created first, is never read.

The file is still input: it is read without following a symbolic link, only when
it is a regular file of this user (or root) that nobody else may write, at most
`MAX_BYTES` long, and as JSON (loading JSON runs no code). Writes go to a
temporary file renamed into place, so two runs sharing the cache never see a
half-written file. An unreadable, untrusted or corrupt cache is ignored with a
warning.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Optional

from ..model.facts import FACTS_VERSION, FileFacts, from_data, to_data
from .store import Untrusted, location, read_bounded, refusal
from .store import private_directories as _private_directories, private_levels as _private_levels

MAX_BYTES = 64 * 1024 * 1024  # about 30,000 files' facts; a bigger file is refused unread
_FILE = f"facts-v{FACTS_VERSION}.json"
_RECORDS_FILE = f"followed-v{FACTS_VERSION}.json"  # the follow-ups' records (`FactsCache.records`)
FORMAT_KEY = "policy-check-facts"  # the file's top-level key, holding the format's version
FORMAT = 2  # {FORMAT_KEY: 2, "entries": {hex key: [day last used, value]}}
KEEP_DAYS = 30
_FOLLOWED = "followed"  # the tag of a follow-up result (`FactsCache.followed`)
_LAST_FOLLOWED = "last-followed"  # the tag of the last follow-up run's record (`FactsCache.last_followed`)  # an entry no run used for this long is dropped at the next save


def key(rel: str, data: bytes, variant: str = "") -> bytes:
    """`variant` tells apart facts of the same bytes computed differently (with
    another module's ``backend_requirement`` aliases)."""
    # SHA-256 runs on the CPU's SHA extensions where present: the fastest hashlib digest here
    digest = hashlib.sha256(f"{FACTS_VERSION}\0{rel}\0{variant}\0".encode())
    digest.update(data)
    return digest.digest()[:16]


def blob_key(rel: str, oid: str, variant: str = "") -> bytes:
    """The key of the bytes whose git object id is `oid` (`gitfiles.Listing.blobs`):
    computed from the id, without reading the file. Its own prefix keeps it apart
    from every `key` (which starts with the facts version, a number)."""
    return hashlib.sha256(f"git-blob\0{FACTS_VERSION}\0{rel}\0{variant}\0{oid}".encode()).digest()[:16]


def git_blob_id(data: bytes, oid_length: int = 40) -> str:
    """Git's object id of `data` as a blob: SHA-1, or SHA-256 in a repository of
    that object format (`oid_length` 64)."""
    digest = hashlib.new("sha256" if oid_length == 64 else "sha1", b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def key_of(rel: str, data: bytes, oid: Optional[str] = None) -> bytes:
    """The key of the bytes `data` read from `rel`: `blob_key` when git vouched for
    the file with `oid` and these are that blob's bytes (so the facts computed from
    them are the ones a later run finds without reading), else `key`. The check
    matters: the file may have changed since git looked, and an entry must never be
    stored under an id of other bytes."""
    if oid and git_blob_id(data, len(oid)) == oid:
        return blob_key(rel, oid)
    return key(rel, data)


def scan_key(k: bytes, vocabulary: str) -> bytes:
    """The key of the trigger scan of the bytes `k` is the key of, for the trigger
    vocabulary `vocabulary` (`needs.Scanner.key`): derived, not hashed again."""
    return hashlib.sha256(b"scan\0" + vocabulary.encode() + b"\0" + k).digest()[:16]


def today() -> int:
    """Days since the epoch: when an entry was last used."""
    return int(time.time() // 86400)


class FactsCache:
    """`vocabulary`: names the triggers a stored scan covers (`needs.Scanner.key`)."""

    def __init__(self, root: Path, enabled: bool = True, directory=None, vocabulary: str = "",
                 file_name: Optional[str] = None):
        self.vocabulary = vocabulary
        self.entries: dict = {}
        self.days: dict = {}  # key -> the day it was last used, as stored
        self.used: set = set()
        self.dirty = False
        self.warnings: list = []
        self.path = None
        self._loaded = None  # what the file was when read (`_signature`), None when there was none
        # The bytes read, while a save may append to them (`_appended`): None once they no
        # longer are the entries held (one replaced or dropped), or when there were none.
        self._raw: Optional[bytes] = None
        self._added: set = set()  # keys put that the file did not hold
        self._records: Optional[FactsCache] = None  # `records`, once asked for
        self._where = (root, directory, file_name)
        if enabled:
            where = location(root, directory)
            problem = refusal(root, where, file_name or _FILE)
            if problem:
                self.warnings.append(f"not using the cache in {where}: {problem}; running without a cache")
                enabled = False
            else:
                self.path = where / (file_name or _FILE)  # another store beside the facts (the consumer check's)
        self.enabled = enabled
        if enabled:
            self._load()

    def _load(self) -> None:
        try:
            data = read_bounded(self.path, MAX_BYTES, owner_only=True)
            self.entries, self.days, whole = _parse_all(data)
            self._loaded = _signature(self.path)
            self._raw = data if whole and self.entries else None
        except FileNotFoundError:
            pass
        except Untrusted as error:  # never read: the next save replaces it with a file of ours
            self.warnings.append(f"not using the cache file {self.path}: it is {error}; running without a cache")
        except Exception as error:  # any corruption: start afresh
            self.warnings.append(f"ignoring unreadable cache {self.path}: {type(error).__name__}: {error}")

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
                self._raw = None
                return None
        if complete and not facts.complete:
            return None
        self.used.add(k)
        return facts

    def holds(self, k: bytes) -> bool:
        return k in self.entries

    @property
    def holds_entries(self) -> bool:
        return bool(self.entries)

    def found(self, k: bytes, vocabulary: Optional[str] = None) -> Optional[int]:
        """The trigger scan stored for the bytes `k` is the key of, or None (of another
        `vocabulary` than the run's triggers, given one)."""
        sk = scan_key(k, self.vocabulary if vocabulary is None else vocabulary)
        mask = self.entries.get(sk)
        if mask is None:
            return None
        if type(mask) is not int or mask < 0:
            del self.entries[sk]  # a damaged entry: scan again
            self._raw = None
            return None
        self.used.add(sk)
        return mask

    def put(self, k: bytes, facts, found: Optional[int] = None) -> None:
        """Store `facts` under `k`, and `found` (the trigger scan) unless None."""
        self._note_put(k)
        self.entries[k] = facts
        self.used.add(k)
        self.dirty = True
        if found is not None:
            self.put_scan(k, found)

    def put_scan(self, k: bytes, found: int, vocabulary: Optional[str] = None) -> None:
        sk = scan_key(k, self.vocabulary if vocabulary is None else vocabulary)
        self._note_put(sk)
        self.entries[sk] = found
        self.used.add(sk)
        self.dirty = True

    @property
    def records(self) -> "FactsCache":
        """The store of the follow-ups' records (`followed`, `last_followed`): a file of
        its own beside this one, kept by the same rules, read when first asked for and
        saved with this store. A record replaced there rewrites that small file, while
        this one only grows by what a run adds (`_appended`)."""
        if self._where[2] == _RECORDS_FILE:
            return self
        if self._records is None:
            root, directory, _ = self._where
            self._records = FactsCache(root, self.enabled, directory, file_name=_RECORDS_FILE)
            self.warnings.extend(self._records.warnings)
        return self._records

    def followed(self, k: bytes) -> Optional[list]:
        """The files a run's follow-ups made primary (`runner._follow`), stored under `k`
        (a digest of every input they read), or None. A damaged entry is dropped."""
        if self.records is not self:
            return self.records.followed(k)
        item = self.entries.get(k)
        if item is None:
            return None
        if type(item) is not list or len(item) != 2 or item[0] != _FOLLOWED or type(item[1]) is not list \
                or not all(type(rel) is str for rel in item[1]):
            del self.entries[k]  # a damaged entry: follow again
            self._raw = None
            return None
        self.used.add(k)
        return item[1]

    def put_followed(self, k: bytes, rels: list) -> None:
        if self.records is not self:
            return self.records.put_followed(k, rels)
        self._note_put(k)
        self.entries[k] = [_FOLLOWED, list(rels)]
        self.used.add(k)
        self.dirty = True

    def last_followed(self, k: bytes) -> Optional[dict]:
        """The record of the last run of the follow-ups on inputs like these
        (`runner._replay_unchanged`), stored under `k`, or None. Its shape is checked
        (strings, lists and maps of strings); a damaged one is dropped."""
        if self.records is not self:
            return self.records.last_followed(k)
        item = self.entries.get(k)
        if item is None:
            return None
        record = item[1] if type(item) is list and len(item) == 2 and item[0] == _LAST_FOLLOWED else None
        if type(record) is not dict or not _plain(record):
            del self.entries[k]
            self._raw = None
            return None
        self.used.add(k)
        return record

    def put_last_followed(self, k: bytes, record: dict) -> None:
        if self.records is not self:
            return self.records.put_last_followed(k, record)
        self._note_put(k)
        self.entries[k] = [_LAST_FOLLOWED, record]
        self.used.add(k)
        self.dirty = True

    def _note_put(self, k: bytes) -> None:
        if k not in self.entries:
            self._added.add(k)
        elif k not in self._added:
            self._raw = None  # a stored entry replaced: the file is written whole

    def save(self) -> None:
        """Write what this run used (its day: today) and what runs used in the last
        `KEEP_DAYS` days, with what another run saved since this one read the file.
        A run that only read entries saves too (once a day) to record their use."""
        if self._records is not None:
            told = len(self._records.warnings)
            self._records.save()
            self.warnings.extend(self._records.warnings[told:])
        if not self.enabled:
            return
        now = today()
        if not self.dirty and all(self.days.get(k) == now for k in self.used):
            return
        data = self._appended(now)
        if data is None:
            data = self._whole(now)
        if data is None:
            return
        try:
            _private_directories(self.path.parent)
            problem = _private_levels(self.path.parent)  # someone made it since we looked
            if problem:
                self.warnings.append(f"not writing cache {self.path}: {problem}")
                return
            fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(temporary, self.path)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError as error:
            self.warnings.append(f"cannot write cache {self.path}: {error}")

    def _whole(self, now: int) -> Optional[bytes]:
        """The file's new bytes, every entry written: what this run holds, what another
        run saved meanwhile, less what no run used for `KEEP_DAYS` days (and, past
        `MAX_BYTES`, all but what this run used); None (with a warning) if still too big."""
        entries, days = dict(self.entries), {k: d for k, d in self.days.items() if k in self.entries}
        for k in self.used:
            days[k] = now
        self._merge_concurrent(entries, days)
        keep = {k for k in entries if days.get(k, 0) > now - KEEP_DAYS}
        data = _dumps(entries, days, keep)
        if len(data) > MAX_BYTES:
            data = _dumps(entries, days, keep & self.used)  # what this run used, at least
        if len(data) > MAX_BYTES:
            self.warnings.append(f"not writing cache {self.path}: {len(data)} bytes, more than the {MAX_BYTES} it may hold")
            return None
        return data

    def _appended(self, now: int) -> Optional[bytes]:
        """The file's new bytes as the bytes read plus this run's new entries, when that
        is what `_whole` would write (same entries, same days): no other run saved
        meanwhile, no stored entry was replaced, dropped, or used on another day than
        it records, none is old enough to drop. A run that adds one file's facts to a
        big store then writes the store's bytes again without serialising them. None
        otherwise."""
        raw = self._raw
        if raw is None or not self._added or _signature(self.path) != self._loaded:
            return None
        if not (raw.startswith(_HEAD) and raw.endswith(b"}}")):
            return None
        stored = [k for k in self.days if k not in self._added]
        if any(self.days[k] != now for k in stored if k in self.used):
            return None
        if any(self.days[k] <= now - KEEP_DAYS for k in stored):
            return None
        added = {k: now for k in self._added if k in self.entries}
        tail = _dumps(self.entries, added, set(added))[len(_HEAD):-2]
        data = raw[:-2] + (b"," + tail if tail else b"") + b"}}"
        return data if len(data) <= MAX_BYTES else None

    def _merge_concurrent(self, entries: dict, days: dict) -> None:
        """Add what another run (of this or another project) saved since this run
        read the file: the entries this run does not hold, and later days of use.
        Read as strictly as `_load` reads; a file that fails is not merged."""
        if _signature(self.path) == self._loaded:
            return
        try:
            theirs, their_days = _parse(read_bounded(self.path, MAX_BYTES, owner_only=True))
        except Exception:  # gone, untrusted, corrupt: this run's entries are enough
            return
        for k, value in theirs.items():
            if k not in entries:
                entries[k] = value
                days[k] = their_days[k]
            elif their_days[k] > days.get(k, 0):
                days[k] = their_days[k]


def _plain(value, depth: int = 0) -> bool:
    """Is `value` strings, in lists and maps of strings, two levels deep at most?"""
    if type(value) is str:
        return True
    if depth > 2:
        return False
    if type(value) is list:
        return all(_plain(item, depth + 1) for item in value)
    if type(value) is dict:
        return all(type(key) is str and _plain(item, depth + 1) for key, item in value.items())
    return False


def _signature(path: Path) -> Optional[tuple]:
    """What tells one version of the cache file from another (None: no file)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def _parse(data: bytes) -> tuple:
    """``(entries, days)`` of a cache file's bytes: key -> stored value (facts as
    JSON data, a trigger scan as an int) and key -> day last used. An entry of the
    wrong shape is left out (recomputed); a file of the wrong shape raises."""
    return _parse_all(data)[:2]


def _parse_all(data: bytes) -> tuple:
    """`_parse`'s ``(entries, days)``, and whether the file is exactly those entries in
    the layout `_dumps` writes (its two keys, in its order; no entry left out), so that
    new entries may be appended to its bytes (`FactsCache._appended`)."""
    stored = json.loads(data)
    if not isinstance(stored, dict) or stored.get(FORMAT_KEY) != FORMAT or not isinstance(stored.get("entries"), dict):
        raise ValueError(f"not a policy-check facts cache of format {FORMAT}")
    entries, days = {}, {}
    for k, item in stored["entries"].items():
        if type(item) is not list or len(item) != 2 or type(item[0]) is not int:
            continue
        try:
            key = bytes.fromhex(k)
        except ValueError:
            continue
        if len(k) != 32 or k != key.hex():  # not as `_dumps` spells a key: no appending
            stored = None
        entries[key], days[key] = item[1], item[0]
    whole = stored is not None and list(stored) == [FORMAT_KEY, "entries"] and len(entries) == len(stored["entries"])
    return entries, days, whole


_HEAD = f'{{"{FORMAT_KEY}":{FORMAT},"entries":{{'.encode()  # how `_dumps` starts every file


def _dumps(entries: dict, days: dict, keep: set) -> bytes:
    stored = {
        k.hex(): [days[k], to_data(v) if isinstance(v, FileFacts) else v] for k, v in entries.items() if k in keep
    }
    return json.dumps({FORMAT_KEY: FORMAT, "entries": stored}, separators=(",", ":")).encode()


