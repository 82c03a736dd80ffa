"""Seed 004 provider continuity: the binding is recorded on every durable message
and checked before provider I/O; drift fails closed, key rotation alone does not."""

from __future__ import annotations

import pytest
from django.test import Client

from transcript.models import Message, Role

pytestmark = pytest.mark.django_db(transaction=True)


def send(client, conversation_id, content="hello"):
    return client.post(
        f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": content}, content_type="application/json"
    )


@pytest.fixture
def bound_conversation(scripted_provider):
    client = Client()
    conversation_id = client.post("/api/conversations/", {}, content_type="application/json").json()["id"]
    assert send(client, conversation_id).status_code == 200
    return client, conversation_id


def test_every_durable_message_records_the_provider_binding(bound_conversation, settings):
    client, conversation_id = bound_conversation
    rows = Message.objects.filter(conversation_id=conversation_id).exclude(role=Role.SYSTEM)
    assert rows.count() == 2
    for row in rows:
        assert (row.provider_id, row.provider_type, row.model) == ("openai", "openai", "gpt-5.5")
        assert len(row.route_fingerprint) == 32
        assert "test-key" not in row.route_fingerprint
    provider = client.get(f"/api/conversations/{conversation_id}/").json()["provider"]
    assert provider == {"id": "openai", "type": "openai", "model": "gpt-5.5"}


def test_key_rotation_alone_keeps_the_conversation_usable(bound_conversation, settings, scripted_provider):
    client, conversation_id = bound_conversation
    settings.OPENAI_API_KEY = "rotated-key"
    response = send(client, conversation_id, "after rotation")
    assert response.status_code == 200
    assert response.json()["assistant_message"]["status"] == "complete"
    assert scripted_provider.last_request().headers["authorization"] == "Bearer rotated-key"


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("ELION_PROVIDER_ID", "other-provider"),
        ("ELION_MODEL", "gpt-5.5-mini"),
        ("ELION_API_SELECTOR", "chat.completions"),
        ("ELION_DEPLOYMENT", "eu-deployment"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v2"),
        ("OPENAI_API_KEY", ""),  # provider type changes to the offline demo
    ],
)
def test_binding_drift_fails_closed_before_provider_io(bound_conversation, settings, scripted_provider, setting, value):
    client, conversation_id = bound_conversation
    scripted_provider.clear()
    before = Message.objects.count()
    setattr(settings, setting, value or None)
    response = send(client, conversation_id, "after drift")
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "provider_mismatch"
    assert "'openai'" in body["detail"]  # names the recorded provider
    assert scripted_provider.requests == []  # no provider I/O happened
    assert Message.objects.count() == before


def test_retry_checks_the_binding_too(bound_conversation, settings, scripted_provider):
    client, conversation_id = bound_conversation
    reply = Message.objects.filter(conversation_id=conversation_id, role=Role.ASSISTANT).get()
    settings.ELION_MODEL = "another-model"
    scripted_provider.clear()
    response = client.post(f"/api/conversations/{conversation_id}/messages/{reply.id}/retry/?stream=false")
    assert response.status_code == 409 and response.json()["error"] == "provider_mismatch"
    assert scripted_provider.requests == []
