"""Retries that respect the provider (issue "GPT-5.5 …", retry part): a 429 or 5xx before the first token is
retried after the provider's Retry-After, at most twice within 20 s, and the owner is told; after the first
token, or without a Retry-After, nothing is retried. Real SDK against the scripted provider."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.scripted_provider import ScriptedReply
from transcript.provider import gateway as gw
from transcript.provider.gateway import Completed, ProviderError, ProviderWaiting, TextDelta

CHAT = [{"role": "system", "content": "You are Elion."}, {"role": "user", "content": "Hi"}]


def config(provider, selector: str = "responses") -> gw.ProviderConfig:
    return gw.ProviderConfig(
        provider_id="openai", api_selector=selector, model="gpt-5.5", base_url=provider.base_url, api_key="test-key"
    )


async def collect(cfg) -> list:
    return [event async for event in gw.stream_reply(cfg, CHAT, None, gw.RequestOptions())]


@pytest.mark.parametrize("selector", ["responses", "chat.completions"])
@pytest.mark.asyncio
async def test_retries_a_429_with_retry_after_before_the_first_token(scripted_server, selector):
    scripted_server.clear()
    scripted_server.script(ScriptedReply(status=429, retry_after="0.2"), ScriptedReply(text="Hello again."))
    events = await collect(config(scripted_server, selector))
    assert events[0] == ProviderWaiting(0.2)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello again."
    assert isinstance(events[-1], Completed)
    assert len(scripted_server.requests) == 2


@pytest.mark.asyncio
async def test_retries_at_most_twice_then_the_error_is_the_owners(scripted_server):
    scripted_server.clear()
    scripted_server.script(*[ScriptedReply(status=503, retry_after="0.1") for _ in range(3)])
    waits = []
    with pytest.raises(ProviderError) as caught:
        async for event in gw.stream_reply(config(scripted_server), CHAT, None, gw.RequestOptions()):
            waits.append(event)
    assert waits == [ProviderWaiting(0.1), ProviderWaiting(0.1)]
    assert len(scripted_server.requests) == 3 and caught.value.code.startswith("provider_")


@pytest.mark.asyncio
async def test_no_retry_without_retry_after_or_beyond_the_budget(scripted_server):
    scripted_server.clear()
    scripted_server.script(ScriptedReply(status=429))
    with pytest.raises(ProviderError):
        await collect(config(scripted_server))
    scripted_server.clear()
    scripted_server.script(ScriptedReply(status=429, retry_after="60"))
    with pytest.raises(ProviderError):
        await collect(config(scripted_server))
    assert len(scripted_server.requests) == 1  # 60 s is beyond the 20 s budget: not retried


@pytest.mark.asyncio
async def test_no_retry_once_a_token_was_sent(scripted_server):
    scripted_server.clear()
    scripted_server.script(ScriptedReply(chunks=["Part", "ial"], drop_after_chunks=1), ScriptedReply(text="never"))
    received = []
    with pytest.raises(ProviderError):
        async for event in gw.stream_reply(config(scripted_server), CHAT, None, gw.RequestOptions()):
            received.append(event)
    assert received and isinstance(received[0], TextDelta)
    assert len(scripted_server.requests) == 1
    await asyncio.sleep(0)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_owner_sees_waiting_for_the_provider_and_the_reply_still_lands(scripted_provider):
    from django.test import AsyncClient

    from tests.support.sending import create_conversation, send_sse

    scripted_provider.script(ScriptedReply(status=429, retry_after="0.1"), ScriptedReply(text="Here I am."))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    events = await send_sse(client, conversation_id, content="Hello?")
    names = [name for name, _ in events]
    assert ("status", {"state": "waiting_for_provider", "retry_in": 0.1}) in events
    assert names.index("status") < names.index("delta")
    assert events[-1][0] == "done" and events[-1][1]["status"] == "complete"
