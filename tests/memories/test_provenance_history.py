"""Where each memory came from, what it said before each edit, how many chats hold it, the proposals API's
bad input, and "Memories in this chat" (issue 35). The seed's rules on the new paths are named after them."""

from __future__ import annotations

import io

import pytest
from django.db import connection
from django.test import Client

from continuity.services.branching import conversation_branch
from conversations.services.threads.thread_writes import conversation_create, folder_create
from conversations.services.visibility.transitions import folder_hidden_set
from memories.models import MemoryProposal, MemoryVersion, ProposalStatus, SnapshotMembership
from memories.services.memory_writes import memory_add, memory_delete, memory_edit
from memories.services.proposals import memory_propose
from tests.memories.conftest import memory_texts, stored_prompt
from tests.support.factories import api_call, turns_append
from transcript.models import Role

pytestmark = pytest.mark.django_db


def proposal_in(conversation, text: str = "AUMA plays the cello on Sundays.") -> MemoryProposal:
    """A proposal as the tool records it, from a reply stored in `conversation`."""
    _, reply = turns_append(conversation, (Role.USER, "I played today."), (Role.ASSISTANT, "Lovely."))
    outcome = memory_propose(
        conversation_id=conversation.pk, reply_id=reply.pk, tool_call_id="call_1", text=text,
        category="preference", importance=3, reason="A weekly joy.",
    )
    assert outcome.status == "proposed", outcome
    return outcome.proposal


def test_every_memory_records_its_source(client: Client):
    typed = api_call(client, "post", "/api/memories/", {"text": "Typed by hand."}, status=201)
    assert typed["source"]["kind"] == "typed" and typed["source"]["file"] is None

    upload = io.BytesIO(b'["From a file."]')
    upload.name = "keepsakes.json"
    response = client.post("/api/memories/import/", {"file": upload})
    assert response.status_code == 201, response.content
    api_call(client, "post", "/api/memories/import/", {"text": '["Pasted."]', "format": "json"}, status=201)

    conversation = conversation_create()
    proposal = proposal_in(conversation)
    approved = api_call(client, "post", f"/api/memory-proposals/{proposal.pk}/approve/",
                        {"text": "AUMA plays the cello most Sundays.", "importance": 4}, status=201)

    by_text = {m["text"]: m["source"] for m in api_call(client, "get", "/api/memories/")["results"]}
    assert (by_text["From a file."]["kind"], by_text["From a file."]["file"]) == ("imported", "keepsakes.json")
    assert (by_text["Pasted."]["kind"], by_text["Pasted."]["file"]) == ("imported", None)
    source = by_text["AUMA plays the cello most Sundays."]
    assert source == approved["memory"]["source"]
    assert (source["kind"], source["conversation_id"], source["message_id"], source["reply_id"]) == (
        "proposal", str(conversation.pk), str(proposal.source_message_id), str(proposal.reply_id),
    )
    assert (source["reason"], source["proposed_text"]) == ("A weekly joy.", "AUMA plays the cello on Sundays.")
    assert approved["memory"]["importance"] == 4 and approved["proposal"]["status"] == "approved"


def test_the_source_link_opens_the_conversation_at_that_message_even_when_hidden(client: Client):
    folder = folder_create(name="Sealed")
    hidden = conversation_create(folder_id=folder.pk)
    proposal = proposal_in(hidden)
    folder_hidden_set(folder_id=folder.pk, hidden=True)
    memory_id = api_call(client, "post", f"/api/memory-proposals/{proposal.pk}/approve/", {}, status=201)["memory"]["id"]

    page = client.get(f"/memories/{memory_id}/")
    assert page.status_code == 200
    message_id = proposal.source_message_id
    link = f"/c/{hidden.pk}/?around={message_id}#message-{message_id}"
    assert f'href="{link}"' in page.content.decode()
    opened = client.get(link.split("#")[0])
    assert opened.status_code == 200 and f'id="message-{message_id}"' in opened.content.decode()


