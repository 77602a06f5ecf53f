"""Read the function symbols of a cubin (an ELF64 file), without CUDA tools.

Used to check, on machines without a GPU, that a compiled module really exports
the entry points its spec promises.
"""

from __future__ import annotations

import struct
from typing import List

__all__ = ["function_symbols"]

_SHT_SYMTAB = 2
_STT_FUNC = 2


def function_symbols(image: bytes) -> List[str]:
    """Names of the ``STT_FUNC`` symbols in an ELF64 little-endian image."""
    if image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF image (a cubin)")
    shoff, = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", image, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", image, shoff + i * shentsize) for i in range(shnum)]
    names: List[str] = []
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != _SHT_SYMTAB or not entsize:
            continue
        str_offset = sections[link][4]
        for pos in range(offset, offset + size, entsize):
            st_name, st_info = struct.unpack_from("<IB", image, pos)
            if st_info & 0xF == _STT_FUNC:
                start = str_offset + st_name
                names.append(image[start:image.index(b"\0", start)].decode())
    return names
