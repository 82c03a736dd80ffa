"""What each statement a request ran costs when run again alone: the work a statement count cannot show.

On SQLite the virtual machine's steps (a progress handler), on PostgreSQL the buffers the statement touched
(`EXPLAIN (ANALYZE, BUFFERS)`). Used by the tests that hold a page, an API read or a send to the same work
at any thread length (issue 40): a statement that walks the whole thread, or a query whose index SQLite
cannot use, costs the same one statement in the count but thousands of steps more in the work.
"""

from __future__ import annotations

from django.db import connection

from transcript.models import Message


def _sqlite_work(sql: str) -> int:
    raw = connection.connection
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    raw.set_progress_handler(count, 10)
    try:
        raw.execute(sql).fetchall()
    finally:
        raw.set_progress_handler(None, 10)
    return steps[0] * 10


def _postgres_work(sql: str) -> int:
    """The buffers the statement touched (`EXPLAIN (ANALYZE, BUFFERS)`, every node's, planning aside)."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql)
        (plan,) = cursor.fetchone()[0]
    top = plan["Plan"]
    return int(top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0))


def statistics_as_deployed() -> None:
    """PostgreSQL: the statistics autovacuum keeps (tests/pages/test_page_work.py's docstring); SQLite: none,
    as the app runs."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(Message._meta.db_table)}")


def read_statements_work(captured_queries: list[dict]) -> list[tuple[str, int]]:
    """Each read statement of `captured_queries` (a `CaptureQueriesContext`'s), with its work when run again
    alone."""
    measure = _sqlite_work if connection.vendor == "sqlite" else _postgres_work
    return [
        (query["sql"], measure(query["sql"]))
        for query in captured_queries
        if query["sql"].lstrip().upper().startswith(("SELECT", "WITH")) and "%s" not in query["sql"]
    ]


def assert_same_work(short: list[tuple[str, int]], long: list[tuple[str, int]], slack: int) -> None:
    assert len(short) == len(long)
    for (_, short_work), (long_sql, long_work) in zip(short, long, strict=True):
        assert long_work <= 2 * short_work + slack, (long_sql[:300], short_work, long_work)


# Enough for the window's own rows and the longer thread's (cosmetic) differences, far below 2,000
# messages' worth: a walk of the whole branch costs tens of thousands of steps or thousands of tuples.
SLACK = {"sqlite": 3_000, "postgresql": 150}
