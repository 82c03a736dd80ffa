"""The database known down is answered at once, and its return within a probe (issue 41, item 16).

A real Daphne against a database of the test's own (the suite's stays up): PostgreSQL stopped and
started again; SQLite's directory moved away and back (the file cannot be opened: SQLite's outage).
The first request that meets the outage may wait (on PostgreSQL, the pool's timeout); every request
after it, `/api/health/` and pages included, answers 503 `database_unavailable` well inside half that
timeout; once the database is back, requests are served again as soon as the background probe (every
0.25 s) connects. The figures are printed, not asserted beyond those bounds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from tests.support.live_server import ROOT, LiveApp
from tests.support.postgres_server import OwnPostgres

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

POOL_TIMEOUT = 8  # seconds: a request waiting on the pool would take this long
FAST = POOL_TIMEOUT / 2  # what "at once" must beat, on a busy machine


def _until(client: httpx.Client, path: str, status: int, limit: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < limit:
        try:
            if client.get(path).status_code == status:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{path} never answered {status} within {limit} s")


def _outage_answered_at_once_and_recovered(app: LiveApp, take_down, bring_back) -> None:
    with httpx.Client(base_url=app.base_url, timeout=POOL_TIMEOUT * 3) as client:
        assert client.get("/api/health/").status_code == 200
        take_down()
        first = client.get("/api/conversations/")  # meets the outage (and may wait out the pool)
        assert first.status_code == 503 and first.json()["error"] == "database_unavailable", \
            app.log_path.read_text()[-2000:]
        with httpx.Client(base_url=app.base_url, timeout=FAST) as quick:
            for path in ("/api/health/", "/api/conversations/", "/", "/settings/") * 3:
                answer = quick.get(path)  # a request waiting on the pool would time out here
                assert answer.status_code == 503, (path, answer.status_code)
                assert answer.headers["Retry-After"]
            assert "Elion can't reach its database" in quick.get("/").text
        bring_back()
        back_after = _until(client, "/api/health/", 200, 30)
        print(f"\nserved again {back_after:.2f} s after the database came back")
        assert client.get("/api/conversations/").status_code == 200


def test_postgresql_down_is_answered_at_once_and_served_again_once_back():
    server = OwnPostgres(Path(tempfile.mkdtemp(prefix="elion-breaker-pg.", dir="/tmp"))).up()
    try:
        server.migrate()
        env = {"DATABASE_URL": server.database_url, "ELION_DB_POOL_TIMEOUT": str(POOL_TIMEOUT)}
        with LiveApp(env) as app:
            _outage_answered_at_once_and_recovered(app, server.down, server.up)
    finally:
        server.destroy()


def test_sqlite_unreachable_is_answered_at_once_and_served_again_once_back(tmp_path):
    home = tmp_path / "data"
    home.mkdir()
    database = home / "elion.sqlite3"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(ELION_SQLITE_PATH=str(database))
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    away = tmp_path / "moved"
    with LiveApp({"ELION_SQLITE_PATH": str(database), "DATABASE_URL": None}) as app:
        _outage_answered_at_once_and_recovered(app, lambda: home.rename(away), lambda: away.rename(home))
