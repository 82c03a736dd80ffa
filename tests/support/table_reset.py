"""How a test that commits (`transactional_db`, the live servers) leaves the database: every table empty.

Django's TransactionTestCase empties the tables with `manage.py flush` after each such test: on
PostgreSQL one `TRUNCATE` of every table, which gives each table and index a new file (0.1–0.9 s of
server time a test on this machine, for tables holding a handful of rows), and on both databases the
`post_migrate` signal after it, which re-creates the content types and permissions row by row (about
60 queries a test). Here the same tables are emptied with one `DELETE FROM` each, in one transaction
(PostgreSQL checks the deferred foreign keys at its commit, when every table is empty), and the two
tables only `migrate` writes (`django_content_type`, `auth_permission`: no code of the app or the tests
writes them, and a backup leaves them out) keep the rows `migrate` gave them, so no signal is needed.

What a test starts with is unchanged: every table the app writes is empty, the sequences go on from
where they were (as after a flush). A test that asks for `available_apps` or `serialized_rollback`
gets Django's own flush. Registered as a plugin by tests/conftest.py; docs/testing.md.
"""

from __future__ import annotations

import sys

import pytest

# Written by `migrate`'s post_migrate signal alone; kept between tests instead of re-created.
KEPT_TABLES = frozenset({"django_content_type", "auth_permission"})


def emptied_tables(connection) -> list[str]:
    """The tables a reset empties: every model table that exists, less the ones `migrate` alone writes."""
    existing = connection.introspection.django_table_names(only_existing=True, include_views=False)
    return sorted(table for table in existing if table not in KEPT_TABLES)


# PostgreSQL: how long the reset waits for a row or table another session holds before it names and ends
# that session. Quiet, the heaviest reset (20,000 stored prompts) takes about 4 s; a wait past this is a
# session a test left open in a transaction (a subprocess that outlived its stop), which would otherwise
# hold the reset until the item's timeout and leave this process's connection unusable for later tests.
LOCK_WAIT = "60s"

# Other sessions on the same database that hold a transaction open: what a waiting reset waits for.
_OPEN_TRANSACTIONS = """
    SELECT pid, application_name, state, backend_xid IS NOT NULL, left(query, 200)
    FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()
      AND (backend_xid IS NOT NULL OR state LIKE 'idle in transaction%%')
"""


# PostgreSQL: from this many rows in the largest tables on, one TRUNCATE of every table instead of the DELETEs.
# The DELETEs' commit checks each deleted row's deferred foreign keys against tables full of the rows the same
# transaction deleted: for the 20,000 stored prompts of the reconciliation test, past 600 s on a loaded machine.
TRUNCATE_FROM_ROWS = 5_000


def _holds_many_rows(cursor, connection, tables: list[str]) -> bool:
    from transcript.models import Conversation, Message

    for table in (Message._meta.db_table, Conversation._meta.db_table):  # the tables a long test fills most
        if table in tables:
            cursor.execute(f"SELECT 1 FROM {connection.ops.quote_name(table)} LIMIT 1 OFFSET %s", [TRUNCATE_FROM_ROWS])
            if cursor.fetchone():
                return True
    return False


def _delete_every_row(connection, using: str, lock_wait: str) -> None:
    from django.db import transaction

    with transaction.atomic(using=using), connection.cursor() as cursor:
        tables = emptied_tables(connection)
        if connection.vendor == "postgresql":
            cursor.execute(f"SET LOCAL lock_timeout = '{lock_wait}'")
            if _holds_many_rows(cursor, connection, tables):
                cursor.execute("TRUNCATE " + ", ".join(connection.ops.quote_name(table) for table in tables))
                return
        for table in tables:
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")


def end_open_transactions(connection) -> list[tuple]:
    """PostgreSQL: every other session on this database that holds a transaction, ended; what they were."""
    with connection.cursor() as cursor:
        cursor.execute(_OPEN_TRANSACTIONS)
        sessions = cursor.fetchall()
        for pid, *_ in sessions:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    return sessions


def empty_tables(using: str, lock_wait: str = LOCK_WAIT) -> None:
    """Every table of database `using` emptied, in one transaction (the triggers fire as for any delete)."""
    from django.db import OperationalError, connections

    connection = connections[using]
    try:
        _delete_every_row(connection, using, lock_wait)
    except OperationalError as error:
        if connection.vendor != "postgresql" or getattr(error.__cause__, "sqlstate", None) != "55P03":
            raise
        # lock_timeout: a session left open holds rows this reset deletes. Named on stderr, ended, retried.
        ended = end_open_transactions(connection)
        print(f"\ntable reset: waited {lock_wait} for other sessions; ended {ended}", file=sys.stderr)
        _delete_every_row(connection, using, lock_wait)


@pytest.fixture(scope="session", autouse=True)
def _tables_emptied_by_delete():
    """For the whole session, a committing test ends with `empty_tables` instead of Django's flush."""
    from django.test import TransactionTestCase

    django_teardown = TransactionTestCase._fixture_teardown

    def fixture_teardown(test_case) -> None:
        if test_case.available_apps is not None or test_case.serialized_rollback:
            django_teardown(test_case)
            return
        for name in test_case._databases_names(include_mirrors=False):
            empty_tables(name)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransactionTestCase, "_fixture_teardown", fixture_teardown)
        yield
