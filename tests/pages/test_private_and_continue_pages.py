"""Browser journeys: starting a private chat and seeing it marked (issue 22), keeping it, and
continuing an archived conversation in a new chat (issue 21)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from archive.services.documents import archive_document_add_text
from continuity.models import ThreadHandoff
from conversations.services.threads.thread_writes import conversation_create
from memories.models import SnapshotMembership
from memories.services.memory_writes import memory_add
from tests.support.factories import turns_append
from transcript.models import Conversation, Message, MessageKind

pytestmark = pytest.mark.browser


class Dialogs:
    """Accept every confirmation and remember its text."""

    def __init__(self, page: Page):
        self.messages: list[str] = []
        page.on("dialog", self._answer)

    def _answer(self, dialog):
        self.messages.append(dialog.message)
        dialog.accept()


def test_starting_a_private_chat_marks_it_in_the_sidebar_and_header_and_keep_makes_it_shielded(live_app, page: Page):
    earlier = conversation_create(persona="elion", title="Earlier thread")
    turns_append(earlier, ("user", "the cedar lantern"), ("assistant", "I remember it."))
    memory_add(text="AUMA keeps bees on the roof.")
    dialogs = Dialogs(page)

    page.goto(f"{live_app.url}/c/{earlier.id}/")
    page.locator("[data-private-chat-button]").first.click()
    page.wait_for_url(re.compile(rf"/c/(?!{earlier.id})[0-9a-f-]+/$"))
    chat = Conversation.objects.exclude(pk=earlier.pk).get()
    assert chat.private is True
    assert not ThreadHandoff.objects.filter(destination=chat).exists()
    assert not SnapshotMembership.objects.filter(conversation=chat).exists()  # "Use memories" was not ticked

    expect(page.locator("[data-private-badge]")).to_have_text("Private")
    expect(page.locator("[data-visibility-banner=private]")).to_contain_text("Private chat.")
    link = page.locator(f"[data-conversation-link='{chat.id}']")
    expect(link.locator("[data-private-tag]")).to_be_visible()
    expect(page.locator(f"[data-conversation-link='{earlier.id}'] [data-private-tag]")).to_have_count(0)

    page.locator("[data-keep-chat]").click()
    expect(page.locator(".flash", has_text="is kept")).to_be_visible()
    assert "Continuity-Shielded" in dialogs.messages[-1]
    chat.refresh_from_db()
    assert (chat.private, chat.shielded) == (False, True)
    expect(page.locator("[data-private-badge]")).to_have_count(0)
    expect(page.locator("[data-shield-badge]")).to_be_visible()
    expect(page.locator(f"[data-conversation-link='{chat.id}'] [data-private-tag]")).to_have_count(0)
    assert page.js_errors == []


def test_use_memories_gives_a_private_chat_the_current_memories(live_app, page: Page):
    memory = memory_add(text="AUMA keeps bees on the roof.")
    page.goto(f"{live_app.url}/")
    page.locator("[data-use-memories]").check()
    page.locator("[data-private-chat-button]").first.click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    chat = Conversation.objects.get()
    assert chat.private is True
    assert list(SnapshotMembership.objects.filter(conversation=chat).values_list("memory_id", flat=True)) == [memory.pk]
    assert page.js_errors == []


def test_continue_in_a_new_chat_from_an_archived_conversation(live_app, page: Page):
    text = "AUMA said:\nWhere did the heron nest?\n\nElion Voicefire said:\nBy the *old* mill, under the eaves.\n"
    document = archive_document_add_text(text=text, collection="conversations", title="Heron watch").document

    page.goto(f"{live_app.url}/archive/{document.pk}/")
    page.locator("[data-continue-document]").dblclick()  # a double click still makes one chat
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    chat = Conversation.objects.get()
    assert page.url.endswith(f"/c/{chat.id}/")
    bubble = page.locator(".message-handoff")
    expect(bubble).to_have_count(1)
    expect(bubble).to_contain_text("Where did the heron nest?")
    expect(bubble).to_contain_text("By the old mill, under the eaves.")
    stored = Message.objects.get(conversation=chat)
    assert stored.kind == MessageKind.HANDOFF_ARTIFACT and stored.metadata["source_document_id"] == document.pk

    bubble.locator("[data-open-source-document]").click()
    page.wait_for_url(re.compile(rf"/archive/{document.pk}/$"))
    assert Conversation.objects.count() == 1
    assert page.js_errors == []


def test_a_prose_document_offers_no_continue_button(live_app, page: Page):
    document = archive_document_add_text(text="Only prose here.\n\nNo speakers at all.", collection="papers").document
    page.goto(f"{live_app.url}/archive/{document.pk}/")
    expect(page.locator("[data-archive-document]")).to_be_visible()
    expect(page.locator("[data-continue-document]")).to_have_count(0)
    assert page.js_errors == []
