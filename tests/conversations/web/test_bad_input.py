"""Bad input gets a 4xx with a clear error code and writes nothing."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from transcript.models import Conversation, Message

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return Client()


@pytest.fixture
def conversation_id(client):
    return client.post("/api/conversations/", {"persona": "elion"}, content_type="application/json").json()["id"]


def send(client, conversation_id, body, **extra):
    return client.post(
        f"/api/conversations/{conversation_id}/messages/?stream=false", body, content_type="application/json", **extra
    )


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"content": ""}, "empty_message"),
        ({"content": "   \n\t "}, "empty_message"),
        ({}, "empty_message"),
        ({"content": 42}, "empty_message"),
        ({"content": "hi", "client_message_id": "not-a-uuid"}, "invalid_client_message_id"),
        ({"content": "hi", "parent_id": "nope"}, "invalid_parent_id"),
        ({"content": "hi", "parent_id": str(uuid.uuid4())}, "message_not_found"),
        ({"content": "hi", "pinned_character_id": "x"}, "invalid_pinned_character_id"),
    ],
)
def test_bad_send_bodies_are_4xx_and_write_nothing(client, conversation_id, body, code):
    response = send(client, conversation_id, body)
    assert 400 <= response.status_code < 500
    assert response.json()["error"] == code
    assert response.json()["detail"]
    assert Message.objects.count() == 0


def test_content_over_the_configured_maximum_is_refused(client, conversation_id, settings):
    settings.ELION_MAX_MESSAGE_CHARACTERS = 10
    response = send(client, conversation_id, {"content": "x" * 11})
    assert response.status_code == 400 and response.json()["error"] == "message_too_long"
    assert Message.objects.count() == 0


def test_malformed_json_is_a_400(client, conversation_id):
    response = client.post(
        f"/api/conversations/{conversation_id}/messages/", "{not json", content_type="application/json"
    )
    assert response.status_code == 400 and response.json()["error"] == "malformed_request"
    response = client.post("/api/conversations/", "{not json", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "malformed_request"


def test_unknown_conversation_is_a_404(client):
    for bad in (str(uuid.uuid4()), "not-a-uuid"):
        response = send(client, bad, {"content": "hi"})
        assert response.status_code == 404 and response.json()["error"] == "conversation_not_found"
        assert client.get(f"/api/conversations/{bad}/").status_code == 404


def test_send_to_a_trashed_conversation_is_refused(client, conversation_id):
    Conversation.objects.filter(pk=conversation_id).update(trashed=True)
    response = send(client, conversation_id, {"content": "hi"})
    assert response.status_code == 409 and response.json()["error"] == "conversation_trashed"
    assert Message.objects.count() == 0


def test_unknown_persona_is_a_400(client):
    response = client.post("/api/conversations/", {"persona": "someone"}, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "unknown_persona"
    assert Conversation.objects.count() == 0


def test_retry_of_a_user_message_or_unknown_id_is_a_4xx(client, conversation_id, make_turns):
    conversation = Conversation.objects.get(pk=conversation_id)
    (user,) = make_turns(conversation, ("user", "hello"))
    response = client.post(f"/api/conversations/{conversation_id}/messages/{user.id}/retry/?stream=false")
    assert response.status_code == 400 and response.json()["error"] == "not_retryable"
    response = client.post(f"/api/conversations/{conversation_id}/messages/{uuid.uuid4()}/retry/")
    assert response.status_code == 404


def test_rewind_to_a_message_of_another_conversation_is_a_404(client, conversation_id, make_conversation, make_turns):
    (foreign,) = make_turns(make_conversation(), ("user", "elsewhere"))
    response = client.post(
        f"/api/conversations/{conversation_id}/rewind/", {"message_id": str(foreign.id)}, content_type="application/json"
    )
    assert response.status_code == 404 and response.json()["error"] == "message_not_found"


def test_settings_reject_unknown_personality_and_empty_names(client):
    response = client.patch("/api/settings/", {"personality": "grumpy"}, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "invalid_personality"
    response = client.patch("/api/settings/", {"display_name": "  "}, content_type="application/json")
    assert response.status_code == 400
    assert client.get("/api/settings/").json()["display_name"] == "Elion Voicefire"


def test_unknown_folder_is_a_404(client):
    response = client.post("/api/conversations/", {"folder_id": 999}, content_type="application/json")
    assert response.status_code == 404 and response.json()["error"] == "folder_not_found"
    assert client.patch("/api/folders/999/", {"name": "x"}, content_type="application/json").status_code == 404


def test_rewind_to_a_user_turn_is_refused_so_the_head_stays_a_reply(client, conversation_id, make_turns):
    conversation = Conversation.objects.get(pk=conversation_id)
    user, reply = make_turns(conversation, ("user", "q"), ("assistant", "a"))
    response = client.post(
        f"/api/conversations/{conversation_id}/rewind/", {"message_id": str(user.id)}, content_type="application/json"
    )
    assert response.status_code == 400 and response.json()["error"] == "invalid_rewind_target"
    assert Conversation.objects.get(pk=conversation_id).head_id == reply.id


def test_a_malformed_body_is_refused_before_the_conversation_is_looked_up(client):
    """One thread hop per send: the body is shape-checked before `send_prepare`'s locked
    lookup, so a malformed body to a missing conversation is a 400, a well-formed one a 404."""
    missing = str(uuid.uuid4())
    response = client.post(f"/api/conversations/{missing}/messages/", "{not json", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "malformed_request"
    response = send(client, missing, {"content": ""})
    assert response.status_code == 400 and response.json()["error"] == "empty_message"
    response = send(client, missing, {"content": "hi"})
    assert response.status_code == 404 and response.json()["error"] == "conversation_not_found"
    assert Message.objects.count() == 0
