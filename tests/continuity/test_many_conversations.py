"""What the owner's number of conversations may cost (issue 40, "Many conversations"): statement counts at
a few conversations and at many, on both databases. Timings are `bench/many_conversations.py`'s.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from continuity.rules.handoff_store import SPEAKER_PAGE, prior_thread_select
from continuity.rules.recall_store import _hits
from conversations.services.threads.thread_writes import conversation_create, conversation_update
from tests.support.factories import thread, turns_append
from transcript.models import Conversation, MessageSearchEntry
from transcript.search_index import message_search_index_sync

pytestmark = pytest.mark.django_db


def threads(count: int, *, start: int = 0) -> list[Conversation]:
    return [thread(("user", f"Lighthouse ledger {i}"), ("assistant", f"Page {i}.")) for i in range(start, start + count)]


def statements(operation) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as queries:
        result = operation()
    return len(queries), result


def test_the_conversation_list_costs_the_same_statements_at_3_and_at_12_conversations():
    """It was three statements per row (1,504 for 500 rows)."""
    client = Client()
    threads(3)
    client.get("/api/conversations/")  # the first request of a session reads more (its settings row, ...)
    small, response = statements(lambda: client.get("/api/conversations/"))
    assert response.status_code == 200 and len(response.json()["results"]) == 3
    threads(9, start=3)
    large, response = statements(lambda: client.get("/api/conversations/"))
    rows = response.json()["results"]
    assert len(rows) == 12
    assert large == small
    # The rows still answer what one conversation's answer does.
    one = client.get(f"/api/conversations/{rows[0]['id']}/").json()
    assert rows[0] == one
    assert sum(row["handoff"] is not None for row in rows) == 11, "each New Chat after the first carries one"
    assert all(row["provider"] is not None for row in rows)


def test_prior_thread_selection_reads_a_page_of_conversations_not_all_of_them():
    """New Chat's automatic continuity: the same statements with a page of conversations and with three
    pages; the newest speech still wins, and a renamed old thread does not."""
    threads(3)
    small, capture = statements(lambda: prior_thread_select(persona="elion"))
    many = threads(3 * SPEAKER_PAGE, start=3)
    large, capture = statements(lambda: prior_thread_select(persona="elion"))
    assert capture.source.pk == many[-1].pk
    assert large == small
    conversation_update(conversation_id=many[0].pk, changes={"title": "Renamed, not spoken in"})
    assert prior_thread_select(persona="elion").source.pk == many[-1].pk


def test_the_newest_speaker_is_found_below_the_first_page_of_recent_changes():
    """Conversations renamed after the last speech sit first by `updated_at`; the one that spoke last sits
    below a page of them and is still the prior thread."""
    spoke_last = threads(1)[0]
    renamed = threads(SPEAKER_PAGE + 5, start=1)
    turns_append(Conversation.objects.get(pk=spoke_last.pk), ("user", "Still here?"), ("assistant", "Always."))
    for conversation in renamed:
        conversation_update(conversation_id=conversation.pk, changes={"title": "Renamed later"})
    assert prior_thread_select(persona="elion").source.pk == spoke_last.pk


def test_keyword_recall_reads_its_messages_from_the_index_rows_it_found_not_the_status_index():
    """SQLite without ANALYZE statistics (as deployed) once started recall's message read from
    `message_status_lease`, an index over every message; each database's plan starts from the rows found."""
    threads(4)
    message_search_index_sync()
    entry_ids = dict(MessageSearchEntry.objects.values_list("id", "search_text")[:3])
    with CaptureQueriesContext(connection) as queries:
        hits = _hits(entry_ids)
    assert len(hits) == 3
    (sql,) = [query["sql"] for query in queries.captured_queries if "messagesearchentry" in query["sql"]]
    explain = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
    with connection.cursor() as cursor:
        cursor.execute(explain + sql)
        plan = " / ".join(str(row[-1]) for row in cursor.fetchall())
    assert "message_status_lease" not in plan, plan
    if connection.vendor == "sqlite":
        assert plan.startswith("SEARCH conversations_messagesearchentry USING INTEGER PRIMARY KEY"), plan


def test_new_chat_costs_the_same_statements_at_3_and_at_many_conversations():
    threads(3)
    small, _ = statements(lambda: conversation_create())
    threads(2 * SPEAKER_PAGE, start=3)
    large, _ = statements(lambda: conversation_create())
    assert large == small
