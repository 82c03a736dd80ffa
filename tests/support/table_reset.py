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

import pytest

# Written by `migrate`'s post_migrate signal alone; kept between tests instead of re-created.
KEPT_TABLES = frozenset({"django_content_type", "auth_permission"})


def emptied_tables(connection) -> list[str]:
    """The tables a reset empties: every model table that exists, less the ones `migrate` alone writes."""
    existing = connection.introspection.django_table_names(only_existing=True, include_views=False)
    return sorted(table for table in existing if table not in KEPT_TABLES)


def empty_tables(using: str) -> None:
    """Every table of database `using` emptied, in one transaction (the triggers fire as for any delete)."""
    from django.db import connections, transaction

    connection = connections[using]
    with transaction.atomic(using=using), connection.cursor() as cursor:
        for table in emptied_tables(connection):
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")


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
