"""A small real PNG for attachment tests (PDFs: tests.archive.conftest.minimal_pdf)."""

from __future__ import annotations

import struct
import zlib


def png_bytes(rgb: tuple[int, int, int] = (200, 40, 40), size: int = 2) -> bytes:
    """A real `size`×`size` RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + bytes(rgb) * size
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(row * size)) + chunk(b"IEND", b"")
