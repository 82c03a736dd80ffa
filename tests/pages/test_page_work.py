"""The chat page and the API's first page do the same work at any thread length (issue 40).

Statement counts alone would not show a statement that walks the whole
thread, so each statement a request ran is run again on its own and its work
measured: on SQLite the virtual machine's steps (a progress handler), on
PostgreSQL the buffers it touched (`EXPLAIN (ANALYZE, BUFFERS)`). A 2,000-message thread's
statements must do what a 120-message thread's do (both fill a window), and a
thread's page must not get dearer as other threads grow (SQLite once built a
Bloom filter over the whole message table for every walk). The test database
has no planner statistics on SQLite, as a database where `ANALYZE` never ran
(the app never runs it): a query that a planner without them would answer by
reading the whole thread (the window's rows in seq order along the
(conversation, seq) index) is caught. On PostgreSQL the message table is
analyzed once the threads are written, as autovacuum has done in any running
app whose threads hold thousands of messages; without statistics its planner
hash-joins a walk's steps over the whole table (not addressed here).

No statement reads the whole live branch: the header estimate is the head's
stored running measure (`Message.branch_tokens`), one row.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from continuity.models import ThreadHandoff
from tests.support.factories import thread
from tests.support.statement_work import SLACK, assert_same_work, read_statements_work, statistics_as_deployed

pytestmark = pytest.mark.django_db

def pairs(count: int) -> list[tuple[str, str]]:
    return [("user", f"question {i}") if i % 2 == 0 else ("assistant", f"answer {i} " + "r" * 300) for i in range(count)]


def statement_work(client: Client, path: str) -> list[tuple[str, int]]:
    """Each read statement `path` ran, with its work when run again alone."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
        assert response.status_code == 200
    return read_statements_work(queries.captured_queries)


@pytest.mark.parametrize("path", ["/c/{id}/", "/api/conversations/{id}/messages/?limit=50", "/c/{id}/window/"])
def test_a_page_does_the_same_work_at_120_and_2000_messages(settings, path):
    settings.OPENAI_API_KEY = "test-key"
    client = Client()
    short = thread(*pairs(120))
    statistics_as_deployed()
    client.get(path.format(id=short.id))  # the first request of a process also syncs the owner row
    short_work = statement_work(client, path.format(id=short.id))
    long = thread(*pairs(2_000))
    statistics_as_deployed()
    # The short thread's page is no dearer now that the table holds another 2,000 messages.
    assert_same_work(short_work, statement_work(client, path.format(id=short.id)), SLACK[connection.vendor])
    assert_same_work(short_work, statement_work(client, path.format(id=long.id)), SLACK[connection.vendor])


def test_a_conversations_api_representation_does_the_same_work_at_120_and_2000_messages(settings):
    """`conversation_repr` (the conversation's API read; rewind, edit and Branch answer it too) of threads
    without a stored handoff, whose provenance is looked for among their handoff bubbles."""
    settings.OPENAI_API_KEY = "test-key"
    client = Client()
    short = thread(*pairs(120))
    ThreadHandoff.objects.filter(destination=short).delete()
    statistics_as_deployed()
    path = "/api/conversations/{id}/"
    client.get(path.format(id=short.id))
    short_work = statement_work(client, path.format(id=short.id))
    long = thread(*pairs(2_000))
    ThreadHandoff.objects.filter(destination=long).delete()
    statistics_as_deployed()
    assert_same_work(short_work, statement_work(client, path.format(id=long.id)), SLACK[connection.vendor])


def test_no_statement_of_the_chat_page_grows_with_the_thread(settings):
    """The header estimate is the head's stored running measure (`Message.branch_tokens`), so no statement
    of the page reads the whole branch: none costs more at 2,000 messages than at 120."""
    settings.OPENAI_API_KEY = "test-key"
    client = Client()
    short, long = thread(*pairs(120)), thread(*pairs(2_000))
    statistics_as_deployed()
    client.get(f"/c/{short.id}/")
    short_work = statement_work(client, f"/c/{short.id}/")
    long_work = statement_work(client, f"/c/{long.id}/")
    grown = [
        long_sql for (_, short_cost), (long_sql, long_cost) in zip(short_work, long_work, strict=True)
        if long_cost > 2 * short_cost + SLACK[connection.vendor]
    ]
    assert grown == []
