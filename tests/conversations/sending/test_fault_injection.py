"""Seed 004 fault injection: 50 sends against a real Daphne process, SIGKILLed at
seeded, reproducible points (before the provider answers, mid-stream, mid-tool-loop,
at finalisation). Afterwards no user turn is lost or duplicated, every message is
`complete`, `interrupted` or `failed` with its partial text, every transcript
invariant holds (`check_transcripts`), and each interrupted turn can be retried.

The kill points are placed deterministically with the scripted provider's holds;
the server restarts only after a kill, so the run stays short.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from conversations.services.threads.thread_writes import conversation_create
from tests.support.crash_recovery import app_env
from tests.support.factories import wait_until
from tests.support.live_server import LiveApp
from tests.support.scripted_provider import ScriptedReply
from transcript.integrity import transcripts_check
from transcript.models import Message, MessageStatus, Role

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SEED = 20261130
SENDS = 50
KILLS_PER_POINT = 2
KILL_POINTS = ("before_provider", "mid_stream", "mid_tool_loop", "finalisation")
CONVERSATIONS = 4
LEASE_SECONDS = 1.0  # ELION_STREAM_LEASE_SECONDS in app_env


def send_plan(rng: random.Random) -> list[tuple[int, str]]:
    """(conversation index, kill point or "none") for each send, reproducible from the seed."""
    points = [point for point in KILL_POINTS for _ in range(KILLS_PER_POINT)]
    points += ["none"] * (SENDS - len(points))
    rng.shuffle(points)
    return [(rng.randrange(CONVERSATIONS), point) for point in points]


class Harness:
    """One serving Daphne plus a warm standby on the same database, so a restart
    after a kill costs no start-up time (the standby serves at once and a new
    standby starts in the background)."""

    def __init__(self, scripted_server):
        self.server = scripted_server
        self.env = app_env(scripted_server)
        self.starter = ThreadPoolExecutor(max_workers=1)
        self.standby = self.starter.submit(self._start)
        self.app = self._start()
        self.client = httpx.Client(timeout=15)
        self.restarts = 0
        self.killed_at = 0.0

    def _start(self) -> LiveApp:
        app = LiveApp(self.env).start(timeout=60)
        # Warm it up (URL conf, the send pipeline, the SDK, a database connection)
        # so its first real request after a switch is not the slow one.
        httpx.get(f"{app.base_url}/api/conversations/", timeout=30).raise_for_status()
        return app

    def restart(self) -> None:
        self.app.kill()
        self.killed_at = time.monotonic()
        self.server.release()
        self.app = self.standby.result()
        self.standby = self.starter.submit(self._start)
        self.restarts += 1

    def wait_for_dead_lease(self) -> None:
        """The killed process's stream lease (1 s) must run out before its reply counts as interrupted."""
        time.sleep(max(0.0, self.killed_at + LEASE_SECONDS + 0.05 - time.monotonic()))

    def url(self, path: str) -> str:
        return f"{self.app.base_url}{path}"

    def send_json(self, conversation_id, content: str, client_id: str) -> httpx.Response:
        return self.client.post(
            self.url(f"/api/conversations/{conversation_id}/messages/?stream=false"),
            json={"content": content, "client_message_id": client_id},
        )

    def close(self) -> None:
        self.client.close()
        self.app.stop()
        self.standby.result().stop()
        self.starter.shutdown()


def wait_for_requests(server, count: int) -> None:
    wait_until(lambda: len(server.requests) >= count, timeout=15)


