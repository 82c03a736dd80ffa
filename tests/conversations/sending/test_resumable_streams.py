"""Resumable streams: every delta has a `seq`, and a client that comes (back)
while a reply streams gets the stored text, then the live rest: no gap, no
duplicate. In-process, over real SSE responses and Channels WebSockets.
"""

from __future__ import annotations

import threading
import uuid

import pytest
import yaml
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient

from elion.asgi import application
from tests.support.factories import wait_for
from tests.support.scripted_provider import ScriptedReply
from tests.support.sse_stream import SseStream
from tests.support.streams import create_conversation, open_send, stored
from transcript.models import Message, MessageStatus, Role

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def open_watch(client: AsyncClient, path: str, last_event_id: str | None = None) -> SseStream:
    headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else {}
    response = await client.get(path, headers=headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/event-stream")
    return SseStream(response.streaming_content)


def communicator(conversation_id: str) -> WebsocketCommunicator:
    return WebsocketCommunicator(
        application, f"/ws/conversations/{conversation_id}/", headers=[(b"host", b"testserver"),
                                                                      (b"origin", b"http://testserver")]
    )


async def frames_until_done(ws: WebsocketCommunicator) -> list[dict]:
    frames = []
    while True:
        frame = await ws.receive_json_from(timeout=10)
        frames.append(frame)
        if frame["type"] == "done":
            return frames


def delta_text(frames: list[dict]) -> str:
    return "".join(f["text"] for f in frames if f["type"] == "delta")


async def test_every_delta_carries_its_seq_and_the_same_sse_event_id(scripted_provider):
    scripted_provider.script(ScriptedReply(chunks=["Hel", "lo ", "wörld"]))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    stream = await open_send(client, conversation_id, content="hi")
    await stream.until_done()
    deltas = [e for e in stream.events if e.name == "delta"]
    # seq: the reply's length in characters once the delta is appended.
    assert [e.data["seq"] for e in deltas] == [3, 6, 11]
    assert [e.id for e in deltas] == ["3", "6", "11"]
    assert all(e.id is None for e in stream.events if e.name != "delta")


async def test_text_before_a_pause_is_stored_within_the_flush_interval(scripted_provider):
    # Three deltas arrive within 250 ms, then the provider pauses: the trailing
    # flush stores all three, so a watcher arriving during the pause sees them.
    gate = threading.Event()
    scripted_provider.script(ScriptedReply(chunks=["One ", "two ", "three ", "four."], hold=gate, hold_after_chunks=3))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    stream = await open_send(client, conversation_id, content="count")
    try:
        assistant_id = (await stream.until(lambda e: e.name == "assistant_message")).data["id"]
        await stream.until(lambda e: e.name == "delta" and e.data["seq"] == 14)
        row = await wait_for(lambda: (m := stored(assistant_id)).content == "One two three " and m)
        assert row.status == MessageStatus.STREAMING
    finally:
        gate.set()
    await stream.until_done()


async def test_reconnect_with_last_event_id_gets_the_rest_without_gap_or_duplicate(scripted_provider):
    gate = threading.Event()
    scripted_provider.script(
        ScriptedReply(chunks=["Once ", "upon ", "a ", "time."], hold=gate, hold_after_chunks=2, delay_between_chunks=0.02)
    )
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    sender = await open_send(client, conversation_id, content="a story")
    try:
        assistant_id = (await sender.until(lambda e: e.name == "assistant_message")).data["id"]
        first = await sender.until(lambda e: e.name == "delta")
        assert (first.data["text"], first.id) == ("Once ", "5")
        await wait_for(lambda: stored(assistant_id).content == "Once upon ")
        # The sender's connection "drops" after the first delta; it comes back
        # with Last-Event-ID 5. A second client has seen "Once upon " (id 10),
        # a third nothing at all.
        path = f"/api/conversations/{conversation_id}/messages/{assistant_id}/stream/"
        resumed = await open_watch(client, path, last_event_id=first.id)
        caught_up = await open_watch(client, path, last_event_id="10")
        fresh = await open_watch(client, f"/api/conversations/{conversation_id}/stream/")
        for watcher in (resumed, caught_up, fresh):
            assert [e.name for e in watcher.events] == []
            announced = await watcher.until(lambda e: e.name == "assistant_message")
            assert announced.data["id"] == assistant_id
        assert (await resumed.until(lambda e: e.name == "delta")).data == {"text": "upon ", "seq": 10}
        assert (await fresh.until(lambda e: e.name == "delta")).data == {"text": "Once upon ", "seq": 10}
    finally:
        gate.set()
    for watcher in (resumed, caught_up, fresh, sender):
        assert (await watcher.until_done()).data == {"message_id": assistant_id, "status": "complete"}
    final = (await sync_to_async(stored)(assistant_id)).content
    assert final == "Once upon a time."
    assert "Once " + resumed.text() == final
    assert "Once upon " + caught_up.text() == final
    assert fresh.text() == final and sender.text() == final
    for watcher in (resumed, caught_up, fresh, sender):
        seqs = watcher.seqs()
        assert seqs == sorted(set(seqs)) and seqs[-1] == len(final)
        assert [e.id for e in watcher.events if e.name == "delta"] == [str(s) for s in seqs]


async def test_a_second_websocket_sees_the_same_stream(scripted_provider):
    gate = threading.Event()
    scripted_provider.script(
        ScriptedReply(chunks=["Shared ", "by ", "two ", "tabs."], hold=gate, delay_between_chunks=0.02)
    )
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    sender, watcher = communicator(conversation_id), communicator(conversation_id)
    assert (await sender.connect())[0] and (await watcher.connect())[0]
    await sender.send_json_to({"type": "send", "content": "hello both"})
    sent = [await sender.receive_json_from(timeout=10) for _ in range(4)]
    assert [f["type"] for f in sent] == ["user_message", "assistant_message", "diagnostics", "delta"]
    # The second tab asks for the reply streaming now (no message id needed).
    await watcher.send_json_to({"type": "watch"})
    try:
        watched = [await watcher.receive_json_from(timeout=10) for _ in range(4)]
        assert [f["type"] for f in watched] == ["user_message", "assistant_message", "diagnostics", "delta"]
        assert watched[1]["id"] == sent[1]["id"] and watched[0]["id"] == sent[0]["id"]
        assert watched[3] == {"type": "delta", "text": "Shared ", "seq": 7}
    finally:
        gate.set()
    sent += await frames_until_done(sender)
    watched += await frames_until_done(watcher)
    final = await sync_to_async(stored)(sent[1]["id"])
    assert final.status == MessageStatus.COMPLETE
    assert delta_text(sent) == delta_text(watched) == final.content == "Shared by two tabs."
    assert watched[-1] == {"type": "done", "message_id": sent[1]["id"], "status": "complete"}
    await sender.disconnect()
    await watcher.disconnect()


async def test_watching_a_finished_reply_gives_its_text_and_done(scripted_provider):
    scripted_provider.script(ScriptedReply(chunks=["All ", "done."]))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    sender = await open_send(client, conversation_id, content="quick")
    await sender.until_done()
    assistant_id = next(e.data["id"] for e in sender.events if e.name == "assistant_message")
    watch = await open_watch(client, f"/api/conversations/{conversation_id}/messages/{assistant_id}/stream/", "4")
    done = await watch.until_done()
    assert done.data == {"message_id": assistant_id, "status": "complete"}
    assert [(e.data, e.id) for e in watch.events if e.name == "delta"] == [({"text": "done.", "seq": 9}, "9")]
    assert await watch.next() is None
    # Nothing streams now: the conversation-level watch says so with 204.
    response = await client.get(f"/api/conversations/{conversation_id}/stream/")
    assert response.status_code == 204


async def test_watch_refuses_bad_input_with_clear_errors(scripted_provider):
    scripted_provider.script(ScriptedReply(chunks=["ok"]))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    sender = await open_send(client, conversation_id, content="hi")
    await sender.until_done()
    user_id = sender.events[0].data["id"]
    assistant_id = sender.events[1].data["id"]
    base = f"/api/conversations/{conversation_id}/messages"
    cases = [
        (f"{base}/{uuid.uuid4()}/stream/", {}, 404, "message_not_found"),
        (f"{base}/not-a-uuid/stream/", {}, 404, "message_not_found"),
        (f"/api/conversations/{uuid.uuid4()}/messages/{assistant_id}/stream/", {}, 404, "conversation_not_found"),
        (f"{base}/{user_id}/stream/", {}, 400, "not_a_reply"),
        (f"{base}/{assistant_id}/stream/", {"Last-Event-ID": "minus one"}, 400, "invalid_last_event_id"),
        (f"{base}/{assistant_id}/stream/", {"Last-Event-ID": "-3"}, 400, "invalid_last_event_id"),
    ]
    for path, headers, status, code in cases:
        response = await client.get(path, headers=headers)
        assert (response.status_code, response.json()["error"]) == (status, code), path


async def test_websocket_watch_with_nothing_streaming_says_no_live_reply(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    ws = communicator(conversation_id)
    await ws.connect()
    await ws.send_json_to({"type": "watch"})
    frame = await ws.receive_json_from(timeout=5)
    assert (frame["type"], frame["error"]) == ("error", "no_live_reply")
    await ws.send_json_to({"type": "watch", "message_id": str(uuid.uuid4())})
    assert (await ws.receive_json_from(timeout=5))["error"] == "message_not_found"
    await ws.disconnect()


async def test_sending_the_same_turn_again_while_it_streams_follows_the_live_reply(scripted_provider):
    gate = threading.Event()
    scripted_provider.script(ScriptedReply(chunks=["Still ", "going ", "strong."], hold=gate))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    client_id = str(uuid.uuid4())
    first = await open_send(client, conversation_id, content="again?", client_message_id=client_id)
    try:
        await first.until(lambda e: e.name == "delta")
        # A reload sends the unconfirmed turn again with the same client_message_id.
        again = await open_send(client, conversation_id, content="again?", client_message_id=client_id)
        assert (await again.until(lambda e: e.name == "delta")).data == {"text": "Still ", "seq": 6}
    finally:
        gate.set()
    assert (await again.until_done()).data["status"] == "complete"
    await first.until_done()
    assert again.text() == first.text() == "Still going strong."
    assert [e.data["id"] for e in again.events if e.name == "user_message"] == [client_id]
    rows = await sync_to_async(list)(Message.objects.filter(conversation_id=conversation_id).exclude(role="system"))
    assert sorted(m.role for m in rows) == [Role.ASSISTANT, Role.USER]
    assert len(scripted_provider.requests) == 1


async def test_the_openapi_schema_documents_watch_and_stop():
    response = await AsyncClient().get("/api/schema/")
    assert response.status_code == 200
    paths = yaml.safe_load(response.content)["paths"]
    watch = paths["/api/conversations/{conversation_id}/messages/{message_id}/stream/"]["get"]
    assert "Last-Event-ID" in [p["name"] for p in watch["parameters"]]
    assert "204" in paths["/api/conversations/{conversation_id}/stream/"]["get"]["responses"]
    assert {"200", "202", "409"} <= set(paths["/api/conversations/{conversation_id}/messages/{message_id}/stop/"]["post"]["responses"])


async def test_a_following_socket_gets_replies_started_elsewhere_and_not_its_own(scripted_provider):
    scripted_provider.script(ScriptedReply(chunks=["From ", "elsewhere."]), ScriptedReply(chunks=["Mine."]))
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    idle, sender = communicator(conversation_id), communicator(conversation_id)
    assert (await idle.connect())[0] and (await sender.connect())[0]
    for ws in (idle, sender):
        await ws.send_json_to({"type": "follow"})
        assert await ws.receive_json_from(timeout=5) == {"type": "following"}
    await sender.send_json_to({"type": "send", "content": "first"})
    sent = await frames_until_done(sender)
    followed = await frames_until_done(idle)
    assert all(f.pop("followed") is True for f in followed)
    assert followed[:2] == [{"type": "user_message", "id": sent[0]["id"]}, {"type": "assistant_message", "id": sent[1]["id"]}]
    assert delta_text(followed) == delta_text(sent) == "From elsewhere."
    assert followed[-1] == {"type": "done", "message_id": sent[1]["id"], "status": "complete"}
    # The idle socket sends next; the first sender, following too, now sees that reply.
    await idle.send_json_to({"type": "send", "content": "second"})
    own = await frames_until_done(idle)
    mirrored = await frames_until_done(sender)
    assert delta_text(own) == delta_text(mirrored) == "Mine."
    assert all("followed" not in f for f in own) and all(f["followed"] for f in mirrored)
    assert await idle.receive_nothing(timeout=0.3) and await sender.receive_nothing(timeout=0.3)
    await idle.disconnect()
    await sender.disconnect()
