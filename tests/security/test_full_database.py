"""A full database answers 507 `insufficient_storage` (a full disk: test_full_disk.py)."""

from __future__ import annotations

import pytest


def test_a_full_database_is_507_insufficient_storage():
    """SQLite's own "database or disk is full" (a page limit makes it real), as a library upload met it."""
    import sqlite3

    from django.db.utils import OperationalError

    from elion.base.database_errors import database_outage

    full = sqlite3.connect(":memory:")
    full.execute("PRAGMA max_page_count = 2")
    full.execute("CREATE TABLE t (x TEXT)")
    with pytest.raises(sqlite3.OperationalError) as raised:
        full.execute("INSERT INTO t VALUES (?)", ["x" * 100_000])
    try:
        raise OperationalError(str(raised.value)) from raised.value
    except OperationalError as wrapped:
        answer = database_outage(wrapped)
    assert (answer.status, answer.code) == (507, "insufficient_storage")