def killed_send(h: Harness, conversation_id, content: str, client_id: str, point: str, rng: random.Random) -> dict:
    """Send, SIGKILL the server at `point`, restart it. Returns what the client knew."""
    h.server.clear()
    gate = threading.Event()
    if point == "before_provider":
        h.server.script(ScriptedReply(text="never sent", hold_before_response=gate))
    elif point == "mid_stream":
        h.server.script(ScriptedReply(chunks=["Partial ", "words ", "never finished"], hold=gate))
    elif point == "mid_tool_loop":
        h.server.script(
            ScriptedReply(tool_calls=[{"name": "list_library", "arguments": {}}]),
            ScriptedReply(text="after the tool", hold_before_response=gate),
        )
    else:  # finalisation: every chunk is out; the kill lands while the reply is being finalised
        h.server.script(ScriptedReply(chunks=["All ", "done."], hold=gate))
    seen: dict = {}
    with h.client.stream(
        "POST", h.url(f"/api/conversations/{conversation_id}/messages/"),
        json={"content": content, "client_message_id": client_id},
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            data = json.loads(line[6:])
            if "id" in data and "user" not in seen:
                seen["user"] = data["id"]
            elif "id" in data:
                seen["assistant"] = data["id"]
                break
        if point == "before_provider":
            wait_for_requests(h.server, 1)
        elif point == "mid_stream":
            wait_until(lambda: Message.objects.filter(pk=seen["assistant"], content="Partial ").exists())
        elif point == "mid_tool_loop":
            wait_for_requests(h.server, 2)  # the tool ran, its result is stored, the follow-up is held
            wait_until(lambda: len(Message.objects.get(pk=seen["assistant"]).parts) == 2)
        else:
            wait_until(lambda: Message.objects.filter(pk=seen["assistant"], content="All ").exists())
            gate.set()
            time.sleep(rng.uniform(0, 0.01))
        h.restart()
    gate.set()
    return seen


@pytest.mark.timeout(300)  # about 40 s on an idle machine; each kill costs a process start
def test_sigkill_at_random_points_of_50_sends_loses_nothing_and_keeps_every_invariant(scripted_server):
    rng = random.Random(SEED)
    scripted_server.clear()
    conversations = [conversation_create(title=f"fault {i}") for i in range(CONVERSATIONS)]
    h = Harness(scripted_server)
    accepted: dict[str, tuple] = {}  # client_message_id -> (conversation id, content, kill point)
    interrupted: list[tuple] = []
    try:
        for number, (index, point) in enumerate(send_plan(rng)):
            conversation_id = conversations[index].id
            content = f"send {number} ({point})"
            client_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            if point == "none":
                scripted_server.clear()
                scripted_server.script(ScriptedReply(text=f"reply {number}"))
                response = h.send_json(conversation_id, content, client_id)
                assert response.status_code == 200, response.text
                assert response.json()["assistant_message"]["status"] == "complete"
                accepted[client_id] = (conversation_id, content, point)
                continue
            seen = killed_send(h, conversation_id, content, client_id, point, rng)
            assert seen["user"] == client_id
            accepted[client_id] = (conversation_id, content, point)
            # The client retries the same send after the crash: never a second user turn.
            h.wait_for_dead_lease()
            again = h.send_json(conversation_id, content, client_id)
            assert again.status_code == 200, again.text
            body = again.json()
            assert body["user_message"]["id"] == client_id
            reply = body["assistant_message"]
            assert reply["id"] == seen["assistant"]
            assert reply["status"] in ("interrupted", "complete"), (point, reply)
            if reply["status"] == "interrupted":
                interrupted.append((conversation_id, reply["id"], point, reply["content"]))
                # Each interrupted turn can be retried: a complete sibling under the same user turn.
                scripted_server.clear()
                scripted_server.script(ScriptedReply(text=f"retried {number}"))
                retried = h.client.post(
                    h.url(f"/api/conversations/{conversation_id}/messages/{reply['id']}/retry/?stream=false")
                )
                assert retried.status_code == 200, retried.text
                assert retried.json()["assistant_message"]["status"] == "complete"
                assert retried.json()["assistant_message"]["parent_id"] == client_id
    finally:
        h.close()
        scripted_server.release()

    # No user turn lost, none duplicated.
    users = Message.objects.filter(role=Role.USER, conversation__in=conversations)
    assert sorted(str(m.id) for m in users) == sorted(accepted)
    for message in users:
        assert (message.conversation_id, message.content) == accepted[str(message.id)][:2]
    # Every message is finished, with its partial text where it was cut.
    statuses = set(Message.objects.filter(conversation__in=conversations).values_list("status", flat=True))
    assert statuses <= {MessageStatus.COMPLETE, MessageStatus.INTERRUPTED, MessageStatus.FAILED}
    expected_partial = {"before_provider": {""}, "mid_stream": {"Partial "}, "mid_tool_loop": {""},
                        "finalisation": {"All ", "All done."}}
    for _, message_id, point, content in interrupted:
        assert content in expected_partial[point], (point, content)
        assert Message.objects.get(pk=message_id).content == content
    kinds = {point for *_, point, _ in interrupted}
    assert {"before_provider", "mid_stream", "mid_tool_loop"} <= kinds
    # Tool calls interrupted mid-loop stay paired (their results were stored before the kill).
    # Every transcript invariant holds, with nothing to repair.
    fixed, remaining = transcripts_check(conversation_ids=[c.id for c in conversations])
    assert remaining == [] and fixed == []
    assert h.restarts == KILLS_PER_POINT * len(KILL_POINTS)
