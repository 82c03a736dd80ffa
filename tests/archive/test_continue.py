"""Continue an archived conversation in a new chat (issue 21), one test per rule.

`POST /api/archive/documents/{id}/continue/` with an `Idempotency-Key` makes a
Branch / Fresh Chat–style conversation whose handoff bubble holds the
document's final eight turns verbatim under the one handoff policy; the same
key answers the same conversation; the bubble is a handoff artifact, so it
never feeds later handoffs, recall or search. Through the real SDK and the
scripted provider where a request is involved.
"""

from __future__ import annotations

import json
import threading

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from archive.models import ArchiveDocument
from archive.services.continuation import archive_document_continue
from archive.services.documents import archive_document_add_text, archive_document_delete
from archive.services.handoff_store import archive_source_messages
from continuity.rules import archive_handoff_store
from continuity.rules.archive_handoff_store import archive_handoff_blocks_for
from continuity.rules.handoff_policy import build_handoff
from continuity.rules.handoff_store import handoff_limits, speaker_names
from continuity.rules.thread_handoff_store import handoff_block_for
from elion.base.assistant_settings import assistant_settings_get
from tests.support.factories import api_call
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, IdempotentAction, Message, MessageKind, Role

pytestmark = pytest.mark.django_db


def turn_text(number: int) -> str:
    return f"Turn {number} of the heron letters: the *kettle* sang [{number}] at dusk."


def labelled(turns: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"{speaker} said:\n{text}" for speaker, text in turns) + "\n"


def archived_conversation(count: int = 10, *, title: str = "Heron letters", turns=None) -> ArchiveDocument:
    turns = turns or [("AUMA" if n % 2 else "Elion Voicefire", turn_text(n)) for n in range(1, count + 1)]
    return archive_document_add_text(text=labelled(turns), collection="conversations", title=title).document


def continue_document(client, document_id, key: str | None = "key-1", status: int = 201, body=None) -> dict:
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    response = client.post(
        f"/api/archive/documents/{document_id}/continue/", json.dumps(body or {}), content_type="application/json",
        **headers,
    )
    assert response.status_code == status, response.content
    return response.json()


@pytest.fixture
def client():
    return Client()


def test_continue_makes_a_branch_style_chat_whose_bubble_holds_the_final_eight_turns_verbatim(client):
    document = archived_conversation(10)
    body = continue_document(client, document.pk)
    conversation = Conversation.objects.get(pk=body["id"])
    assert body["origin"] == "imported" and body["private"] is False  # a badge beside its title (issue 34)
    (bubble,) = Message.objects.filter(conversation=conversation)
    assert (bubble.role, bubble.kind, conversation.head_id) == (Role.ASSISTANT, MessageKind.HANDOFF_ARTIFACT, bubble.id)
    assert bubble.content.startswith("### Continued from “Heron letters”\n\n")
    quoted = bubble.content.split("\n\n", 1)[1].split("\n\n---\n\n")
    expected = [f"{'AUMA' if n % 2 else 'Elion Voicefire'} said:\n{turn_text(n)}" for n in range(3, 11)]
    assert quoted == expected  # labels as in every handoff, words exactly as archived, oldest two left out
    assert bubble.metadata == {"source_document_id": document.pk, "source_turns": list(range(3, 11))}
    assert body["handoff"] == {"source_conversation_id": None, "source_message_ids": [], "source_document_id": document.pk}


def test_bubble_is_the_handoff_policy_rendering_of_the_document(client):
    document = archived_conversation(12)
    body = continue_document(client, document.pk)
    policy = build_handoff(
        archive_source_messages(document), limits=handoff_limits(), names=speaker_names("elion", assistant_settings_get())
    )
    assert Message.objects.get(conversation_id=body["id"]).content == policy.visible(document.title)


def test_the_same_idempotency_key_answers_the_same_conversation(client):
    document = archived_conversation(4)
    first = continue_document(client, document.pk, key="retry-me")
    again = continue_document(client, document.pk, key="retry-me", status=200)
    assert again["id"] == first["id"]
    assert Conversation.objects.count() == 1
    other_key = continue_document(client, document.pk, key="another")
    assert other_key["id"] != first["id"]
    # A key names the action on one document: the same key on another document is a new action.
    other_document = archived_conversation(4, title="Other letters", turns=[("AUMA", "a"), ("Elion Voicefire", "b")])
    assert continue_document(client, other_document.pk, key="retry-me")["id"] != first["id"]
    assert Conversation.objects.count() == 3


