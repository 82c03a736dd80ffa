"""A connection left mid-statement by a timed-out test is dropped before the next test (tests/support/broken_connection.py)."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.support.broken_connection import connection_is_broken, drop_broken_connections

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_healthy_connection_is_left_alone():
    connection.ensure_connection()
    raw = connection.connection
    assert drop_broken_connections() == []
    assert connection.connection is raw


def test_a_connection_left_unusable_is_dropped_and_the_next_statement_runs():
    """PostgreSQL: a statement left in flight (what a test cut off inside `execute` leaves); SQLite: the driver's
    connection closed under Django."""
    connection.ensure_connection()
    raw = connection.connection
    if connection.vendor == "postgresql":
        raw.pgconn.send_query(b"SELECT pg_sleep(0.2)")
        refusal = "another command is already in progress"
    else:
        raw.close()
        refusal = "closed"
    assert connection_is_broken(raw)
    with pytest.raises(Exception, match=refusal), connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    assert drop_broken_connections() == [connection.alias]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
    assert connection.connection is not raw
