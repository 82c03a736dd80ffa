"""The database going away and coming back (issue "Hardening, round two": outages answered).

A real Daphne against a PostgreSQL server of the test's own (the suite's
database stays up), the scripted provider streaming a reply slowly. The server
is stopped mid-reply:
- the stream ends with `error` (`database_unavailable`) and `done` at once,
  not when the client gives up;
- the API answers 503 `database_unavailable` with Retry-After, /api/health/
  says so, a page is the short "Elion can't reach its database" page;
after it starts again the next send works straight away and completes, and
the interrupted reply keeps the text stored before the outage.
"""

from __future__ import annotations

import json
import tempfile
import threading
from pathlib import Path

import httpx
import pytest

from tests.support.factories import wait_until
from tests.support.live_server import LiveApp
from tests.support.postgres_server import OwnPostgres
from tests.support.scripted_provider import ScriptedReply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def own_postgres():
    server = OwnPostgres(Path(tempfile.mkdtemp(prefix="elion-outage-pg.", dir="/tmp"))).up()
    server.migrate()
    yield server
    server.destroy()


def _events(response: httpx.Response, on_first_delta) -> list[tuple[str, dict]]:
    events, name, fired = [], None, False
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[6:])))
            if name == "delta" and not fired:
                fired = True
                on_first_delta()
    return events


def test_database_outage_a_streaming_reply_ends_with_error_and_done_and_the_next_send_works(
    scripted_server, own_postgres
):
    scripted_server.clear()
    gate = threading.Event()
    scripted_server.script(
        ScriptedReply(chunks=["Kept before the outage. ", "lost ", "words"], hold=gate),
        ScriptedReply(text="Back again."),
    )
    env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": scripted_server.base_url,
           "DATABASE_URL": own_postgres.database_url}
    with LiveApp(env) as app, httpx.Client(base_url=app.base_url, timeout=30) as client:
        conversation = client.post("/api/conversations/", json={}).json()["id"]

        def stop_database() -> None:
            own_postgres.down()
            gate.set()  # the provider goes on streaming; the reply's next write finds no database

        with client.stream("POST", f"/api/conversations/{conversation}/messages/",
                           json={"content": "a long story"}) as response:
            events = _events(response, stop_database)
        names = [name for name, _data in events]
        assert names[-2:] == ["error", "done"], names
        assert events[-2][1]["error"] == "database_unavailable"

        api = client.get(f"/api/conversations/{conversation}/messages/")
        assert api.status_code == 503 and api.json()["error"] == "database_unavailable"
        assert int(api.headers["Retry-After"]) > 0
        health = client.get("/api/health/")
        assert health.status_code == 503 and health.json()["error"] == "database_unavailable"
        page = client.get(f"/c/{conversation}/")
        assert page.status_code == 503 and "Elion can't reach its database" in page.text

        own_postgres.up()
        # Served again once the breaker's probe (every 0.25 s) connects: tests/db/test_database_breaker.py.
        wait_until(lambda: client.get("/api/health/").status_code == 200, timeout=5)
        # The next request works at once: a send in another conversation streams to `complete`.
        created = client.post("/api/conversations/", json={})
        assert created.status_code == 201, created.text
        other = created.json()["id"]
        with client.stream("POST", f"/api/conversations/{other}/messages/",
                           json={"content": "are you back?"}) as response:
            assert response.status_code == 200
            after = _events(response, lambda: None)
        assert after[-1][0] == "done" and after[-1][1]["status"] == "complete"
        # The reply cut off by the outage is stored `interrupted` with the text flushed before it.
        replies = wait_until(lambda: _settled_replies(client, conversation))
        other_replies = _settled_replies(client, other)
    assert [r["status"] for r in replies] == ["interrupted"]
    assert replies[0]["content"].startswith("Kept before the outage.")
    assert [(r["status"], r["content"]) for r in other_replies] == [("complete", "Back again.")]


def _settled_replies(client: httpx.Client, conversation: str) -> list[dict] | None:
    response = client.get(f"/api/conversations/{conversation}/messages/")
    body = response.json()
    messages = body["results"] if isinstance(body, dict) else body
    replies = [m for m in messages if m["role"] == "assistant"]
    return None if any(r["status"] == "streaming" for r in replies) else replies
