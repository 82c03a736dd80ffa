"""Seed 004 compaction as a projection: a model-written summary with an explicit
boundary stands in for the turns it covers, only while the boundary is an
ancestor of the head; history, ids and tool pairing stay untouched; Undo removes
it; summaries never feed handoffs, recall or search, and are labelled."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from continuity.rules.compaction import SUMMARY_HEADING, SUMMARY_INSTRUCTION
from continuity.rules.request_policy import HistoryTurn, assemble_request, estimate_tokens
from tests.support.compaction import SUMMARY, compact, send
from transcript.models import Message, Role

pytestmark = pytest.mark.django_db(transaction=True)

def contents(items) -> list[str]:
    """The words of each message item; a reply replayed as its output message item reads as its text."""
    return [
        "".join(part["text"] for part in item["content"]) if item.get("type") == "message" else item.get("content")
        for item in items if "role" in item
    ]


def transcript_state(conversation) -> list[tuple]:
    return list(
        Message.objects.filter(conversation=conversation)
        .exclude(role=Role.SYSTEM)
        .order_by("seq")
        .values_list("id", "parent_id", "seq", "role", "content", "parts", "status")
    )


def test_compaction_is_one_provider_call_with_its_own_instruction(long_thread, scripted_provider):
    conversation, turns = long_thread
    record = compact(conversation, scripted_provider)
    (request,) = scripted_provider.requests
    sent = request.body["input"]
    assert sent[0] == {"role": "system", "content": SUMMARY_INSTRUCTION}
    assert "first question about the lighthouse" in sent[1]["content"] and "third answer" in sent[1]["content"]
    assert "tools" not in request.body
    assert record["through_message_id"] == str(turns[-1].id) and record["label"] == "Compacted summary"
    assert record["summary"] == SUMMARY and record["covered_messages"] == 6


def test_requests_carry_the_summary_plus_only_the_turns_after_the_boundary(long_thread, scripted_provider):
    conversation, _ = long_thread
    compact(conversation, scripted_provider)
    sent = send(conversation, scripted_provider, "fourth question", reply="fourth answer")
    roles = [item.get("role") for item in sent]
    assert roles == ["system", "system", "user"]
    assert sent[1]["content"].startswith(SUMMARY_HEADING) and SUMMARY in sent[1]["content"]
    assert not any(text and "first answer" in text for text in contents(sent))
    assert not any(item.get("type") == "function_call" for item in sent)  # covered tool rounds stay covered
    sent = send(conversation, scripted_provider, "fifth question")
    assert contents(sent)[2:] == ["fourth question", "fourth answer", "fifth question"]


def test_compaction_leaves_history_ids_and_tool_pairing_untouched(long_thread, scripted_provider):
    conversation, _ = long_thread
    before = transcript_state(conversation)
    compact(conversation, scripted_provider)
    assert transcript_state(conversation) == before
    listing = Client().get(f"/api/conversations/{conversation.id}/messages/").json()["results"]
    assert [m["content"] for m in listing][:2] == ["first question about the lighthouse", "first answer"]
    assert Client().delete(f"/api/conversations/{conversation.id}/compaction/").json() == {"removed": 1}
    assert transcript_state(conversation) == before


def test_undo_removes_the_projection(long_thread, scripted_provider):
    conversation, _ = long_thread
    compact(conversation, scripted_provider)
    Client().delete(f"/api/conversations/{conversation.id}/compaction/")
    sent = send(conversation, scripted_provider, "fourth question")
    assert not any(text and SUMMARY_HEADING in text for text in contents(sent))
    assert "first answer" in contents(sent)
    assert {"type": "function_call", "call_id": "c1", "name": "list_library", "arguments": "{}"} in sent
    assert Client().get(f"/api/conversations/{conversation.id}/compaction/").json() == {"compaction": None}


def test_rewinding_before_the_boundary_ignores_it(long_thread, scripted_provider):
    conversation, turns = long_thread
    compact(conversation, scripted_provider)
    Client().post(
        f"/api/conversations/{conversation.id}/rewind/", {"message_id": str(turns[3].id)},
        content_type="application/json",
    )
    assert Client().get(f"/api/conversations/{conversation.id}/compaction/").json() == {"compaction": None}
    sent = send(conversation, scripted_provider, "a different third question")
    assert not any(text and SUMMARY_HEADING in text for text in contents(sent))
    assert "first answer" in contents(sent) and "third answer" not in contents(sent)


def test_compaction_validates_the_provider_binding_before_provider_io(long_thread, scripted_provider, settings):
    conversation, _ = long_thread
    settings.ELION_MODEL = "gpt-5.5-mini"
    response = Client().post(f"/api/conversations/{conversation.id}/compaction/")
    assert response.status_code == 409 and response.json()["error"] == "provider_mismatch"
    assert scripted_provider.requests == []


def test_short_threads_are_not_compacted(make_conversation, make_turns, scripted_provider):
    conversation = make_conversation()
    make_turns(conversation, ("user", "q"), ("assistant", "a"))
    response = Client().post(f"/api/conversations/{conversation.id}/compaction/")
    assert response.status_code == 409 and response.json()["error"] == "thread_too_short"
    assert scripted_provider.requests == []


def test_compacted_summaries_never_enter_handoffs_recall_or_search(long_thread, scripted_provider):
    from archive.services.search import archive_search
    from continuity.models import ThreadHandoff

    conversation, _ = long_thread
    compact(conversation, scripted_provider)
    client = Client()
    # Branch / Fresh Chat: the handoff is built from messages only.
    branch = client.post(f"/api/conversations/{conversation.id}/branch/", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    assert branch.status_code == 201
    assert all("Vexnorath" not in h.handoff for h in ThreadHandoff.objects.all())
    assert not Message.objects.filter(content__contains="Vexnorath").exists()
    # Automatic New Chat continuity and keyword recall in a new thread.
    fresh = client.post("/api/conversations/", {"persona": "elion"}, content_type="application/json").json()
    scripted_provider.script({"text": "hi"})
    client.post(f"/api/conversations/{fresh['id']}/messages/?stream=false", {"content": "hello there"},
                content_type="application/json")
    scripted_provider.script({"text": "hmm"})
    client.post(f"/api/conversations/{fresh['id']}/messages/?stream=false",
                {"content": "Do you remember Quillibrant and the blue door?"}, content_type="application/json")
    systems = [item["content"] for item in scripted_provider.last_request().body["input"] if item["role"] == "system"]
    assert not any("Quillibrant" in text or "Vexnorath" in text for text in systems)
    # Past Conversation Search and the archive.
    assert client.get("/api/search/", {"q": "Vexnorath"}).json()["results"] == []
    assert archive_search("Vexnorath", limit=5) == []


def test_chat_page_labels_the_summary_at_its_boundary_and_in_request_size_details(long_thread, scripted_provider):
    conversation, turns = long_thread
    client = Client()
    page = client.get(f"/c/{conversation.id}/").content.decode()
    assert "data-compact-button" in page and "data-compaction-marker" not in page
    record = compact(conversation, scripted_provider)
    page = client.get(f"/c/{conversation.id}/").content.decode()
    marker_at = page.index("data-compaction-marker")
    assert page.index("third answer") < marker_at  # the marker sits right after the boundary message
    assert "Compacted summary" in page[marker_at:] and "Quillibrant" in page[marker_at:]
    assert "data-compaction-row" in page and f"data-diag-compaction>{record['summary_tokens']}<" in page
    assert "data-compact-undo" in page and "data-compact-button" not in page


def test_a_summary_is_never_trimmed_and_counts_as_history():
    summary = "S" * 400
    request = assemble_request(
        static_prompt="static",
        history=[HistoryTurn("user", "x" * 400), HistoryTurn("assistant", "y" * 400), HistoryTurn("user", "now")],
        compacted_summary=summary,
        input_budget_tokens=estimate_tokens("static") + estimate_tokens(summary) + 5,
    )
    assert request.messages[1] == {"role": "system", "content": summary}
    assert [m["content"] for m in request.messages[2:]] == ["now"]
    assert request.diagnostics["history_tokens"] == estimate_tokens(summary) + 1
    assert json.dumps(request.diagnostics)  # fixed names only (checked in test_input_budget)
