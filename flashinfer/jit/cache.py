"""The JIT disk cache: one verified file per (spec, architecture).

The key hashes the spec's content (source, every header's text, the ordered
options), the architecture, the NVRTC version and the package version, so any
change to what would be compiled lands in a new entry. Entries are written to a
temporary file in the cache directory and moved into place with `os.replace`,
so concurrent builders never expose a torn file. An entry is a header (format
magic, kind tag, the entry's full cache key, a sha256 of tag, key and payload)
followed by the payload; a read checks the digest and that the recorded key is
the key the entry was looked up under, so a corrupt entry, one in an older
format, or a valid entry of another spec renamed onto this one's file name, is a
miss: rebuilt and replaced, never loaded. An in-process memo makes the warm path
a dictionary lookup.

``FLASHINFER_JIT_CACHE_DIR`` may name a directory others can write to, and a
loaded entry is code that runs on the GPU, so an entry is loaded only when it is
a regular file (not a symlink, FIFO or device) owned by this user or root, not writable
by group or others, and at most `MAX_ENTRY_BYTES` long; anything else is a miss
and is rebuilt (the new entry replaces it). Directories the cache creates are
private (mode 0o700).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Dict, NamedTuple, Optional, Tuple

from ..safe_io import make_private_dirs, read_regular_file
from .nvrtc import compile_spec, nvrtc_version
from .spec import JitSpec

__all__ = ["CACHE_DIR_ENV_VAR", "CompiledImage", "build", "cache_dir", "cache_key", "clear_memo", "entry_path"]

CACHE_DIR_ENV_VAR = "FLASHINFER_JIT_CACHE_DIR"
_MAGIC = b"FIJIT2"  # FIJIT1 entries recorded no key: they are misses now
_KIND_TAGS = {"cubin": b"C", "ptx": b"P"}
_TAG_KINDS = {v: k for k, v in _KIND_TAGS.items()}
_KEY_SIZE = 32  # the cache key, a sha256, as bytes
_HEADER_SIZE = len(_MAGIC) + 1 + _KEY_SIZE + 32  # magic, kind tag, key, sha256 of tag + key + payload
#: The longest entry loaded (256 MiB, far above any module image); longer is a miss.
MAX_ENTRY_BYTES = 256 << 20

_logger = logging.getLogger("flashinfer.jit")


class CompiledImage(NamedTuple):
    """A module image and where it came from: "memory", "disk" or "compiled"."""

    kind: str
    image: bytes
    path: Path
    origin: str


_memo: Dict[Path, Tuple[str, bytes]] = {}
_memo_lock = threading.Lock()


def clear_memo() -> None:
    """Forget the in-process memo, so the next build reads the disk (tests, benchmarks)."""
    with _memo_lock:
        _memo.clear()


def cache_dir() -> Path:
    """``$FLASHINFER_JIT_CACHE_DIR``, or ``~/.cache/flashinfer/jit``; read on every call."""
    configured = os.environ.get(CACHE_DIR_ENV_VAR)
    return Path(configured) if configured else Path.home() / ".cache" / "flashinfer" / "jit"


def _package_version() -> str:
    from .. import __version__

    return __version__


def cache_key(spec: JitSpec, arch: int) -> str:
    """The hex sha256 naming the entry of ``spec`` built for ``arch``."""
    major, minor = nvrtc_version()
    text = f"{spec.digest}|sm_{int(arch)}|nvrtc-{major}.{minor}|flashinfer-{_package_version()}"
    return hashlib.sha256(text.encode()).hexdigest()


def entry_path(spec: JitSpec, arch: int, root: Optional[Path] = None) -> Path:
    return _entry_path(spec, arch, cache_key(spec, arch), root)


def _entry_path(spec: JitSpec, arch: int, key: str, root: Optional[Path]) -> Path:
    root = cache_dir() if root is None else Path(root)
    return root / f"{spec.name}.sm_{int(arch)}.{key[:32]}.bin"


def _key_bytes(key: str) -> bytes:
    raw = bytes.fromhex(key)
    if len(raw) != _KEY_SIZE:
        raise ValueError(f"a cache key is {_KEY_SIZE * 2} hex digits, not {len(key)}")
    return raw


def encode_entry(kind: str, image: bytes, key: str) -> bytes:
    """The file content of the entry holding ``image`` under ``key`` (`cache_key`)."""
    tag, recorded = _KIND_TAGS[kind], _key_bytes(key)
    return _MAGIC + tag + recorded + hashlib.sha256(tag + recorded + image).digest() + image


def _parse_entry(data: bytes) -> Optional[Tuple[str, str, bytes]]:
    """(kind, recorded key, image) of an intact entry, else None."""
    if len(data) <= _HEADER_SIZE or not data.startswith(_MAGIC):
        return None
    start = len(_MAGIC)
    tag, recorded = data[start:start + 1], data[start + 1:start + 1 + _KEY_SIZE]
    digest, image = data[start + 1 + _KEY_SIZE:_HEADER_SIZE], data[_HEADER_SIZE:]
    kind = _TAG_KINDS.get(tag)
    if kind is None or hashlib.sha256(tag + recorded + image).digest() != digest:
        return None
    return kind, recorded.hex(), image


def decode_entry(data: bytes, key: Optional[str] = None) -> Optional[Tuple[str, bytes]]:
    """(kind, image), or None when the bytes are not an intact entry, or, given
    ``key``, when the entry was written under another key.

    Loading always passes the key it looked the entry up under: the digest only
    proves the entry is whole, the key that it is this spec's. Without ``key`` the
    binding is not checked (inspecting a file known to be an entry, as tests do).
    """
    entry = _parse_entry(data)
    if entry is None or (key is not None and entry[1] != _key_bytes(key).hex()):
        return None
    return entry[0], entry[2]


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one.

    Replaces whatever ``path`` is (a symlink is replaced, not written through).
    """
    make_private_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; the directory decides who may read
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _read(path: Path, key: str) -> Optional[Tuple[str, bytes]]:
    """The entry at ``path`` written under ``key``, or None (a miss) when absent,
    untrusted, corrupt, or recorded under another key."""
    try:
        data = read_regular_file(path, MAX_ENTRY_BYTES, follow_symlinks=False, owner_only=True)
    except FileNotFoundError:
        return None
    except OSError as error:  # a symlink, FIFO, device, foreign or shared-writable file
        reason = "a symbolic link" if error.errno == errno.ELOOP else error.strerror or error
        _logger.warning("JIT cache entry %s not loaded (%s); rebuilding it", path, reason)
        return None
    entry = decode_entry(data, key)
    if entry is None:
        if _parse_entry(data) is None:
            _logger.warning("JIT cache entry %s is corrupt or in an older format; rebuilding it", path)
        else:  # whole, but another spec's (or build's): renamed or copied onto this name
            _logger.warning("JIT cache entry %s not loaded (it was written under another key); rebuilding it", path)
    return entry


def build(spec: JitSpec, arch: int, root: Optional[Path] = None) -> CompiledImage:
    """The module image of ``spec`` for ``arch``: from the memo, the disk, or NVRTC."""
    key = cache_key(spec, arch)
    path = _entry_path(spec, arch, key, root)
    hit = _memo.get(path)
    if hit is not None:
        return CompiledImage(hit[0], hit[1], path, "memory")
    entry = _read(path, key)
    origin = "disk"
    if entry is None:
        kind, image, _log = compile_spec(spec, arch)
        write_atomically(path, encode_entry(kind, image, key))
        entry, origin = (kind, image), "compiled"
    with _memo_lock:
        _memo[path] = entry
    return CompiledImage(entry[0], entry[1], path, origin)
