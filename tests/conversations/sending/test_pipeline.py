"""The send pipeline over SSE and JSON: durability, idempotency, streaming, errors."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from tests.conftest import parse_sse, read_streaming
from tests.support.factories import wait_for
from tests.support.scripted_provider import ScriptedReply
from tests.support.sending import create_conversation, messages_of, send_sse
from transcript.models import Conversation, Message, MessageStatus, Role

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_sse_send_streams_deltas_and_stores_complete_reply(scripted_provider):
    scripted_provider.script(ScriptedReply(chunks=["Hello", " AUMA", "."]))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    events = await send_sse(client, conversation_id, content="Hi there")
    names = [name for name, _ in events]
    assert names[:3] == ["user_message", "assistant_message", "diagnostics"]
    assert [data["text"] for name, data in events if name == "delta"] == ["Hello", " AUMA", "."]
    assert events[-1] == ("done", {"message_id": events[1][1]["id"], "status": "complete"})

    rows = await messages_of(conversation_id)
    assert [(m.role, m.status) for m in rows] == [("system", "complete"), ("user", "complete"), ("assistant", "complete")]
    assert rows[2].content == "Hello AUMA."


async def test_model_request_is_stored_prompt_then_live_history(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    await send_sse(client, conversation_id, content="first")
    await send_sse(client, conversation_id, content="second")
    body = scripted_provider.last_request().body
    assert body["model"] == "gpt-5.5" and body["stream"] is True
    roles = [item["role"] for item in body["input"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert "Elion Voicefire" in str(body["input"][0]["content"])
    assert "second" in str(body["input"][-1]["content"])


async def test_chat_completions_selector_streams_too(scripted_provider, settings):
    settings.ELION_API_SELECTOR = "chat.completions"
    scripted_provider.script(ScriptedReply(text="Via chat completions"))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    events = await send_sse(client, conversation_id, content="hello")
    assert "".join(d["text"] for n, d in events if n == "delta") == "Via chat completions"
    assert scripted_provider.last_request().path.endswith("/chat/completions")


async def test_user_turn_is_committed_before_any_provider_io(scripted_provider):
    gate = threading.Event()
    scripted_provider.script(ScriptedReply(text="late", delay_before_first=0.5, hold=gate))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    task = asyncio.ensure_future(send_sse(client, conversation_id, content="durable first"))
    try:
        # While the provider has not answered, the user turn is already stored.
        user = await wait_for(lambda: Message.objects.filter(conversation_id=conversation_id, role=Role.USER).first())
        assert user.content == "durable first"
        assert len(scripted_provider.requests) <= 1
    finally:
        gate.set()
    await task


async def test_partial_text_is_flushed_while_streaming(scripted_provider):
    gate = threading.Event()
    scripted_provider.script(ScriptedReply(chunks=["partial ", "text"], hold=gate))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    task = asyncio.ensure_future(send_sse(client, conversation_id, content="go"))
    try:
        assistant = await wait_for(
            lambda: Message.objects.filter(
                conversation_id=conversation_id, role=Role.ASSISTANT, status=MessageStatus.STREAMING
            ).exclude(content="").first()
        )
        assert assistant.content.startswith("partial")
        assert assistant.lease_expires_at is not None
    finally:
        gate.set()
    events = await task
    assert events[-1][1]["status"] == "complete"


async def test_repeated_client_message_id_never_makes_two_user_turns(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    client_id = str(uuid.uuid4())
    first = await send_sse(client, conversation_id, content="once", client_message_id=client_id)
    again = await send_sse(client, conversation_id, content="once", client_message_id=client_id)
    rows = await messages_of(conversation_id)
    assert [m.role for m in rows].count("user") == 1
    assert [m.role for m in rows].count("assistant") == 1
    assert first[0][1]["id"] == again[0][1]["id"] == client_id
    assert "".join(d["text"] for n, d in again if n == "delta") == rows[-1].content


async def test_client_message_id_reused_with_other_content_is_a_conflict(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    client_id = str(uuid.uuid4())
    await send_sse(client, conversation_id, content="once", client_message_id=client_id)
    response = await client.post(
        f"/api/conversations/{conversation_id}/messages/",
        {"content": "different", "client_message_id": client_id},
        content_type="application/json",
    )
    assert response.status_code == 409
    assert response.json()["error"] == "client_message_id_conflict"


async def test_send_while_a_reply_streams_is_refused_and_writes_nothing(scripted_provider):
    gate = threading.Event()
    scripted_provider.script(ScriptedReply(chunks=["one", "two"], hold=gate))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    task = asyncio.ensure_future(send_sse(client, conversation_id, content="first"))
    try:
        await wait_for(
            lambda: Message.objects.filter(conversation_id=conversation_id, status=MessageStatus.STREAMING).exists()
        )
        before = len(await messages_of(conversation_id))
        response = await client.post(
            f"/api/conversations/{conversation_id}/messages/", {"content": "second"}, content_type="application/json"
        )
        assert response.status_code == 409
        assert response.json()["error"] == "reply_in_progress"
        assert len(await messages_of(conversation_id)) == before
    finally:
        gate.set()
    await task


async def test_provider_error_becomes_error_event_and_failed_message(scripted_provider):
    scripted_provider.script(ScriptedReply(status=500, error_message="upstream exploded"))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    events = await send_sse(client, conversation_id, content="hello")
    error = next(data for name, data in events if name == "error")
    assert error["error"] == "provider_http_error" and "500" in error["detail"]
    assert events[-1][1]["status"] == "failed"
    assistant = (await messages_of(conversation_id))[-1]
    assert assistant.status == MessageStatus.FAILED and assistant.error == "provider_http_error"


async def test_dropped_stream_keeps_partial_text_as_failed(scripted_provider):
    scripted_provider.script(ScriptedReply(chunks=["kept ", "words ", "lost"], drop_after_chunks=2))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    events = await send_sse(client, conversation_id, content="hello")
    assert next(d for n, d in events if n == "error")["error"] == "provider_connection_lost"
    assistant = (await messages_of(conversation_id))[-1]
    assert assistant.status == MessageStatus.FAILED
    assert assistant.content == "kept words "


async def test_retry_regenerates_as_a_sibling_and_moves_the_head(scripted_provider):
    scripted_provider.script(ScriptedReply(status=500), ScriptedReply(text="second try"))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    events = await send_sse(client, conversation_id, content="hello")
    failed_id = events[1][1]["id"]
    response = await client.post(f"/api/conversations/{conversation_id}/messages/{failed_id}/retry/")
    retry_events = parse_sse(await read_streaming(response))
    new_id = retry_events[1][1]["id"]
    assert new_id != failed_id and retry_events[-1][1]["status"] == "complete"
    failed, retried = await sync_to_async(lambda: (Message.objects.get(pk=failed_id), Message.objects.get(pk=new_id)))()
    assert failed.parent_id == retried.parent_id
    listing = (await client.get(f"/api/conversations/{conversation_id}/messages/")).json()["results"]
    assert [m["content"] for m in listing] == ["hello", "second try"]


async def test_edit_and_resend_with_parent_id_starts_a_sibling_branch(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    first = await send_sse(client, conversation_id, content="original question")
    await send_sse(client, conversation_id, content="follow up")
    # Edit the follow-up: send under the first reply, beside the old follow-up.
    await send_sse(client, conversation_id, content="edited follow up", parent_id=first[1][1]["id"])
    listing = (await client.get(f"/api/conversations/{conversation_id}/messages/")).json()["results"]
    assert [m["content"] for m in listing if m["role"] == "user"] == ["original question", "edited follow up"]
    sent = scripted_provider.last_request().body["input"]
    assert "follow up" not in [str(item["content"]) for item in sent if item["role"] == "user"][:-1]
    assert len(await messages_of(conversation_id)) == 7  # prompt + 3 users + 3 replies: nothing destroyed


async def test_stream_false_answers_one_json_object(scripted_provider):
    scripted_provider.script(ScriptedReply(text="json reply"))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    response = await client.post(
        f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": "hi"}, content_type="application/json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["user_message"]["content"] == "hi"
    assert body["assistant_message"]["content"] == "json reply"
    assert set(body["diagnostics"]) >= {"total_input_tokens", "estimate_method", "handoff_included_in_static"}


async def test_client_disconnect_does_not_stop_persistence(scripted_provider):
    scripted_provider.script(ScriptedReply(chunks=["a", "b", "c", "d"], delay_between_chunks=0.1))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    response = await client.post(
        f"/api/conversations/{conversation_id}/messages/", {"content": "hello"}, content_type="application/json"
    )
    stream = response.streaming_content.__aiter__()
    await stream.__anext__()  # user_message, then the client goes away
    await stream.aclose()
    assistant = await wait_for(
        lambda: Message.objects.filter(
            conversation_id=conversation_id, role=Role.ASSISTANT, status=MessageStatus.COMPLETE
        ).first()
    )
    assert assistant.content == "abcd"


async def test_diagnostics_event_carries_numbers_and_fixed_names_only(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    events = await send_sse(client, conversation_id, content="a very particular sentence")
    diagnostics = next(data for name, data in events if name == "diagnostics")
    assert set(diagnostics) == {
        "history_tokens", "static_prompt_tokens", "handoff_tokens", "handoff_included_in_static",
        "dynamic_context_tokens", "tool_definition_tokens", "total_input_tokens", "input_budget_tokens",
        "remaining_tokens", "trimmed_messages", "estimate_method",
    }
    assert all(isinstance(v, (int, bool)) for k, v in diagnostics.items() if k != "estimate_method")
    assert "particular" not in str(diagnostics)


async def test_first_send_titles_an_untitled_conversation(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    await send_sse(client, conversation_id, content="Plans   for the garden\nthis spring")
    conversation = await sync_to_async(Conversation.objects.get)(pk=conversation_id)
    assert conversation.title == "Plans for the garden this spring"
