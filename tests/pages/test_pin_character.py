"""Browser journey: pinning a Character Studio character for one message.

The owner picks a character in the composer; it travels as dynamic context
(a second system message) with that one message only, and Request size
details shows the dynamic-context figure the server computed.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from conversations.services.characters import character_create
from tests.support.chat_page import COMPOSER, seed_conversation, send, wait_settled
from transcript.models import Message, Role

pytestmark = pytest.mark.browser


def systems_sent(scripted_server) -> list[str]:
    body = scripted_server.last_request().body
    return [item["content"] for item in body.get("input") or body.get("messages") if item["role"] == "system"]


def test_pinned_character_goes_with_one_message(live_app, page: Page, scripted_server):
    character_create(name="Echo", description="A fox made of starlight.")
    conversation, _ = seed_conversation(("user", "hello"), ("assistant", "Hello, AUMA."))
    page.goto(f"{live_app.url}/c/{conversation.id}/")

    picker = page.locator("[data-pin-character]")
    picker.select_option(label="Echo")
    send(page, "Tell me a story.")
    wait_settled(page)
    expect(picker).to_have_value("")  # the pin is for one message
    systems = systems_sent(scripted_server)
    assert len(systems) == 2 and "A fox made of starlight." in systems[1]

    page.click("[data-estimate-button]")
    reply = Message.objects.filter(conversation=conversation, role=Role.ASSISTANT).order_by("-seq").first()
    dynamic = reply.metadata["diagnostics"]["dynamic_context_tokens"]
    assert dynamic > 0
    expect(page.locator("[data-diag=dynamic_context_tokens]")).to_have_text(f"{dynamic:,}")

    send(page, "And a short one about the sea, please, with a lighthouse in it at the end.")
    wait_settled(page)
    assert len(systems_sent(scripted_server)) == 1
    expect(page.locator(COMPOSER)).to_be_enabled()
    assert page.js_errors == []
