"""A short circuit breaker for a database that is down (issue 41, item 16).

During an outage every request waited out the pool timeout (10 s) before its 503, `/api/health/`
included. Once a request has found the database unreachable (`database_errors.database_outage`
classified `database_unavailable`), the breaker is open: `database_errors.DatabaseBreakerMiddleware`
answers every
request that would reach the database with that 503 at once (static files are served before it), and
one background thread per process probes the database every `PROBE_INTERVAL` seconds with a fresh
connection outside the pool. The first probe that connects closes the breaker, so requests reach
the database again within a probe interval (and a connection attempt) of its return.

The probe: PostgreSQL, `psycopg.connect` with the app's parameters and a 1 s connect timeout;
SQLite, the database file opened read-write (a missing directory or file is down; SQLite would
otherwise create an empty one).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time

from django.db import connections

logger = logging.getLogger(__name__)

PROBE_INTERVAL = 0.25

_lock = threading.Lock()
_state: dict = {"open_since": None, "confirming": False}


def breaker_open() -> bool:
    return _state["open_since"] is not None


def breaker_trip() -> None:
    """A request found the database unreachable: once a fresh connection confirms it (a cancelled
    statement is an OperationalError too, and no outage), answer at once and probe until it is back.
    One request confirms at a time; the others go on to their own 503."""
    with _lock:
        if _state["open_since"] is not None or _state["confirming"]:
            return
        _state["confirming"] = True
    try:
        down = not database_probe()
    except Exception:  # noqa: BLE001 - a probe that fails for any reason says "down"
        down = True
    with _lock:
        _state["confirming"] = False
        if not down or _state["open_since"] is not None:
            return
        _state["open_since"] = time.monotonic()
        prober = threading.Thread(target=_probe_until_back, name="elion-database-probe", daemon=True)
    logger.warning("database unreachable: answering 503 at once while probing it every %.2f s", PROBE_INTERVAL)
    prober.start()


def breaker_close() -> None:
    with _lock:
        since, _state["open_since"] = _state["open_since"], None
    if since is not None:
        logger.warning("database reachable again after %.1f s: serving", time.monotonic() - since)


def database_probe() -> bool:
    """Can a fresh connection (outside any pool) reach the database now?"""
    wrapper = connections["default"]
    if wrapper.vendor == "postgresql":
        import psycopg  # PostgreSQL's driver: imported only when PostgreSQL is the database

        params = wrapper.get_connection_params()
        for name in ("pool", "cursor_factory", "context"):
            params.pop(name, None)
        params["connect_timeout"] = 1
        try:
            psycopg.connect(**params).close()
        except psycopg.Error:
            return False
        return True
    name = str(wrapper.settings_dict["NAME"])
    if name == ":memory:" or "mode=memory" in name:
        return True
    try:
        probe = sqlite3.connect(f"file:{name}?mode=rw", uri=True, timeout=1)
        try:
            probe.execute("PRAGMA schema_version").fetchone()
        finally:
            probe.close()
    except sqlite3.Error:
        return False
    return True


def _probe_until_back() -> None:
    while breaker_open():
        try:
            back = database_probe()
        except Exception:  # noqa: BLE001 - a probe that fails for any reason says "not back yet"
            back = False
        if back:
            breaker_close()
            return
        time.sleep(PROBE_INTERVAL)

