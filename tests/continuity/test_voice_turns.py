"""A voice turn is an ordinary turn (issue 43; seed 000 layers 1–3 and seed 004, unchanged).

A message sent from Talk or dictation carries `"voice": true`, stored as `metadata.voice` and nothing
else: it feeds the New Chat handoff, automatic recall and the birth period exactly as the same words
typed, and its request to the provider is the typed one's. Each test runs the same script with
`voice` on and off and asserts the same outcome, through the real send API and the scripted provider.
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from continuity.models import ThreadHandoff
from transcript.models import Conversation, Message, Role

pytestmark = pytest.mark.django_db(transaction=True)

EXCERPT_LINE = re.compile(r'^- .+ \(\d{4}-\d{2}-\d{2}\): (".*")$')
SPOKEN = "The lighthouse keeper Marisol painted the door blue last summer."


def send(conversation_id, content: str, *, voice: bool) -> dict:
    body = {"content": content, **({"voice": True} if voice else {})}
    response = Client().post(f"/api/conversations/{conversation_id}/messages/?stream=false", body,
                             content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


def new_chat() -> str:
    response = Client().post("/api/conversations/", {"persona": "elion"}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def recalled(provider) -> list[str]:
    items = provider.last_request().body["input"]
    systems = [item["content"] for item in items if item["role"] == "system"]
    if len(systems) < 2:
        return []
    return [json.loads(m.group(1)) for line in systems[1].splitlines() if (m := EXCERPT_LINE.match(line))]


@pytest.mark.parametrize("voice", [True, False])
def test_a_voice_turn_is_stored_as_an_ordinary_user_message_marked_voice(scripted_provider, voice):
    conversation_id = new_chat()
    body = send(conversation_id, SPOKEN, voice=voice)
    assert body["user_message"]["metadata"].get("voice", False) is voice
    user = Message.objects.get(conversation_id=conversation_id, role=Role.USER)
    assert user.content == SPOKEN
    assert (user.metadata or {}).get("voice", False) is voice
    # The provider was asked what the typed words ask: no field says how they arrived.
    request = scripted_provider.last_request().body
    assert '"voice"' not in json.dumps(request)
    assert [item for item in request["input"] if item["role"] == "user"] == [{"role": "user", "content": SPOKEN}]


@pytest.mark.parametrize("voice", [True, False])
def test_a_voice_turn_feeds_the_new_chat_handoff_as_a_typed_turn(scripted_provider, voice):
    source = new_chat()
    send(source, SPOKEN, voice=voice)
    destination = new_chat()
    row = ThreadHandoff.objects.get(destination_id=destination)
    assert str(row.source_id) == source
    assert row.handoff == f"AUMA said:\n{SPOKEN}\n\n---\n\nElion Voicefire said:\nScripted reply."


@pytest.mark.parametrize("voice", [True, False])
def test_a_voice_turn_is_recalled_and_waits_for_the_birth_period_as_a_typed_turn(scripted_provider, voice):
    fresh = new_chat()  # before the source exists: no handoff
    source = new_chat()
    Conversation.objects.filter(pk=source).update(title="Lighthouse talk")
    send(source, SPOKEN, voice=voice)
    question = "Remember the lighthouse? Find what Marisol painted."
    send(fresh, question, voice=voice)
    assert recalled(scripted_provider) == []  # the birth period: no recall in the first request
    send(fresh, question, voice=voice)
    assert recalled(scripted_provider) == [SPOKEN]


def test_the_voice_flag_is_a_strict_boolean(scripted_provider):
    conversation_id = new_chat()
    response = Client().post(f"/api/conversations/{conversation_id}/messages/?stream=false",
                             {"content": "hi", "voice": "yes"}, content_type="application/json")
    assert (response.status_code, response.json()["error"]) == (400, "invalid_voice_flag")
    assert not Message.objects.filter(conversation_id=conversation_id).exists()
