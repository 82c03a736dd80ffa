"""App events are nobody's speech (issue 44; seed: app-made artifacts are not the owner's words): every consumer
of speech leaves every kind in `APP_EVENT_KINDS` out — the final-eight handoff, keyword recall, the search index
and Past Conversation Search, the token estimate (stored and on the page), the Markdown export and an archived
JSON export — while the request alone carries it, framed. One test walks every consumer for every kind."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from archive.models import ArchiveChunk
from archive.services.documents import archive_document_upload
from continuity.models import ThreadHandoff
from continuity.rules.app_events import request_text_of
from continuity.rules.handoff_store import live_branch_handoff
from continuity.rules.history_window import history_turn_of
from continuity.rules.recall_store import recall_candidates
from conversations.services.threads.thread_writes import conversation_create
from conversations.services.visibility.past_search import past_conversation_search
from conversations.web.page_selectors import branch_estimate, thread_token_estimate
from conversations.web.threads.export import export_json_chunks, export_markdown_chunks
from elion.base.assistant_settings import assistant_settings_get
from tests.support.factories import thread, turns_append
from transcript.models import Message, MessageKind, MessageSearchEntry, Role
from transcript.models.messages import APP_EVENT_KINDS, stored_turn_tokens
from transcript.search_index import message_search_index_sync
from transcript.tree import live_branch

pytestmark = pytest.mark.django_db

# A word only the app event holds: any consumer that lets it through shows it.
EVENT_WORD = "zephyrlighthouse"


def test_the_class_every_kind_is_an_app_event_the_framing_knows():
    assert MessageKind.CHECK_IN_TRIGGER in APP_EVENT_KINDS
    for kind in APP_EVENT_KINDS:
        row = Message(role=Role.USER, kind=kind, content="the brief", metadata={})
        assert request_text_of(row) != "the brief", f"{kind}: the request would carry it bare, as speech"


@pytest.mark.parametrize("kind", sorted(APP_EVENT_KINDS))
def test_an_app_event_is_left_out_of_every_consumer_of_speech(kind):
    conversation = thread(("user", "Tell me about the harbour."), ("assistant", "The harbour is calm tonight."))
    [event] = turns_append(conversation, ("user", f"ask about the {EVENT_WORD} visit"), kind=kind,
                           metadata={"check_in": {"id": 1, "title": "Visit"}})
    [reply] = turns_append(conversation, ("assistant", "How was the visit to the lighthouse?"))
    conversation.refresh_from_db()
    speech = [m for m in live_branch(conversation) if m.role in (Role.USER, Role.ASSISTANT) and m.kind not in APP_EVENT_KINDS]

    # The final-eight handoff (New Chat, Branch / Fresh Chat) carries the speech around it, never the event.
    handoff = live_branch_handoff(conversation, settings_row=assistant_settings_get())
    assert event.id not in {str(i) for i in handoff.source_message_ids} | set(handoff.source_message_ids)
    assert EVENT_WORD not in handoff.exchange and "How was the visit" in handoff.exchange
    # ...and a New Chat made now stores the handoff without it.
    fresh = conversation_create()
    stored = ThreadHandoff.objects.get(destination=fresh)
    assert stored.source_id == conversation.pk and "How was the visit" in stored.handoff
    assert EVENT_WORD not in stored.handoff

    # The search index (database triggers) has no row for it; Past Conversation Search cannot find it.
    message_search_index_sync()
    assert not MessageSearchEntry.objects.filter(message=event).exists()
    assert MessageSearchEntry.objects.filter(message=reply).exists()
    assert past_conversation_search(EVENT_WORD) == []

    # Keyword recall (from any other thread) never returns it.
    assert all(hit.message_id != str(event.id) for hit in recall_candidates([EVENT_WORD], persona="elion", exclude=[]))
    assert recall_candidates([EVENT_WORD], persona="elion", exclude=[]) == []

    # The token estimate: the stored measure and the page's count leave it out.
    assert stored_turn_tokens(event.role, event.content, event.kind) == 0
    assert branch_estimate(conversation) == sum(stored_turn_tokens(m.role, m.content) for m in speech)
    assert thread_token_estimate(live_branch(conversation)) == branch_estimate(conversation)

    # Exports of speech: the Markdown export leaves it out; the JSON export (a faithful copy) keeps it with its
    # kind, and archiving that export keeps speech only.
    markdown = "".join(export_markdown_chunks(conversation))
    assert EVENT_WORD not in markdown and "How was the visit" in markdown
    exported = b"".join(export_json_chunks(conversation))
    assert EVENT_WORD.encode() in exported and kind.encode() in exported
    archive_document_upload(upload=SimpleUploadedFile("chat.json", exported), collection="conversations")
    archived = " ".join(ArchiveChunk.objects.values_list("text", flat=True))
    assert EVENT_WORD not in archived and "How was the visit" in archived

    # The request is the one place it travels: framed, never bare.
    turn = history_turn_of(event)
    assert turn.role == "user" and EVENT_WORD in turn.content and turn.content != event.content
