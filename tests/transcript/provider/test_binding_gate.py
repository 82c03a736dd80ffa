"""Seed 004 provider continuity, the full gate: every path (send, repeated send,
retry) validates the complete tuple on every recorded row before replay or
provider I/O; mixed and unbound (legacy) history fail closed; legacy history
works again only after `bind_legacy_conversations` binds it deliberately."""

from __future__ import annotations

import uuid

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from transcript.models import Message, Role
from transcript.provider.binding import binding_fields, configured_provider

pytestmark = pytest.mark.django_db(transaction=True)


def send(client, conversation_id, content="hello", **extra):
    return client.post(
        f"/api/conversations/{conversation_id}/messages/?stream=false",
        {"content": content, **extra},
        content_type="application/json",
    )


def assert_refused_without_io(response, provider, code):
    assert response.status_code == 409, response.content
    assert response.json()["error"] == code
    assert provider.requests == []


def test_retry_after_key_rotation_alone_resumes(scripted_provider, make_conversation, make_turns, settings):
    conversation = make_conversation()
    _, reply = make_turns(conversation, ("user", "q"), ("assistant", "a"))
    settings.OPENAI_API_KEY = "rotated-key"
    scripted_provider.script({"text": "retried"})
    response = Client().post(f"/api/conversations/{conversation.id}/messages/{reply.id}/retry/?stream=false")
    assert response.status_code == 200
    assert response.json()["assistant_message"]["content"] == "retried"


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("ELION_PROVIDER_ID", "other-provider"),
        ("ELION_MODEL", "gpt-5.5-mini"),
        ("ELION_API_SELECTOR", "chat.completions"),
        ("ELION_DEPLOYMENT", "eu-deployment"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/other-route"),
        ("OPENAI_API_KEY", None),  # provider type becomes the offline demo
    ],
)
def test_binding_drift_fails_closed_on_retry_and_repeated_send(
    scripted_provider, make_conversation, make_turns, settings, setting, value
):
    conversation = make_conversation()
    user, reply = make_turns(conversation, ("user", "q"), ("assistant", "a"))
    setattr(settings, setting, value)
    client = Client()
    response = client.post(f"/api/conversations/{conversation.id}/messages/{reply.id}/retry/?stream=false")
    assert_refused_without_io(response, scripted_provider, "provider_mismatch")
    assert "'openai'" in response.json()["detail"]  # names the recorded provider id
    # A repeated client_message_id is a replay too: refused before it is answered.
    response = send(client, conversation.id, "q", client_message_id=str(user.id))
    assert_refused_without_io(response, scripted_provider, "provider_mismatch")


def test_mixed_bindings_within_one_conversation_fail_closed(scripted_provider, make_conversation, make_turns):
    conversation = make_conversation()
    current = binding_fields(configured_provider())
    make_turns(conversation, ("user", "q1"), ("assistant", "a1"), binding={**current, "model": "older-model"})
    make_turns(conversation, ("user", "q2"), ("assistant", "a2"))  # latest rows match the configuration
    before = Message.objects.count()
    response = send(Client(), conversation.id)
    assert_refused_without_io(response, scripted_provider, "provider_binding_mixed")
    assert Message.objects.count() == before


def test_legacy_history_fails_closed_then_works_after_binding_it(scripted_provider, make_conversation, make_turns):
    conversation = make_conversation()
    make_turns(conversation, ("user", "old question"), ("assistant", "old answer"), binding={})
    client = Client()
    response = send(client, conversation.id)
    assert_refused_without_io(response, scripted_provider, "provider_binding_missing")
    assert "bind_legacy_conversations" in response.json()["detail"]

    call_command("bind_legacy_conversations", "--provider", "openai", "--conversation", str(conversation.id))
    rows = Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM)
    assert {row.binding for row in rows} == {tuple(binding_fields(configured_provider()).values())}
    scripted_provider.script({"text": "welcome back"})
    response = send(client, conversation.id, "and now?")
    assert response.status_code == 200
    assert response.json()["assistant_message"]["content"] == "welcome back"
    sent = scripted_provider.last_request().body["input"]
    assert any("old answer" in str(item) for item in sent)  # the bound history is replayed


def test_bind_legacy_refuses_an_unknown_provider_id(make_conversation, make_turns):
    conversation = make_conversation()
    make_turns(conversation, ("user", "q"), binding={})
    with pytest.raises(CommandError, match="Unknown provider 'nope'"):
        call_command("bind_legacy_conversations", "--provider", "nope")
    assert Message.objects.get(conversation=conversation).provider_id == ""


def test_bind_legacy_dry_run_writes_nothing_and_refuses_to_mix(make_conversation, make_turns):
    from io import StringIO

    legacy = make_conversation()
    make_turns(legacy, ("user", "q"), binding={})
    half = make_conversation()
    make_turns(half, ("user", "q"), ("assistant", "a"), binding={**binding_fields(configured_provider()), "model": "x"})
    make_turns(half, ("user", "q2"), binding={})
    out = StringIO()
    call_command("bind_legacy_conversations", "--provider", configured_provider().provider_id, "--dry-run", stdout=out)
    assert f"{legacy.id}: would bind 1 message(s)" in out.getvalue()
    assert f"{half.id}: refused: already has rows bound to another route" in out.getvalue()
    assert Message.objects.filter(provider_id="").count() == 2


def test_chat_page_offers_branch_when_the_binding_drifted(scripted_provider, make_conversation, make_turns, settings):
    conversation = make_conversation()
    make_turns(conversation, ("user", "q"), ("assistant", "a"))
    settings.ELION_MODEL = "another-model"
    html = Client().get(f"/c/{conversation.id}/").content.decode()
    assert 'data-binding-problem="provider_mismatch"' in html
    assert "This chat was held with gpt-5.5 (openai)." in html
    assert "Continue it with another-model (openai):" in html
    assert "data-branch-button" in html and "Branch / Fresh Chat" in html


def test_branch_from_drifted_history_continues_under_the_current_provider(
    scripted_provider, make_conversation, make_turns, settings
):
    conversation = make_conversation()
    make_turns(conversation, ("user", "q"), ("assistant", "a"))
    settings.ELION_MODEL = "gpt-5.5-mini"
    client = Client()
    branch = client.post(
        f"/api/conversations/{conversation.id}/branch/", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4())
    ).json()
    scripted_provider.script({"text": "continuing"})
    response = send(client, branch["id"], "go on")
    assert response.status_code == 200
    assert scripted_provider.last_request().body["model"] == "gpt-5.5-mini"


def test_an_unbound_branch_bubble_from_before_bindings_is_not_legacy_history(
    scripted_provider, make_conversation, make_turns
):
    from transcript.models import MessageKind

    conversation = make_conversation()
    (bubble,) = make_turns(conversation, ("assistant", "From the earlier thread: ..."), binding={})
    Message.objects.filter(pk=bubble.pk).update(kind=MessageKind.HANDOFF_ARTIFACT)
    scripted_provider.script({"text": "carrying on"})
    response = send(Client(), conversation.id, "go on")
    assert response.status_code == 200
    assert response.json()["assistant_message"]["content"] == "carrying on"
