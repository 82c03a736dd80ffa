"""`propose_memory` through the real send pipeline, the real `openai` SDK and the scripted provider, on both
selectors (issue 35): a proposal is not a memory until the owner approves it, and an approved one follows the
seed's rule for new memories (future threads and branches only, or an explicit Refresh memory).

Assertions are on the rows and on the exact requests the scripted provider received.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from memories.models import Memory, MemoryProposal, MemorySource, ProposalStatus, SnapshotMembership
from memories.services.memory_writes import memory_add
from tests.support.factories import api_call
from tests.support.scripted_provider import ScriptedReply
from tests.support.tool_requests import (
    SELECTORS,
    body_text,
    memory_section_texts,
    new_chat,
    send,
    system_prompt,
    tool_names,
    tool_outputs,
    tool_refused_where_suggesting_is_not_allowed,
)
from transcript.models import Message, Role

pytestmark = pytest.mark.django_db(transaction=True)

BEES = "AUMA keeps three beehives on the hill above the orchard."


def propose(text: str = BEES, call_id: str = "call_bees", **extra: object) -> dict:
    arguments = {"text": text, "category": "place", "importance": 4, "reason": "A lasting part of AUMA's life."}
    return {"name": "propose_memory", "call_id": call_id, "arguments": {**arguments, **extra}}


def proposing_turn(scripted_provider, client: Client, conversation_id: str, *calls: dict) -> list[dict]:
    """One owner turn whose reply makes `calls` in one round, then speaks; the tool results, decoded."""
    scripted_provider.clear()
    scripted_provider.script(ScriptedReply(tool_calls=list(calls)), ScriptedReply(text="I noted it for you."))
    send(client, conversation_id, "I spent the morning with my bees on the hill.")
    # A refusal or a proposal is JSON; an error result ("Tool error: …") is a sentence.
    return [
        json.loads(output) if output.startswith("{") else {"error": output}
        for output in tool_outputs(scripted_provider.requests[-1])[-len(calls):]
    ]


def memories_of_next_request(scripted_provider, client: Client, conversation_id: str) -> list[str]:
    scripted_provider.clear()
    send(client, conversation_id, "Good evening.")
    return memory_section_texts(system_prompt(scripted_provider.requests[-1]))


@pytest.mark.parametrize("selector", SELECTORS)
def test_a_proposal_reaches_no_prompt_until_approved_then_new_threads_only_until_refresh(
    scripted_provider, settings, selector
):
    settings.ELION_API_SELECTOR = selector
    memory_add(text="AUMA lives by the sea.")
    client = Client()
    proposing = new_chat(client)

    (result,) = proposing_turn(scripted_provider, client, proposing, propose())

    offered, _ = scripted_provider.requests
    assert "propose_memory" in tool_names(offered)
    proposal = MemoryProposal.objects.get()
    assert result == {
        "status": "proposed", "code": "proposed", "proposal_id": proposal.pk, "detail": result["detail"],
    } and "not a memory" in result["detail"]
    user_turn = Message.objects.get(conversation_id=proposing, role=Role.USER)
    reply = Message.objects.get(conversation_id=proposing, role=Role.ASSISTANT)
    assert (proposal.status, proposal.text, proposal.category, proposal.importance) == ("pending", BEES, "place", 4)
    assert (str(proposal.conversation_id), proposal.source_message_id, proposal.reply_id, proposal.tool_call_id) == (
        proposing, user_turn.id, reply.id, "call_bees",
    )
    assert not Memory.objects.filter(text=BEES).exists()
    assert not SnapshotMembership.objects.filter(memory__text=BEES).exists()

    # Pending: in no memory section, and nowhere in another conversation's request.
    assert memories_of_next_request(scripted_provider, client, proposing) == ["AUMA lives by the sea."]
    before_approval = new_chat(client)
    assert memories_of_next_request(scripted_provider, client, before_approval) == ["AUMA lives by the sea."]
    assert BEES not in body_text(scripted_provider.requests[-1])

    approved = api_call(client, "post", f"/api/memory-proposals/{proposal.pk}/approve/", {}, status=201)
    memory = Memory.objects.get(text=BEES)
    assert approved["memory"]["id"] == memory.pk and approved["memory"]["chats"] == 0
    assert approved["memory"]["source"]["kind"] == MemorySource.PROPOSAL
    assert (approved["memory"]["source"]["message_id"], approved["memory"]["source"]["reply_id"]) == (
        str(user_turn.id), str(reply.id),
    )

    # Future only: a new chat holds it; the proposing chat and the one opened before approval do not.
    after_approval = new_chat(client)
    assert memories_of_next_request(scripted_provider, client, after_approval) == ["AUMA lives by the sea.", BEES]
    assert memories_of_next_request(scripted_provider, client, proposing) == ["AUMA lives by the sea."]
    assert memories_of_next_request(scripted_provider, client, before_approval) == ["AUMA lives by the sea."]

    # "Also use it in this chat": the seed's explicit Refresh memory, for that one conversation.
    api_call(client, "post", f"/api/conversations/{proposing}/refresh-memory/")
    assert memories_of_next_request(scripted_provider, client, proposing) == ["AUMA lives by the sea.", BEES]
    assert memories_of_next_request(scripted_provider, client, before_approval) == ["AUMA lives by the sea."]


@pytest.mark.parametrize("selector", SELECTORS)
def test_the_tool_is_never_offered_in_private_shielded_or_quarantined_chats(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    client = Client()
    tool_refused_where_suggesting_is_not_allowed(scripted_provider, client, propose(), "I spent the morning with my bees.")
    assert not MemoryProposal.objects.exists()  # and nothing is recorded

    ordinary = new_chat(client)
    scripted_provider.clear()
    send(client, ordinary, "Hello.")
    assert "propose_memory" in tool_names(scripted_provider.requests[0])


@pytest.mark.parametrize("selector", SELECTORS)
def test_the_setting_off_takes_the_tool_away(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    client = Client()
    api_call(client, "patch", "/api/settings/", {"memory_suggestions": False})
    conversation_id = new_chat(client)
    scripted_provider.clear()
    send(client, conversation_id, "Hello.")
    assert "propose_memory" not in tool_names(scripted_provider.requests[0])
    api_call(client, "patch", "/api/settings/", {"memory_suggestions": "yes"}, status=400)


@pytest.mark.parametrize("selector", SELECTORS)
def test_the_pending_cap_and_duplicates_are_refused_with_a_clear_result(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    settings.ELION_MEMORY_PROPOSALS_PENDING_MAX = 3
    memory_add(text="AUMA lives by the sea.")
    client = Client()
    conversation_id = new_chat(client)

    results = proposing_turn(
        scripted_provider, client, conversation_id,
        propose(call_id="c1"),
        propose(text="  aumA keeps three beehives   on the hill above the orchard. ", call_id="c2"),
        propose(text="auma LIVES by the sea.", call_id="c3"),
        propose(text="AUMA's hives are painted blue.", call_id="c4"),
        propose(text="AUMA harvests honey in August.", call_id="c5"),
        propose(text="AUMA names every queen bee.", call_id="c6"),
        propose(text="", call_id="c7"),
    )

    assert [r.get("code") for r in results[:6]] == [
        "proposed", "duplicate_pending", "duplicate_memory", "proposed", "proposed", "pending_limit",
    ]
    assert "enough" in results[5]["detail"] and "already waiting" in results[1]["detail"]
    assert MemoryProposal.objects.filter(status=ProposalStatus.PENDING).count() == 3
    assert not Memory.objects.filter(text__icontains="queen").exists()
    # Bad arguments are an error result, not a refusal.
    assert results[6] == {"error": "Tool error: A memory needs some text."}

    # A dismissed text is refused from then on, from any conversation; clearing dismissed ones lifts that.
    bees = MemoryProposal.objects.get(tool_call_id="c1")
    api_call(client, "post", f"/api/memory-proposals/{bees.pk}/dismiss/")
    other = new_chat(client)
    (again,) = proposing_turn(scripted_provider, client, other, propose(call_id="c8"))
    assert again["code"] == "duplicate_dismissed"
    assert api_call(client, "post", "/api/memory-proposals/clear-dismissed/") == {"cleared": 1}
    (after_clear,) = proposing_turn(scripted_provider, client, other, propose(call_id="c9"))
    assert after_clear["code"] == "proposed"
