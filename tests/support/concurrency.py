"""Proof that a racing transaction reached the lock, instead of a fixed sleep.

PostgreSQL says so itself: a backend waiting for a row lock shows
`wait_event_type = 'Lock'` in `pg_stat_activity`. On SQLite every writer
serialises on the database's write lock at `BEGIN IMMEDIATE`, so the racing
thread marks the moment it issues that statement (it blocks there while the
paused transaction holds the lock).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connection, connections


@contextmanager
def marks_lock_wait(reached: threading.Event) -> Iterator[None]:
    """In the racing thread: set `reached` as its connection issues a statement that takes the write lock."""

    def wrapper(execute: Callable, sql: str, params: object, many: bool, context: dict) -> object:
        if sql.lstrip().upper().startswith("BEGIN IMMEDIATE"):
            reached.set()
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield


def wait_until_blocked_on_lock(reached: threading.Event, timeout: float = 30.0) -> None:
    """In the test's own thread: return once the racing transaction waits for the paused one's lock."""
    deadline = time.monotonic() + timeout
    if not settings.DATABASE_IS_POSTGRES:
        assert reached.wait(timeout), "the racing operation never reached the write lock"
        return
    probe = connections.create_connection("default")
    try:
        while time.monotonic() < deadline:
            with probe.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
                )
                if cursor.fetchone()[0]:
                    return
            time.sleep(0.01)
    finally:
        probe.close()
    raise AssertionError("the racing operation never waited for the paused one's lock")