def test_history_is_kept_on_every_edit_newest_first(client: Client):
    memory = memory_add(text="First wording.", category="general", importance=2)
    memory_edit(memory_id=memory.pk, changes={"text": "Second wording."})
    memory_edit(memory_id=memory.pk, changes={"category": "place", "importance": 5})
    memory_edit(memory_id=memory.pk, changes={"active": False})  # a switch, not wording: no version

    body = api_call(client, "get", f"/api/memories/{memory.pk}/")
    assert body["text"] == "Second wording." and body["category"] == "place"
    assert [(h["text"], h["category"], h["importance"]) for h in body["history"]] == [
        ("Second wording.", "general", 2), ("First wording.", "general", 2),
    ]
    page = client.get(f"/memories/{memory.pk}/").content.decode()
    assert "First wording." in page and "Second wording." in page


def test_deletions_remove_the_memory_from_every_stored_snapshot_and_prompt_and_its_past_versions(
    client: Client, store_prompt
):
    """Seed: "Deletions remove the memory from every stored snapshot and prompt" — extended to its history
    and to the proposal it was approved from."""
    holder = conversation_create()
    proposal = proposal_in(holder, "AUMA's grandmother was called Ilse.")
    memory_id = api_call(client, "post", f"/api/memory-proposals/{proposal.pk}/approve/",
                         {"text": "AUMA's grandmother was Ilse."}, status=201)["memory"]["id"]
    memory_edit(memory_id=memory_id, changes={"text": "AUMA's grandmother was Ilse Marie."})
    thread = conversation_create()
    api_call(client, "post", f"/api/conversations/{holder.pk}/refresh-memory/")
    store_prompt(holder)
    assert memory_texts(stored_prompt(holder)) == ["AUMA's grandmother was Ilse Marie."]
    assert api_call(client, "get", f"/api/memories/{memory_id}/")["chats"] == 2

    memory_delete(memory_id=memory_id)

    assert not MemoryVersion.objects.exists() and not MemoryProposal.objects.exists()
    assert not SnapshotMembership.objects.filter(conversation__in=[holder, thread]).exists()
    assert memory_texts(stored_prompt(holder)) == []
    with connection.cursor() as cursor:
        for table in ("memories_memoryversion", "memories_memoryproposal", "memories_memory"):
            cursor.execute(f"SELECT count(*) FROM {table}")  # noqa: S608 - fixed table names
            assert cursor.fetchone()[0] == 0, table


def test_new_memories_affect_future_threads_and_branches_when_approved(client: Client):
    """Seed: "New memories affect future threads and branches." An approved proposal is a new memory."""
    existing = conversation_create()
    proposal = proposal_in(existing)
    memory_id = api_call(client, "post", f"/api/memory-proposals/{proposal.pk}/approve/", {}, status=201)["memory"]["id"]
    assert SnapshotMembership.objects.filter(memory_id=memory_id).count() == 0
    branch, _ = conversation_branch(conversation_id=existing.pk, idempotency_key="branch-1")
    fresh = conversation_create()
    holders = set(SnapshotMembership.objects.filter(memory_id=memory_id).values_list("conversation_id", flat=True))
    assert holders == {branch.pk, fresh.pk}
    assert not SnapshotMembership.objects.filter(memory_id=memory_id, conversation=existing).exists()


def test_edits_affect_threads_that_already_contain_that_memory_from_a_proposal(client: Client, store_prompt):
    """Seed: "Edits affect threads that already contain that memory." — also for an approved proposal, and
    the edit pulls no newer memory in; the proposing thread, which does not hold it, is unchanged."""
    source = conversation_create()
    proposal = proposal_in(source)
    memory_id = api_call(client, "post", f"/api/memory-proposals/{proposal.pk}/approve/", {}, status=201)["memory"]["id"]
    holder = conversation_create()
    store_prompt(holder)
    store_prompt(source)
    memory_add(text="A later memory.")
    api_call(client, "patch", f"/api/memories/{memory_id}/", {"text": "AUMA plays the cello every Sunday."})
    assert memory_texts(stored_prompt(holder)) == ["AUMA plays the cello every Sunday."]
    assert memory_texts(stored_prompt(source)) == []
    listed = api_call(client, "get", f"/api/conversations/{holder.pk}/memories/")["results"]
    assert [m["text"] for m in listed] == ["AUMA plays the cello every Sunday."]


