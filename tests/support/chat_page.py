"""Driving the chat page in chromium: seeding a conversation, sending, waiting for the reply to settle, the message
menu, and measuring the page (shared by tests/pages/)."""

from __future__ import annotations

import base64
import struct
import zlib

from playwright.sync_api import Page, expect

from conversations.services.threads.thread_writes import conversation_create
from transcript.models import Conversation, Message

COMPOSER = "[data-composer-input]"
SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


def seed_conversation(*pairs: tuple[str, str], title: str = "Seeded chat") -> tuple[Conversation, list[Message]]:
    """A conversation with a straight chain of completed turns, no provider involved.

    Rows carry the configured provider's binding (the `live_app` fixture configures
    this process like the server), as every durable message does.
    """
    from transcript.provider.binding import binding_fields, configured_provider

    conversation = conversation_create(persona="elion", title=title)
    parent, created = None, []
    for role, content in pairs:
        conversation.last_seq += 1
        parent = Message.objects.create(
            conversation=conversation, parent=parent, seq=conversation.last_seq, role=role, content=content,
            **binding_fields(configured_provider()),
        )
        created.append(parent)
    conversation.head = parent
    conversation.save(update_fields=["head", "last_seq"])
    return conversation, created


def bubble(page: Page, text: str):
    return page.locator(".message", has_text=text)


def chat_ready(page: Page) -> None:
    """The chat page's script has attached its handlers (`data-ready` on its root). After a navigation or a
    reload (a rewind reloads the page) the page is shown before its module script has run; a key pressed or a
    button clicked then did nothing (seen under CI's load: the composer kept the text, no send)."""
    expect(page.locator("[data-chat]")).to_have_attribute("data-ready", "true")


def send(page: Page, text: str) -> None:
    chat_ready(page)
    page.fill(COMPOSER, text)
    page.press(COMPOSER, "Enter")


def message_action(bubble, name: str) -> None:
    """Choose `name` from a bubble's "⋯" actions menu."""
    chat_ready(bubble.page)
    bubble.hover()
    bubble.get_by_role("button", name="Message actions").click()
    bubble.get_by_role("menuitem", name=name).click()


def rewind_confirmed(page: Page, bubble) -> None:
    """Rewind to `bubble` through its menu and confirm in the dialog."""
    message_action(bubble, "Rewind to here")
    page.get_by_role("dialog").get_by_role("button", name="Rewind").click()


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
