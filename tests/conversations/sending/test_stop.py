"""Stop: ends the provider call and keeps the partial text as `interrupted`.

In-process over the HTTP API and the WebSocket; the cross-process case is in
test_cross_worker.py.
"""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient
from django.utils import timezone

from conversations.sending.run import STOP_CHECK_GRACE_SECONDS
from elion.asgi import application
from tests.support.factories import wait_for
from tests.support.scripted_provider import ScriptedReply
from tests.support.sse_stream import SseStream
from tests.support.streams import create_conversation, open_send, stored
from transcript.models import Message, MessageStatus

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def start_held_reply(client, scripted_provider, gate, chunks=("Partial ", "and never finished.")):
    scripted_provider.script(ScriptedReply(chunks=list(chunks), hold=gate))
    conversation_id = await create_conversation(client)
    sender = await open_send(client, conversation_id, content="take your time")
    assistant_id = (await sender.until(lambda e: e.name == "assistant_message")).data["id"]
    await sender.until(lambda e: e.name == "delta")
    return conversation_id, assistant_id, sender


def stop_path(conversation_id, message_id) -> str:
    return f"/api/conversations/{conversation_id}/messages/{message_id}/stop/"


async def test_stop_keeps_the_partial_text_as_interrupted_and_ends_the_provider_call(scripted_provider):
    gate = threading.Event()
    client = AsyncClient()
    try:
        conversation_id, assistant_id, sender = await start_held_reply(client, scripted_provider, gate)
        response = await client.post(stop_path(conversation_id, assistant_id))
        assert response.status_code == 200, response.content
        body = response.json()
        assert (body["id"], body["status"], body["content"]) == (assistant_id, "interrupted", "Partial ")
        assert body["metadata"]["error"]["error"] == "stopped"
        # The sender's own stream ends with the same outcome.
        done = await sender.until_done()
        assert done.data == {"message_id": assistant_id, "status": "interrupted"}
        assert sender.text() == "Partial "
        # The provider's held stream saw the app hang up: the call ended, not just the listening.
        await wait_for(lambda: scripted_provider.abandoned_streams == 1)
    finally:
        gate.set()
    row = await sync_to_async(stored)(assistant_id)
    assert (row.status, row.content, row.error) == (MessageStatus.INTERRUPTED, "Partial ", "stopped")
    assert row.stop_requested_at is not None and row.lease_expires_at is None


async def test_stop_is_idempotent(scripted_provider):
    gate = threading.Event()
    client = AsyncClient()
    try:
        conversation_id, assistant_id, sender = await start_held_reply(client, scripted_provider, gate)
        first = await client.post(stop_path(conversation_id, assistant_id))
        again = await client.post(stop_path(conversation_id, assistant_id))
    finally:
        gate.set()
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    await sender.until_done()


async def test_stopping_a_reply_that_already_finished_is_a_conflict(scripted_provider):
    scripted_provider.script(ScriptedReply(chunks=["Finished."]))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    sender = await open_send(client, conversation_id, content="quick")
    await sender.until_done()
    assistant_id = sender.events[1].data["id"]
    response = await client.post(stop_path(conversation_id, assistant_id))
    assert response.status_code == 409
    assert response.json()["error"] == "reply_not_streaming"
    assert "complete" in response.json()["detail"]
    row = await sync_to_async(stored)(assistant_id)
    assert (row.status, row.content, row.stop_requested_at) == (MessageStatus.COMPLETE, "Finished.", None)


async def test_stop_refuses_a_user_message_and_unknown_ids(scripted_provider):
    scripted_provider.script(ScriptedReply(chunks=["ok"]))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    sender = await open_send(client, conversation_id, content="hi")
    await sender.until_done()
    user_id = sender.events[0].data["id"]
    for path, status, code in [
        (stop_path(conversation_id, user_id), 400, "not_a_reply"),
        (stop_path(conversation_id, uuid.uuid4()), 404, "message_not_found"),
        (stop_path(uuid.uuid4(), user_id), 404, "conversation_not_found"),
    ]:
        response = await client.post(path)
        assert (response.status_code, response.json()["error"]) == (status, code)


