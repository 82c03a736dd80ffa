"""tests/support/table_reset.py: a committing test leaves every table the app writes empty, on both databases."""

from __future__ import annotations

import threading

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection, connections, transaction
from django.test import TransactionTestCase
from django.test.utils import CaptureQueriesContext

from tests.support.factories import thread
from tests.support.table_reset import KEPT_TABLES, emptied_tables, empty_tables


def rows_per_table() -> dict[str, int]:
    with connection.cursor() as cursor:
        counts = {}
        for table in connection.introspection.django_table_names(only_existing=True, include_views=False):
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
            counts[table] = cursor.fetchone()[0]
    return counts


def search_index_rows() -> int:
    """Rows of the full-text index the triggers keep (SQLite: the FTS5 table; PostgreSQL: the entry table)."""
    table = "message_search_fts" if connection.vendor == "sqlite" else "conversations_messagesearchentry"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {table}")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_reset_empties_every_table_the_app_writes_and_keeps_what_migrate_wrote():
    kinds, permissions = ContentType.objects.count(), Permission.objects.count()
    thread(("user", "Is the lighthouse lit?"), ("assistant", "Every night, over the harbour."), title="Harbour")
    filled = rows_per_table()
    assert filled["conversations_message"] == 2 and filled["conversations_messagesearchentry"] == 2, filled
    assert search_index_rows() == 2

    empty_tables(connection.alias)

    left = {table: count for table, count in rows_per_table().items() if count and table not in KEPT_TABLES}
    assert left == {}
    assert search_index_rows() == 0
    assert (ContentType.objects.count(), Permission.objects.count()) == (kinds, permissions)
    # The kept rows are the ones migrate writes: a content type for every model of every app.
    assert kinds == len(apps.get_models())


@pytest.mark.django_db(transaction=True)
def test_a_reset_of_many_rows_empties_every_table_the_same_way(monkeypatch):
    """PostgreSQL truncates from `TRUNCATE_FROM_ROWS` on (lowered here to the thread's size); the same end."""
    from tests.support import table_reset

    monkeypatch.setattr(table_reset, "TRUNCATE_FROM_ROWS", 3)
    kinds, permissions = ContentType.objects.count(), Permission.objects.count()
    thread(*[("user" if n % 2 == 0 else "assistant", f"the tide, turn {n}") for n in range(6)], title="Tides")
    assert rows_per_table()["conversations_message"] == 6

    with CaptureQueriesContext(connection) as statements:
        empty_tables(connection.alias)

    truncated = [q["sql"] for q in statements.captured_queries if q["sql"].startswith("TRUNCATE")]
    assert len(truncated) == (1 if connection.vendor == "postgresql" else 0)
    assert {table: count for table, count in rows_per_table().items() if count and table not in KEPT_TABLES} == {}
    assert search_index_rows() == 0
    assert (ContentType.objects.count(), Permission.objects.count()) == (kinds, permissions)


def test_the_reset_leaves_out_only_the_tables_migrate_alone_writes(db):
    every = set(connection.introspection.django_table_names(only_existing=True, include_views=False))
    assert set(emptied_tables(connection)) == every - KEPT_TABLES
    assert every >= KEPT_TABLES


def test_a_committing_test_ends_with_the_reset(db):
    """The session fixture put `empty_tables` in place of Django's flush for this run."""
    assert TransactionTestCase._fixture_teardown.__module__ == "tests.support.table_reset"


@pytest.mark.django_db(transaction=True)
def test_a_reset_ends_a_session_left_open_on_a_row_it_deletes_and_empties_the_tables(capfd):
    """A subprocess or thread that outlives its test with a transaction open (here: a row locked and never
    released) held the reset until the item's timeout in CI. The reset names it, ends it and goes on."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite: one writer at a time, and no session to end")
    chat = thread(("user", "Still here?"), ("assistant", "Always."), title="Held")
    locked, gone = threading.Event(), threading.Event()

    def leaked_session():
        try:
            with transaction.atomic():
                type(chat).objects.select_for_update().get(pk=chat.pk)
                locked.set()
                gone.wait(30)  # never released by the test: only its end lets this thread finish
                list(type(chat).objects.all())  # the ended session's next query fails
        except Exception:  # noqa: BLE001 - the session was ended under it, which is the point
            pass
        finally:
            connections.close_all()

    holder = threading.Thread(target=leaked_session)
    holder.start()
    try:
        assert locked.wait(10)
        empty_tables(connection.alias, lock_wait="1s")
        assert rows_per_table()["conversations_conversation"] == 0
        assert "table reset: waited 1s for other sessions; ended" in capfd.readouterr().err
    finally:
        gone.set()
        holder.join(30)

