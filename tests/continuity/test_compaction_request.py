"""The Compact summary's request is built like a reply's (issue 45, "One provider request builder"): it
carries the conversation's settings (the bound model, the owner's `store` choice and reasoning effort, the
conversation's prompt cache key and retention) and leaves out what a summary does not take (verbosity, a
reasoning summary, tools); docs/provider.md says which. The real `openai` SDK against the scripted
provider, which checks every body against the SDK's own request types."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.support.compaction import compact, send
from transcript.provider.request_builder import REASONING_INCLUDE, conversation_cache_key

pytestmark = pytest.mark.django_db(transaction=True)

# What a compaction takes of a reply's request: the same value in both.
SHARED = ("model", "store", "prompt_cache_key", "prompt_cache_retention", "include")


def owner_settings(**values: object) -> None:
    response = Client().patch("/api/settings/", values, content_type="application/json")
    assert response.status_code == 200, response.content


def test_a_compaction_request_carries_the_conversations_settings(long_thread, scripted_provider, settings):  # noqa: F811
    conversation, _turns = long_thread
    assert scripted_provider.validate_requests  # a body the SDK's types refuse would fail the compaction (400)
    settings.ELION_PROMPT_CACHE_RETENTION = "24h"
    owner_settings(reasoning_effort="high", verbosity="low", reasoning_summary_shown=True,
                   provider_store_responses=True)

    compact(conversation, scripted_provider)
    (request,) = scripted_provider.requests
    body = request.body
    assert request.path == "/v1/responses"
    assert body["model"] == "gpt-5.5"
    assert body["store"] is True
    assert body["prompt_cache_key"] == conversation_cache_key(conversation.id)
    assert body["prompt_cache_retention"] == "24h"
    assert body["reasoning"] == {"effort": "high"}  # the owner's effort; no reasoning summary for a summary
    assert body["include"] == REASONING_INCLUDE
    assert not {"text", "tools", "verbosity"} & set(body)

    # A reply in the same conversation, on the same settings, sends the same shared values.
    scripted_provider.clear()
    send(conversation, scripted_provider, "fourth question")
    reply = scripted_provider.last_request().body
    assert {key: reply.get(key) for key in SHARED} == {key: body.get(key) for key in SHARED}
    assert reply["reasoning"]["effort"] == body["reasoning"]["effort"]
    assert reply["text"] == {"verbosity": "low"} and reply["reasoning"]["summary"] == "auto"


def test_a_compaction_request_keeps_the_providers_defaults_where_the_owner_set_none(
    long_thread, scripted_provider, settings  # noqa: F811
):
    conversation, _turns = long_thread
    settings.ELION_PROMPT_CACHE_RETENTION = ""
    compact(conversation, scripted_provider)
    body = scripted_provider.last_request().body
    assert body["store"] is False  # private by default, as every request
    assert "prompt_cache_retention" not in body
    assert body["prompt_cache_key"] == conversation_cache_key(conversation.id)
    assert body["reasoning"] == {"effort": "medium"}  # the settings' default effort, not the provider's
