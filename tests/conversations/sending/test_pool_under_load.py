"""No database connection held across provider I/O (issue "Hardening, round two").

A real Daphne with a pool of 4 PostgreSQL connections (and a 5 s pool timeout)
serves 12 sends at once while the scripted provider streams each reply for
8 s: a reply that kept its request's connection while streaming would
leave 8 requests waiting past the timeout. Every accepted send completes, no
answer is a 5xx, and the app never has more connections open than its pool.
On SQLite (no pool) the same load proves the same answers.
"""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from django.conf import settings
from django.db import connections

from conversations.services.threads.thread_writes import conversation_create
from tests.support import live_server
from tests.support.live_server import LiveApp
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Message, MessageStatus, Role

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

POOL_SIZE = 4
APP_NAME = "elion-pool-under-load"  # the served app's connections, told apart from this process's
SENDS = 12
WORDS = 16  # one every 0.5 s: each reply streams for 8 s, longer than the pool timeout


def _send(base_url: str, conversation_id: str, outcomes: list) -> None:
    events = []
    with httpx.Client(timeout=60) as client, client.stream(
        "POST", f"{base_url}/api/conversations/{conversation_id}/messages/", json={"content": "tell me slowly"},
    ) as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                events.append(line[7:])
            elif line.startswith("data: ") and events and events[-1] == "done":
                events[-1] = ("done", json.loads(line[6:])["status"])
        outcomes.append((response.status_code, events))


def _app_backends() -> int:
    """The served app's connections to the test database."""
    probe = connections.create_connection("default")
    try:
        with probe.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APP_NAME]
            )
            return cursor.fetchone()[0]
    finally:
        probe.close()


def test_no_connection_held_across_provider_io_every_send_completes_within_the_pool(scripted_server):
    scripted_server.clear()
    scripted_server.script(*[
        ScriptedReply(chunks=[f"word{i} " for i in range(WORDS)], delay_between_chunks=0.5) for _ in range(SENDS)
    ])
    conversations = [str(conversation_create().id) for _ in range(SENDS)]
    env = {
        "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": scripted_server.base_url,
        "ELION_DB_POOL_MAX": str(POOL_SIZE), "ELION_DB_POOL_TIMEOUT": "5",
    }
    if settings.DATABASE_IS_POSTGRES:
        env["DATABASE_URL"] = f"{live_server.test_database_url()}?application_name={APP_NAME}"
    outcomes: list = []
    peak = [0]
    done = threading.Event()

    def watch_connections() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _app_backends())
            done.wait(0.05)

    with LiveApp(env) as app:
        watcher = threading.Thread(target=watch_connections) if settings.DATABASE_IS_POSTGRES else None
        if watcher:
            watcher.start()
        threads = [threading.Thread(target=_send, args=(app.base_url, c, outcomes)) for c in conversations]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(90)
        done.set()
        if watcher:
            watcher.join()
    assert len(outcomes) == SENDS
    assert all(status == 200 for status, _events in outcomes), [status for status, _ in outcomes]
    assert all(events[-1] == ("done", "complete") and "error" not in events for _status, events in outcomes)
    replies = Message.objects.filter(role=Role.ASSISTANT, conversation_id__in=conversations)
    assert sorted(replies.values_list("status", flat=True)) == [MessageStatus.COMPLETE] * SENDS
    assert all(reply.content == "".join(f"word{i} " for i in range(WORDS)) for reply in replies)
    if settings.DATABASE_IS_POSTGRES:
        assert 0 < peak[0] <= POOL_SIZE
