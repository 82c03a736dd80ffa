"""A test cut off mid-query must not take every later test of its process with it.

pytest-timeout ends a test that overruns by raising inside it, wherever it is; when that is inside a
PostgreSQL statement, psycopg's connection is left with the statement in flight, and every later
statement of that process fails with "another command is already in progress" (one timed-out backup
test under a heavily loaded machine turned into 351 failures and errors of one process). Before each
test, a connection left in that state (or closed, or broken) is dropped, so Django opens a new one at
its next statement; `connect()` resets Django's transaction bookkeeping with it. A healthy connection
is left alone. Registered as a plugin by tests/conftest.py.
"""

from __future__ import annotations

import contextlib

import pytest


def connection_is_broken(raw) -> bool:
    """True if the driver's connection can't run another statement: closed, broken, or a statement in flight."""
    if getattr(raw, "closed", False) or getattr(raw, "broken", False):
        return True
    info = getattr(raw, "info", None)  # psycopg 3; sqlite3 has none
    if info is None:
        try:
            raw.total_changes  # noqa: B018 - sqlite3 answers this from memory, and raises once closed
        except Exception:  # noqa: BLE001 - sqlite3.ProgrammingError: closed
            return True
        return False
    from psycopg.pq import TransactionStatus

    return info.transaction_status in (TransactionStatus.ACTIVE, TransactionStatus.UNKNOWN)


def drop_broken_connections() -> list[str]:
    """Every open connection that can't run another statement closed and forgotten; the aliases dropped."""
    from django.db import connections

    dropped = []
    for connection in connections.all(initialized_only=True):
        raw = connection.connection
        if raw is None or not connection_is_broken(raw):
            continue
        with contextlib.suppress(Exception):  # it is being thrown away; its own error says nothing more
            raw.close()
        connection.connection = None
        connection.closed_in_transaction = False
        dropped.append(connection.alias)
    return dropped


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    drop_broken_connections()
