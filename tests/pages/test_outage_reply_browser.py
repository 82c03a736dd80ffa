"""The reply shown and the reply stored after a database outage (issue 41, item 17).

A reply streams "one ", "two " (stored by the run's flushes), then the database goes away and "three" reaches the
browser but no table. The stream ends (`error` database_unavailable, `done` interrupted); the live bubble keeps
the words it was shown, marked Interrupted, and says that its end may not have been kept and what a reload will
show. The database stays away past the reply's lease, so the run gives up storing its final state. Once it is
back, the reloaded page shows what was stored, "one two", marked Interrupted, with Retry, and Retry writes the
reply again. Which of the two the owner sees, and why: docs/send_path.md, "After a database outage".

A real Daphne against a PostgreSQL server of the test's own (stopped and started), the scripted provider, chromium.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.support.chat_page import COMPOSER
from tests.support.factories import wait_until
from tests.support.live_server import LiveApp
from tests.support.postgres_server import OwnPostgres
from tests.support.scripted_provider import ScriptedReply

pytestmark = pytest.mark.slow


@pytest.fixture
def own_postgres():
    server = OwnPostgres(Path(tempfile.mkdtemp(prefix="elion-outage-pg.", dir="/tmp"))).up()
    server.migrate()
    yield server
    server.destroy()


def stored_reply(client: httpx.Client, conversation: str) -> dict | None:
    body = client.get(f"/api/conversations/{conversation}/messages/").json()
    replies = [m for m in (body["results"] if isinstance(body, dict) else body) if m["role"] == "assistant"]
    return replies[-1] if replies else None


def test_after_an_outage_the_page_shows_the_stored_reply_interrupted_with_retry(scripted_server, own_postgres,
                                                                                 page: Page):
    scripted_server.clear()
    gate = threading.Event()
    scripted_server.script(
        ScriptedReply(chunks=["one ", "two ", "three"], hold=gate, hold_after_chunks=2),
        ScriptedReply(text="one two three, in full."),
    )
    env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": scripted_server.base_url, "ELION_API_SELECTOR": "responses",
           "ELION_MODEL": "gpt-5.5", "DATABASE_URL": own_postgres.database_url, "ELION_STREAM_LEASE_SECONDS": "2"}
    page.set_viewport_size({"width": 1366, "height": 900})
    try:
        with LiveApp(env) as app, httpx.Client(base_url=app.base_url, timeout=30) as client:
            conversation = client.post("/api/conversations/", json={}).json()["id"]
            page.goto(f"{app.base_url}/c/{conversation}/")
            page.fill(COMPOSER, "Count to three.")
            page.press(COMPOSER, "Enter")
            live = page.locator(".message-assistant").last
            expect(live).to_contain_text("one two")
            # The run has stored "one two " (its flushes) before the database goes away.
            wait_until(lambda: (stored_reply(client, conversation) or {}).get("content") == "one two ")

            own_postgres.down()
            gate.set()  # "three" streams on; no write reaches a table any more
            expect(live).to_contain_text("one two three")
            # The stream ends as the run's next write fails (within the pool's timeout, 10 s).
            expect(live.locator(".message-error")).to_contain_text("the end shown here may not have been kept",
                                                                   timeout=30_000)
            # Its server rendering cannot be fetched (503 once the pool gives up): the live bubble marks itself.
            expect(live.locator("[data-interrupted-badge]")).to_have_text("Interrupted", timeout=30_000)
            # The run gives up storing its final state once the reply's lease would have run out.
            wait_until(lambda: "its final state was not stored" in app.log_path.read_text(errors="replace"), 30)

            own_postgres.up()
            # The server's circuit breaker (issue 41, item 16) serves again within a probe of the database's
            # return; the page is reloaded once it does.
            wait_until(lambda: client.get("/api/health/").status_code == 200)
            page.reload()
            reply = page.locator(".message-assistant").last
            expect(reply.locator(".message-body")).to_have_text("one two")
            expect(reply.locator(".badge-warn", has_text="Interrupted")).to_be_visible()
            retry = reply.locator(".message-error [data-action=retry]")
            expect(retry).to_be_visible()
            stored = stored_reply(client, conversation)
            assert stored["content"] == "one two " and "three" not in stored["content"]

            retry.click()
            expect(page.locator(".message-assistant").last).to_contain_text("one two three, in full.")
            expect(page.locator(".message-assistant.status-streaming")).to_have_count(0)
            assert stored_reply(client, conversation)["status"] == "complete"
    finally:
        gate.set()
    assert page.js_errors == []
