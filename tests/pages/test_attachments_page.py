"""Browser journey: attach files in the composer, send, see them on the message, fork from there."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from conversations.services.threads.thread_writes import conversation_create
from tests.support.attachment_files import png_bytes
from tests.support.chat_page import COMPOSER, message_action, seed_conversation, send, wait_settled
from transcript.models import Conversation, ConversationOrigin

pytestmark = pytest.mark.browser


def test_attached_files_are_sent_and_shown_on_the_message(live_app, page: Page, scripted_server):
    # Every message made by the server, so each carries the provider binding a fork checks.
    conversation = conversation_create(persona="elion")
    page.goto(f"{live_app.url}/c/{conversation.id}/")

    page.set_input_files("[data-attach-input]", files=[
        {"name": "photo.png", "mimeType": "image/png", "buffer": png_bytes()},
        {"name": "notes.md", "mimeType": "text/markdown", "buffer": b"# Notes\n\nThursday launch.\n"},
    ])
    chips = page.locator("[data-attachment-chips] .attachment-chip-name")
    expect(chips).to_have_text(["photo.png", "notes.md"])
    send(page, "What is in these?")
    wait_settled(page)
    expect(page.locator("[data-attachment-chips]")).to_be_hidden()

    user_turn = page.locator(".message-user", has_text="What is in these?")
    thumb = user_turn.locator("img.attachment-thumb")
    expect(thumb).to_have_attribute("alt", "photo.png")
    page.wait_for_function("img => img.complete && img.naturalWidth === 2", arg=thumb.element_handle())
    expect(user_turn.locator("a.attachment-file")).to_have_text("notes.md")

    content = [item for item in scripted_server.last_request().body["input"] if item["role"] == "user"][-1]["content"]
    assert [part["type"] for part in content] == ["input_text", "input_image", "input_text"]
    assert "Thursday launch." in content[2]["text"]

    page.reload()
    expect(page.locator(".message-user img.attachment-thumb")).to_have_count(1)

    # Fork from the reply: the new conversation shows the same attachment from its own store.
    message_action(page.locator(".message-assistant").last, "Fork from here")
    expect(page.locator("[data-notice]")).to_be_hidden()
    page.wait_for_url(lambda url: str(conversation.id) not in url)
    fork = Conversation.objects.get(origin=ConversationOrigin.FORK)
    assert page.url.endswith(f"/c/{fork.id}/")
    forked_thumb = page.locator(".message-user img.attachment-thumb")
    expect(forked_thumb).to_have_count(1)
    page.wait_for_function("img => img.complete && img.naturalWidth === 2", arg=forked_thumb.element_handle())
    assert page.js_errors == []


def test_an_attachment_only_message_can_be_sent(live_app, page: Page, scripted_server):
    conversation, _ = seed_conversation(("user", "hi"), ("assistant", "Hi."))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    page.set_input_files("[data-attach-input]", files=[
        {"name": "table.csv", "mimeType": "text/csv", "buffer": b"a,b\n1,2\n"},
    ])
    expect(page.locator("[data-attachment-chips] .attachment-chip-name")).to_have_text(["table.csv"])
    page.press(COMPOSER, "Enter")
    wait_settled(page)
    expect(page.locator(".message-user a.attachment-file")).to_have_text("table.csv")
    content = [item for item in scripted_server.last_request().body["input"] if item["role"] == "user"][-1]["content"]
    assert content == [{"type": "input_text", "text": "[Attached file “table.csv” (text/csv)]\na,b\n1,2\n"}]
    assert page.js_errors == []
