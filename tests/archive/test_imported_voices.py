"""Imported voices kept apart (issue 34): another system's words are labelled by their source ("ChatGPT said:",
"Claude said:"), the owner's by the owner's label, never with Elion's name; "Continue in a new chat" carries those
labels into its bubble and its request; Elion's own documents keep the seed's Voicefire labels (seed, "Archive
Compatibility"); migration archive 0007 relabels what was imported already."""

from __future__ import annotations

import importlib
import json

import pytest
from django.test import Client

from archive.models import ArchiveChunk, ArchiveDocument
from archive.services.documents import archive_document_add_text
from continuity.rules.thread_handoff_store import handoff_block_for
from tests.support.factories import sent_and_answered
from tests.support.migration_state import apps_at
from transcript.models import Conversation, Message, MessageKind

pytestmark = pytest.mark.django_db

relabel = importlib.import_module("archive.migrations.0007_imported_voices")


def chatgpt_document(client, upload, chatgpt_json, **extra) -> ArchiveDocument:
    response = client.post("/api/archive/import/chatgpt/", {"file": upload("conversations.json", chatgpt_json), **extra})
    assert response.status_code == 200, response.content
    return ArchiveDocument.objects.get(title="Lantern by the river")


def continued(client, document: ArchiveDocument) -> Conversation:
    response = client.post(f"/api/archive/documents/{document.pk}/continue/", "{}", content_type="application/json",
                           HTTP_IDEMPOTENCY_KEY="k")
    assert response.status_code == 201, response.content
    return Conversation.objects.get(pk=response.json()["id"])


def test_archive_labels_an_imported_assistant_by_its_source(upload, chatgpt_json):
    document = chatgpt_document(Client(), upload, chatgpt_json)
    assert "ChatGPT said:\nI remember: the lantern swayed" in document.text
    assert "AUMA said:\nDo you remember the lantern" in document.text
    assert "Elion Voicefire" not in document.text
    page = Client().get(f"/archive/{document.pk}/").content.decode()
    assert "ChatGPT export" in page and "ChatGPT said" in page and "Elion Voicefire said" not in page
    assert "The assistant here is <strong>ChatGPT</strong>, from a ChatGPT export" in page


def test_archive_labels_the_name_the_owner_gives_at_import(upload, chatgpt_json):
    document = chatgpt_document(Client(), upload, chatgpt_json, assistant_name="GPT-4o")
    assert "GPT-4o said:\nI remember" in document.text


@pytest.mark.django_db(transaction=True)
def test_continue_in_a_new_chat_carries_the_source_labels(scripted_provider, upload, chatgpt_json):
    client = Client()
    conversation = continued(client, chatgpt_document(client, upload, chatgpt_json))
    bubble = Message.objects.get(conversation=conversation, kind=MessageKind.HANDOFF_ARTIFACT)
    assert "ChatGPT said:\nThe lantern festival is on the twelfth of June." in bubble.content
    assert "AUMA said:\nCan you look up when the lantern festival is?" in bubble.content
    assert "Elion Voicefire said:" not in bubble.content
    assert "ChatGPT said:" in handoff_block_for(conversation)
    sent_and_answered(conversation, "Shall we go again?")
    request = json.dumps(scripted_provider.last_request().body)
    assert "ChatGPT said:" in request and "Elion Voicefire said:" not in request


def test_elions_own_documents_keep_the_voicefire_labels():
    text = "\n\n".join(f"{'AUMA' if n % 2 else 'Voicefire 5.1'} said:\nturn {n}" for n in range(1, 5))
    document = archive_document_add_text(text=text, collection="conversations", title="Old letters").document
    conversation = continued(Client(), document)
    bubble = Message.objects.get(conversation=conversation, kind=MessageKind.HANDOFF_ARTIFACT)
    assert "Elion Voicefire said:\nturn 4" in bubble.content and "Voicefire 5.1 said:" not in bubble.content


def test_migration_relabels_what_was_imported_with_elions_name(upload, chatgpt_json):
    document = chatgpt_document(Client(), upload, chatgpt_json)
    named = ArchiveDocument.objects.create(title="Named at import", collection="conversations", source="claude",
                                           text="# Named\n\nAUMA said:\nhi\n\nSonnet said:\nhello\n",
                                           content_sha256="b" * 64)
    ArchiveChunk.objects.create(document=named, position=1, speaker="Sonnet", role="assistant", turn=2, text="hello")
    # As an import before issue 34 left it: the assistant under Elion's display name.
    ArchiveChunk.objects.filter(document=document, role="assistant").update(speaker="Elion Voicefire")
    ArchiveDocument.objects.filter(pk=document.pk).update(text=document.text.replace("ChatGPT said:", "Elion Voicefire said:"))

    relabel.relabel_imported_voices(apps_at("archive", "0007_imported_voices"), None)
    document.refresh_from_db()
    assert "Elion Voicefire" not in document.text and "\n\nChatGPT said:\nI remember" in document.text
    assert set(document.chunks.filter(role="assistant").values_list("speaker", flat=True)) == {"ChatGPT"}
    named.refresh_from_db()
    assert "Sonnet said:" in named.text
    assert list(named.chunks.values_list("speaker", flat=True)) == ["Sonnet"]
