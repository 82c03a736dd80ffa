"""A request's database connection goes back however the request ends (issue 41, item 13).

The URL configuration in `tests.support.raising_error_page` has a view that reads the database and
raises, and an error page (`handler500`) that raises too: the exception leaves Django's handler
without a response. Before `elion.web.request_end`, the request's connection was never closed, and
on PostgreSQL it never went back to the pool: after `ELION_DB_POOL_MAX` such requests every request
waited out the pool timeout and answered 503 `database_busy`, the health check included.
"""

from __future__ import annotations

import asyncio
import weakref

import httpx
import pytest
from django.db import connection
from django.db.backends.signals import connection_created

from elion.asgi import application
from tests.support.live_server import LiveApp
from tests.support.raising_error_page import ErrorPageFailed

pytestmark = pytest.mark.django_db(transaction=True)
REQUESTS = 25  # more than the pool holds (20 by default; 2 in the served app below)


def _scope(path: str) -> dict:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
            "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
            "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80)}


def _receiver():
    """The request's empty body, then nothing (Django listens for a disconnect until the response is done)."""
    sent = []

    async def receive() -> dict:
        if sent:
            await asyncio.Event().wait()
        sent.append(True)
        return {"type": "http.request", "body": b"", "more_body": False}

    return receive


async def _discard(message: dict) -> None:
    pass


def _checked_out() -> int | None:
    """Connections taken from this process's PostgreSQL pool and not handed back (None: no pool)."""
    pool = getattr(connection, "pool", None) if connection.vendor == "postgresql" else None
    if pool is None:
        return None
    stats = pool.get_stats()
    return stats["pool_size"] - stats["pool_available"]


@pytest.mark.asyncio
async def test_a_request_whose_error_page_raises_hands_its_connection_back(settings):
    settings.ROOT_URLCONF = "tests.support.raising_error_page"
    opened: list[weakref.ref] = []

    def remember(sender: object, connection: object, **kwargs: object) -> None:
        opened.append(weakref.ref(connection))

    connection_created.connect(remember)
    try:
        before = _checked_out()
        for _ in range(REQUESTS):
            with pytest.raises(ErrorPageFailed):
                await application(_scope("/boom/"), _receiver(), _discard)
    finally:
        connection_created.disconnect(remember)
    assert len(opened) == REQUESTS  # each request opened (or took from its pool) one connection
    still_open = [ref() for ref in opened if ref() is not None and ref().connection is not None]
    assert still_open == []
    if before is not None:
        print(f"\npool after {REQUESTS} failing error pages: {_checked_out()} checked out (before: {before})")
        assert _checked_out() == before


@pytest.mark.slow
def test_the_served_app_keeps_answering_after_more_failing_error_pages_than_its_pool_holds():
    env = {"DJANGO_SETTINGS_MODULE": "tests.support.raising_error_page_settings",
           "ELION_DB_POOL_MAX": "2", "ELION_DB_POOL_TIMEOUT": "3"}
    with LiveApp(env) as app, httpx.Client(base_url=app.base_url, timeout=30) as client:
        for _ in range(6):
            assert client.get("/boom/").status_code == 500  # Daphne's own 500: the error page raised
        health = client.get("/api/health/")
        assert health.status_code == 200, health.text
        assert client.get("/login/").status_code in (200, 302)
