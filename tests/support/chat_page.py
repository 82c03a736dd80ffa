"""Steps and measurements a browser test takes on the chat page (shared by tests/pages/)."""

from __future__ import annotations

import base64
import struct
import zlib

from playwright.sync_api import Page, expect

COMPOSER = "[data-composer-input]"
SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


def send(page: Page, text: str) -> None:
    page.fill(COMPOSER, text)
    page.press(COMPOSER, "Enter")


def wait_settled(page: Page) -> None:
    expect(page.locator(".message.status-streaming")).to_have_count(0)
    expect(page.locator(COMPOSER)).to_be_enabled()


def distance_from_bottom(page: Page) -> float:
    """How far the transcript is scrolled above its true bottom, in CSS pixels."""
    return page.evaluate(
        "() => { const l = document.querySelector('[data-messages]'); return l.scrollHeight - l.scrollTop - l.clientHeight; }"
    )


def png_base64(width: int, height: int) -> str:
    """A plain grey PNG of `width` × `height`, base64-encoded (a generated image with a real size)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + b"\x80\x80\x80" * width
    raw = zlib.compress(row * height, 9)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()
