"""Beyond one process: two Daphne workers sharing one database and one Redis.

A real redis-server (tests/support/redis_server.py) is the channel layer of
two real Daphne processes (tests/support/live_server.py) that serve the
test database. The scripted provider holds the reply mid-stream on worker A
while clients talk to worker B.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import httpx
import pytest
import websockets
from asgiref.sync import sync_to_async

from conversations.services.threads.thread_writes import conversation_create
from tests.support.factories import wait_for
from tests.support.live_server import ROOT, LiveApp
from tests.support.scripted_provider import ScriptedReply
from tests.support.sse_stream import SseStream
from transcript.models import Message, MessageStatus

pytestmark = [pytest.mark.slow]

CHUNKS = ["Alpha ", "beta ", "gamma ", "delta ", "epsilon."]


@pytest.fixture(scope="module")
def two_workers(django_db_setup, django_db_blocker, scripted_server, redis_server):
    env = {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": scripted_server.base_url,
        "ELION_API_SELECTOR": "responses",
        "ELION_MODEL": "gpt-5.5",
        "REDIS_URL": redis_server.url,
    }
    with django_db_blocker.unblock():
        worker_a, worker_b = LiveApp(env), LiveApp(env)
        try:
            worker_a.start()
            worker_b.start()
            yield worker_a, worker_b
        finally:
            worker_a.stop()
            worker_b.stop()


@pytest.fixture
def workers(two_workers, scripted_server):
    scripted_server.clear()
    yield two_workers
    scripted_server.release()


async def send_on(app: LiveApp, client: httpx.AsyncClient, conversation_id, content: str):
    """Start a send on `app`; returns the open SSE stream (the caller closes the context)."""
    request = client.build_request(
        "POST", f"{app.base_url}/api/conversations/{conversation_id}/messages/", json={"content": content}
    )
    response = await client.send(request, stream=True)
    assert response.status_code == 200
    return response, SseStream(response.aiter_bytes())


def ws_url(app: LiveApp, conversation_id) -> str:
    return f"ws://127.0.0.1:{app.port}/ws/conversations/{conversation_id}/"


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_reply_on_worker_a_is_watched_from_worker_b_exactly_once(workers, scripted_server):
    worker_a, worker_b = workers
    gate = threading.Event()
    scripted_server.script(ScriptedReply(chunks=CHUNKS, hold=gate, delay_between_chunks=0.05))
    conversation = await sync_to_async(conversation_create)()
    async with httpx.AsyncClient(timeout=20) as client:
        response, sender = await send_on(worker_a, client, conversation.id, "tell me the letters")
        try:
            assistant_id = (await sender.until(lambda e: e.name == "assistant_message")).data["id"]
            await sender.until(lambda e: e.name == "delta")  # A holds the reply after "Alpha "
            async with websockets.connect(ws_url(worker_b, conversation.id)) as ws:
                await ws.send(json.dumps({"type": "watch", "message_id": assistant_id}))
                watched = [json.loads(await ws.recv()) for _ in range(4)]
                assert [f["type"] for f in watched] == ["user_message", "assistant_message", "diagnostics", "delta"]
                # The partial text worker A stored, read by worker B from the database.
                assert watched[3] == {"type": "delta", "text": "Alpha ", "seq": 6}
                gate.set()
                while watched[-1]["type"] != "done":
                    watched.append(json.loads(await ws.recv()))
            await sender.until_done(timeout=20)
        finally:
            gate.set()
            await response.aclose()
    final = await sync_to_async(Message.objects.get)(pk=assistant_id)
    assert final.status == MessageStatus.COMPLETE and final.content == "".join(CHUNKS)
    deltas = [f for f in watched if f["type"] == "delta"]
    # The rest came live through Redis from worker A: delta by delta, in order, once each.
    assert [d["text"] for d in deltas] == CHUNKS
    assert [d["seq"] for d in deltas] == [6, 11, 17, 23, 31]
    assert watched[-1] == {"type": "done", "message_id": assistant_id, "status": "complete"}
    assert "".join(d["text"] for d in deltas) == sender.text() == final.content


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_stop_sent_to_worker_b_stops_a_reply_running_on_worker_a(workers, scripted_server):
    worker_a, worker_b = workers
    gate = threading.Event()
    scripted_server.script(ScriptedReply(chunks=CHUNKS, hold=gate))
    conversation = await sync_to_async(conversation_create)()
    async with httpx.AsyncClient(timeout=20) as client:
        response, sender = await send_on(worker_a, client, conversation.id, "go on")
        try:
            assistant_id = (await sender.until(lambda e: e.name == "assistant_message")).data["id"]
            await sender.until(lambda e: e.name == "delta")
            stop = await client.post(
                f"{worker_b.base_url}/api/conversations/{conversation.id}/messages/{assistant_id}/stop/"
            )
            assert stop.status_code == 200, stop.text
            assert (stop.json()["status"], stop.json()["content"]) == ("interrupted", "Alpha ")
            done = await sender.until_done(timeout=20)
            assert done.data == {"message_id": assistant_id, "status": "interrupted"}
            # Worker A hung up on the provider: the call ended without the hold being released.
            await wait_for(lambda: scripted_server.abandoned_streams == 1)
            assert not gate.is_set()
        finally:
            gate.set()
            await response.aclose()
    row = await sync_to_async(Message.objects.get)(pk=assistant_id)
    assert (row.status, row.content, row.error) == (MessageStatus.INTERRUPTED, "Alpha ", "stopped")


def channel_layer_backend(extra_env: dict[str, str]) -> str:
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.CHANNEL_LAYERS['default']['BACKEND'])"
    )
    env = {"DJANGO_SETTINGS_MODULE": "elion.settings", "ELION_TESTING": "1", "PATH": "/usr/bin:/bin", **extra_env}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_redis_url_selects_the_redis_channel_layer_and_its_absence_the_in_memory_one(tmp_path):
    data = {"ELION_DATA_DIR": str(tmp_path)}
    assert channel_layer_backend({**data, "REDIS_URL": "redis://127.0.0.1:6399/0"}) == (
        "channels_redis.core.RedisChannelLayer"
    )
    assert channel_layer_backend(data) == "channels.layers.InMemoryChannelLayer"


def _long_thread(turns: int):
    from tests.support.factories import thread

    pairs = []
    for n in range(turns // 2):
        pairs += [("user", f"Old question {n} about the orchard"), ("assistant", f"Old answer {n} about pears")]
    return thread(*pairs)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_sends_alternating_between_two_workers_each_carry_what_the_other_wrote(
    workers, scripted_server, scripted_provider
):
    """Nothing of a thread is kept in a process between sends (issue 40): sends alternating between two
    workers on one long thread each carry the turn the other worker just wrote, and after a rewind made on
    one worker the next send on the other carries the rewound branch, not the turns rewound away.
    (`scripted_provider` configures this process as the workers are, so the thread is bound to their route.)"""
    worker_a, worker_b = workers
    conversation = await sync_to_async(_long_thread)(300)
    replies = []
    async with httpx.AsyncClient(timeout=30) as client:
        for n in range(6):
            app, name = ((worker_a, "A"), (worker_b, "B"))[n % 2]
            scripted_server.script(ScriptedReply(chunks=[f"Reply {n} written on {name}."]))
            response, sender = await send_on(app, client, conversation.id, f"Question {n} asked on {name}")
            try:
                replies.append((await sender.until(lambda e: e.name == "assistant_message")).data["id"])
                await sender.until_done(timeout=20)
            finally:
                await response.aclose()
            sent = json.dumps(scripted_server.last_request().body)
            assert f"Question {n} asked on {name}" in sent and "Old answer 149 about pears" in sent
            if n:
                other = "B" if name == "A" else "A"
                assert f"Reply {n - 1} written on {other}." in sent, sent[-2000:]
        rewound = await client.post(
            f"{worker_a.base_url}/api/conversations/{conversation.id}/rewind/", json={"message_id": replies[2]}
        )
        assert rewound.status_code == 200, rewound.text
        scripted_server.script(ScriptedReply(chunks=["After the rewind."]))
        response, sender = await send_on(worker_b, client, conversation.id, "Question after the rewind")
        try:
            await sender.until_done(timeout=20)
        finally:
            await response.aclose()
    sent = json.dumps(scripted_server.last_request().body)
    assert "Reply 2 written on A." in sent and "Question after the rewind" in sent
    assert "Question 3 asked on B" not in sent and "Reply 5 written on B." not in sent