@pytest.mark.django_db(transaction=True)
def test_concurrent_continuations_with_one_key_make_one_conversation():
    document = archived_conversation(4)
    results, errors = [], []
    start = threading.Barrier(3)

    def run():
        try:
            start.wait()
            results.append(archive_document_continue(document_id=document.pk, idempotency_key="k"))
        except Exception as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert len({conversation.id for conversation, _ in results}) == 1
    assert sorted(created for _, created in results) == [False, False, True]
    assert Conversation.objects.count() == 1
    assert IdempotentAction.objects.filter(action=f"archive_continue:{document.pk}").count() == 1


def test_continue_needs_an_idempotency_key(client):
    document = archived_conversation(2)
    assert continue_document(client, document.pk, key=None, status=400)["error"] == "idempotency_key_required"
    assert continue_document(client, document.pk, key="x" * 201, status=400)["error"] == "invalid_idempotency_key"
    assert not Conversation.objects.exists()


def test_continue_of_an_unknown_document_is_a_404(client):
    assert continue_document(client, 999_999, status=404)["error"] == "document_not_found"
    assert continue_document(client, "not-a-number", status=404)["error"] == "document_not_found"


def test_a_document_without_conversation_turns_cannot_be_continued(client):
    prose = archive_document_add_text(text="Just a paragraph of prose.\n\nAnd another.", collection="papers").document
    assert continue_document(client, prose.pk, status=409)["error"] == "archive_document_not_a_conversation"
    assert not Conversation.objects.exists()


def test_continue_refuses_an_unknown_persona_and_a_non_object_body(client):
    document = archived_conversation(2)
    assert continue_document(client, document.pk, body={"persona": "nobody"}, status=400)["error"] == "unknown_persona"
    response = client.post(
        f"/api/archive/documents/{document.pk}/continue/", "[1]", content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="k",
    )
    assert response.status_code == 400 and response.json()["error"] == "malformed_request"
    assert not Conversation.objects.exists()


def test_clipboard_persona_labels_the_assistant_as_clipboard(client):
    document = archived_conversation(2)
    body = continue_document(client, document.pk, body={"persona": "clipboard"})
    assert body["persona"] == "clipboard"
    assert "Clipboard said:\n" in Message.objects.get(conversation_id=body["id"]).content


def test_a_key_reused_with_another_persona_is_refused(client):
    document = archived_conversation(2)
    continue_document(client, document.pk, key="k", body={"persona": "clipboard"})
    refused = continue_document(client, document.pk, key="k", body={"persona": "elion"}, status=409)
    assert refused["error"] == "idempotency_key_reused"
    assert Conversation.objects.count() == 1


def test_a_turn_above_the_per_message_limit_becomes_a_whole_message_marker(client, settings):
    settings.HANDOFF_PER_MESSAGE_CHARACTER_LIMIT = 100
    document = archived_conversation(turns=[("AUMA", "short question"), ("Elion Voicefire", "long answer " * 20)])
    content = Message.objects.get(conversation_id=continue_document(client, document.pk)["id"]).content
    assert "AUMA said:\nshort question" in content
    assert "[Whole assistant message from " in content and "long answer" not in content


def test_the_total_budget_demotes_the_oldest_turns_first(client, settings):
    # All four verbatim need about 1,700 characters in the model-facing block; 1,500 fits two markers.
    settings.HANDOFF_TOTAL_CHARACTER_BUDGET = 1_500
    document = archived_conversation(turns=[("AUMA", "a" * 300), ("Elion Voicefire", "b" * 300),
                                            ("AUMA", "c" * 300), ("Elion Voicefire", "the newest reply")])
    content = Message.objects.get(conversation_id=continue_document(client, document.pk)["id"]).content
    assert len(content) <= 1_500
    assert "a" * 300 not in content and "b" * 300 not in content
    assert "[Whole user message from " in content and "[Whole assistant message from " in content
    assert content.endswith("AUMA said:\n" + "c" * 300 + "\n\n---\n\nElion Voicefire said:\nthe newest reply")


def test_a_turn_stored_as_several_chunks_comes_back_verbatim(client):
    # Above the archive's 4,000-character chunk maximum, cut at paragraph, line and word boundaries.
    long_turn = "\n\n".join(["First paragraph " * 150, "Second line one\nsecond line two " * 80, "tail " * 300]).strip()
    document = archived_conversation(turns=[("AUMA", "Tell me everything."), ("Elion Voicefire", long_turn)])
    assert document.chunks.filter(turn=2).count() > 1
    content = Message.objects.get(conversation_id=continue_document(client, document.pk)["id"]).content
    assert content.endswith(f"Elion Voicefire said:\n{long_turn}")