def test_memories_in_this_chat_equal_the_snapshot_with_current_text(client: Client):
    first = memory_add(text="One.")
    second = memory_add(text="Two.")
    chat = conversation_create()
    memory_add(text="Three, added later.")
    memory_edit(memory_id=second.pk, changes={"text": "Two, edited."})
    memory_edit(memory_id=first.pk, changes={"active": False})

    listed = api_call(client, "get", f"/api/conversations/{chat.pk}/memories/")["results"]
    held = list(SnapshotMembership.objects.filter(conversation=chat).order_by("memory__position")
                .values_list("memory_id", flat=True))
    assert [m["id"] for m in listed] == held == [first.pk, second.pk]
    assert [(m["text"], m["active"]) for m in listed] == [("One.", False), ("Two, edited.", True)]
    assert set(listed[0]) == {"id", "text", "category", "importance", "position", "active"}
    # The snapshot's timing metadata stays apart: timestamps and provenance only.
    timing = api_call(client, "get", f"/api/conversations/{chat.pk}/")["memory_snapshot"]
    assert "Two" not in str(timing) and str(second.pk) not in [str(v) for v in timing.values()]

    page = client.get(f"/memories/in/{chat.pk}/").content.decode()
    assert "Two, edited." in page and "Three, added later." not in page
    assert "newer" not in page.lower() and "stale" not in page.lower()
    api_call(client, "post", f"/api/conversations/{chat.pk}/refresh-memory/")
    listed = api_call(client, "get", f"/api/conversations/{chat.pk}/memories/")["results"]
    # A refresh takes the current eligible set: every active memory (an inactive one is not eligible).
    assert [m["text"] for m in listed] == ["Two, edited.", "Three, added later."]


@pytest.mark.parametrize(
    "method, path, body, status, code",
    [
        ("get", "/api/memory-proposals/?status=maybe", None, 400, "invalid_status"),
        ("post", "/api/memory-proposals/999/approve/", {}, 404, "proposal_not_found"),
        ("post", "/api/memory-proposals/abc/dismiss/", None, 404, "proposal_not_found"),
        ("post", "/api/memory-proposals/{id}/approve/", {"position": 1}, 400, "unknown_field"),
        ("post", "/api/memory-proposals/{id}/approve/", {"text": ""}, 400, "empty_memory_text"),
        ("post", "/api/memory-proposals/{id}/approve/", {"importance": 9}, 400, "invalid_importance"),
        ("post", "/api/memory-proposals/{id}/approve/", ["text"], 400, "malformed_request"),
        ("get", "/api/conversations/not-a-uuid/memories/", None, 404, "conversation_not_found"),
    ],
)
def test_bad_proposal_input_is_a_4xx_in_the_error_shape(client: Client, method, path, body, status, code):
    proposal = proposal_in(conversation_create())
    response = api_call(client, method, path.format(id=proposal.pk), body, status=status)
    assert response["error"] == code and response["detail"]
    assert MemoryProposal.objects.get().status == ProposalStatus.PENDING


def test_a_decided_proposal_cannot_be_decided_again(client: Client):
    proposal = proposal_in(conversation_create())
    api_call(client, "post", f"/api/memory-proposals/{proposal.pk}/approve/", {}, status=201)
    again = api_call(client, "post", f"/api/memory-proposals/{proposal.pk}/approve/", {}, status=409)
    assert again["error"] == "proposal_not_pending"
    assert api_call(client, "post", f"/api/memory-proposals/{proposal.pk}/dismiss/", status=409)["error"] == (
        "proposal_not_pending"
    )
    listed = api_call(client, "get", "/api/memory-proposals/")["results"]
    assert listed == []
    assert [p["id"] for p in api_call(client, "get", "/api/memory-proposals/?status=approved")["results"]] == [
        proposal.pk
    ]
