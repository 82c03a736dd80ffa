"""The pages of issue 35 through Django's test client: the card under the reply and its actions (with and
without JavaScript), Memories → Suggestions, and the budget meter."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from continuity.rules.request_policy import estimate_tokens
from conversations.services.threads.thread_writes import conversation_create
from memories.models import Memory, MemoryProposal, ProposalStatus, SnapshotMembership
from memories.services.memory_writes import memory_add
from memories.services.proposals import memory_propose
from tests.memories.conftest import MEMORY_HEADING, stored_prompt
from tests.support.factories import turns_append
from transcript.models import Role

pytestmark = pytest.mark.django_db

CARD = "X-Elion-Fragment"


def proposed(conversation, text: str = "AUMA's cat is called Juniper."):
    """A reply that called `propose_memory` (its stored parts say so, as the tool loop writes them)."""
    _, reply = turns_append(conversation, (Role.USER, "Juniper knocked my tea over."), (Role.ASSISTANT, "Oh, Juniper."))
    outcome = memory_propose(conversation_id=conversation.pk, reply_id=reply.pk, tool_call_id="call_cat", text=text,
                             category="relationship", importance=2, reason="AUMA talks about her often.")
    reply.parts = [{"type": "tool_call", "call_id": "call_cat", "name": "propose_memory", "arguments": "{}", "round": 1},
                   {"type": "tool_result", "call_id": "call_cat", "content": "{}", "is_error": False}]
    reply.save(update_fields=["parts"])
    return reply, outcome.proposal


def card_post(client: Client, proposal, action: str, **fields: str):
    return client.post(f"/memories/suggestions/{proposal.pk}/{action}/", {"place": "chat", **fields},
                       headers={CARD: "card"})


def test_the_card_sits_under_the_reply_and_its_actions_answer_with_the_card(client: Client):
    conversation = conversation_create()
    reply, proposal = proposed(conversation)
    page = client.get(f"/c/{conversation.pk}/").content.decode()
    bubble = page.split(f'id="message-{reply.pk}"', 1)[1].split("</article>", 1)[0]
    assert 'data-proposal-card' in bubble and "AUMA&#x27;s cat is called Juniper." in bubble
    for label in ("Approve", "Edit", "Dismiss"):
        assert f">{label}<" in bubble

    edited = card_post(client, proposal, "approve", text="AUMA's cat is Juniper, a grey tabby.", importance="3")
    assert edited.status_code == 200
    body = edited.content.decode()
    assert 'data-proposal-status="approved"' in body and "Also use it in this chat" in body
    memory = Memory.objects.get()
    assert (memory.text, memory.importance, memory.category) == ("AUMA's cat is Juniper, a grey tabby.", 3, "relationship")
    assert not SnapshotMembership.objects.filter(conversation=conversation, memory=memory).exists()

    used = card_post(client, proposal, "use-here").content.decode()
    assert "Used in this chat" in used and "Also use it in this chat" not in used
    assert SnapshotMembership.objects.filter(conversation=conversation, memory=memory).exists()

    again = card_post(client, proposal, "dismiss")
    assert again.status_code == 409 and "already approved" in again.content.decode()


def test_without_javascript_an_action_redirects_back_to_the_message(client: Client):
    conversation = conversation_create()
    reply, proposal = proposed(conversation)
    back = f"/c/{conversation.pk}/?around={proposal.source_message_id}#message-{proposal.source_message_id}"
    response = client.post(f"/memories/suggestions/{proposal.pk}/dismiss/", {"next": back})
    assert response.status_code == 302 and response["Location"] == back
    assert MemoryProposal.objects.get().status == ProposalStatus.DISMISSED
    # An outside address is never followed.
    other = proposed(conversation, "AUMA reads in the bath.")[1]
    response = client.post(f"/memories/suggestions/{other.pk}/approve/", {"next": "https://example.org/"})
    assert response["Location"] == "/memories/suggestions/"
    assert client.post(f"/memories/suggestions/{other.pk}/explode/").status_code == 302


def test_suggestions_list_pending_and_dismissed_with_a_link_to_the_source_message(client: Client):
    conversation = conversation_create(title="Tea and Juniper")
    _, waiting = proposed(conversation)
    _, dismissed = proposed(conversation, "AUMA dislikes mint tea.")
    client.post(f"/memories/suggestions/{dismissed.pk}/dismiss/")

    page = client.get("/memories/suggestions/").content.decode()
    pending_part, dismissed_part = page.split("data-suggestions-dismissed", 1)
    assert "Juniper." in pending_part and "mint tea" not in pending_part
    assert "mint tea" in dismissed_part
    link = f"/c/{conversation.pk}/?around={waiting.source_message_id}#message-{waiting.source_message_id}"
    assert f'href="{link}"' in pending_part and "Tea and Juniper" in pending_part

    assert client.post("/memories/suggestions/clear-dismissed/").status_code == 302
    assert list(MemoryProposal.objects.values_list("pk", flat=True)) == [waiting.pk]
    assert "Suggestions (1 waiting)" in client.get("/memories/").content.decode()


def test_the_budget_meter_is_the_memory_section_a_new_chat_carries(client: Client, store_prompt):
    for i in range(5):
        memory_add(text=f"Memory number {i}, " + "with some words " * 20)
    fresh = conversation_create()
    store_prompt(fresh)
    prompt = stored_prompt(fresh)
    section = MEMORY_HEADING + prompt.split(MEMORY_HEADING, 1)[1].split("\n\n## ", 1)[0]

    page = client.get("/memories/").content.decode()
    tokens = int(page.split("data-budget-tokens>", 1)[1].split("<", 1)[0])
    budget = int(page.split("data-budget-limit>", 1)[1].split("<", 1)[0])
    assert tokens == estimate_tokens(section) > 0
    assert budget == settings.ELION_INPUT_BUDGET_TOKENS
