"""Browser journeys a user takes through continuity features, against the session's real Daphne.

Each journey drives chromium the way the owner would and then checks the durable rows (and,
where it matters, the exact request the scripted provider received). Journeys that already
live elsewhere are not repeated here: login (test_chat_pages.py), streamed reply and Request
size details (test_chat_pages.py), hide/restore/release shield and Past Conversation Search
(test_visibility_pages.py), Continuity Cleanup (test_continuity_cleanup_admin.py).
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from playwright.sync_api import Page, expect

from archive.models import ArchiveDocument
from conversations.services.settings_writes import assistant_settings_update
from memories.models import ConversationMemorySnapshot, SnapshotProvenance
from memories.services.memory_writes import memory_add
from tests.support.chat_page import COMPOSER, seed_conversation, send, wait_settled
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, ConversationOrigin, Message, MessageStatus, Role

pytestmark = pytest.mark.browser


def request_text(recorded) -> str:
    return json.dumps(recorded.body)


def open_conversation_menu(page: Page) -> None:
    page.locator("[data-conversation-menu] summary").click()


def test_new_chat_carries_the_handoff_shown_in_request_size_details(live_app, page: Page, scripted_server):
    source, _ = seed_conversation(
        ("user", "Shall we name the lighthouse Marigold?"), ("assistant", "Marigold it is, bright and steady."),
        title="Lighthouse names",
    )
    scripted_server.script(ScriptedReply(text="Good to be back."))
    page.goto(f"{live_app.url}/c/{source.id}/")
    page.locator(".sidebar").get_by_role("button", name="New chat").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    destination = Conversation.objects.exclude(pk=source.pk).get()
    assert destination.origin == ConversationOrigin.NEW_CHAT
    assert page.url.endswith(f"/c/{destination.id}/")

    send(page, "Hello again")
    wait_settled(page)
    # The final exchange of the prior thread went to the model, inside the first request's instructions.
    sent = request_text(scripted_server.last_request())
    assert "Marigold it is, bright and steady." in sent

    page.click("[data-estimate-button]")
    panel = page.locator("[data-diagnostics-panel]")
    expect(panel).to_be_visible()
    diagnostics = Message.objects.get(conversation=destination, role=Role.ASSISTANT).metadata["diagnostics"]
    assert diagnostics["handoff_tokens"] > 0 and diagnostics["handoff_included_in_static"] is True
    expect(panel.locator("[data-diag=handoff_tokens]")).to_have_text(f"{diagnostics['handoff_tokens']:,}")
    assert page.js_errors == []


def test_branch_double_click_makes_one_branch_and_its_bubble_opens_the_source(live_app, page: Page):
    source, _ = seed_conversation(
        ("user", "What colour was the heron?"), ("assistant", "Slate grey, with a white throat."),
        title="Heron watch",
    )
    page.goto(f"{live_app.url}/c/{source.id}/")
    open_conversation_menu(page)
    page.locator("[data-branch-button]").dblclick()
    page.wait_for_url(re.compile(rf"/c/(?!{source.id})[0-9a-f-]+/$"))

    branches = Conversation.objects.exclude(pk=source.pk)
    assert branches.count() == 1
    branch = branches.get()
    assert page.url.endswith(f"/c/{branch.id}/")
    bubble = page.locator(".message-handoff")
    expect(bubble).to_have_count(1)
    expect(bubble).to_contain_text("Slate grey, with a white throat.")
    # Nothing was sent to the model: the bubble is history, its content goes in with the first send.
    expect(page.locator(COMPOSER)).to_be_enabled()

    bubble.locator("[data-open-source]").click()
    page.wait_for_url(re.compile(rf"/c/{source.id}/$"))
    expect(page.locator(".message", has_text="What colour was the heron?")).to_be_visible()
    assert Conversation.objects.count() == 2  # opening the source created nothing
    assert page.js_errors == []


def test_refresh_memory_reports_success_and_the_next_send_carries_the_memory(live_app, page: Page, scripted_server):
    conversation, _ = seed_conversation(("user", "hi"), ("assistant", "hello"), title="Memory thread")
    with transaction.atomic():
        memory_add(text="AUMA keeps bees on the north terrace.")
    scripted_server.script(ScriptedReply(text="Of course."))
    page.goto(f"{live_app.url}/c/{conversation.id}/")

    open_conversation_menu(page)
    page.locator("[data-refresh-memory-button]").click()
    expect(page.locator("[data-refresh-memory-status]")).to_have_text(
        "Memory refreshed: this thread now holds your current memories."
    )
    snapshot = ConversationMemorySnapshot.objects.get(conversation=conversation)
    assert snapshot.provenance == SnapshotProvenance.REFRESHED

    send(page, "What do I keep?")
    wait_settled(page)
    assert "AUMA keeps bees on the north terrace." in request_text(scripted_server.last_request())
    assert page.js_errors == []


def test_archive_upload_then_a_reply_that_searches_it(live_app, page: Page, scripted_server, tmp_path):
    assistant_settings_update(archive_access=True)
    archive_file = tmp_path / "orchard.md"
    archive_file.write_text(
        "AUMA said:\nDo you remember the orchard?\n\n"
        "Voicefire 5.1 said:\nThe crooked pear tree sings at the gate of the orchard.\n"
    )
    page.goto(f"{live_app.url}/archive/")
    upload = page.locator("[data-archive-upload]")
    upload.locator("#doc-collection").select_option("incarnations")
    upload.locator("#doc-file").set_input_files(str(archive_file))
    upload.get_by_role("button", name="Archive").click()
    expect(page.locator(".flash")).to_contain_text("Archived “orchard”")
    document = ArchiveDocument.objects.get()
    assert document.collection == "incarnations" and document.chunk_count == 2

    conversation, _ = seed_conversation(title="Orchard questions")
    scripted_server.script(
        ScriptedReply(tool_calls=[{"name": "search_archive", "arguments": {"query": "pear tree"}, "call_id": "c1"}]),
        ScriptedReply(text="It sang at the gate (orchard, incarnations, chunk 2)."),
    )
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    send(page, "What did Voicefire say about the pear tree?")
    wait_settled(page)
    reply = page.locator(".message-assistant").last
    expect(reply.locator(".message-body")).to_have_text("It sang at the gate (orchard, incarnations, chunk 2).")
    tools = reply.locator("details.tool-calls")
    expect(tools.locator("summary")).to_contain_text("search_archive")
    tools.locator("summary").click()
    expect(tools.locator(".tool-result")).to_contain_text("crooked pear tree")

    first, second = scripted_server.requests
    assert "crooked pear tree" not in request_text(first)  # the archive is never bulk-injected
    assert "crooked pear tree" in request_text(second)  # only the tool result carries it
    stored = Message.objects.get(conversation=conversation, role=Role.ASSISTANT)
    # The answer's message item is kept verbatim after the round (issue 31, Responses).
    assert [part["type"] for part in stored.parts] == ["tool_call", "tool_result", "output_item"]
    assert page.js_errors == []


def test_interrupted_reply_is_shown_and_retry_replaces_it(live_app, page: Page, scripted_server):
    conversation, (question, partial) = seed_conversation(
        ("user", "Tell me about the tide"), ("assistant", "The tide turns twice a"), title="Tide"
    )
    # The process that was streaming this reply died: its lease ran out with the text half written.
    Message.objects.filter(pk=partial.pk).update(
        status=MessageStatus.STREAMING, lease_expires_at=timezone.now() - timedelta(seconds=5)
    )
    scripted_server.script(ScriptedReply(text="The tide turns twice a day."))
    page.goto(f"{live_app.url}/c/{conversation.id}/")

    interrupted = page.locator(f"[data-message-id='{partial.id}']")
    expect(interrupted.locator(".badge-warn")).to_have_text("Interrupted")
    expect(interrupted).to_contain_text("The tide turns twice a")
    expect(page.locator(COMPOSER)).to_be_enabled()
    interrupted.locator(".message-error").get_by_role("button", name="Retry").click()
    wait_settled(page)

    expect(page.locator(".message-assistant.status-complete").last).to_contain_text("The tide turns twice a day.")
    expect(page.locator(".message.status-interrupted")).to_have_count(0)
    kept = Message.objects.get(pk=partial.pk)
    assert kept.status == MessageStatus.INTERRUPTED and kept.content == "The tide turns twice a"
    retried = Message.objects.exclude(pk=partial.pk).get(role=Role.ASSISTANT)
    assert retried.parent_id == question.id and retried.status == MessageStatus.COMPLETE
    assert Conversation.objects.get(pk=conversation.pk).head_id == retried.id
    assert page.js_errors == []