async def test_stop_over_the_websocket_ends_the_reply_the_socket_is_forwarding(scripted_provider):
    gate = threading.Event()
    scripted_provider.script(ScriptedReply(chunks=["Half ", "way."], hold=gate))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    ws = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation_id}/", headers=[(b"host", b"testserver")]
    )
    assert (await ws.connect())[0]
    try:
        await ws.send_json_to({"type": "send", "content": "go"})
        frames = [await ws.receive_json_from(timeout=10) for _ in range(4)]
        assert frames[-1] == {"type": "delta", "text": "Half ", "seq": 5}
        assistant_id = frames[1]["id"]
        await ws.send_json_to({"type": "stop", "message_id": assistant_id})
        rest = [await ws.receive_json_from(timeout=10) for _ in range(2)]
    finally:
        gate.set()
    by_type = {f["type"]: f for f in rest}
    assert by_type["done"] == {"type": "done", "message_id": assistant_id, "status": "interrupted"}
    assert by_type["stopped"]["settled"] is True
    assert by_type["stopped"]["message"]["status"] == "interrupted"
    assert by_type["stopped"]["message"]["content"] == "Half "
    await ws.disconnect()


async def test_a_stop_recorded_only_in_the_database_stops_the_run(scripted_provider, settings):
    # What a worker without a shared channel layer leaves: the flag alone. The
    # run sees it at its next lease renewal (every third of the lease).
    settings.ELION_STREAM_LEASE_SECONDS = 1
    gate = threading.Event()
    client = AsyncClient()
    try:
        conversation_id, assistant_id, sender = await start_held_reply(client, scripted_provider, gate)
        await sync_to_async(Message.objects.filter(pk=assistant_id).update)(stop_requested_at=timezone.now())
        done = await asyncio.wait_for(sender.until_done(), 10)
    finally:
        gate.set()
    assert done.data["status"] == "interrupted"
    row = await sync_to_async(stored)(assistant_id)
    assert (row.status, row.content, row.error) == (MessageStatus.INTERRUPTED, "Partial ", "stopped")


async def test_a_stop_recorded_while_the_provider_is_silent_ends_the_reply_within_the_grace(scripted_provider, settings):
    # The flag is set before the provider answers, and no stop message is ever
    # sent. The run reads the flag once the provider answers or, as here, when
    # STOP_CHECK_GRACE_SECONDS have passed without an answer; not only at the
    # first flush (no text comes) or the next lease renewal (ten seconds away).
    settings.ELION_STREAM_LEASE_SECONDS = 30
    client = AsyncClient()
    scripted_provider.script(ScriptedReply(chunks=["Too late."], delay_before_first=4.0))
    conversation_id = await create_conversation(client)
    sender = await open_send(client, conversation_id, content="take your time")
    assistant_id = (await sender.until(lambda e: e.name == "assistant_message")).data["id"]
    await sync_to_async(Message.objects.filter(pk=assistant_id).update)(stop_requested_at=timezone.now())
    done = await asyncio.wait_for(sender.until_done(), STOP_CHECK_GRACE_SECONDS + 2.0)
    assert done.data["status"] == "interrupted"
    row = await sync_to_async(stored)(assistant_id)
    assert (row.status, row.error, row.content) == (MessageStatus.INTERRUPTED, "stopped", "")


async def test_a_stopped_reply_can_be_watched_and_retried(scripted_provider):
    gate = threading.Event()
    client = AsyncClient()
    try:
        conversation_id, assistant_id, sender = await start_held_reply(client, scripted_provider, gate)
        assert (await client.post(stop_path(conversation_id, assistant_id))).status_code == 200
    finally:
        gate.set()
    await sender.until_done()
    watch = await client.get(f"/api/conversations/{conversation_id}/messages/{assistant_id}/stream/")
    watched = SseStream(watch.streaming_content)
    assert (await watched.until_done()).data["status"] == "interrupted" and watched.text() == "Partial "
    scripted_provider.script(ScriptedReply(chunks=["Second ", "try."]))
    retry = await client.post(f"/api/conversations/{conversation_id}/messages/{assistant_id}/retry/")
    retried = SseStream(retry.streaming_content)
    assert (await retried.until_done()).data["status"] == "complete" and retried.text() == "Second try."
