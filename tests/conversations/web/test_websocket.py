"""The WebSocket transport: the same events as SSE over a real Channels round trip."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from conversations.services.threads.thread_writes import conversation_create
from tests.support.scripted_provider import ScriptedReply
from tests.support.websocket import communicator, receive_until_done
from transcript.models import Message, MessageStatus

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_websocket_send_round_trip_streams_and_stores(scripted_provider):
    scripted_provider.script(ScriptedReply(chunks=["Over ", "the ", "socket"]))
    conversation = await sync_to_async(conversation_create)()
    ws = communicator(conversation.id)
    connected, _ = await ws.connect()
    assert connected
    await ws.send_json_to({"type": "send", "content": "hello socket"})
    frames = await receive_until_done(ws)
    assert [f["type"] for f in frames[:3]] == ["user_message", "assistant_message", "diagnostics"]
    assert "".join(f["text"] for f in frames if f["type"] == "delta") == "Over the socket"
    assert frames[-1]["status"] == "complete"
    await ws.disconnect()
    stored = await sync_to_async(Message.objects.get)(pk=frames[1]["id"])
    assert stored.content == "Over the socket" and stored.status == MessageStatus.COMPLETE


async def test_websocket_bad_frame_gets_an_error_event(scripted_provider):
    conversation = await sync_to_async(conversation_create)()
    ws = communicator(conversation.id)
    await ws.connect()
    await ws.send_json_to({"type": "send", "content": "  "})
    frame = await ws.receive_json_from(timeout=5)
    assert frame == {"type": "error", "error": "empty_message", "detail": frame["detail"]}
    await ws.send_to(text_data="{broken")
    frame = await ws.receive_json_from(timeout=5)
    assert frame["type"] == "error"
    await ws.disconnect()


async def test_websocket_refuses_a_cross_site_origin():
    conversation = await sync_to_async(conversation_create)()
    ws = communicator(conversation.id, origin=b"http://evil.example")
    connected, code = await ws.connect()
    assert not connected and code == 4403


async def test_websocket_refuses_an_unauthenticated_client_when_protected(settings):
    settings.ELION_PROTECTED = True
    settings.ELION_OWNER_PASSWORD = "pw"
    conversation = await sync_to_async(conversation_create)()
    ws = communicator(conversation.id)
    connected, code = await ws.connect()
    assert not connected and code == 4401


async def test_websocket_unknown_conversation_is_refused():
    ws = communicator("00000000-0000-0000-0000-000000000000")
    connected, code = await ws.connect()
    assert not connected and code == 4404


