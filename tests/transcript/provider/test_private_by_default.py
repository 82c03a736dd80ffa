"""Private by default (issue "GPT-5.5 the way the Responses API means it", part one): every Responses request
sends `store: false` unless the owner allows otherwise, asks for encrypted reasoning, and carries one opaque
`prompt_cache_key` per conversation. Real `openai` SDK against the scripted provider; both databases.
"""

from __future__ import annotations

import pytest
from django.test import Client

from elion.base.assistant_settings import assistant_settings_get
from tests.support.factories import sent_and_answered as send
from tests.support.factories import thread
from tests.support.scripted_provider import ScriptedReply
from transcript.provider.gateway import conversation_cache_key

pytestmark = pytest.mark.django_db(transaction=True)


def test_private_by_default_every_responses_request_sends_store_false_and_asks_for_encrypted_reasoning(
    scripted_provider,
):
    scripted_provider.script(ScriptedReply(text="Hello."), ScriptedReply(text="Again."))
    conversation = thread()
    send(conversation, "Hi there")
    send(conversation, "And again")
    bodies = [request.body for request in scripted_provider.requests]
    assert len(bodies) == 2
    for body in bodies:
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]


def test_private_by_default_the_owner_may_let_the_provider_keep_responses(scripted_provider):
    scripted_provider.script(ScriptedReply(text="Kept."))
    response = Client().patch("/api/settings/", {"provider_store_responses": True}, content_type="application/json")
    assert response.status_code == 200 and response.json()["provider_store_responses"] is True
    send(thread(), "Keep this one")
    assert scripted_provider.last_request().body["store"] is True


def test_prompt_cache_key_is_one_opaque_key_per_conversation(scripted_provider):
    scripted_provider.script(*[ScriptedReply(text=f"Reply {i}.") for i in range(3)])
    first, second = thread(), thread()
    send(first, "One")
    send(first, "Two")
    send(second, "Three")
    keys = [request.body["prompt_cache_key"] for request in scripted_provider.requests]
    assert keys[0] == keys[1] == conversation_cache_key(first.pk)
    assert keys[2] != keys[0]
    assert str(first.pk) not in keys[0] and first.pk.hex not in keys[0]  # a keyed hash, not the id


def test_private_by_default_chat_completions_requests_carry_none_of_the_responses_fields(scripted_provider, settings):
    settings.ELION_API_SELECTOR = "chat.completions"
    scripted_provider.script(ScriptedReply(text="Plain."))
    send(thread(binding=None), "Hello")
    body = scripted_provider.last_request().body
    assert "messages" in body
    assert not {"store", "include", "prompt_cache_key"} & set(body)


def test_saving_the_store_setting_alone_rebuilds_no_stored_prompt():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from conversations.services.settings_writes import assistant_settings_update

    thread(("user", "hello"), ("assistant", "hi"))
    assistant_settings_get()
    with CaptureQueriesContext(connection) as queries:
        assistant_settings_update(provider_store_responses=True)
    touched = [
        q["sql"] for q in queries.captured_queries
        if '"conversations_conversation"' in q["sql"] or '"conversations_message"' in q["sql"]
        # A stale mark written (the look for marks a refresh owes only reads them: none here).
        or ('"transcript_stale_prompt"' in q["sql"] and not q["sql"].startswith("SELECT"))
    ]
    assert touched == []  # no conversation locked or marked, no stored prompt rebuilt
    assert assistant_settings_get().provider_store_responses is True
    with CaptureQueriesContext(connection) as queries:
        assistant_settings_update(web_search=True)  # a setting the stored prompt reads: every prompt rebuilt
    assert any('"conversations_conversation"' in q["sql"] for q in queries.captured_queries)