@pytest.mark.django_db(transaction=True)
def test_the_first_send_carries_the_turns_in_the_prompt_and_nothing_once_the_document_is_removed(
    client, scripted_provider
):
    document = archived_conversation(3)
    body = continue_document(client, document.pk)
    api_call(client, "post", f"/api/conversations/{body['id']}/messages/?stream=false", {"content": "Shall we go on?"})
    request = scripted_provider.requests[-1].body
    system = request["input"][0]["content"]
    assert "BEGIN VERBATIM_EXCHANGE_" in system and json.dumps(turn_text(3), ensure_ascii=False) in system
    # The bubble itself is not replayed as an assistant turn: it travels in the continuity slot only.
    assert not any(item.get("role") == "assistant" and "Continued from" in json.dumps(item) for item in request["input"])

    archive_document_delete(document_id=document.pk)
    assert handoff_block_for(Conversation.objects.get(pk=body["id"])) == ""


@pytest.mark.django_db(transaction=True)
def test_the_bubble_never_feeds_later_handoffs_recall_or_search(client, scripted_provider):
    document = archived_conversation(4)
    continued = continue_document(client, document.pk)
    scripted_provider.script(ScriptedReply(text="Glad to pick this up again."))
    api_call(client, "post", f"/api/conversations/{continued['id']}/messages/?stream=false", {"content": "Hello again"})

    # A later New Chat takes the continued chat as its prior thread, but only its own speech.
    later = api_call(client, "post", "/api/conversations/", {"persona": "elion"}, status=201)
    assert later["handoff"]["source_conversation_id"] == continued["id"]
    assert later["handoff"]["source_message_ids"] == [
        str(m.id) for m in Message.objects.filter(conversation_id=continued["id"], kind=MessageKind.ORDINARY).order_by("seq")
    ]
    api_call(client, "post", f"/api/conversations/{later['id']}/messages/?stream=false", {"content": "Good morning there"})
    api_call(client, "post", f"/api/conversations/{later['id']}/messages/?stream=false",
             {"content": "Do you remember the heron letters and the kettle?"})
    assert "kettle* sang" not in json.dumps(scripted_provider.requests[-1].body, ensure_ascii=False)
    # Past Conversation Search reads no handoff bubble.
    results = api_call(client, "get", "/api/search/?q=dusk&include_shielded=true&include_private=true")["results"]
    assert results == []


def test_rebuilding_many_continued_chats_takes_a_fixed_number_of_queries(client):
    long_turn = "word " * 1_000  # stored as two chunks: the document text is read too
    def continued(count: int) -> list:
        ids = []
        for n in range(count):
            document = archived_conversation(turns=[("AUMA", f"question {count} {n}"), ("Elion Voicefire", long_turn + str(n))],
                                             title=f"Letters {count} {n}")
            ids.append(continue_document(client, document.pk, key=f"k-{count}-{n}")["id"])
        return ids

    def queries(ids) -> tuple[int, dict]:
        with CaptureQueriesContext(connection) as captured:
            blocks = archive_handoff_blocks_for(ids, settings_row=assistant_settings_get())
        return len(captured.captured_queries), blocks

    one, one_blocks = queries(continued(1))
    many, many_blocks = queries(continued(4))
    assert one == many
    assert len(one_blocks) == 1 and len(many_blocks) == 4
    # Each block carries its own long turn whole, rebuilt from its two chunks.
    carried = sorted(n for block in many_blocks.values() for n in range(4) if json.dumps(long_turn + str(n)) in block)
    assert carried == [0, 1, 2, 3]


def test_continuity_reads_the_turns_through_the_reader_the_archive_registers_and_refuses_to_guess_without_it(
    client, monkeypatch
):
    """Continuity imports nothing of `archive`: the archive hands it its reader when Django starts. A continued
    chat's slot holds the document's turns through that reader; with none registered, rebuilding the slot fails
    loudly rather than dropping the turns the owner asked for."""
    document = archived_conversation(3)
    conversation = Conversation.objects.get(pk=continue_document(client, document.pk)["id"])
    assert json.dumps(turn_text(3), ensure_ascii=False) in handoff_block_for(conversation)

    monkeypatch.setattr(archive_handoff_store, "_READERS", {})
    with pytest.raises(ImproperlyConfigured, match="reader of archived turns"):
        handoff_block_for(conversation)
