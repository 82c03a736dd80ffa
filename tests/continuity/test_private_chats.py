"""Private chats (issue 22, "Private chats"), one test per rule, through the API, the real
`openai` SDK and the scripted provider.

A private chat is born outside automatic continuity: it receives no New Chat
handoff, captures an empty memory snapshot unless "Use memories" is ticked, and
its words never reach a later chat's request by any automatic path (New Chat
handoff, keyword recall, the model's search tool); the owner's Past
Conversation Search finds it only with "Include private chats". "Keep this chat"
makes it ordinary and Continuity-Shielded. Left inactive for
`ELION_PRIVATE_CHAT_DAYS` it is deleted forever, with a receipt.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django_q.models import Schedule

from continuity.models import ThreadHandoff
from continuity.rules.eligibility import VisibilityState, feeds_automatic_continuity, visibility_state
from conversations.services.deletion import private_chats_expire
from conversations.tasks import expire_private_chats
from memories.models import ConversationMemorySnapshot, SnapshotMembership
from memories.services.memory_writes import memory_add
from tests.support.factories import api_call
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, ConversationDeletion, Message

# The private chat's words: queries name "marigold"; "quill stone" is only in its assistant turn.
P_USER = "Tell me about the marigold ledger."
P_ASSISTANT = "The marigold ledger sits under the quill stone."
PROOF = "quill stone"


@pytest.fixture
def client():
    return Client()


def create(client, **body) -> dict:
    return api_call(client, "post", "/api/conversations/", {"persona": "elion", **body}, status=201)


def send(client, conversation_id: str, content: str) -> dict:
    return api_call(client, "post", f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": content})


def private_chat_with_words(client, scripted_provider) -> dict:
    """A private chat created and spoken in through the API, as the owner would."""
    chat = create(client, private=True)
    scripted_provider.script(ScriptedReply(text=P_ASSISTANT))
    send(client, chat["id"], P_USER)
    assert Message.objects.filter(conversation_id=chat["id"], content=P_ASSISTANT).exists()
    return chat


def system_prompt(request) -> str:
    first = request.body["input"][0]
    assert first["role"] == "system"
    return first["content"]


# --- what a private chat receives ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_private_chat_receives_no_new_chat_handoff(client, thread, scripted_provider):
    source = thread(("user", P_USER), ("assistant", P_ASSISTANT), title="Marigold")
    ordinary = create(client)
    assert ordinary["private"] is False
    assert ordinary["handoff"]["source_conversation_id"] == str(source.id)  # the control: a handoff exists to give

    chat = create(client, private=True)
    assert chat["private"] is True and chat["handoff"] is None
    assert not ThreadHandoff.objects.filter(destination_id=chat["id"]).exists()
    send(client, chat["id"], "Good morning")
    prompt = system_prompt(scripted_provider.requests[-1])
    assert PROOF not in prompt and "VERBATIM_EXCHANGE_" not in prompt


@pytest.mark.django_db(transaction=True)
def test_private_chat_without_use_memories_captures_an_empty_snapshot(client, scripted_provider):
    memory_add(text="AUMA keeps bees on the roof.")
    chat = create(client, private=True)
    assert chat["memory_snapshot"]["provenance"] == "captured"
    assert ConversationMemorySnapshot.objects.filter(conversation_id=chat["id"]).exists()
    assert not SnapshotMembership.objects.filter(conversation_id=chat["id"]).exists()
    send(client, chat["id"], "Hello")
    assert "keeps bees" not in system_prompt(scripted_provider.requests[-1])


@pytest.mark.django_db(transaction=True)
def test_private_chat_with_use_memories_captures_the_current_memories(client, scripted_provider):
    memory = memory_add(text="AUMA keeps bees on the roof.")
    chat = create(client, private=True, use_memories=True)
    assert list(SnapshotMembership.objects.filter(conversation_id=chat["id"]).values_list("memory_id", flat=True)) == [
        memory.pk
    ]
    send(client, chat["id"], "Hello")
    assert "keeps bees" in system_prompt(scripted_provider.requests[-1])


@pytest.mark.django_db
def test_use_memories_changes_nothing_for_an_ordinary_chat(client):
    memory = memory_add(text="AUMA keeps bees on the roof.")
    for body in ({}, {"use_memories": False}, {"use_memories": True}):
        chat = create(client, **body)
        assert chat["private"] is False
        assert SnapshotMembership.objects.filter(conversation_id=chat["id"], memory_id=memory.pk).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("body", [{"private": "perhaps"}, {"private": [1]}, {"private": True, "use_memories": {}}])
def test_private_and_use_memories_must_be_booleans(client, body):
    response = client.post("/api/conversations/", json.dumps(body), content_type="application/json")
    assert response.status_code == 400
    assert set(response.json()) == {"error", "detail"}
    assert not Conversation.objects.exists()


# --- what a private chat never feeds ---------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_private_chat_is_never_chosen_for_a_new_chat_handoff(client, thread, scripted_provider):
    bystander = thread(("user", "an older bystander thread"), ("assistant", "bystander reply"))
    private_chat_with_words(client, scripted_provider)  # the most recent speech of all

    later = create(client)
    assert later["handoff"]["source_conversation_id"] == str(bystander.id)
    assert PROOF not in ThreadHandoff.objects.get(destination_id=later["id"]).handoff
    send(client, later["id"], "Good morning")
    prompt = system_prompt(scripted_provider.requests[-1])
    assert "bystander reply" in prompt and PROOF not in prompt


@pytest.mark.django_db(transaction=True)
def test_private_chat_is_never_recalled(client, scripted_provider):
    later = create(client)
    send(client, later["id"], "Hello there, how are you today?")  # past the birth period
    chat = private_chat_with_words(client, scripted_provider)
    send(client, later["id"], "Do you remember the marigold ledger we talked about?")
    assert PROOF not in json.dumps(scripted_provider.requests[-1].body, ensure_ascii=False)

    # The control: the same words in an ordinary chat are recalled.
    api_call(client, "post", f"/api/conversations/{chat['id']}/keep/")
    api_call(client, "post", f"/api/conversations/{chat['id']}/release-shield/")
    send(client, later["id"], "Do you remember the marigold ledger we talked about?")
    assert PROOF in json.dumps(scripted_provider.requests[-1].body, ensure_ascii=False)


def tool_output(request) -> dict:
    result = next(item for item in request.body["input"] if item.get("type") == "function_call_output")
    return json.loads(result["output"])


@pytest.mark.django_db(transaction=True)
def test_model_search_tool_never_finds_a_private_chat(client, thread, scripted_provider):
    thread(("user", "The marigold ledger again."), ("assistant", "An ordinary marigold mention."), title="Ordinary")
    private_chat_with_words(client, scripted_provider)
    later = create(client)
    scripted_provider.script(
        ScriptedReply(tool_calls=[
            {"name": "search_past_conversations", "arguments": {"query": "marigold"}, "call_id": "call_m"},
        ]),
        ScriptedReply(text="Here is what I found."),
    )
    send(client, later["id"], "Could you look through our other threads for the ledger?")
    output = tool_output(scripted_provider.requests[-1])
    found = json.dumps(output, ensure_ascii=False)
    assert "An ordinary marigold mention." in found  # the tool did search
    assert PROOF not in found


@pytest.mark.django_db(transaction=True)
def test_a_branch_of_a_private_chat_shows_its_words_but_never_injects_them(client, scripted_provider):
    chat = private_chat_with_words(client, scripted_provider)
    response = client.post(f"/api/conversations/{chat['id']}/branch/", HTTP_IDEMPOTENCY_KEY="b")
    assert response.status_code == 201
    branch = response.json()
    assert PROOF in Message.objects.get(conversation_id=branch["id"]).content  # deliberate: the bubble shows them
    send(client, branch["id"], "Shall we go on?")
    assert PROOF not in json.dumps(scripted_provider.requests[-1].body, ensure_ascii=False)
    # Kept and released, the source feeds the branch's prompt like any source.
    api_call(client, "post", f"/api/conversations/{chat['id']}/keep/")
    api_call(client, "post", f"/api/conversations/{chat['id']}/release-shield/")
    send(client, branch["id"], "And now?")
    assert PROOF in system_prompt(scripted_provider.requests[-1])


@pytest.mark.django_db
def test_past_conversation_search_finds_private_chats_only_when_included(client, thread):
    chat = thread(("user", P_USER), ("assistant", P_ASSISTANT), private=True)

    def found(**params) -> list[dict]:
        query = "&".join(f"{k}={v}" for k, v in {"q": "marigold", **params}.items())
        return [r for r in api_call(client, "get", f"/api/search/?{query}")["results"] if r["conversation_id"] == str(chat.id)]

    assert found() == [] and found(include_private="false") == [] and found(include_shielded="true") == []
    included = found(include_private="true")
    assert {r["excerpt"] for r in included} == {P_USER, P_ASSISTANT}
    assert all(r["private"] is True for r in included)
    # The option keeps nothing and changes no eligibility.
    chat.refresh_from_db()
    assert chat.private is True and feeds_automatic_continuity(chat, persona="elion") is False


@pytest.mark.django_db
def test_past_conversation_search_refuses_a_non_boolean_include_private(client):
    response = client.get("/api/search/?q=marigold&include_private=perhaps")
    assert response.status_code == 400 and response.json()["error"] == "invalid_include_private"


@pytest.mark.django_db
def test_private_is_its_own_visibility_state(thread):
    chat = thread(("user", P_USER), private=True)
    assert visibility_state(chat) == VisibilityState.PRIVATE
    assert feeds_automatic_continuity(chat, persona="elion") is False


# --- Keep this chat --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_keep_makes_a_private_chat_ordinary_and_shielded_until_released(client, thread):
    chat = thread(("user", P_USER), ("assistant", P_ASSISTANT), private=True)
    kept = api_call(client, "post", f"/api/conversations/{chat.id}/keep/")
    assert (kept["private"], kept["shielded"]) == (False, True)
    chat.refresh_from_db()
    assert visibility_state(chat) == VisibilityState.SHIELDED
    assert feeds_automatic_continuity(chat, persona="elion") is False
    # A retried keep answers the same conversation and changes nothing.
    again = api_call(client, "post", f"/api/conversations/{chat.id}/keep/")
    assert (again["id"], again["private"], again["shielded"]) == (str(chat.id), False, True)
    released = api_call(client, "post", f"/api/conversations/{chat.id}/release-shield/")
    assert released["shielded"] is False
    chat.refresh_from_db()
    assert feeds_automatic_continuity(chat, persona="elion") is True


@pytest.mark.django_db
def test_keep_of_an_unknown_conversation_is_a_404(client):
    response = client.post("/api/conversations/00000000-0000-0000-0000-000000000000/keep/")
    assert response.status_code == 404 and response.json()["error"] == "conversation_not_found"


# --- Expiry -----------------------------------------------------------------------------------------


def age(conversation, days: float) -> None:
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now() - timedelta(days=days))


@pytest.mark.django_db(transaction=True)
def test_private_chat_inactive_past_its_days_is_deleted_forever_with_a_receipt(client, thread, settings):
    settings.ELION_PRIVATE_CHAT_DAYS = 30
    expired = thread(("user", P_USER), ("assistant", P_ASSISTANT), private=True)
    recent = thread(("user", "still fresh"), private=True)
    old_ordinary = thread(("user", "an ordinary old chat"))
    kept = thread(("user", "kept chat"), private=True)
    api_call(client, "post", f"/api/conversations/{kept.id}/keep/")
    age(expired, 31)
    age(recent, 29)
    age(old_ordinary, 400)
    age(kept, 400)

    (deletion,) = private_chats_expire()
    assert deletion.conversation_id == expired.id and deletion.state == "complete"
    receipt = api_call(client, "get", f"/api/deletions/{deletion.pk}/")
    assert receipt["counts"]["messages"] == 2 and P_USER not in json.dumps(receipt)
    assert not Conversation.all_objects.filter(pk=expired.pk).exists()
    assert not Message.objects.filter(conversation_id=expired.pk).exists()
    assert set(Conversation.objects.values_list("pk", flat=True)) == {recent.pk, old_ordinary.pk, kept.pk}
    assert private_chats_expire() == []  # nothing left to expire: idempotent


@pytest.mark.django_db(transaction=True)
def test_days_of_inactivity_follow_the_setting(thread, settings):
    chat = thread(("user", P_USER), private=True)
    age(chat, 3)
    settings.ELION_PRIVATE_CHAT_DAYS = 5
    assert private_chats_expire() == []
    settings.ELION_PRIVATE_CHAT_DAYS = 2
    assert expire_private_chats() == 1
    assert ConversationDeletion.objects.get(conversation_id=chat.pk).state == "complete"


@pytest.mark.django_db
def test_private_chat_expiry_is_scheduled_hourly():
    schedule = Schedule.objects.get(name="expire private chats")
    assert schedule.func == "conversations.tasks.expire_private_chats"
    assert schedule.schedule_type == Schedule.HOURLY
